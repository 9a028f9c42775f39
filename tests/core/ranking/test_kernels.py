"""Kernels at scale and tie groups: exact rational values for big tie groups (bf16-like runs
have groups of hundreds), the tie-group structure, and trec_eval's order on arbitrary floats."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import evaluate_dicts, evaluate_matrices
from mteb_stratified.core.ranking.ties import group_sum, tie_groups

from .._reference import RefMeasure, ref_value, trec_eval_ranking
from .._strategies import fixed

TOL = 1e-12


def exact_one_group(m_before: int, n: int, r: int, r_total: int, k: int | None):
    """Exact E[RR@k], E[P@k]·k (hits) and E[AP@k]·R for: m non-relevant singletons, then one tie
    group of n documents holding r relevant ones (R = r_total judged relevant overall)."""
    cut = m_before + n if k is None else k
    # P(first relevant at offset i of the group) = C(n-i-1, r-1) / C(n, r)
    rr = sum(Fraction(comb(n - i - 1, r - 1), comb(n, r)) / (m_before + i + 1)
             for i in range(n - r + 1) if m_before + i + 1 <= cut) if r else Fraction(0)
    hits = Fraction(r, n) * max(0, min(cut - m_before, n))
    # E[rel(p)·hits(p)] at offset i: (r/n)(1 + 0) + i·r(r-1)/(n(n-1))
    ap = sum((Fraction(r, n) + Fraction(i * r * (r - 1), n * (n - 1))) / (m_before + i + 1)
             for i in range(n) if m_before + i + 1 <= cut) if r else Fraction(0)
    return float(rr), float(hits), float(ap / r_total) if r_total else 0.0


@pytest.mark.parametrize("m_before, n, r", [(0, 1000, 1), (3, 1000, 7), (0, 2000, 1999),
                                            (10, 1500, 2), (0, 600, 600)])
def test_big_tie_group_exact(m_before, n, r):
    total = m_before + n
    scores = np.array([[2.0 + j for j in range(m_before, 0, -1)] + [1.0] * n])
    rel = np.array([[0] * m_before + [1] * r + [0] * (n - r)])
    ks = [1, 10, 100, total]
    names = [f"{x}@{k}" for k in ks for x in ("RR", "P", "AP")] + ["RR", "AP"]
    res = evaluate_matrices(scores, rel, names)
    for k in ks + [None]:
        rr, hits, ap = exact_one_group(m_before, n, r, r, k)
        sfx = "" if k is None else f"@{k}"
        assert abs(res[f"RR{sfx}"].expected - rr) <= TOL, (k, res[f"RR{sfx}"].expected, rr)
        assert abs(res[f"AP{sfx}"].expected - ap) <= TOL, (k, res[f"AP{sfx}"].expected, ap)
        if k is not None:
            assert abs(res[f"P@{k}"].expected - hits / k) <= TOL


def test_big_group_ndcg_exact():
    """E[DCG@k] = Σ_{p≤k} d(p)·(group gain)/n inside the group; IDCG from all grades."""
    n = 1000
    rng = np.random.default_rng(0)
    grades = rng.integers(0, 4, size=n)
    scores = np.ones((1, n))
    res = evaluate_matrices(scores, grades[None, :], ["nDCG@10", "nDCG@1000", "nDCG"])
    mean_gain = Fraction(int(grades.sum()), n)
    ideal = sorted(grades.tolist(), reverse=True)
    for k, name in ((10, "nDCG@10"), (1000, "nDCG@1000"), (None, "nDCG")):
        kk = n if k is None else k
        disc = math.fsum(1 / math.log2(p + 1) for p in range(1, kk + 1))
        idcg = math.fsum(g / math.log2(p + 1) for p, g in enumerate(ideal[:kk], start=1))
        assert abs(res[name].expected - float(mean_gain) * disc / idcg) <= TOL


def test_tie_groups_structure():
    s = np.array([[3.0, 2.0, 2.0, 2.0, 1.0, 1.0], [5.0, 4.0, 3.0, 2.0, -np.inf, -np.inf]])
    g = tie_groups(s)
    assert g.start.tolist() == [[0, 1, 1, 1, 4, 4], [0, 1, 2, 3, 4, 4]]
    assert g.end.tolist() == [[0, 3, 3, 3, 5, 5], [0, 1, 2, 3, 5, 5]]
    assert g.size.tolist() == [[1, 3, 3, 3, 2, 2], [1, 1, 1, 1, 2, 2]]
    assert g.offset.tolist() == [[0, 0, 1, 2, 0, 1], [0, 0, 0, 0, 0, 1]]
    assert g.is_start.tolist() == [[True, True, False, False, True, False],
                                   [True, True, True, True, True, False]]
    v = np.arange(12, dtype=np.float64).reshape(2, 6)
    assert group_sum(v, g).tolist() == [[0, 6, 6, 6, 9, 9], [6, 7, 8, 9, 21, 21]]


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
near = st.sampled_from([0.1, 0.1 + 1e-9, 0.1 - 1e-9, 0.0, -0.0, 1e-50, -1e-50, 1.0, 1e39,
                        -1e39, 16777216.0, 16777217.0])


@fixed(200)
@given(data=st.data(), n=st.integers(1, 10))
def test_trec_eval_order_on_arbitrary_floats(data, n):
    """Oblivious values follow float32 score descending, then doc id descending (byte order),
    for any finite doubles: overflow to ±inf, ±0, subnormals, float32 near-ties."""
    scores = data.draw(st.lists(finite | near, min_size=n, max_size=n))
    docs = data.draw(st.lists(st.text("aAbZ0é中", min_size=1, max_size=3), min_size=n,
                              max_size=n, unique=True))
    grades = data.draw(st.lists(st.sampled_from([None, 0, 1, 2]), min_size=n, max_size=n))
    qrels = {"q": {d: g for d, g in zip(docs, grades) if g is not None} | {"zz_unretrieved": 1}}
    run = {"q": dict(zip(docs, scores))}
    ms = [RefMeasure("RR"), RefMeasure("P", 3), RefMeasure("nDCG", 5), RefMeasure("AP")]
    with warnings.catch_warnings():  # doubles beyond float32's range overflow to inf there
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        res = evaluate_dicts(qrels, run, [m.text() for m in ms])
    ranked = [qrels["q"].get(d) for d in trec_eval_ranking(docs, scores)]
    for m in ms:
        want = ref_value(m, ranked, list(qrels["q"].values()), grades, 1)
        assert abs(res[m.text()].oblivious - want) <= TOL, (m.text(), scores, docs)
