"""BEIR EvaluateRetrieval-compatible evaluator: BEIR's dicts plus tie-aware keys."""

from __future__ import annotations

import pytest

from mteb_stratified.adapters.beir import TieAwareEvaluateRetrieval

QRELS = {"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"d": 1}}
RUN = {"q1": {"a": 0.5, "b": 0.5, "c": 0.9, "x": 0.5, "q1": 1.0},
       "q2": {"d": 0.3, "e": 0.3, "f": 0.1}}


def test_same_shapes_and_numbers_as_beir():
    beir_eval = pytest.importorskip("beir.retrieval.evaluation")
    ks = [1, 3, 10]
    ours = TieAwareEvaluateRetrieval.evaluate(QRELS, {q: dict(d) for q, d in RUN.items()}, ks)
    theirs = beir_eval.EvaluateRetrieval.evaluate(QRELS, {q: dict(d) for q, d in RUN.items()}, ks)
    assert len(ours) == 4
    for o, t in zip(ours, theirs):
        for key, value in t.items():
            assert o[key] == value  # BEIR's own keys and values unchanged
            assert abs(o[f"{key}_oblivious"] - value) < 6e-6
            assert o[f"{key}_min"] <= o[f"{key}_expected"] <= o[f"{key}_max"]
            assert o[f"{key}_range"] == pytest.approx(o[f"{key}_max"] - o[f"{key}_min"])
    ndcg = ours[0]
    assert ndcg["NDCG@1_range"] > 0  # q1: a, b, x tie at rank 2..; q2: d/e tie at rank 1
    assert isinstance(TieAwareEvaluateRetrieval(), beir_eval.EvaluateRetrieval)


def test_identical_ids_dropped_like_beir():
    ours = TieAwareEvaluateRetrieval.evaluate(QRELS, RUN, [1])
    # "q1" (score 1.0) would otherwise be rank 1 for q1
    assert not hasattr(TieAwareEvaluateRetrieval, "last_result")  # no class-wide state
    retriever = TieAwareEvaluateRetrieval()
    assert retriever.evaluate(QRELS, RUN, [1]) == ours
    assert retriever.last_result is not None and retriever.last_result.queries == ("q1", "q2")
    kept = TieAwareEvaluateRetrieval.evaluate(QRELS, RUN, [1], ignore_identical_ids=False)
    assert ours[0]["NDCG@1_expected"] >= kept[0]["NDCG@1_expected"]


def test_mrr_custom():
    beir_eval = pytest.importorskip("beir.retrieval.evaluation")
    ours = TieAwareEvaluateRetrieval.evaluate_custom(QRELS, RUN, [1, 10], metric="mrr")
    theirs = beir_eval.EvaluateRetrieval.evaluate_custom(QRELS, {q: dict(d) for q, d in RUN.items()}, [1, 10], metric="mrr")
    for k in (1, 10):
        assert f"MRR@{k}_expected" in ours
        assert ours[f"MRR@{k}_min"] <= ours[f"MRR@{k}_expected"] <= ours[f"MRR@{k}_max"]
    assert set(theirs) <= set(ours)
