"""Differential tests against pytrec_eval (trec_eval's C code).

* no ties (also none in float32): expected = min = max = oblivious = pytrec_eval, to 1e-12;
* heavy ties: oblivious = pytrec_eval (its order: float32 score descending, doc id descending);
* scores that differ only below float32 resolution tie in pytrec_eval: oblivious still matches;
* relevance_level=2, queries with no relevant document, run-only / qrels-only queries, and
  ``missing="zero"`` (``trec_eval -c``).

RR@k has no trec_eval measure: it is compared with ``recip_rank`` on the run cut to its top k
in trec_eval's order.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import evaluate_dicts

from .._reference import float32
from .._strategies import fixed, queries

TOL = 1e-12
KS = (1, 3, 5, 10, 20, 50, 100)
ALPHABET = list("abcxyzABZ0189_-.é中ßÅ")
KEYS = ("expected", "min", "max", "oblivious")


def _pte_measures(ks):
    cut = ",".join(map(str, ks))
    return {f"ndcg_cut.{cut}", "ndcg", f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", "map",
            "recip_rank", f"success.{cut}"}


def _ours_to_pte(ks, whole=True):
    pairs = {"nDCG": "ndcg", "AP": "map", "RR": "recip_rank"} if whole else {}
    for k in ks:
        pairs.update({f"nDCG@{k}": f"ndcg_cut_{k}", f"P@{k}": f"P_{k}", f"R@{k}": f"recall_{k}",
                      f"AP@{k}": f"map_cut_{k}", f"Success@{k}": f"success_{k}"})
    return pairs


def _top_k(run, k):
    """The run cut to its top k in trec_eval's order (float32 score desc, doc id desc)."""
    out = {}
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda ds: (float32(ds[1]), ds[0].encode("utf-8")),
                        reverse=True)
        out[q] = dict(ranked[:k])
    return out


def pytrec_values(qrels, run, ks, level=1, drop_empty=True):
    """{qid: {our measure name: value}} from pytrec_eval, RR@k included.

    ``drop_empty``: leave out run queries with an empty dict, as a run *file* would (pytrec_eval
    itself keeps them, with 0 everywhere: see test_empty_ranking_of_a_query)."""
    if drop_empty:
        run = {q: docs for q, docs in run.items() if docs}
    ev = pytrec_eval.RelevanceEvaluator(qrels, _pte_measures(ks), relevance_level=level)
    raw = ev.evaluate(run)
    out = {q: {ours: vals[theirs] for ours, theirs in _ours_to_pte(ks).items()}
           for q, vals in raw.items()}
    for k in ks:
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=level)
        for q, vals in rr.evaluate(_top_k(run, k)).items():
            out[q][f"RR@{k}"] = vals["recip_rank"]
    return out


def compare(res, ref, keys):
    """Every per-query value of ``keys`` equals pytrec_eval's (for the measures evaluated);
    returns the mismatches."""
    assert set(res.queries) == set(ref), (sorted(res.queries), sorted(ref))
    evaluated = {repr(m) for m in res.measures}
    bad = []
    for i, q in enumerate(res.queries):
        for name, want in ref[q].items():
            if name not in evaluated:
                continue
            for key in keys:
                got = float(res[name].values[key][i])
                if not abs(got - want) <= TOL:
                    bad.append((q, name, key, got, want))
    return bad


def names_for(ks, whole=True):
    """Our names of the compared measures; ``whole=False``: cutoff measures only (the core
    then trims its arrays to the deepest cutoff: a separate code path)."""
    return list(_ours_to_pte(ks, whole)) + [f"RR@{k}" for k in ks]


# -- random data (seeded numpy) ----------------------------------------------------------------

def _doc_ids(rng, n):
    ids = set()
    while len(ids) < n:
        ids.add("".join(rng.choice(ALPHABET, size=rng.integers(1, 7))))
    ids = sorted(ids)
    rng.shuffle(ids)
    return ids


