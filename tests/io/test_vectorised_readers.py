"""The vectorised run reader (pyarrow) gives exactly what the line reader gives: the same arrays
bit for bit (the tie-break in the same order within each row) and the same left-out queries,
on real and random runs; unusual-but-valid and bad files go to the line reader, which reads
them or reports FILE:LINE."""

import gzip
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mteb_stratified.core import InputError
from mteb_stratified.io import _vectorised, files, read_qrels, read_run
from mteb_stratified.io.files import read_run_arrays

DATA = Path(__file__).parent / "data" / "trec_eval"
FIELDS = ("scores", "grades", "n_candidates", "qrels_grades")


def slow(read, *args, **options):
    """``read(*args, **options)`` by the line reader (the reference): the fast path off."""
    _vectorised.ENABLED = False
    try:
        return read(*args, **options)
    finally:
        _vectorised.ENABLED = True


def fast_ran(path, qrels, missing="skip"):
    """Whether the vectorised reader read the file itself (rather than handing it over); the
    dict reader agrees where the join does not refuse."""
    open_binary = lambda: files._open_binary(str(path))  # noqa: E731
    arrays = _vectorised.run_arrays(open_binary, qrels, missing)
    run = _vectorised.run_dict(open_binary)
    assert arrays is None or run is not None
    return arrays is not None


def outcome(read):
    try:
        return read()
    except InputError as err:
        return err


def same_errors(got, want) -> bool:
    """Whether two outcomes are both InputErrors (then the same one); else both results."""
    if isinstance(want, InputError) or isinstance(got, InputError):
        assert isinstance(got, InputError) and isinstance(want, InputError), (got, want)
        assert (got.message, got.source, got.line, got.fix) == (
            want.message, want.source, want.line, want.fix)
        return True
    return False


def assert_same_run(path):
    """read_run with and without the fast path: the same error, or the same dict (the same
    order, the same float bits)."""
    got, want = outcome(lambda: read_run(path)), outcome(lambda: slow(read_run, path))
    if not same_errors(got, want):
        assert list(got) == list(want)
        for q in want:
            assert list(got[q]) == list(want[q])
            assert [v.hex() for v in got[q].values()] == [v.hex() for v in want[q].values()]


def assert_same(path, qrels, **options):
    """Default readers and line readers agree: read_run as :func:`assert_same_run`, and
    read_run_arrays the same error or the same arrays bit for bit."""
    path = str(path)
    assert_same_run(path)
    got = outcome(lambda: read_run_arrays(path, qrels, **options))
    want = outcome(lambda: slow(read_run_arrays, path, qrels, **options))
    if same_errors(got, want):
        return got
    (a, left_a), (b, left_b) = got, want
    assert left_a == left_b and a.qids == b.qids
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name  # bit for bit (-0.0 and +0.0 differ here)
    assert a.tiebreak.shape == b.tiebreak.shape
    for row, n in enumerate(b.n_candidates):  # any codes with the same order within each row
        np.testing.assert_array_equal(np.argsort(a.tiebreak[row, :n], kind="stable"),
                                      np.argsort(b.tiebreak[row, :n], kind="stable"))
        assert (a.tiebreak[row, n:] == b.tiebreak[row, n:]).all()
    return got


def write(path, text, gz=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return str(path)


PLAIN = ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 -0.0 t\n"
         "q2 Q0 d1 1 1e-3 t\nq2 Q0 d9 2 7 t\nq3 Q0 d1 1 2 t\n")
QRELS = {"q1": {"d2": 2, "d3": 1, "d7": 1}, "q2": {"d1": 0}, "q4": {"d1": 3}}


@pytest.mark.parametrize("missing", ["skip", "zero"])
def test_plain_file_is_read_by_the_fast_path(tmp_path, monkeypatch, missing):
    """The fast path really runs: with the line reader broken, a plain file still reads, equal
    to the line reader's result."""
    path = write(tmp_path / "run.trec", PLAIN)
    want = slow(read_run_arrays, path, QRELS, missing=missing)
    monkeypatch.setattr(files, "_run_records", None)  # the line reader would crash
    arrays, left = read_run_arrays(path, QRELS, missing=missing)
    run = read_run(path)
    monkeypatch.undo()
    assert arrays.qids == want[0].qids and left == want[1]
    assert run == slow(read_run, path) and list(run["q1"]) == ["d1", "d2", "d3"]
    assert_same(path, QRELS, missing=missing)


