"""Expected / min / max against brute-force enumeration of every order of every tie group.

For each query (n <= 8 candidates, scores from a tiny set so ties are heavy, grades 0..3 with
unjudged candidates and judged documents that were not retrieved), every ordering of each tie
group's members is enumerated (``itertools.permutations`` per group, ``itertools.product`` across
groups) and each measure is computed by the independent pure-Python reference of
``_reference.py``.  The core's expected must equal the mean over all orderings, its min / max
the min / max over them, to 1e-12.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import evaluate_dicts, evaluate_matrices

from .._reference import Query, RefMeasure, brute_force, ref_value, trec_eval_ranking
from .._strategies import fixed, queries, to_dicts

TOL = 1e-12
KS = range(1, 10)


def measure_list(rel: int) -> list[RefMeasure]:
    ms: list[RefMeasure] = []
    for k in KS:
        ms += [RefMeasure("nDCG", k), RefMeasure("nDCG", k, dcg="exp-log2")]
        ms += [RefMeasure(name, k) for name in ("RR", "R", "P", "AP", "Success")]
        ms += [RefMeasure(name, k, rel=rel) for name in ("RR", "R", "P", "AP", "Success")]
    ms += [RefMeasure("nDCG"), RefMeasure("nDCG", dcg="exp-log2"), RefMeasure("RR"),
           RefMeasure("AP"), RefMeasure("RR", rel=rel), RefMeasure("AP", rel=rel)]
    return ms


def _mismatches(res, batch, ms, level, ideal, qids=None):
    """(query, measure, key, core, brute force) for every disagreement beyond 1e-12."""
    qids = qids or [f"q{i}" for i in range(len(batch))]
    bad = []
    for qid, q in zip(qids, batch):
        row = res.queries.index(qid)
        exp, lo, hi = brute_force(q, ms, level, ideal)
        for j, m in enumerate(ms):
            vals = res[m.text()].values
            for key, want in (("expected", exp[j]), ("min", lo[j]), ("max", hi[j])):
                got = float(vals[key][row])
                if not abs(got - want) <= TOL:
                    bad.append((qid, m.text(), key, got, want))
    return bad


# at least one query retrieves something (an all-empty run is an input error)
batches = st.lists(queries(), min_size=1, max_size=4).filter(lambda b: any(q.docs for q in b))
ZERO = dict(missing="zero")  # queries with an empty ranking stay in, on no candidates


@st.composite
def measure_subsets(draw):
    """A random set of measures: random cutoffs, with or without whole-list measures (the
    core trims its arrays when every measure has a cutoff), random families and rel levels."""
    rel = draw(st.sampled_from([0, 1, 2, 3]))
    full = measure_list(rel)
    ks = draw(st.sets(st.integers(1, 9), min_size=1, max_size=9))
    whole = draw(st.booleans())
    fams = draw(st.sets(st.sampled_from(["nDCG", "nDCG-exp", "RR", "R", "P", "AP", "Success",
                                         "rel"]), min_size=1))

    def family(m):
        if m.name == "nDCG":
            return "nDCG-exp" if m.dcg != "log2" else "nDCG"
        return "rel" if m.rel is not None else m.name

    ms = [m for m in full if (m.k in ks or (m.k is None and whole)) and family(m) in fams]
    return ms or [RefMeasure("RR", min(ks))]


@fixed(150)
@given(batch=batches, level=st.sampled_from([1, 2]), ideal=st.sampled_from(["qrels", "candidates"]),
       rel=st.sampled_from([0, 1, 2, 3]))
def test_expected_min_max_equal_brute_force(batch, level, ideal, rel):
    """Every measure, k = 1..9 and no cutoff, against the enumeration."""
    qrels, run = to_dicts(batch)
    ms = measure_list(rel)
    res = evaluate_dicts(qrels, run, [m.text() for m in ms], relevance_level=level, ideal=ideal,
                         **ZERO)
    assert sorted(res.queries) == sorted(qrels)
    bad = _mismatches(res, batch, ms, level, ideal)
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]} for {batch}"


@fixed(150)
@given(batch=batches, ms=measure_subsets(), level=st.sampled_from([1, 2]),
       ideal=st.sampled_from(["qrels", "candidates"]), chunk=st.sampled_from([1, 2, 256]))
def test_measure_subsets_equal_brute_force(batch, ms, level, ideal, chunk):
    """Random subsets of measures and cutoffs (so the core's shortcuts for cutoff-only
    requests and for single families are exercised) and chunk sizes."""
    qrels, run = to_dicts(batch)
    res = evaluate_dicts(qrels, run, [m.text() for m in ms], relevance_level=level, ideal=ideal,
                         chunk_size=chunk, **ZERO)
    bad = _mismatches(res, batch, ms, level, ideal)
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]} for {batch}"


@fixed(100)
@given(batch=batches, level=st.sampled_from([1, 2]), rel=st.sampled_from([0, 2]))
def test_bounds_and_oblivious_reference(batch, level, rel):
    """min <= expected <= max; oblivious equals the reference trec_eval order and the input order
    and both lie within [min, max]."""
    qrels, run = to_dicts(batch)
    ms = measure_list(rel)
    names = [m.text() for m in ms]
    res = evaluate_dicts(qrels, run, names, relevance_level=level, **ZERO)
    res_in = evaluate_dicts(qrels, run, names, relevance_level=level, oblivious="input", **ZERO)
    assert res.queries == res_in.queries
    for qi, q in enumerate(batch):
        i = res.queries.index(f"q{qi}")
        qg = list(q.qrels.values())
        cg = [q.grade(d) for d in q.docs]
        te = [q.grade(d) for d in trec_eval_ranking(q.docs, q.scores)]
        order = sorted(range(len(q.docs)), key=lambda j: -q.scores[j])  # stable: input order
        inp = [q.grade(q.docs[j]) for j in order]
        for m, name in zip(ms, names):
            v = {key: float(res[name].values[key][i]) for key in ("expected", "min", "max", "oblivious")}
            assert v["min"] - TOL <= v["expected"] <= v["max"] + TOL, (name, v)
            assert v["min"] - TOL <= v["oblivious"] <= v["max"] + TOL, (name, v)
            assert abs(v["oblivious"] - ref_value(m, te, qg, cg, level)) <= TOL, (name, i, q)
            got_in = float(res_in[name].values["oblivious"][i])
            assert abs(got_in - ref_value(m, inp, qg, cg, level)) <= TOL, (name, i, q)
            assert got_in >= v["min"] - TOL and got_in <= v["max"] + TOL


@fixed(60)
@given(batch=batches, seed=st.integers(0, 2**32 - 1), level=st.sampled_from([1, 2]))
def test_relabelling_doc_ids_changes_nothing(batch, seed, level):
    qrels, run = to_dicts(batch)
    ids = sorted({d for q in qrels.values() for d in q} | {d for r in run.values() for d in r})
    shuffled = ids[:]
    random.Random(seed).shuffle(shuffled)
    relabel = dict(zip(ids, shuffled))
    qrels2 = {q: {relabel[d]: g for d, g in docs.items()} for q, docs in qrels.items()}
    run2 = {q: {relabel[d]: s for d, s in docs.items()} for q, docs in run.items()}
    names = [m.text() for m in measure_list(2)]
    a = evaluate_dicts(qrels, run, names, relevance_level=level, **ZERO)
    b = evaluate_dicts(qrels2, run2, names, relevance_level=level, **ZERO)
    assert a.queries == b.queries
    for name in names:
        for key in ("expected", "min", "max"):
            np.testing.assert_allclose(a[name].values[key], b[name].values[key], rtol=0, atol=TOL,
                                       err_msg=f"{name} {key}")


@fixed(60)
@given(batch=st.lists(queries(distinct_scores=True), min_size=1, max_size=4).filter(
           lambda b: any(q.docs for q in b)),
       level=st.sampled_from([1, 2]), ideal=st.sampled_from(["qrels", "candidates"]))
def test_no_ties_all_four_values_agree(batch, level, ideal):
    qrels, run = to_dicts(batch)
    ms = measure_list(3)
    res = evaluate_dicts(qrels, run, [m.text() for m in ms], relevance_level=level, ideal=ideal,
                         **ZERO)
    for qi, q in enumerate(batch):
        i = res.queries.index(f"q{qi}")
        ranked = [q.grade(d) for d in sorted(q.docs, key=lambda d: -q.scores[q.docs.index(d)])]
        for m in ms:
            vals = res[m.text()].values
            want = ref_value(m, ranked, list(q.qrels.values()), [q.grade(d) for d in q.docs],
                             level, ideal)
            for key in ("expected", "min", "max", "oblivious"):
                assert abs(float(vals[key][i]) - want) <= TOL, (m.text(), key, q)
            assert vals["expected"][i] == vals["min"][i] == vals["max"][i] == vals["oblivious"][i]


@fixed(60)
@given(batch=st.lists(queries(max_extra_judged=0), min_size=1, max_size=4),
       level=st.sampled_from([1, 2]), ideal=st.sampled_from(["qrels", "candidates"]),
       data=st.data())
def test_matrices_input_equals_brute_force(batch, level, ideal, data):
    """The arrays path (padded, masked matrices; unjudged = grade 0 in the relevance matrix,
    which is also the query's full set of judgments) against the same brute force."""
    width = max(len(q.docs) for q in batch)
    if width == 0:
        return
    scores = np.zeros((len(batch), width))
    rel = np.zeros((len(batch), width))
    mask = np.zeros((len(batch), width), dtype=bool)
    fixed_batch = []
    for i, q in enumerate(batch):
        cols = data.draw(st.permutations(range(width)))[:len(q.docs)]  # masked holes anywhere
        qrels = {}
        for c, d, s in zip(cols, q.docs, q.scores):
            scores[i, c] = s
            rel[i, c] = q.qrels.get(d, 0)
            mask[i, c] = True
            qrels[d] = q.qrels.get(d, 0)
        fixed_batch.append(Query(q.docs, q.scores, qrels))
    ms = measure_list(2)
    res = evaluate_matrices(scores, rel, [m.text() for m in ms], mask=mask,
                            relevance_level=level, ideal=ideal)
    bad = _mismatches(res, fixed_batch, ms, level, ideal, qids=[str(i) for i in range(len(batch))])
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


def test_worked_example_by_hand():
    """One tie group of 3 (one relevant) after a relevant document: E[RR] is 1 (first rank),
    E[P@2] = (1 + 1/3) / 2, E[AP] = (1 + E[2/rank of 2nd rel]) / 2 with rank 2, 3, 4 equally likely."""
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0, "c": 1.0, "d": 1.0}}
    res = evaluate_dicts(qrels, run, ["RR", "P@2", "AP", "R@2"])
    assert res["RR"].expected == 1.0
    assert abs(res["P@2"].expected - (1 + 1 / 3) / 2) < TOL
    assert abs(res["AP"].expected - (1 + (2 / 2 + 2 / 3 + 2 / 4) / 3) / 2) < TOL
    assert res["AP"].min == (1 + 2 / 4) / 2 and res["AP"].max == 1.0
    assert abs(res["R@2"].expected - (1 + 1 / 3) / 2) < TOL


def test_one_group_of_eight_all_orderings():
    """All 8 candidates tied (8! = 40320 orderings), every grade present, plus a judged document
    that was not retrieved."""
    q = Query(tuple(f"c{i}" for i in range(8)), (0.5,) * 8,
              {"c0": 3, "c1": 0, "c2": 2, "c4": 1, "c5": 2, "c7": 1, "j0": 3})
    ms = measure_list(2)
    for level, ideal in ((1, "qrels"), (2, "candidates")):
        res = evaluate_dicts(*to_dicts([q]), [m.text() for m in ms], relevance_level=level,
                             ideal=ideal)
        bad = _mismatches(res, [q], ms, level, ideal)
        assert not bad, bad[:5]