def random_collection(seed, n_queries=30, max_docs=50, scores="distinct", max_grade=3,
                      min_grade=0):
    """qrels/run dicts: candidates partly judged (grades min_grade..max_grade), judged documents
    not retrieved, a few queries with only grade-0 judgments, a run-only and a qrels-only query."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for qi in range(n_queries):
        q = f"q{qi}"
        n = int(rng.integers(1, max_docs + 1))
        ids = _doc_ids(rng, n + 5)
        docs, extra = ids[:n], ids[n:n + int(rng.integers(0, 6))]
        if scores == "distinct":  # distinct in float32 too; half of them not float32-exact
            vals = rng.permutation(10 * max_docs)[:n] / 7.0
            if qi % 2:
                vals = vals.astype(np.float32).astype(np.float64)
        elif scores == "ties":
            vals = rng.integers(0, 4, size=n) / 4.0
        elif scores == "float32-ties":  # equal in float32, different in float64
            vals = np.array([0.1, 0.1 + 1e-9, 0.2, 0.2 + 1e-9, 0.2 - 1e-10])[rng.integers(0, 5, n)]
        else:
            raise ValueError(scores)
        run[q] = {d: float(s) for d, s in zip(docs, vals)}
        no_relevant = qi % 7 == 3
        judged = {}
        for d in docs:
            if rng.random() < 0.6:
                judged[d] = 0 if no_relevant else int(rng.integers(min_grade, max_grade + 1))
        for d in extra:
            judged[d] = 0 if no_relevant else int(rng.integers(min_grade, max_grade + 1))
        if not judged:
            judged[ids[-1]] = 0 if no_relevant else 1
        qrels[q] = judged
    run["run_only"] = {"a": 1.0, "b": 0.5}
    qrels["qrels_only"] = {"a": 1, "z": 2}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("whole", [True, False])
def test_no_ties_every_value_equals_pytrec_eval(seed, level, whole):
    qrels, run = random_collection(seed, scores="distinct")
    res = evaluate_dicts(qrels, run, names_for(KS, whole), relevance_level=level)
    bad = compare(res, pytrec_values(qrels, run, KS, level), KEYS)
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
    assert res.truncated_tie_queries == 0
    assert res.left_out["queries_only_in_run"] == ["run_only"]
    assert res.left_out["queries_only_in_qrels"] == ["qrels_only"]


@pytest.mark.parametrize("seed", [10, 11, 12])
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("whole", [True, False])
def test_ties_oblivious_equals_pytrec_eval(seed, level, whole):
    qrels, run = random_collection(seed, scores="ties")
    res = evaluate_dicts(qrels, run, names_for(KS, whole), relevance_level=level)
    bad = compare(res, pytrec_values(qrels, run, KS, level), ("oblivious",))
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
    # the data really has ties that matter
    assert any(res[n].range > 0 for n in names_for(KS, whole))


@pytest.mark.parametrize("seed", [20, 21])
@pytest.mark.parametrize("whole", [True, False])
def test_float32_ties_oblivious_equals_pytrec_eval(seed, whole):
    qrels, run = random_collection(seed, scores="float32-ties")
    res = evaluate_dicts(qrels, run, names_for(KS, whole))
    bad = compare(res, pytrec_values(qrels, run, KS), ("oblivious",))
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


def test_float32_tie_minimal():
    """0.1 and 0.1 + 1e-9 are one float32: pytrec_eval ranks by doc id descending there ('b'
    before 'a'), while the tie-aware values see two distinct float64 scores."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 0.1 + 1e-9, "b": 0.1}}
    res = evaluate_dicts(qrels, run, ["P@1", "RR"])
    ref = pytrec_values(qrels, run, (1,))
    assert ref["q"]["P@1"] == 0.0 and ref["q"]["RR"] == 0.5
    assert res["P@1"].oblivious == 0.0 and res["RR"].oblivious == 0.5
    # float64 order: a strictly first -> no tie for the exact values
    assert res["P@1"].expected == res["P@1"].min == res["P@1"].max == 1.0
    assert res["RR"].expected == 1.0


def test_queries_without_relevant_documents_score_zero_like_pytrec_eval():
    qrels = {"q1": {"a": 0, "b": 0}, "q2": {"a": 1}, "q3": {"x": 0}}
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 0.5}, "q2": {"a": 0.3, "b": 0.3}, "q3": {"c": 2.0}}
    names = names_for((1, 3, 10))
    res = evaluate_dicts(qrels, run, names)
    ref = pytrec_values(qrels, run, (1, 3, 10))
    assert set(ref) == {"q1", "q2", "q3"}  # pytrec_eval keeps them
    assert not compare(res, ref, ("oblivious",))
    for name in names:
        for q in ("q1", "q3"):
            v = res[name].query(q)
            assert (v.expected, v.min, v.max, v.oblivious) == (0.0, 0.0, 0.0, 0.0), (name, q)
    assert res.settings["queries_without_relevant"] == 2
    # and they count in the mean like in trec_eval
    for name in names:
        assert abs(res[name].oblivious - np.mean([ref[q][name] for q in ref])) <= TOL


