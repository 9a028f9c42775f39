"""The compiled path (``_walk.c``) against the numpy path: the oblivious values bit for bit,
the expected/min/max values to 1e-12, the tie audit and the truncated-tie flags exactly, on
every input form (dicts with qrels beyond the candidates, matrices with and without masks and
doc ids, float32/float64 scores, integer and fractional grades) and every option."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import InputError, evaluate_arrays, from_dicts, from_matrices
from mteb_stratified.core.ranking.arrays import RankingArrays
from mteb_stratified.core.ranking.walk import compiled_available

from .._strategies import fixed, queries, to_dicts

MEASURES = ["nDCG@1", "nDCG@3", "nDCG@10", "RR@5", "R@3", "P@2", "P@10", "AP@4", "AP",
            "Success@2", "nDCG(dcg=exp-log2)@5", "P(rel=2)@3", "RR(rel=2)", "nDCG"]
CUT_ONLY = ["nDCG@1", "nDCG@3", "RR@5", "R@3", "P@2", "AP@4", "Success@2",
            "nDCG(dcg=exp-log2)@5", "P(rel=2)@3"]


def test_the_compiled_walk_is_built():
    """``pip install`` compiles ``_walk.c``; a missing build is a failure here, not a skip."""
    assert compiled_available()


def assert_same(arrays, measures, **options):
    a = evaluate_arrays(arrays, measures, kernel="compiled", whole_list_audit=True, **options)
    b = evaluate_arrays(arrays, measures, kernel="numpy", whole_list_audit=True, **options)
    for m in a:
        va, vb = a[m].values, b[m].values
        assert np.array_equal(va["oblivious"], vb["oblivious"]), m  # bit for bit
        for key in ("expected", "min", "max"):
            np.testing.assert_allclose(va[key], vb[key], rtol=0, atol=1e-12, err_msg=f"{m} {key}")
    assert np.array_equal(a.truncated_tie, b.truncated_tie)
    for k in a.tie_audit:
        for field in ("groups", "docs", "max_group"):
            assert np.array_equal(a.tie_audit[k][field], b.tie_audit[k][field]), (k, field)
    assert a.settings == b.settings
    return a


OPTIONS = st.fixed_dictionaries({
    "relevance_level": st.sampled_from([0, 1, 2]),
    "oblivious": st.sampled_from(["trec_eval", "input"]),
    "ideal": st.sampled_from(["qrels", "candidates"]),
})


@fixed(300)
@given(batch=st.lists(queries(max_candidates=12), min_size=1, max_size=6).filter(
           lambda b: any(q.docs for q in b)),
       options=OPTIONS, cut_only=st.booleans(), tie_cutoffs=st.sets(st.integers(1, 14)))
def test_dicts_compiled_equals_numpy(batch, options, cut_only, tie_cutoffs):
    qrels, run = to_dicts(batch)
    arrays, _ = from_dicts(qrels, run, missing="zero")
    assert_same(arrays, CUT_ONLY if cut_only else MEASURES, tie_cutoffs=sorted(tie_cutoffs),
                **options)


@st.composite
def matrices(draw):
    q = draw(st.integers(1, 5))
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["bf16-like", "float32", "float64-ties-finer-than-float32",
                                 "extreme"]))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    if kind == "bf16-like":
        scores = np.round(rng.normal(0.5, 0.1, (q, n)) * 16) / 16
    elif kind == "float32":
        scores = rng.normal(0, 1, (q, n)).astype(np.float32)
    elif kind == "float64-ties-finer-than-float32":
        # doubles that differ but round to one float32: trec_eval ties them, exact ties do not
        base = np.float64(np.float32(0.7))
        scores = base + rng.integers(0, 3, (q, n)) * 1e-12
    else:
        scores = rng.choice([-1e300, -0.0, 0.0, 1e-300, 3.4e38, 1e300], (q, n))
    grade_type = draw(st.sampled_from([np.int8, np.int64, np.float64, np.float32, np.uint8]))
    grades = rng.choice([0, 0, 0, 1, 2, 3] + ([0.5, -1] if grade_type in (np.float64,
                                                                            np.float32) else []),
                        (q, n)).astype(grade_type)
    mask = rng.random((q, n)) < 0.8 if draw(st.booleans()) else None
    doc_ids = rng.permutation(q * n).reshape(q, n).astype(str) if draw(st.booleans()) else None
    return scores, grades, mask, doc_ids


@fixed(300)
@given(data=matrices(), options=OPTIONS, cut_only=st.booleans())
def test_matrices_compiled_equals_numpy(data, options, cut_only):
    scores, grades, mask, doc_ids = data
    arrays = from_matrices(scores, grades, mask=mask, doc_ids=doc_ids)
    assert_same(arrays, CUT_ONLY if cut_only else MEASURES, **options)


@pytest.mark.parametrize("n, distinct", [(300, 50), (1000, 1000), (257, 3)])
def test_long_lists_and_large_tie_groups(n, distinct):
    """Windows past the radix sort's threshold, tie groups reaching across the cutoffs."""
    rng = np.random.default_rng(n)
    scores = rng.integers(0, distinct, (20, n)).astype(np.float32) / distinct
    grades = (rng.random((20, n)) < 0.05).astype(np.int8) * rng.integers(1, 4, (20, n))
    arrays = from_matrices(scores, grades.astype(np.int8))
    res = assert_same(arrays, ["nDCG@10", "nDCG@100", "RR@100", "AP@100", "P@100", "R@200"])
    assert res.tie_stats(100)["max_tie_group_size"] >= 2


