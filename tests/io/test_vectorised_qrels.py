"""The vectorised qrels reader (pyarrow) gives exactly what the line reader gives: the same dict
(query order, document order, int grades) on plain TREC qrels and BEIR TSV (headers, CRLF as in
the real NFCorpus files, BOM, gzip), random files included; unusual-but-valid and bad files go
to the line reader, which reads them, warns, or reports FILE:LINE.  The run join reads the
judgments as columns and gives the dict join's arrays."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mteb_stratified as ms
from mteb_stratified.cli.main import main
from mteb_stratified.core import InputError
from mteb_stratified.io import _vectorised, files, read_qrels
from mteb_stratified.io._judgments import Judgments
from mteb_stratified.io.files import read_judgments, read_run_arrays
from tests.io.test_vectorised_readers import IDS, PLAIN, assert_same, outcome, same_errors, slow
from tests.io.test_vectorised_readers import write

NFCORPUS = Path("/work/shared/data/nfcorpus/qrels")
BUNDLED = Path(ms.__file__).parent / "data" / "nfcorpus" / "qrels"


def fast_ran(path) -> bool:
    return _vectorised.qrels_table(lambda: files._open_binary(str(path))) is not None


def assert_same_qrels(path):
    """read_qrels with and without the fast path: the same error, or the same dict (the same
    order of queries and of documents, the same grades and types), and the same warnings."""
    with warnings.catch_warnings(record=True) as fast_warnings:
        warnings.simplefilter("always")
        got = outcome(lambda: read_qrels(path))
    with warnings.catch_warnings(record=True) as line_warnings:
        warnings.simplefilter("always")
        want = outcome(lambda: slow(read_qrels, path))
    assert [str(w.message) for w in fast_warnings if w.category is not ResourceWarning] \
        == [str(w.message) for w in line_warnings if w.category is not ResourceWarning]
    if same_errors(got, want):
        return got
    assert list(got) == list(want)
    for q in want:
        assert list(got[q].items()) == list(want[q].items())
        assert all(type(g) is int for g in got[q].values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        judgments = read_judgments(path)
    assert dict(judgments) == want and list(judgments) == list(want)
    return got


TREC = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\nq1 0 d3 1\nq3 0 dé 3\n"
PLAIN_FILES = {  # valid files the fast path reads itself
    "trec": TREC,
    "trec CRLF": TREC.replace("\n", "\r\n"),
    "trec BOM": "\ufeff" + TREC,
    "trec no final newline": TREC.rstrip("\n"),
    "trec blank lines": "q1 0 d1 1\n\n\r\nq1 0 d2 0\n\n",
    "trec negative and padded grades": "q1 0 d1 -1\nq1 0 d2 0003\nq1 0 d3 -0\nq2 0 d1 1000\n",
    "trec # inside ids": "q1 0 #d 1\nq# 0 d1 2\n",
    "beir header": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\n",
    "beir header CRLF": "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td1\t2\r\n",
    "beir no header": "q1\td1\t1\nq1\td2\t0\nq2\td1\t2\n",
    "beir BOM header": "\ufeffqid\tdocid\trel\nq1\td1\t1\n",
}
IRREGULAR = {  # valid files the fast path hands over to the line reader
    "trec tabs": "q1\t0\td1\t1\nq1 0 d2 0\n",
    "trec two spaces": "q1 0  d1 1\nq1 0 d2 0\n",
    "trec comment": "# judged by hand\nq1 0 d1 1\n#x 0 d2 1\nq1 0 d2 0\n",
    "trec leading blanks and #": "  #x 0 d1 1\nq1 0 d2 0\n",
    "trec zero fraction": "q1 0 d1 1.0\nq1 0 d2 +2\n",
    "trec repeated judgment": "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\n",
    "trec vertical tab": "q1 0 d1\x0b1\nq1 0 d2 0\n",
    "beir spaces": "query-id\tcorpus-id\tscore\nq1\td1 \t1\nq1 \td2\t0\n",
    "beir # query": "query-id\tcorpus-id\tscore\n#q1\td1\t1\n",
    "beir repeated judgment": "q1\td1\t1\nq1\td1\t1\n",
    "blank first line": "\nq1 0 d1 1\n",
    "json": '{"q1": {"d1": 1}}',
}
BAD = {  # (file, line of the error)
    "trec three fields": ("q1 0 d1 1\nq1 0 d2\n", 2),
    "trec five fields": ("q1 0 d1 1\nq1 0 d2 1 x\n", 2),
    "trec words": ("q1 0 d1 1\nq1 0 d2 high\n", 2),
    "trec exponent": ("q1 0 d1 1e3\n", 1),
    "trec beyond the bound": ("q1 0 d1 1\nq1 0 d2 5000\n", 2),
    "trec many digits": ("q1 0 d1 1\nq1 0 d2 99999999999999999999999\n", 2),
    "trec two grades": ("q1 0 d1 1\nq1 0 d1 2\n", 2),
    "trec invalid UTF-8": (b"q1 0 d1 1\nq1 0 d\xff 1\n", 2),
    "beir two columns": ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", 3),
    "beir comment": ("query-id\tcorpus-id\tscore\nq1\td1\t1\n# note\n", 3),
    "beir only a header": ("query-id\tcorpus-id\tscore\n", None),
    "empty": ("", None),
}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("name", sorted(PLAIN_FILES))
def test_plain_files_are_read_by_the_fast_path(tmp_path, monkeypatch, name, gz):
    path = write(tmp_path / "qrels", PLAIN_FILES[name], gz)
    assert fast_ran(path)
    want = slow(read_qrels, path)
    monkeypatch.setattr(files, "_read_qrels_lines", None)  # the line reader would crash
    got = read_qrels(path)
    monkeypatch.undo()
    assert got == want and list(got) == list(want)
    assert isinstance(read_judgments(path), Judgments)
    assert_same_qrels(path)


@pytest.mark.parametrize("name", sorted(IRREGULAR))
def test_irregular_but_valid_files_go_to_the_line_reader(tmp_path, name):
    path = write(tmp_path / "qrels", IRREGULAR[name])
    assert not fast_ran(path)
    assert not isinstance(assert_same_qrels(path), InputError)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files_get_the_line_readers_error(tmp_path, name):
    text, line = BAD[name]
    path = write(tmp_path / "qrels", text)
    assert not fast_ran(path)
    err = assert_same_qrels(path)
    assert isinstance(err, InputError) and err.line == line and err.source == path


def test_a_bad_qrels_line_on_the_command_line(tmp_path, capsys):
    """``evaluate`` with a bad qrels line: FILE:LINE, what is wrong, the fix; exit status 2."""
    qrels = write(tmp_path / "qrels.trec", "q1 0 d1 1\nq1 0 d2 high\n")
    run = write(tmp_path / "run.trec", PLAIN)
    assert main(["evaluate", "--qrels", qrels, "--run", run]) == 2
    err = capsys.readouterr().err
    assert f"{qrels}:2:" in err and "'high' is not a number" in err and "fix:" in err


@pytest.mark.parametrize("path", [NFCORPUS / "test.tsv", NFCORPUS / "dev.tsv",
                                  BUNDLED / "test.tsv"], ids=["shared test", "shared dev",
                                                              "bundled test"])
def test_real_nfcorpus_qrels(path):
    """The real NFCorpus qrels (BEIR TSV with a header; the shared copy has CRLF endings)."""
    if not path.exists():
        pytest.skip(f"{path} is not here")
    assert fast_ran(path)
    assert len(assert_same_qrels(str(path))) > 300


@st.composite
def qrels_files(draw):
    """A TREC or BEIR qrels text with random ids, grades, line endings and query order."""
    beir = draw(st.booleans())
    ids = IDS.filter(lambda s: not s.startswith("#") and "\x85" not in s)
    pairs = draw(st.lists(st.tuples(ids, ids), min_size=1, max_size=30,
                          unique_by=lambda p: p))
    lines = [f"{q}\t{d}\t{g}" if beir else f"{q} 0 {d} {g}"
             for (q, d), g in zip(pairs, draw(st.lists(st.integers(-3, 1000),
                                                       min_size=len(pairs),
                                                       max_size=len(pairs))))]
    if beir and draw(st.booleans()):
        lines.insert(0, "query-id\tcorpus-id\tscore")
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines) + draw(st.sampled_from(["", eol]))


@settings(max_examples=60, deadline=None)
@given(text=qrels_files(), gz=st.booleans(), bom=st.booleans(),
       block=st.sampled_from([64, 1 << 22]))
def test_random_qrels_equal_the_line_reader(tmp_path_factory, text, gz, bom, block):
    path = write(tmp_path_factory.mktemp("q") / "qrels", ("\ufeff" if bom else "") + text, gz)
    old = _vectorised._BLOCK_BYTES
    _vectorised._BLOCK_BYTES = block
    try:
        assert_same_qrels(path)
    finally:
        _vectorised._BLOCK_BYTES = old


@pytest.mark.parametrize("missing", ["skip", "zero"])
def test_the_join_reads_the_judgments_as_columns(tmp_path, missing):
    """read_run_arrays with the Judgments of a qrels file gives the arrays of its dict, and
    ``evaluate`` on files the numbers of ``evaluate`` on the dicts."""
    qrels_path = write(tmp_path / "qrels", "q1 0 d2 2\nq1 0 d3 1\nq1 0 d7 1\nq2 0 d1 0\n"
                                           "q4 0 d1 3\n")
    run = write(tmp_path / "run.trec", PLAIN)
    judgments = read_judgments(qrels_path)
    assert isinstance(judgments, Judgments)
    got = read_run_arrays(run, judgments, missing=missing)
    want = read_run_arrays(run, read_qrels(qrels_path), missing=missing)
    assert got[1] == want[1] and got[0].qids == want[0].qids
    for name in ("scores", "grades", "n_candidates", "qrels_grades", "tiebreak"):
        assert getattr(got[0], name).tobytes() == getattr(want[0], name).tobytes(), name
    assert_same(run, judgments, missing=missing)
    a = ms.evaluate(qrels_path, run, ["nDCG@10", "AP@100"], missing=missing)
    b = ms.evaluate(read_qrels(qrels_path), ms.io.read_run(run), ["nDCG@10", "AP@100"],
                    missing=missing)
    assert a.to_dict(per_query=True)["measures"] == b.to_dict(per_query=True)["measures"]
    np.testing.assert_array_equal(a["nDCG@10"].values["expected"],
                                  b["nDCG@10"].values["expected"])
