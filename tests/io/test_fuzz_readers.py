"""Fuzzing the readers: for any bytes (random, or a valid file mutated), a reader returns
well-formed dicts (finite scores, integer grades within ±MAX_GRADE) or raises InputError, never
another exception; the streaming run reader agrees with the dict one, and the vectorised fast
paths of runs and qrels with their line readers (the differential fuzz, #46.2: one reading of
every byte, with invisible characters, byte-order marks and small blocks, at a fixed budget).
Inputs that once crashed a reader live in ``fuzz_corpus/files/`` and are replayed here."""

import gzip
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mteb_stratified.core import InputError
from mteb_stratified.core.ranking.arrays import MAX_GRADE
from mteb_stratified.io import _vectorised, read_qrels, read_run, write_run
from mteb_stratified.io.beir import read_jsonl
from tests.io.test_run_arrays import same_arrays
from tests.io.test_vectorised_qrels import assert_same_qrels
from tests.io.test_vectorised_readers import assert_same

CORPUS = Path(__file__).parent / "fuzz_corpus" / "files"
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Pieces of real and broken lines, so most examples get past the first checks.
TOKENS = st.sampled_from([
    "q1", "q2", "d1", "d2", "{", "}", '"q1":', '{"d1":', "Q0", "0", "1", "2", "-1", "0.5", "1e3",
    "1e400", "1_0", "nan", "inf", "0x1", "\u0661", "1.5", "#", "query-id", "corpus-id", "score",
    "\ufeff", "\u00a0", "\x1c", "\x85", "[", "]", ",", ":", '"_id"', '"text"', "null", "true",
    "9" * 400, "é", "\t", " ", "  ", "1e1", ".5e1", "1.0", "qid", "docid", "rel"])
LINE = st.lists(st.one_of(TOKENS, st.text(max_size=3)), max_size=8).map(" ".join)
TABBED = LINE.map(lambda s: s.replace(" ", "\t"))
TEXT = st.lists(st.one_of(LINE, TABBED), max_size=6).map("\n".join)
DATA = st.one_of(TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")), st.binary(max_size=200))


def check_table(table, kind):
    assert isinstance(table, dict) and table
    for qid, docs in table.items():
        assert isinstance(qid, str) and isinstance(docs, dict) and docs
        for doc, value in docs.items():
            assert isinstance(doc, str) and not isinstance(value, bool)
            if kind == "score":
                assert math.isfinite(value)
            else:
                assert value == int(value) and abs(value) <= MAX_GRADE


def read_all(path):
    """Every reader on ``path``: each returns a well-formed result or raises InputError."""
    for reader, kind in ((read_run, "score"), (read_qrels, "grade")):
        try:
            check_table(reader(path), kind)
        except InputError as err:
            assert err.source == path and err.fix
    try:
        rows = read_jsonl(path, "row")
        assert all(isinstance(k, str) and isinstance(v, dict) for k, v in rows.items())
    except InputError as err:
        assert err.source == path
    for qrels in ({"q1": {"d1": 1}, "{": {"1": 2}}, RUN_QRELS):
        same_arrays(qrels, path)
        for missing in ("skip", "zero"):
            assert_same(path, qrels, missing=missing)  # fast path == line reader
    assert_same_qrels(path)


# A valid run (ties, a query only in the run) and qrels (a query only in the qrels), mutated.
VALID_RUN = b"".join(f"q{q} Q0 d{d} {d + 1} {(d * 7 % 4) / 2!r} tag\n".encode()
                     for q in range(3) for d in range(5))
VALID_QRELS = b"q0 0 d1 1\nq0 0 d3 2\nq1 0 d0 1\nq1 0 d9 0\nq7 0 d2 1\n"
VALID_BEIR = b"query-id\tcorpus-id\tscore\nq0\td1\t1\nq0\td3\t2\nq1\td0\t1\nq7\td2\t1\n"
VALID = {"run": VALID_RUN, "qrels": VALID_QRELS, "beir": VALID_BEIR}
RUN_QRELS = {"q0": {"d1": 1, "d3": 2}, "q1": {"d0": 1, "d9": 0}, "q7": {"d2": 1}}
INSERTS = [b"nan", b"inf", b"-inf", b"1e400", b"#", b"# c", b"\t", b"\xff", b"\xc3", b"\x00",
           b"  ", b" ", b"\r", b"\r\n", b"\n", b"\xef\xbb\xbf", b"\x0b", b"1_0", b"\xc2\xa0",
           b"q0 Q0 d1 1 0.5 tag\n", b"x y\n",
           # invisible characters: data to both readers, never a separator or a line end
           "\u2028".encode(), "\u0085".encode(), "\u200b".encode(), "\u2003".encode(),
           b"\x1c", b"\x1f", b"\xef\xbb\xbf\xef\xbb\xbf", b"\r\r\n", b"\n# c\n", b"\n  # c\n"]
POS = st.integers(0, 10_000)
MUTATION = st.one_of(
    st.tuples(st.just("flip"), POS, st.integers(0, 255)),
    st.tuples(st.just("cut"), POS, st.just(0)),
    st.tuples(st.just("insert"), POS, st.sampled_from(INSERTS)),
    st.tuples(st.just("insert"), st.sampled_from([0, 3]), st.sampled_from(INSERTS)),  # at the start
    st.tuples(st.just("dup"), POS, st.just(0)),
    st.tuples(st.just("swap"), POS, POS))


def mutate(data: bytes, ops) -> bytes:
    """``data`` after byte flips, truncation, insertions, duplicated and swapped lines."""
    for op, at, arg in ops:
        at %= len(data) + 1
        if op == "flip" and data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([arg]) + data[at + 1:]
        elif op == "cut":
            data = data[:at]
        elif op == "insert":
            data = data[:at] + arg + data[at:]
        elif op in ("dup", "swap"):
            lines = data.splitlines(keepends=True) or [b""]
            i, j = at % len(lines), arg % len(lines)
            if op == "dup":
                lines.insert(i, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = b"".join(lines)
    return data


@FUZZ
@given(which=st.sampled_from(["run", "qrels"]), ops=st.lists(MUTATION, min_size=1, max_size=3),
       gz=st.booleans())
def test_mutated_valid_files(tmp_path, which, ops, gz):
    data = mutate(VALID_RUN if which == "run" else VALID_QRELS, ops)
    path = tmp_path / "input"
    path.write_bytes(gzip.compress(data) if gz else data)
    read_all(str(path))


# The finding of #46.2: two BOMs, with and without a trailing comment (which sends the file to
# the line reader), were read two ways; and a U+FEFF at the start of a later block.
DOUBLE_BOM = [("insert", 0, b"\xef\xbb\xbf\xef\xbb\xbf")]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.sampled_from(sorted(VALID)), ops=st.lists(MUTATION, min_size=1, max_size=4),
       block=st.sampled_from([16, 64, 1 << 22]))
@example(which="run", ops=DOUBLE_BOM, block=1 << 22)
@example(which="run", ops=DOUBLE_BOM + [("insert", 10_000, b"# c\n")], block=1 << 22)
@example(which="qrels", ops=DOUBLE_BOM, block=1 << 22)
@example(which="beir", ops=DOUBLE_BOM, block=1 << 22)
@example(which="run", ops=[("insert", 70, "\ufeff".encode())], block=64)
@example(which="run", ops=[("swap", 0, 14)], block=64)  # out of order: grouped
def test_fast_and_line_readers_agree(tmp_path, which, ops, block):
    """The differential fuzz: on mutated runs, TREC and BEIR qrels, the fast readers (pyarrow)
    give what the line readers give, the same result or the same FILE:LINE error, read in
    blocks small enough that lines start blocks."""
    path = tmp_path / "input"
    path.write_bytes(mutate(VALID[which], ops))
    old = _vectorised._BLOCK_BYTES
    _vectorised._BLOCK_BYTES = block
    try:
        for missing in ("skip", "zero"):
            assert_same(str(path), RUN_QRELS, missing=missing)
        assert_same_qrels(str(path))
    finally:
        _vectorised._BLOCK_BYTES = old


@FUZZ
@given(data=DATA, gz=st.sampled_from(["plain", "gzip", "truncated"]))
def test_readers_never_crash(tmp_path, data, gz):
    if gz != "plain":
        data = gzip.compress(data)
        data = data[:len(data) // 2] if gz == "truncated" else data
    path = tmp_path / "input"
    path.write_bytes(data)
    read_all(str(path))


IDS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\v\f"),
              min_size=1, max_size=6)
# a line starting with # is a comment; a U+FEFF at the start of the file is its byte-order mark
QIDS = IDS.filter(lambda q: not q.startswith(("#", "\ufeff")))
SCORES = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.0, -0.0]))