def _normalised(text: str) -> str:
    """A file's lines as the fast path reads them itself: 6 fields separated by single spaces,
    grouped by query (in order of first appearance)."""
    lines = [line.split()[:6] for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    first = {q: i for i, (q, *_) in reversed(list(enumerate(lines)))}
    return "".join(" ".join(f) + "\n" for f in sorted(lines, key=lambda f: first[f[0]]))


@pytest.mark.parametrize("missing", ["skip", "zero"])
@pytest.mark.parametrize("run", ["results.test", "results.trunc"])
def test_trec_eval_quicktest_files(tmp_path, run, missing):
    """trec_eval's own test files (tab-separated, extra fields, interleaved: the line reader
    reads them) and the same lines single-spaced and grouped (the fast path reads them): the
    same queries and candidates."""
    qrels = read_qrels(DATA / "qrels.test")
    assert not fast_ran(DATA / run, qrels)
    want, left = assert_same(DATA / run, qrels, missing=missing)
    spaced = write(tmp_path / "spaced.trec", _normalised((DATA / run).read_text()))
    assert fast_ran(spaced, qrels)
    got, left_spaced = assert_same(spaced, qrels, missing=missing)
    assert left_spaced == left and sorted(got.qids) == sorted(want.qids)
    order = [got.qids.index(q) for q in want.qids]
    assert (got.n_candidates[order] == want.n_candidates).all()
    assert (np.sort(got.scores[order], axis=1) == np.sort(want.scores, axis=1)).all()


# Ids of any Unicode but ASCII whitespace and control characters (which the fast path hands
# over); a run's query ids do not start with '#' (a comment).
IDS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=4).filter(
    lambda s: not any(c in s for c in " \t\n\r\v\f"))
QIDS = IDS.filter(lambda q: not q.startswith("#"))
DIGITS = st.text("0123456789", min_size=1, max_size=20)
SCORE_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0", "-0.0", "+1", "1.", ".5", "1E+05", "0001.50e-3", "-3",
                     "2.4703282292062328e-324", "1.7976931348623157e308"]),
    st.tuples(st.sampled_from(["", "-", "+"]), DIGITS, DIGITS, st.integers(-330, 310)).map(
        lambda t: f"{t[0]}{t[1]}.{t[2]}e{t[3]}").filter(lambda t: math.isfinite(float(t))))


@st.composite
def runs(draw):
    """A grouped run (queries contiguous, ties from a small pool of score texts) and qrels that
    share some queries with it."""
    qids = draw(st.lists(QIDS, min_size=1, max_size=6, unique=True))
    pool = draw(st.lists(SCORE_TEXT, min_size=1, max_size=4))
    lines, qrels = [], {}
    for q in qids:
        docs = draw(st.lists(IDS, min_size=1, max_size=8, unique=True))
        lines += [f"{q} Q0 {d} {i} {draw(st.sampled_from(pool))} tag" for i, d in enumerate(docs)]
        if draw(st.booleans()):
            judged = draw(st.lists(st.sampled_from(docs) | IDS, max_size=5, unique=True))
            qrels[q] = {d: draw(st.integers(-2, 3)) for d in judged}
    for q in draw(st.lists(QIDS, max_size=2)):  # queries only in the qrels
        qrels.setdefault(q, {"x": 1})
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines) + draw(st.sampled_from(["", eol, eol + eol]))
    return text, qrels, set(qids)


@settings(max_examples=60, deadline=None)
@given(case=runs(), missing=st.sampled_from(["skip", "zero"]),
       block=st.sampled_from([128, 300, 1 << 22]), gz=st.booleans(), bom=st.booleans())
def test_random_runs_equal_the_line_reader(tmp_path_factory, case, missing, block, gz, bom):
    text, qrels, run_qids = case
    path = write(tmp_path_factory.mktemp("r") / "run", ("\ufeff" if bom else "") + text, gz)
    old = _vectorised._BLOCK_BYTES
    _vectorised._BLOCK_BYTES = block  # small blocks (longer than a line): queries that go on
    try:
        shared = run_qids & {q for q, docs in qrels.items() if docs}
        assert fast_ran(path, qrels, missing) == bool(shared)  # else from_blocks refuses
        assert_same(path, qrels, missing=missing)
    finally:
        _vectorised._BLOCK_BYTES = old


IRREGULAR = {  # valid files the fast path hands over (False) or reads itself (True)
    "tabs": ("q1\tQ0\td1\t1\t0.5\tt\nq1 Q0 d2 2 0.5 t\n", False),
    "two spaces": ("q1 Q0  d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n", False),
    "leading space": (" q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n", False),
    "trailing space": ("q1 Q0 d1 1 0.5 t \nq1 Q0 d2 2 0.5 t\n", False),
    "comment": ("q1 Q0 d1 1 0.5 t\n# a b c d e\n  #x\nq1 Q0 d2 2 0.5 t\n", False),
    "comment of 6 fields first": ("# Q0 d1 1 0.5 t\nq1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 .5 t\n", False),
    "extra fields": ("q1 Q0 d1 1 0.5 t x y\nq1 Q0 d2 2 0.5 t x y\n", False),
    "vertical tab, form feed": ("q1 Q0 d1 1 0.5\x0bt\nq1\x0cQ0 d2 2 0.5 t\n", False),
    "lone CR": ("q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.5 t\n", False),  # one line of 12 fields
    "CR at the end": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\r", False),
    "interleaved": ("q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n", True),  # grouped
    "NUL in an id": ("q1 Q0 d\x001 1 0.5 t\nq1 Q0 d2 2 0.5 t\n", False),
    "CRLF": ("q1 Q0 d1 1 0.5 t\r\nq1 Q0 d2 2 0.5 t\r\n", True),
    "BOM": ("\ufeffq1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n", True),
    "blank lines": ("\nq1 Q0 d1 1 0.5 t\n\n\r\nq1 Q0 d2 2 0.5 t\n\n", True),
    "no final newline": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t", True),
    "unicode ids and spaces": ("q1 Q0 d\u00a0é 1 0.5 t\nq1 Q0 d\u2003 2 0.5 t\n", True),
    "# inside ids": ("q1 Q0 #d 1 0.5 t\nq1 Q0 d# 2 0.5 #t\n", True),
}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("name", sorted(IRREGULAR))
def test_irregular_but_valid_files(tmp_path, name, gz):
    text, fast = IRREGULAR[name]
    path = write(tmp_path / "run", text, gz)
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 1}}
    assert fast_ran(path, qrels) == fast
    arrays, _ = assert_same(path, qrels)
    assert arrays.n_candidates[0] == (1 if name == "lone CR" else 2)


