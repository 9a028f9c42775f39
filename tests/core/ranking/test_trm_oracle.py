"""Expected values against the reference ``tie-aware-retrieval-metrics`` package (TRM).

Binary relevance, ``ideal="candidates"`` (TRM's IDCG is over the candidates), arrays input where
the relevance matrix is the whole of the qrels.  TRM is used only as a test oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import trm
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import evaluate_matrices

from .._strategies import fixed

TOL = 1e-12
TRM_TO_OURS = {"ndcg": "nDCG@{k}", "mrr": "RR@{k}", "map": "AP@{k}", "recall": "R@{k}",
               "precision": "P@{k}"}


def check_against_trm(scores, is_rel, ks, keys=("expected",)):
    scores = np.asarray(scores, dtype=np.float64)
    is_rel = np.asarray(is_rel, dtype=bool)
    ours = evaluate_matrices(scores, is_rel.astype(np.float64),
                             [t.format(k=k) for t in TRM_TO_OURS.values() for k in ks],
                             ideal="candidates")
    ref = trm.evaluate(scores.tolist(), is_rel.tolist(), metrics=list(TRM_TO_OURS), k_list=list(ks))
    bad = []
    trm_key = {"expected": "expected", "min": "minimum", "max": "maximum"}
    for name, template in TRM_TO_OURS.items():
        for k in ks:
            m = template.format(k=k)
            for i, r in enumerate(ref.per_query[name][k]):
                for key in keys:
                    got = float(ours[m].values[key][i])
                    want = getattr(r, trm_key[key])
                    if not abs(got - want) <= TOL:
                        bad.append((i, m, key, got, want))
    return bad


@pytest.mark.parametrize("seed", range(4))
def test_random_tied_matrices_match_trm(seed):
    rng = np.random.default_rng(seed)
    q, n = 40, 30
    scores = rng.integers(0, 6, size=(q, n)) / 5.0  # heavy ties
    is_rel = rng.random((q, n)) < rng.uniform(0.02, 0.5, size=(q, 1))
    is_rel[0] = False  # a query without relevant documents
    ks = [1, 2, 3, 5, 10, 17, 30]  # k <= number of candidates
    bad = check_against_trm(scores, is_rel, ks, keys=("expected", "min", "max"))
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


def test_bf16_like_large_groups_match_trm():
    """Big tie groups (a bf16-like grid): the closed forms stay within 1e-12 of TRM."""
    rng = np.random.default_rng(99)
    scores = np.round(rng.normal(size=(6, 400)) * 4) / 4  # groups of dozens of documents
    is_rel = rng.random((6, 400)) < 0.1
    bad = check_against_trm(scores, is_rel, [1, 10, 50, 100, 400])
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


@fixed(80)
@given(data=st.data(), n=st.integers(1, 12), q=st.integers(1, 4))
def test_hypothesis_tied_matrices_match_trm(data, n, q):
    scores = data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=n,
                                         max_size=n), min_size=q, max_size=q))
    is_rel = data.draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=q,
                                max_size=q))
    ks = sorted(set(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=4))))
    bad = check_against_trm(scores, is_rel, ks)
    assert not bad, bad[:5]