def test_empty_ranking_of_a_query():
    """An empty run dict has no line in a run file: trec_eval does not know the query, so it is
    left out and reported (``missing="zero"`` scores it 0).  pytrec_eval, fed the dict, keeps it
    with 0 on every measure: the ``missing="zero"`` values equal pytrec_eval's."""
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": {}, "q2": {"a": 1.0}}
    ref = pytrec_values(qrels, run, (1, 5), drop_empty=False)
    assert set(ref) == {"q1", "q2"} and all(v == 0 for v in ref["q1"].values())
    res = evaluate_dicts(qrels, run, names_for((1, 5)))
    assert res.queries == ("q2",)
    assert res.left_out["queries_only_in_qrels"] == ["q1"]
    assert not compare(res, {"q2": ref["q2"]}, KEYS)
    zero = evaluate_dicts(qrels, run, names_for((1, 5)), missing="zero")
    assert zero.left_out["queries_scored_zero"] == ["q1"]
    assert not compare(zero, ref, KEYS)


def test_query_with_empty_qrels_is_not_in_the_qrels():
    """A query whose qrels dict is empty has no judgment: trec_eval never sees it and pytrec_eval
    leaves it out; so do we (reported as run-only)."""
    qrels = {"q1": {"a": 1}, "q2": {}}
    run = {"q1": {"a": 1.0}, "q2": {"a": 1.0}}
    ref = pytrec_values(qrels, run, (1,))
    assert set(ref) == {"q1"}
    res = evaluate_dicts(qrels, run, names_for((1,)))
    assert res.queries == ("q1",)
    assert res.left_out["queries_only_in_run"] == ["q2"]


@pytest.mark.parametrize("scores", ["distinct", "ties"])
def test_missing_zero_is_trec_eval_c(scores):
    """``missing="zero"``: qrels queries absent from the run count as 0 in the mean (-c)."""
    qrels, run = random_collection(5, n_queries=12, scores=scores)
    for q in ("q3", "q4"):
        del run[q]
    ref = pytrec_values(qrels, run, KS)
    judged_queries = [q for q in qrels if qrels[q]]
    res = evaluate_dicts(qrels, run, names_for(KS), missing="zero")
    assert set(res.left_out["queries_scored_zero"]) == {"q3", "q4", "qrels_only"}
    assert len(res.queries) == len(judged_queries)
    for name in names_for(KS):
        want = sum(ref[q][name] for q in ref) / len(judged_queries)
        assert abs(res[name].oblivious - want) <= TOL, name
        for key in KEYS:
            assert res[name].query("q3").__getattribute__(key) == 0.0
    skip = evaluate_dicts(qrels, run, names_for(KS))
    assert set(skip.left_out["queries_only_in_qrels"]) == {"q3", "q4", "qrels_only"}
    assert set(skip.queries) == set(ref)


# -- small cases (hypothesis) ------------------------------------------------------------------

@st.composite
def small_collections(draw, distinct=False):
    # no negative grades here: pytrec_eval can hang on later calls once it has seen one
    # (test_negative_grades_like_pytrec_eval checks them in a fresh process)
    batch = draw(st.lists(queries(distinct_scores=distinct, grades=(0, 1, 2, 3)), min_size=1,
                          max_size=4).filter(
        lambda b: any(q.docs for q in b)))
    qrels, run = {}, {}
    for i, q in enumerate(batch):
        names = sorted({d for d in q.docs} | set(q.qrels))
        ids = draw(st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=3),
                            min_size=len(names), max_size=len(names), unique=True))
        rename = dict(zip(names, ids))
        qrels[f"q{i}"] = {rename[d]: g for d, g in q.qrels.items()}
        run[f"q{i}"] = {rename[d]: s for d, s in zip(q.docs, q.scores)}
    return qrels, run


SMALL_KS = (1, 2, 3, 5, 8, 9)


@fixed(80)
@given(data=small_collections(), level=st.sampled_from([1, 2]), whole=st.booleans())
def test_small_tied_cases_oblivious_equals_pytrec_eval(data, level, whole):
    qrels, run = data
    res = evaluate_dicts(qrels, run, names_for(SMALL_KS, whole), relevance_level=level)
    bad = compare(res, pytrec_values(qrels, run, SMALL_KS, level), ("oblivious",))
    assert not bad, bad[:5]


