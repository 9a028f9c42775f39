"""Fuzz the MTEB results readers: any content of a results JSON or a per-query CSV gives a
well-formed result or an InputError, never another exception.  Inputs that once crashed a
reader are kept in fuzz_corpus/mteb_results/ and replayed."""

import json
import math
import os
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mteb_stratified.core.errors import InputError
from mteb_stratified.io.mteb_results import (PER_QUERY_KEYS, check_matches_results,
                                             find_per_query, load_task_result,
                                             read_per_query_csv)

CORPUS = os.path.join(os.path.dirname(__file__), "fuzz_corpus", "mteb_results")
FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
COLUMNS = ["model", "revision", "hf_subset", "hf_split", "qid", "measure", *PER_QUERY_KEYS]
CELLS = st.one_of(st.sampled_from(["", "0", "0.5", "1", "-1", "nan", "inf", "1e309", "x", "q1",
                                   "nDCG@10", "RR@10", "test", "default", '"', "a,b", "\n",
                                   "\x00", "\ufeff", "\r"]),
                  st.text(max_size=8))
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=12)
TASK_RESULT = st.fixed_dictionaries(
    {"task_name": st.one_of(st.just("T"), JSON),
     "scores": st.one_of(JSON, st.dictionaries(st.sampled_from(["test", "dev"]),
                                               st.one_of(JSON, st.lists(st.dictionaries(
                                                   st.sampled_from(["ndcg_at_10_expected",
                                                                    "main_score"]), JSON))),
                                               max_size=2))})


def _check_per_query(values):
    """A result of read_per_query_csv is well-formed: every key over the same queries, finite,
    min <= expected <= max."""
    qids = set(values["expected"])
    assert qids and all(set(values[k]) == qids for k in PER_QUERY_KEYS)
    for q in qids:
        v = {k: values[k][q] for k in PER_QUERY_KEYS}
        assert all(math.isfinite(x) for x in v.values())
        assert v["min"] - 1e-9 <= v["expected"] <= v["max"] + 1e-9


def _read_json(path):
    try:
        data = load_task_result(path)
    except InputError:
        return
    assert isinstance(data["task_name"], str) and isinstance(data["scores"], dict)
    try:
        check_matches_results({"expected": {"q": 0.5}}, data, "ndcg_at_10", split="test",
                              per_query_path="pq.csv", results_path=str(path))
        find_per_query(path, data["task_name"])
    except InputError:
        pass


def _read_csv(path):
    try:
        _check_per_query(read_per_query_csv(path, split="test"))
    except InputError:
        pass


def _write(folder, name, content: bytes):
    path = os.path.join(folder, name)
    with open(path, "wb") as fh:
        fh.write(content)
    return path


@FUZZ
@given(st.one_of(st.binary(max_size=200), TASK_RESULT.map(lambda d: json.dumps(d).encode())))
def test_fuzz_results_json(content):
    with tempfile.TemporaryDirectory() as folder:
        _read_json(_write(folder, "T.json", content))


@FUZZ
@given(st.one_of(st.binary(max_size=200),
                 st.lists(st.lists(CELLS, min_size=0, max_size=len(COLUMNS) + 2), max_size=6)
                 .map(lambda rows: "\n".join([",".join(COLUMNS)] + [",".join(r) for r in rows])
                      .encode("utf-8", "surrogatepass"))))
def test_fuzz_per_query_csv(content):
    with tempfile.TemporaryDirectory() as folder:
        _read_csv(_write(folder, "T_per_query.csv", content))


@pytest.mark.parametrize("name", sorted(os.listdir(CORPUS)))
def test_fuzz_corpus_replays(name):
    """Each kept input: InputError or a well-formed result, never another exception."""
    path = os.path.join(CORPUS, name)
    (_read_json if name.endswith(".json") else _read_csv)(path)


NUMBERISH = st.text(alphabet="0123456789.eE+-_ \t\u0664\u00b2naifNIF", min_size=1, max_size=8)


def _accepts(read, path):
    try:
        return read(path)
    except InputError:
        return None


@FUZZ
@given(NUMBERISH)
@example("0.4_5")
@example("\u0664")
@example("1e400")
def test_per_query_numbers_are_the_trec_grammar(text):
    """One grammar for every file: a per-query CSV value is accepted exactly when a TREC run
    accepts it as a score, and both read the same float (``0.4_5`` was read as 0.45 here and
    refused there)."""
    from mteb_stratified.io.files import read_run

    cell = text.strip(" \t")
    if not cell or " " in cell or "\t" in cell:
        return  # a blank inside a TREC field splits it: not the same question
    with tempfile.TemporaryDirectory() as folder:
        csv_path = _write(folder, "T_per_query.csv", (
            "hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias\n"
            f"default,test,q1,nDCG@10,{cell},{cell},{cell},{cell},0,0\n").encode())
        run_path = _write(folder, "run.trec", f"q1 Q0 d1 1 {cell} tag\n".encode())
        got = _accepts(lambda p: read_per_query_csv(p, split="test")["expected"]["q1"], csv_path)
        want = _accepts(lambda p: read_run(p)["q1"]["d1"], run_path)
    assert got == want, f"{cell!r}: per-query CSV reads {got}, the TREC run reader {want}"