BAD = {  # (file, line of the error): the fast path hands over, the line reader says where
    "nan": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", 2),
    "inf": ("q1 Q0 d1 1 -inf t\n", 1),
    "overflow": ("q1 Q0 d1 1 1e400 t\n", 1),
    "python spelling": ("q1 Q0 d1 1 1_0 t\n", 1),
    "hex": ("q1 Q0 d1 1 0x1 t\n", 1),
    "five fields": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5\n", 2),
    "empty field": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 \n", 2),
    "duplicate": ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d1 3 0.5 t\n", 3),
    "duplicate across blocks": ("q1 Q0 d1 1 0.5 t\n" * 2, 2),
    "invalid UTF-8": (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\xff 2 0.5 t\n", 2),
    "invalid UTF-8 in the tag": (b"q1 Q0 d1 1 0.5 t\xc3\n", 1),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files_get_the_line_readers_error(tmp_path, name):
    text, line = BAD[name]
    path = write(tmp_path / "run", text)
    assert not fast_ran(path, {"q1": {"d1": 1}})
    err = assert_same(path, {"q1": {"d1": 1}})
    assert isinstance(err, InputError) and err.line == line and err.source == path


@pytest.mark.parametrize("qrels", [{}, {"q1": {}}, {"zz": {"d1": 1}}, {"q1": {"d1": "x"}},
                                   {"q1": {"d1": float("nan")}}, {"q1": {"d1": 5000}},
                                   {"q1": {1: 1, "d1": 1}}, {"q1": {"\ud800": 1, "d1": 1}}])
def test_qrels_the_join_refuses_or_cannot_match(tmp_path, qrels):
    """Qrels that from_blocks refuses (or ids no file holds): the same error or result."""
    assert_same(write(tmp_path / "run", PLAIN), qrels)


@pytest.mark.parametrize("grade", [5000, float("nan"), "x"])
def test_a_bad_grade_of_a_query_only_in_the_qrels(tmp_path, grade):
    """With missing='zero' the qrels-only queries are joined after the scan: their bad grades
    still get the line reader's InputError (not the fast path's private hand-over)."""
    err = assert_same(write(tmp_path / "run", PLAIN), {"q1": {"d1": 1}, "q9": {"d9": grade}},
                      missing="zero")
    assert isinstance(err, InputError) and "q9" in str(err)


def test_bad_missing_option(tmp_path):
    with pytest.raises(InputError, match="missing='nope'"):
        read_run_arrays(write(tmp_path / "run", PLAIN), QRELS, missing="nope")


def test_gzip_guard_holds_on_the_fast_path(tmp_path, monkeypatch):
    path = write(tmp_path / "run.gz", "q1 Q0 d1 1 0.5 t\n" + "q2 Q0 d1 1 0.5 t\n" * 70_000, True)
    monkeypatch.setattr(files, "GZIP_FLOOR_BYTES", 1 << 16)
    with pytest.raises(InputError, match="decompression bomb"):
        read_run_arrays(path, QRELS)
    truncated = write(tmp_path / "cut.gz", gzip.compress(PLAIN.encode())[:-9])
    with pytest.raises(InputError, match="corrupt gzip"):
        read_run_arrays(truncated, QRELS)


def test_without_pyarrow_the_line_reader_runs(tmp_path, monkeypatch):
    path = write(tmp_path / "run", PLAIN)
    want = read_run_arrays(path, QRELS)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    assert not fast_ran(path, QRELS)
    got = read_run_arrays(path, QRELS)
    assert got[0].qids == want[0].qids and got[1] == want[1]
    assert got[0].scores.tobytes() == want[0].scores.tobytes()


def test_pyarrow_is_imported_only_to_read():
    code = ("import sys, mteb_stratified, mteb_stratified.io.files; "
            "print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "False"
