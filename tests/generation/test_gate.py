"""The validity gate's checks by hand (generation/gate.py), and its verdict rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mteb_stratified.generation.gate import (KAPPA_MIN, _kappa, _verdict, judge_agreement,
                                             lexical_bias, system_order)
from mteb_stratified.io import BeirDataset


def test_kappa_by_hand():
    judge = np.array([1, 1, 0, 0, 1, 0])
    human = np.array([1, 0, 0, 0, 1, 1])
    k = _kappa(judge, human)
    assert (k["tp"], k["fp"], k["fn"], k["tn"]) == (2, 1, 1, 2)
    # p_o = 4/6, p_e = (3·3 + 3·3) / 36 = 1/2, κ = (2/3 − 1/2) / (1/2) = 1/3
    assert k["kappa"] == pytest.approx(1 / 3)
    assert k["precision"] == pytest.approx(2 / 3) and k["recall"] == pytest.approx(2 / 3)
    assert _kappa(human, human)["kappa"] == pytest.approx(1.0)
    assert _kappa(np.zeros(6), human)["recall"] == 0.0


class _Judge:
    """A judge that answers a fixed rule per (query, document)."""

    def __init__(self, rule):
        self.rule = rule

    def judge(self, query, docs, seeds=()):
        return {d: self.rule(query, d) for d, _ in docs}

    def params(self):
        return {"kind": "planted", "rule": "planted"}


def _dataset():
    corpus = {f"d{i}": {"title": "", "text": f"doc {i}"} for i in range(6)}
    qrels = {"q1": {"d0": 1, "d1": 0}, "q2": {"d2": 2}, "q3": {"d4": 1, "d5": 1}}
    return BeirDataset("t", corpus, {"q1": "a", "q2": "b", "q3": "c"}, qrels, "test")


def test_judge_agreement_on_real_pairs_counts_unjudged_as_non_relevant():
    ds = _dataset()
    bm25 = {"q1": ["d0", "d1", "d3"], "q2": ["d2", "d3", "d0"], "q3": ["d5", "d0", "d4"]}
    human = _Judge(lambda q, d: ds.qrels[{"a": "q1", "b": "q2", "c": "q3"}[q]].get(d, 0))
    out = judge_agreement(human, ds, bm25, n_queries=3, per_query=3)
    assert out["pairs"] == 9 and out["kappa"] == pytest.approx(1.0)
    assert out["unjudged"] == "non-relevant" and out["first_stage"] == "BM25"
    every = judge_agreement(_Judge(lambda q, d: 1), ds, bm25, n_queries=3, per_query=3)
    # 4 of the 9 pairs are relevant to the qrels (d0; d2; d5 and d4), the rest are not
    assert every["tp"] == 4 and every["fp"] == 5 and every["recall"] == 1.0
    assert every["kappa"] == pytest.approx(0.0)


def test_system_order_tau_pairs_and_sign_agreement():
    real = {"A": {"r1": 0.9, "r2": 0.8, "r3": 0.7, "r4": 0.6},
            "B": {"r1": 0.5, "r2": 0.4, "r3": 0.6, "r4": 0.5},
            "C": {"r1": 0.1, "r2": 0.2, "r3": 0.1, "r4": 0.3}}
    added = {"A": {"g1": 0.1, "g2": 0.2, "g3": 0.1}, "B": {"g1": 0.5, "g2": 0.5, "g3": 0.4},
             "C": {"g1": 0.9, "g2": 0.7, "g3": 0.8}}
    cr = {"r1": 0, "r2": 0, "r3": 1, "r4": 1}
    ca = {"g1": 0, "g2": 0, "g3": 1}
    so = system_order(real, added, cr, ca, min_shared=2)
    assert so["kendall_tau"] == pytest.approx(-1.0)   # the order reversed
    ab = next(p for p in so["pairs"] if (p["a"], p["b"]) == ("A", "B"))
    d = np.array([0.4, 0.4, 0.1, 0.1])
    assert ab["real"]["difference"] == pytest.approx(d.mean())
    t = stats.ttest_1samp(d, 0.0)
    assert ab["real"]["p_value"] == pytest.approx(t.pvalue)
    half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert ab["real"]["ci_low"] == pytest.approx(d.mean() - half)
    # cluster 0 holds 2 real and 2 added queries (shared); cluster 1 only 1 added one
    assert ab["strata"] == {"shared_clusters": 1, "same_sign": 0, "share": 0.0,
                            "min_shared": 2}
    gate = {"judge": {"measured": False}, "system_order": so, "added_queries": 3}
    v = _verdict(gate)
    assert v["passed"] is False and "τ = -1.00" in v["verdict"]


def test_verdict_on_kappa_and_nothing_added():
    gate = {"judge": {"measured": True, "kappa": KAPPA_MIN - 0.01}, "system_order": None,
            "added_queries": 5}
    assert _verdict(gate)["passed"] is False
    gate["judge"]["kappa"] = KAPPA_MIN
    assert _verdict(gate)["passed"] is True
    assert _verdict({**gate, "added_queries": 0})["passed"] is None


def test_lexical_bias_by_hand():
    qrels = {"q1": {"d0": 1}, "q2": {"d2": 1}, "q3": {"d4": 0, "d5": 1}}
    bm25 = {"q1": ["d0", "d1"], "q2": ["d3", "d2"], "q3": ["d4", "d5"]}
    lb = lexical_bias(qrels, bm25)
    assert lb["queries"] == 3 and lb["rank1_relevant"] == pytest.approx(1 / 3)
    assert math.isclose(lexical_bias({"q": {"d": 1}}, {})["rank1_relevant"], 0.0)


def test_an_undefined_tau_or_kappa_is_inconclusive_never_a_pass():
    tied = {"A": {"r1": 0.5, "r2": 0.7}, "B": {"r1": 0.2, "r2": 0.4}}
    added = {"A": {"g1": 1.0, "g2": 1.0}, "B": {"g1": 1.0, "g2": 1.0}}   # tied means
    so = system_order(tied, added, {}, {})
    assert so["kendall_tau"] is None
    v = _verdict({"judge": {"measured": False}, "system_order": so, "added_queries": 2})
    assert v["passed"] is None and v["verdict"].startswith("inconclusive")
    v = _verdict({"judge": {"measured": True, "kappa": None}, "system_order": None,
                  "added_queries": 2})
    assert v["passed"] is None and "κ is undefined" in v["verdict"]


def test_a_two_system_reversal_says_how_sure_it_is():
    real = {"A": {"r1": 0.9, "r2": 0.8}, "B": {"r1": 0.1, "r2": 0.2}}
    added = {"A": {"g1": 0.1, "g2": 0.3}, "B": {"g1": 0.9, "g2": 0.8}}
    v = _verdict({"judge": {"measured": False}, "system_order": system_order(real, added, {},
                                                                             {}),
                  "added_queries": 2})
    assert v["passed"] is False and "two systems: τ is the sign of one difference" in v["verdict"]