def test_tiebreak_that_is_not_a_rank():
    """RankingArrays built by hand may carry any integer tiebreak (not a permutation of the
    row's ranks): the compiled path then sorts (key, column) pairs and still agrees."""
    scores = np.array([[0.5, 0.5, 0.5, 0.2], [0.1, 0.1, 0.3, 0.3]])
    grades = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 1.0, -np.inf]])
    tiebreak = np.array([[7, 7, 10 ** 9, 3], [5, 2, 2, 9]])
    arrays = RankingArrays(("a", "b"), scores, grades, np.array([4, 4]), tiebreak, None)
    assert_same(arrays, ["nDCG@2", "RR@3", "P@1", "AP"])


def test_repeated_tiebreak_values():
    """A hand-built tiebreak may repeat inside one score group: both paths then order those
    entries by column (a stable sort), so the oblivious values agree."""
    arrays = RankingArrays(("a",), np.array([[0.5, 0.0, 0.5, 0.5]]),
                           np.array([[0.0, 1.0, 0.0, 1.0]]), np.array([4]),
                           np.array([[0, 0, 1, 1]]), None)
    res = assert_same(arrays, ["RR", "nDCG@2", "P@1"])
    assert res["RR"].oblivious == 0.5  # d2 (rank 1) before d3 (rank 1): the lower column first


def test_float32_grades_and_a_level_at_or_below_zero():
    """Relevant counts compare grades in float64 on both paths (float32 -0.3 is below the
    float64 level -0.3, so that document is not relevant)."""
    arrays = from_matrices(np.array([[0.5, 0.4]]), np.array([[-0.3, 1]], dtype=np.float32))
    res = assert_same(arrays, ["R@2", "P@2", "AP"], relevance_level=-0.3)
    assert res["R@2"].expected == 1.0


def test_depth_is_a_whole_number():
    arrays = from_matrices([[0.5, 0.5]], [[1, 0]])
    assert evaluate_arrays(arrays, ["P@1"], depth=2.0).truncated_tie.tolist() == [True]
    for bad in ("x", 1.5, -1, float("inf")):
        with pytest.raises(InputError, match="depth"):
            evaluate_arrays(arrays, ["P@1"], depth=bad)


def test_depth_shorter_than_some_lists():
    """A user depth below the longest list: the truncated flag of the shorter, padded rows."""
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    run = {"a": {"x": 0.3, "y": 0.1, "z": 0.1}, "b": {"y": 0.5, "x": 0.5, "w": 0.2, "v": 0.2}}
    arrays, _ = from_dicts(qrels, run)
    res = assert_same(arrays, ["P@2", "AP"], depth=3)
    assert res.truncated_tie.tolist() == [True, False]


def test_kernel_option_is_checked():
    arrays = from_matrices([[0.5, 0.5]], [[1, 0]])
    with pytest.raises(InputError, match="kernel"):
        evaluate_arrays(arrays, ["RR"], kernel="fortran")
