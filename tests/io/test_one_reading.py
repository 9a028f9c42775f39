"""#46.2: one reading of every byte.  The fast (pyarrow) and line readers of runs and qrels share
one definition of byte-order marks, blank lines, comments and whitespace
(:mod:`mteb_stratified.io._text`): a file that starts with two byte-order marks is refused at
line 1 by both (the fast reader dropped the second, the line reader kept it in the first id),
and invisible characters at the start or end of a line are read the same way by both."""

import gzip
import json

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io import _vectorised, files, read_qrels, read_run
from mteb_stratified.io.beir import read_jsonl
from mteb_stratified.io.files import read_run_arrays
from tests.io.test_vectorised_qrels import assert_same_qrels
from tests.io.test_vectorised_readers import assert_same, fast_ran, slow

BOM = "\ufeff"
RUN = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq2 Q0 d1 1 0.3 t\n"
QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 1}}
FILES = {
    "run": RUN,
    "trec qrels": "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\n",
    "beir qrels": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\n",
    "json run": json.dumps({"q1": {"d1": 0.5}}),
}


def readers(path):
    """Every reader of runs and qrels, with and without the fast path."""
    for read in (read_run, read_qrels, lambda p: read_run_arrays(p, QRELS)):
        yield lambda: read(path)
        yield lambda: slow(read, path)


@pytest.mark.parametrize("tail", ["", "# a comment at the end\n"])
@pytest.mark.parametrize("marks", [2, 3])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("name", sorted(FILES))
def test_two_byte_order_marks_are_refused_at_line_1(tmp_path, name, gz, marks, tail):
    """#46.2: every reader, fast or line, refuses the file at line 1; a trailing comment (which
    sends a file from one reader to the other) changes nothing."""
    data = (BOM * marks + FILES[name] + (tail if "json" not in name else "")).encode()
    path = tmp_path / "input"
    path.write_bytes(gzip.compress(data) if gz else data)
    for read in readers(str(path)):
        with pytest.raises(InputError, match=f"starts with {marks} byte-order marks") as err:
            read()
        assert (err.value.source, err.value.line) == (str(path), 1) and err.value.fix


def test_two_byte_order_marks_in_jsonl(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(BOM * 2 + '{"_id": "d1", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="2 byte-order marks") as err:
        read_jsonl(str(path), "document")
    assert err.value.line == 1


def test_one_byte_order_mark_is_the_encoding_mark(tmp_path):
    path = tmp_path / "run"
    path.write_text(BOM + RUN, encoding="utf-8")
    assert fast_ran(path, QRELS)
    assert list(read_run(str(path))) == ["q1", "q2"]
    assert_same(path, QRELS)


@pytest.mark.parametrize("block", [16, 1 << 22])
def test_feff_at_the_start_of_a_later_line_is_data(tmp_path, block):
    """U+FEFF (a zero-width no-break space) starting a later line is part of the id for both
    readers, also where that line starts one of the fast reader's blocks (pyarrow dropped it
    there)."""
    path = tmp_path / "run"
    path.write_text(RUN + BOM + "q3 Q0 d1 1 0.5 t\n", encoding="utf-8")
    old = _vectorised._BLOCK_BYTES
    _vectorised._BLOCK_BYTES = block
    try:
        assert list(read_run(str(path))) == ["q1", "q2", BOM + "q3"]
        assert_same(path, {**QRELS, BOM + "q3": {"d1": 1}})
    finally:
        _vectorised._BLOCK_BYTES = old
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n" + BOM + "q3 0 d1 1\n", encoding="utf-8")
    assert list(read_qrels(str(qrels))) == ["q1", BOM + "q3"]
    assert_same_qrels(str(qrels))


INVISIBLE = ["\u00a0", "\u2028", "\u0085", "\u200b", "\u2003", "\x1c", "\x1f", BOM]


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_invisible_characters_at_line_ends_are_data_to_both(tmp_path, char):
    """Characters that are not ASCII whitespace, at the start and the end of lines, are part of
    the first and last fields for both readers (as trec_eval splits on ASCII whitespace)."""
    run = tmp_path / "run"
    run.write_text(f"q1 Q0 d1 1 0.5 t\n{char}q1 Q0 d2 2 0.4 t{char}\n", encoding="utf-8")
    assert_same(run, {"q1": {"d1": 1}, char + "q1": {"d2": 1}})
    assert list(read_run(str(run))) == ["q1", char + "q1"]
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q1 0 d1 1\n{char}q1 0 d2 1\nq2 0 d{char} 1\n", encoding="utf-8")
    assert_same_qrels(str(qrels))
    assert read_qrels(str(qrels))["q2"] == {"d" + char: 1}


@pytest.mark.parametrize("char", ["\r", "\x0b", "\x0c", "\t", " "])
def test_ascii_whitespace_at_line_ends_is_a_separator_to_both(tmp_path, char):
    run = tmp_path / "run"
    run.write_text(f"{char}q1 Q0 d1 1 0.5 t{char}\nq1 Q0 d2 2 0.4 t\n", encoding="utf-8",
                   newline="")
    assert read_run(str(run)) == {"q1": {"d1": 0.5, "d2": 0.4}}
    assert_same(run, QRELS)
    qrels = tmp_path / "qrels"
    qrels.write_text(f"{char}q1 0 d1 1{char}\nq2 0 d1 1\n", encoding="utf-8", newline="")
    assert_same_qrels(str(qrels))


def test_blank_and_comment_lines_are_one_definition(tmp_path):
    """Whitespace-only lines are blank for both; a run comment is a line whose first non-blank
    byte is '#', a TREC qrels comment one with '#' in column 0."""
    run = tmp_path / "run"
    run.write_text(" \t\n\x0b\x0c\r\n  # c d e f g\n" + RUN + "\n \n", encoding="utf-8",
                   newline="")
    assert read_run(str(run)) == files.read_run(str(run)) == slow(read_run, str(run))
    assert list(read_run(str(run))) == ["q1", "q2"]
    assert_same(run, QRELS)
    qrels = tmp_path / "qrels"
    qrels.write_text("# note\n  #x 0 d1 1\nq1 0 d1 1\n", encoding="utf-8")
    assert list(read_qrels(str(qrels))) == ["#x", "q1"]
    assert_same_qrels(str(qrels))
