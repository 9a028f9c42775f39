"""Inputs: dicts and matrices, their equivalence, and bad input (InputError, never another
exception type, nothing silently dropped)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mteb_stratified.core import (InputError, evaluate_dicts, evaluate_matrices, from_dicts,
                                  from_matrices)
from mteb_stratified.core.ranking.arrays import MAX_GRADE

M = ["nDCG@3", "RR@3", "P@2", "AP", "R@3", "Success@1"]
KEYS = ("expected", "min", "max", "oblivious")


# -- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_in_dicts(bad):
    with pytest.raises(InputError) as err:
        evaluate_dicts({"q": {"a": 1}}, {"q": {"a": 1.0, "b": bad}}, M)
    assert "'b'" in str(err.value) and "'q'" in str(err.value)  # names the document and query


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_in_matrices(bad):
    with pytest.raises(InputError):
        evaluate_matrices([[1.0, bad]], [[1, 0]], M)
    with pytest.raises(InputError):
        evaluate_matrices(np.array([[1.0, bad]], dtype=np.float32), [[1, 0]], M)
    # a non-finite score under the mask is not a candidate: fine
    res = evaluate_matrices([[1.0, bad]], [[1, 0]], M, mask=[[True, False]])
    assert res["P@2"].expected == 0.5


def test_non_numeric_scores_in_dicts():
    with pytest.raises(InputError):
        evaluate_dicts({"q": {"a": 1}}, {"q": {"a": "high"}}, M)
    with pytest.raises(InputError):
        evaluate_dicts({"q": {"a": 1}}, {"q": {"a": None}}, M)


@pytest.mark.parametrize("qrels", [
    {"q": {"a": "x"}},                # retrieved document, non-numeric grade
    {"q": {"a": 1, "z": "x"}},        # judged but not retrieved
    {"q": {"a": None}},
    {"q": {"a": [1]}},
    {"q": {"a": math.nan}},
])
def test_non_numeric_relevance_in_dicts(qrels):
    with pytest.raises(InputError):
        evaluate_dicts(qrels, {"q": {"a": 1.0, "b": 0.5}}, M)


@pytest.mark.parametrize("relevance", [[["x", "1"]], [[None, 1]], [[1, math.nan]]])
def test_non_numeric_relevance_in_matrices(relevance):
    with pytest.raises(InputError):
        evaluate_matrices([[1.0, 0.5]], relevance, M)


def test_no_shared_query_ids():
    with pytest.raises(InputError, match="share no query"):
        evaluate_dicts({"q1": {"a": 1}}, {"Q1": {"a": 1.0}}, M)


@pytest.mark.parametrize("qrels, run", [({}, {"q": {"a": 1.0}}), ({"q": {"a": 1}}, {})])
def test_empty_inputs(qrels, run):
    with pytest.raises(InputError):
        evaluate_dicts(qrels, run, M)


def test_duplicate_and_unknown_measures():
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    with pytest.raises(InputError, match="twice"):
        evaluate_dicts(qrels, run, ["nDCG@10", "nDCG@10"])
    with pytest.raises(InputError, match="twice"):
        evaluate_dicts(qrels, run, ["MRR@10", "RR@10"])
    with pytest.raises(InputError, match="nDCG"):
        evaluate_dicts(qrels, run, ["nDGC@10"])
    with pytest.raises(InputError):
        evaluate_dicts(qrels, run, [])


@pytest.mark.parametrize("kwargs", [dict(oblivious="random"), dict(ideal="all"),
                                    dict(missing="drop"), dict(relevance_level=math.nan),
                                    dict(chunk_size=0)])
def test_bad_options(kwargs):
    with pytest.raises(InputError):
        evaluate_dicts({"q": {"a": 1}}, {"q": {"a": 1.0}}, M, **kwargs)


@pytest.mark.parametrize("scores, relevance, kwargs", [
    ([[1.0, 2.0]], [[1, 0, 0]], {}),                       # shapes differ
    ([1.0, 2.0], [1, 0], {}),                              # 1-D
    ([[[1.0]]], [[[1]]], {}),                              # 3-D
    (np.zeros((0, 3)), np.zeros((0, 3)), {}),              # no rows
    ([[1.0, 2.0]], [[1, 0]], dict(mask=[[True]])),          # mask shape
    ([[1.0, 2.0]], [[1, 0]], dict(doc_ids=[["a"]])),        # doc_ids shape
    ([[1.0, 2.0]], [[1, 0]], dict(doc_ids=[["a", "a"]])),   # a document twice
    ([[1.0, 2.0]], [[1, 0]], dict(qids=["x", "y"])),        # qids length
    ([[1.0], [2.0]], [[1], [0]], dict(qids=["x", "x"])),    # qids twice
    ([["a", "b"]], [[1, 0]], {}),                          # non-numeric scores
])
def test_bad_matrices(scores, relevance, kwargs):
    with pytest.raises(InputError):
        evaluate_matrices(scores, relevance, M, **kwargs)


def test_negative_zero_ties_with_zero():
    for evaluate in ("dicts", "matrices"):
        if evaluate == "dicts":
            res = evaluate_dicts({"q": {"a": 1}}, {"q": {"a": -0.0, "b": 0.0}}, ["P@1"])
        else:
            res = evaluate_matrices([[-0.0, 0.0]], [[1, 0]], ["P@1"])
        assert res["P@1"].expected == 0.5 and res["P@1"].range == 1.0


# -- equivalence of the inputs --------------------------------------------------------------------

def test_dicts_and_matrices_agree_with_doc_ids():
    rng = np.random.default_rng(7)
    q, n = 12, 15
    scores = rng.integers(0, 4, size=(q, n)) / 4.0
    rel = rng.integers(0, 4, size=(q, n))
    mask = rng.random((q, n)) < 0.85
    mask[:, 0] = True
    ids = np.array([[f"doc{rng.integers(0, 10**6)}x{j}" for j in range(n)] for _ in range(q)])
    qrels = {f"q{i}": {ids[i, j]: int(rel[i, j]) for j in range(n) if mask[i, j]} for i in range(q)}
    run = {f"q{i}": {ids[i, j]: float(scores[i, j]) for j in range(n) if mask[i, j]} for i in range(q)}
    measures = M + ["nDCG", "RR", "P@10", "nDCG(dcg='exp-log2')@5"]
    a = evaluate_dicts(qrels, run, measures)
    b = evaluate_matrices(scores, rel, measures, mask=mask, doc_ids=ids,
                          qids=[f"q{i}" for i in range(q)])
    assert a.queries == b.queries
    for m in measures:
        for key in KEYS:
            np.testing.assert_allclose(a[m].values[key], b[m].values[key], rtol=0, atol=1e-12,
                                       err_msg=f"{m} {key}")
    np.testing.assert_array_equal(a.truncated_tie, b.truncated_tie)


def test_matrices_oblivious_tie_break():
    """Without doc_ids the column index stands for the doc id: higher column first among
    float32-equal scores (trec_eval's doc id descending); integer doc_ids compare as strings."""
    res = evaluate_matrices([[1.0, 1.0, 1.0]], [[1, 0, 0]], ["RR"])
    assert res["RR"].oblivious == 1 / 3
    res = evaluate_matrices([[1.0, 1.0, 1.0]], [[1, 0, 0]], ["RR"], doc_ids=[[9, 10, 100]])
    # as strings: "9" > "100" > "10" -> order 9, 100, 10: the relevant doc (9) first
    assert res["RR"].oblivious == 1.0
    ref = evaluate_dicts({"q": {"9": 1, "10": 0, "100": 0}},
                         {"q": {"9": 1.0, "10": 1.0, "100": 1.0}}, ["RR"])
    assert ref["RR"].oblivious == 1.0
    res = evaluate_matrices([[1.0, 1.0, 1.0]], [[1, 0, 0]], ["RR"], oblivious="input")
    assert res["RR"].oblivious == 1.0


def test_float32_and_integer_inputs():
    rng = np.random.default_rng(3)
    s64 = rng.integers(0, 5, size=(20, 30)).astype(np.float64) / 8
    rel = rng.integers(0, 3, size=(20, 30))
    measures = M + ["nDCG"]
    a = evaluate_matrices(s64, rel, measures)
    b = evaluate_matrices(s64.astype(np.float32), rel.astype(np.int8), measures)
    c = evaluate_matrices((s64 * 8).astype(np.int64), rel.astype(np.float64), measures)
    for m in measures:
        for key in KEYS:
            np.testing.assert_allclose(a[m].values[key], b[m].values[key], rtol=0, atol=1e-12)
            np.testing.assert_allclose(a[m].values[key], c[m].values[key], rtol=0, atol=1e-12)


def test_from_dicts_arrays_layout():
    arrays, left = from_dicts({"q": {"a": 2, "z": 3}, "r": {"a": 1}},
                              {"q": {"a": 0.5, "b": 0.7}, "s": {"a": 1.0}})
    assert arrays.qids == ("q",)
    assert arrays.n_candidates.tolist() == [2]
    assert arrays.scores.tolist() == [[0.5, 0.7]]
    assert arrays.grades[0, 0] == 2 and arrays.grades[0, 1] == -np.inf  # b unjudged
    assert left == {"queries_only_in_run": ["s"], "queries_only_in_qrels": ["r"],
                    "queries_scored_zero": []}


def test_from_matrices_without_mask_keeps_every_cell():
    arrays = from_matrices([[0.3, 0.1], [0.2, 0.2]], [[1, 0], [0, 2]])
    assert arrays.n_candidates.tolist() == [2, 2]
    assert arrays.qids == ("0", "1")


# -- the grade bound (issue #15: grade 2000 with exp-log2 gave NaN, 1e308 gave inf) ------------

def test_grade_at_the_bound_keeps_exp_gains_finite():
    res = evaluate_dicts({"q": {"a": MAX_GRADE, "b": 1}}, {"q": {"a": 1.0, "b": 0.5}},
                         ["nDCG(dcg='exp-log2')@10"])
    assert res["nDCG(dcg='exp-log2')@10"].expected == 1.0


@pytest.mark.parametrize("grade", [2000, 1e308, -5000, 10**400])
def test_in_memory_grades_beyond_the_bound(grade):
    with pytest.raises(InputError, match="bound|non-numeric"):
        evaluate_dicts({"q": {"a": grade}}, {"q": {"a": 1.0}}, ["nDCG(dcg='exp-log2')@10"])
    if grade != 10**400:
        with pytest.raises(InputError, match="bound"):
            evaluate_matrices([[1.0, 0.5]], np.array([[grade, 0]]), ["nDCG@10"])