@fixed(60)
@given(data=small_collections(distinct=True), level=st.sampled_from([1, 2]), whole=st.booleans())
def test_small_untied_cases_all_values_equal_pytrec_eval(data, level, whole):
    qrels, run = data
    res = evaluate_dicts(qrels, run, names_for(SMALL_KS, whole), relevance_level=level)
    bad = compare(res, pytrec_values(qrels, run, SMALL_KS, level), KEYS)
    assert not bad, bad[:5]


@pytest.mark.parametrize("scores", [
    [1e-50, -1e-50, 0.0],           # round to +0.0 / -0.0 in float32: trec_eval ties them
    [-1e-50, 1e-50, -0.0],
    [1e-45, 0.7e-45, 2e-45],        # float32 subnormals
    [1e39, 2e39, 1.0],              # overflow to +inf in float32: tied there
    [-1e39, -2e39, -3e39],          # -inf in float32, next to the -inf padding of other rows
    [3.4028234e38, 3.4028235e38, -3.4028235e38],
])
@pytest.mark.parametrize("whole", [True, False])
def test_extreme_scores_oblivious_equals_pytrec_eval(scores, whole):
    docs = ["b", "a", "c"]
    qrels = {"q": {"a": 1, "b": 0, "c": 2}, "long": {"x": 1}}
    run = {"q": dict(zip(docs, scores)), "long": {f"d{i}": 1.0 for i in range(6)} | {"x": 1.0}}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        res = evaluate_dicts(qrels, run, names_for((1, 2, 3), whole))
    bad = compare(res, pytrec_values(qrels, run, (1, 2, 3)), ("oblivious",))
    assert not bad, bad


_NEGATIVE_SCRIPT = """
import json, sys
import pytrec_eval
qrels, run, measures, level = json.load(sys.stdin)
print(json.dumps(pytrec_eval.RelevanceEvaluator(qrels, set(measures),
                                                relevance_level=level).evaluate(run)))
"""


@pytest.mark.parametrize("level", [1, 2])
def test_negative_grades_like_pytrec_eval(level):
    """Grade -1 (judged, non-relevant, gain 0 in trec_eval's nDCG), no ties: every value equals
    pytrec_eval's.  pytrec_eval runs in a fresh process with a timeout, because it can hang on
    later calls in a process where it has seen negative grades."""
    qrels, run = random_collection(42, scores="distinct", min_grade=-2)
    run = {q: d for q, d in run.items() if d}
    measures = sorted(_pte_measures(KS))
    proc = subprocess.run([sys.executable, "-c", _NEGATIVE_SCRIPT],
                          input=json.dumps([qrels, run, measures, level]), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    raw = json.loads(proc.stdout)
    ref = {q: {ours: vals[theirs] for ours, theirs in _ours_to_pte(KS).items()}
           for q, vals in raw.items()}
    res = evaluate_dicts(qrels, run, list(_ours_to_pte(KS)), relevance_level=level)
    assert any(g < 0 for docs in qrels.values() for g in docs.values())
    bad = compare(res, ref, KEYS)
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


def test_cutoff_far_beyond_every_list_costs_nothing_and_matches_pytrec_eval():
    """``P@2000000000`` once tried a (queries x 2e9) allocation (29.8 GiB on a probe); a cutoff
    past the widest list sums only that many columns, and the values stay trec_eval's."""
    rng = np.random.default_rng(5)
    run = {f"q{i}": {f"d{j}": float(rng.normal()) for j in range(60)} for i in range(40)}
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(0, 80, 3)}
             for i in range(40)}
    k = 2_000_000_000
    ours = evaluate_dicts(qrels, run, [f"P@{k}", f"nDCG@{k}", f"R@{k}"])
    pte = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{k}", f"ndcg_cut.{k}", f"recall.{k}"})
    theirs = pte.evaluate(run)
    for q in run:
        row = ours.per_query()[q]
        assert row[f"P@{k}"].expected == pytest.approx(theirs[q][f"P_{k}"], abs=TOL)
        assert row[f"nDCG@{k}"].expected == pytest.approx(theirs[q][f"ndcg_cut_{k}"], abs=TOL)
        assert row[f"R@{k}"].expected == pytest.approx(theirs[q][f"recall_{k}"], abs=TOL)
