"""Result objects: the JSON contract, range/bias, per-query access, data frames, truncated ties,
the tie audit and chunk-size invariance."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import (InputError, evaluate_arrays, evaluate_dicts, evaluate_matrices,
                                  from_dicts)

from .._reference import tie_groups_of
from .._strategies import fixed, queries, to_dicts

VALUE_KEYS = ["expected", "min", "max", "oblivious", "range", "bias"]
MEASURES = ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100", "nDCG", "Success@1"]


def tied_collection(seed=0, n_queries=25, max_docs=40):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(n_queries):
        n = int(rng.integers(1, max_docs + 1))
        run[f"q{i}"] = {f"d{j}": float(rng.integers(0, 4)) / 2 for j in range(n)}
        qrels[f"q{i}"] = {f"d{j}": int(rng.integers(0, 3)) for j in range(0, n + 5, 2)}
    return qrels, run


@pytest.fixture(scope="module")
def result():
    return evaluate_dicts(*tied_collection(), MEASURES)


def test_to_dict_contract(result):
    out = result.to_dict()
    assert out["queries"] == 25 and isinstance(out["queries"], int)
    assert isinstance(out["truncated_tie_queries"], int)
    assert "per_query" not in out
    assert list(out["measures"]) == MEASURES
    for name, vals in out["measures"].items():
        assert list(vals) == VALUE_KEYS
        assert all(type(v) is float for v in vals.values())
        assert vals["range"] == pytest.approx(vals["max"] - vals["min"], abs=1e-15)
        assert vals["bias"] == pytest.approx(vals["oblivious"] - vals["expected"], abs=1e-15)
        assert vals["min"] <= vals["expected"] <= vals["max"]
    json.loads(json.dumps(out))  # JSON-serialisable as is
    json.loads(result.to_json(per_query=True))


def test_to_dict_per_query(result):
    out = result.to_dict(per_query=True)
    assert set(out["per_query"]) == set(result.queries)
    for qid, row in out["per_query"].items():
        assert list(row) == MEASURES
        for name, vals in row.items():
            assert list(vals) == VALUE_KEYS
            i = result.queries.index(qid)
            mr = result[name]
            assert vals["expected"] == mr.values["expected"][i]
            assert vals["range"] == pytest.approx(mr.values["max"][i] - mr.values["min"][i], abs=0)
            assert vals["bias"] == pytest.approx(mr.values["oblivious"][i] - mr.values["expected"][i],
                                                 abs=0)
    # the means of the per-query values are the summary values
    for name in MEASURES:
        for key in VALUE_KEYS:
            mean = np.mean([out["per_query"][q][name][key] for q in result.queries])
            assert out["measures"][name][key] == pytest.approx(mean, abs=1e-12)


def test_measure_result_accessors(result):
    mr = result["MRR@10"]  # aliases resolve
    assert mr is result["RR@10"]
    assert mr.range == pytest.approx(mr.max - mr.min)
    assert mr.bias == pytest.approx(mr.oblivious - mr.expected)
    for key in ("expected", "min", "max", "oblivious"):
        assert mr.values[key].shape == (len(result.queries),)
        assert getattr(mr, key) == pytest.approx(float(np.mean(mr.values[key])))
    pq = mr.per_query("bias")
    assert list(pq) == list(result.queries)
    v = mr.query("q3")
    assert v.range == v.max - v.min and v.bias == v.oblivious - v.expected
    assert pq["q3"] == pytest.approx(v.bias)
    assert result.per_query()["q3"]["RR@10"] == v
    with pytest.raises(InputError):
        result["P@5"]  # not evaluated
    with pytest.raises(InputError):
        mr.query("nope")
    with pytest.raises(InputError):
        mr.per_query("median")
    assert list(result) == list(result.measures) and len(result) == len(MEASURES)


def test_to_dataframe(result):
    df = result.to_dataframe()
    assert list(df.columns) == ["qid", "measure", *VALUE_KEYS]
    assert len(df) == len(result.queries) * len(MEASURES)
    sub = df[df.measure == "AP@100"].set_index("qid")
    np.testing.assert_array_equal(sub.loc[list(result.queries), "expected"].to_numpy(),
                                  result["AP@100"].values["expected"])
    np.testing.assert_allclose(df["range"], df["max"] - df["min"], atol=0)
    np.testing.assert_allclose(df["bias"], df["oblivious"] - df["expected"], atol=0)


def test_truncated_tie_flag():
    qrels = {q: {"a": 1} for q in ("full_tied", "full_untied", "short_tied", "one_doc", "lone")}
    run = {
        "full_tied": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 1.0},  # depth 4, last two tied -> flag
        "full_untied": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5},  # tie not at the end
        "short_tied": {"a": 1.0, "b": 1.0, "c": 1.0},  # tied but shorter than the depth
        "one_doc": {"a": 1.0},
        "lone": {"a": 2.0, "b": 1.0, "c": 0.0, "d": 0.0},  # depth 4, last two tied -> flag
    }
    res = evaluate_dicts(qrels, run, ["P@1"])
    flags = dict(zip(res.queries, res.truncated_tie.tolist()))
    assert flags == {"full_tied": True, "full_untied": False, "short_tied": False,
                     "one_doc": False, "lone": True}
    assert res.truncated_tie_queries == 2 == res.to_dict()["truncated_tie_queries"]
    res3 = evaluate_arrays(from_dicts(qrels, run)[0], ["P@1"], depth=3)
    assert dict(zip(res3.queries, res3.truncated_tie.tolist()))["short_tied"] is True


def test_tie_stats_hand_example():
    # q1: scores 3 | 2 2 2 | 1 1  -> groups of 1, 3, 2 ; q2: 5 4 3 2 (no ties)
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 2.0, "d": 2.0, "e": 1.0, "f": 1.0},
           "q2": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0}}
    res = evaluate_dicts(qrels, run, ["P@1", "P@2", "P@5"], whole_list_audit=True)
    s1 = res.tie_stats(1)  # top-1: q1 group {a}, q2 group {a}
    assert s1 == {"tied_query_share": 0.0, "mean_tie_group_size": 1.0, "max_tie_group_size": 1,
                  "distinct_scores_per_query": 3.5}
    s2 = res.tie_stats(2)  # q1: groups of 1 and 3 reach the top 2; q2: two singletons
    assert s2["tied_query_share"] == 0.5
    assert s2["mean_tie_group_size"] == pytest.approx((1 + 3 + 1 + 1) / 4)
    assert s2["max_tie_group_size"] == 3
    s5 = res.tie_stats(5)  # q1: all three groups (6 docs); q2: four singletons
    assert s5["mean_tie_group_size"] == pytest.approx((6 + 4) / (3 + 4))
    sall = res.tie_stats()
    assert sall["mean_tie_group_size"] == pytest.approx(10 / 7)
    assert sall["max_tie_group_size"] == 3
    with pytest.raises(InputError):
        res.tie_stats(7)
    assert set(res.to_dict()["tie_audit"]) == {"all", "1", "2", "5"}
    assert "7" in evaluate_dicts(qrels, run, ["P@1"], tie_cutoffs=[7]).to_dict()["tie_audit"]
    # the whole-list audit (a sort of every whole row) runs only when asked for
    plain = evaluate_dicts(qrels, run, ["P@1", "P@2", "P@5"])
    assert set(plain.to_dict()["tie_audit"]) == {"1", "2", "5"}
    assert plain.tie_stats(2) == {k: v for k, v in s2.items() if k != "distinct_scores_per_query"}
    with pytest.raises(InputError, match="whole_list_audit=True"):
        plain.tie_stats()


@pytest.mark.parametrize("measures", [MEASURES, ["nDCG@3", "RR@5", "P@2"], ["AP", "RR"]])
def test_chunk_size_invariance(measures):
    qrels, run = tied_collection(seed=3, n_queries=60, max_docs=60)
    run["empty"], qrels["empty"] = {}, {"x": 1}
    arrays, left_out = from_dicts(qrels, run)
    ref = evaluate_arrays(arrays, measures, chunk_size=10**6, left_out=left_out)
    for chunk in (1, 7, 59):
        res = evaluate_arrays(arrays, measures, chunk_size=chunk, left_out=left_out)
        assert res.queries == ref.queries
        np.testing.assert_array_equal(res.truncated_tie, ref.truncated_tie)
        for m in measures:
            for key in ("expected", "min", "max", "oblivious"):
                np.testing.assert_array_equal(res[m].values[key], ref[m].values[key],
                                              err_msg=f"{m} {key} chunk={chunk}")
        assert res.to_dict(per_query=True) == ref.to_dict(per_query=True)


def test_matrices_chunk_size_invariance():
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 5, size=(50, 30)).astype(np.float64)
    rel = rng.integers(0, 3, size=(50, 30))
    mask = rng.random((50, 30)) < 0.8
    a = evaluate_matrices(scores, rel, MEASURES, mask=mask, chunk_size=1)
    b = evaluate_matrices(scores, rel, MEASURES, mask=mask, chunk_size=4096)
    for m in MEASURES:
        for key in ("expected", "min", "max", "oblivious"):
            np.testing.assert_array_equal(a[m].values[key], b[m].values[key])


def test_left_out_is_reported():
    qrels = {"a": {"d": 1}, "b": {"d": 1}}
    run = {"a": {"d": 1.0}, "c": {"d": 1.0}}
    res = evaluate_dicts(qrels, run, ["P@1"])
    assert res.queries == ("a",)
    assert res.left_out["queries_only_in_run"] == ["c"]
    assert res.left_out["queries_only_in_qrels"] == ["b"]
    assert res.to_dict()["left_out"]["queries_only_in_qrels"] == 1
    zero = evaluate_dicts(qrels, run, ["P@1"], missing="zero")
    assert zero.queries == ("a", "b") and zero["P@1"].expected == 0.5
    assert zero.left_out["queries_scored_zero"] == ["b"]


def test_table_renders(result):
    text = result.table()
    for name in MEASURES:
        assert name in text
    assert "queries" in text and "queries with tied scores: " in text
    assert "truncated_tie_queries" not in text and "top-all" not in text  # no jargon


# -- the tie audit and the truncated-tie flag against a pure-Python reference ---------------------

def _ref_audit(batch, k):
    groups, docs, maxes = 0, 0, []
    for q in batch:
        gs = tie_groups_of(q.docs, q.scores)
        seen, reach = 0, []
        for g in gs:
            if k is not None and seen >= k:
                break
            reach.append(len(g))
            seen += len(g)
        groups += len(reach)
        docs += sum(reach)
        maxes.append(max(reach, default=0))
    return {"tied_query_share": float(np.mean([m >= 2 for m in maxes])),
            "mean_tie_group_size": docs / groups if groups else 0.0,
            "max_tie_group_size": max(maxes, default=0),
            "distinct_scores_per_query": float(np.mean([len(tie_groups_of(q.docs, q.scores))
                                                        for q in batch]))}


@fixed(150)
@given(batch=st.lists(queries(), min_size=1, max_size=5).filter(lambda b: any(q.docs for q in b)),
       ks=st.sets(st.integers(1, 9), min_size=1, max_size=3), whole=st.booleans(),
       chunk=st.sampled_from([1, 2, 256]), kernel=st.sampled_from(["numpy", "compiled"]))
def test_tie_audit_and_truncated_flag_reference(batch, ks, whole, chunk, kernel):
    qrels, run = to_dicts(batch)
    measures = [f"P@{k}" for k in sorted(ks)] + (["AP"] if whole else [])
    res = evaluate_dicts(qrels, run, measures, missing="zero", chunk_size=chunk, kernel=kernel,
                         whole_list_audit=True)
    order = [res.queries.index(f"q{i}") for i in range(len(batch))]
    depth = max(len(q.docs) for q in batch)
    want_flags = [len(q.docs) == depth and len(q.docs) >= 2
                  and sorted(q.scores)[0] == sorted(q.scores)[1] for q in batch]
    assert res.truncated_tie[order].tolist() == want_flags
    for k in sorted(ks) + [None]:
        got, want = res.tie_stats(k), _ref_audit(batch, k)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], abs=1e-12), (k, key, got, want)


def test_confidence_interval_unpacks_like_scipys():
    from mteb_stratified.core import ConfidenceInterval

    lo, hi = ConfidenceInterval(0.1, 0.4)
    assert (lo, hi) == (0.1, 0.4) and ConfidenceInterval(0.1, 0.4)[1] == 0.4
    assert tuple(ConfidenceInterval(0.1, 0.4)) == (0.1, 0.4)