def trec_eval_order(docs):
    """trec_eval's ranking (form_res_rels.c): score descending, then doc id descending in byte
    order (strcmp)."""
    return sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True)


def test_trec_eval_order_oracle():
    """A prefix ties below the longer id (``ab`` before ``a``); UTF-8 bytes decide, not UTF-16
    code units."""
    assert trec_eval_order({"a": 0.0, "ab": 0.0, "b": -0.0, "c": 1.0}) == ["c", "b", "ab", "a"]
    assert trec_eval_order({"\uffff": 0.0, "\U00010000": 0.0}) == ["\U00010000", "\uffff"]


@FUZZ
@given(run=st.dictionaries(QIDS, st.dictionaries(IDS, SCORES, min_size=1, max_size=5),
                           min_size=1, max_size=4))
@example(run={"q": {"a": 0.0, "ab": 0.0}})  # the old oracle expected ['a', 'ab']
def test_write_run_reads_back_identical(tmp_path, run):
    path = str(tmp_path / "run.trec")
    write_run(run, path)
    back = read_run(path)
    assert back == run
    assert all(list(back[q]) == trec_eval_order(run[q]) for q in run)
    same_arrays({q: {d: 1 for d in run[q]} for q in run}, path)


def test_write_run_refuses_what_cannot_read_back(tmp_path):
    for run in ({"q 1": {"d": 1.0}}, {"q": {"": 1.0}}, {"q": {"d": math.nan}}, {"#q": {"d": 1.0}},
                {"\ufeffq": {"d": 1.0}}):
        with pytest.raises(InputError):
            write_run(run, tmp_path / "run.trec")


@pytest.mark.parametrize("name", sorted(os.listdir(CORPUS)))
def test_seed_corpus(name):
    read_all(str(CORPUS / name))
