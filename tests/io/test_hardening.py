"""Issue #15 findings in the readers: each a reproduction with its expected outcome (the right
number, or an InputError / CLI exit 2 naming the file, the line and the fix)."""

import gzip
import math
import os
import zlib

import pytest

import mteb_stratified
from mteb_stratified.cli.main import main
from mteb_stratified.core import InputError
from mteb_stratified.io import files, read_qrels, read_run
from mteb_stratified.io.beir import read_jsonl

BOM = "\ufeff"


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def raises(reader, path, message, line=None):
    """``reader(path)`` raises an InputError naming the file, ``line`` and a fix."""
    with pytest.raises(InputError, match=message) as err:
        reader(path)
    assert err.value.source == path and err.value.fix
    assert err.value.line == line
    return err.value


def cli_fails(capsys, args, *expected):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, (text, err)


# -- 1. byte order mark --------------------------------------------------------------------------

def test_bom_in_run_and_qrels_gives_the_right_number(tmp_path):
    run = write(tmp_path, "run.trec", BOM + "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    qrels = write(tmp_path, "qrels.txt", BOM + "q1 0 d1 1\n")
    assert read_run(run) == {"q1": {"d1": 2.0, "d2": 1.0}}
    assert read_qrels(qrels) == {"q1": {"d1": 1}}
    assert mteb_stratified.evaluate(qrels, run, ["nDCG@10"])["nDCG@10"].expected == 1.0


@pytest.mark.parametrize("text", [BOM + "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
                                  BOM + "q1\td1\t1\n", BOM + '{"q1": {"d1": 1}}'])
def test_bom_in_beir_and_json_qrels(tmp_path, text):
    assert read_qrels(write(tmp_path, "q.tsv", text)) == {"q1": {"d1": 1}}


def test_bom_in_jsonl(tmp_path):
    path = write(tmp_path, "queries.jsonl", BOM + '{"_id": "q1", "text": "x"}\n')
    assert list(read_jsonl(path, "query")) == ["q1"]


# -- 2. one number grammar -----------------------------------------------------------------------

@pytest.mark.parametrize("score", ["1_000", "\u0661\u0662", "\uff11", "nan", "inf", "-Infinity",
                                   "0x1p3", "0x10", "1.5x", "(1)", "1e", ".", "--1", "1,5"])
def test_python_only_numbers_are_refused(tmp_path, score):
    path = write(tmp_path, "run.trec", f"q1 Q0 d0 1 0.5 t\nq1 Q0 d1 2 {score} t\n")
    err = raises(read_run, path, "not a number|not accepted", line=2)
    assert score in err.message


@pytest.mark.parametrize("score, value", [("+1", 1.0), ("-.5", -0.5), ("1.", 1.0), ("2E-3", 2e-3),
                                          ("007", 7.0), ("-0", 0.0)])
def test_number_grammar_accepts_atof_forms(tmp_path, score, value):
    assert read_run(write(tmp_path, "run.trec", f"q Q0 d 1 {score} t\n")) == {"q": {"d": value}}


def test_number_grammar_in_qrels(tmp_path):
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2 1_0\n")
    raises(read_qrels, path, "'1_0' is not a number", line=2)


def test_cli_options_use_the_reader_grammar(capsys):
    """One grammar: the CLI's number options are the readers' patterns, not a copy."""
    from mteb_stratified.cli import _args
    assert (_args.NUMBER, _args.INTEGER) == (files.NUMBER, files.INTEGER)
    assert main(["evaluate", "--qrels", "q", "--run", "r", "--depth", "1_000"]) == 2
    assert "must be an integer" in capsys.readouterr().err


# -- 3. grade bound ------------------------------------------------------------------------------

@pytest.mark.parametrize("grade", ["2000", "-1001", "+1001.0", "0001001", "9" * 5000])
def test_file_grades_beyond_the_bound(tmp_path, grade):
    raises(read_qrels, write(tmp_path, "q.txt", f"q 0 a 1\nq 0 b {grade}\n"), "beyond", line=2)


@pytest.mark.parametrize("grade, value", [("1.0", 1), ("1.", 1), ("2.000", 2), ("+2", 2),
                                          ("-1", -1), ("-0.0", 0), ("007", 7), ("1000", 1000)])
def test_integer_grades_with_a_zero_fraction_are_accepted(tmp_path, grade, value):
    """What trec_eval's atol reads in full: the same value here and there."""
    back = read_qrels(write(tmp_path, "q.txt", f"q 0 a {grade}\n"))
    assert back == {"q": {"a": value}} and type(back["q"]["a"]) is int


@pytest.mark.parametrize("grade", ["1e1", ".5e1", "10e-1", "1E0", "1e3", "1e308", "1e400", "1.5",
                                   "0.50", ".0", "-.5"])
def test_grades_with_an_exponent_or_a_fraction_are_refused(tmp_path, grade):
    """atol reads ``1e1`` as 1, ``.5e1`` as 0, ``10e-1`` as 10: read as float they gave 10, 5
    and 1, a different number from trec_eval with no error."""
    for name, text in (("q.txt", f"q 0 a 1\nq 0 b {grade}\n"),
                       ("q.tsv", f"query-id\tcorpus-id\tscore\nq\ta\t1\nq\tb\t{grade}\n")):
        line = text.count("\n")
        err = raises(read_qrels, write(tmp_path, name, text), "is not an integer", line=line)
        assert grade in err.message and "exponent" in err.fix


def test_exponent_grade_through_the_cli(tmp_path, capsys):
    run = write(tmp_path, "run.trec", "q Q0 a 1 0.5 t\n")
    qrels = write(tmp_path, "qrels.txt", "q 0 a 1e1\n")
    cli_fails(capsys, ["evaluate", "--qrels", qrels, "--run", run], f"{qrels}:1:",
              "'1e1' is not an integer", "fix:")


def test_json_grades_are_json_numbers(tmp_path):
    """JSON has no atol question: any integral JSON number within the bound, returned as int."""
    back = read_qrels(write(tmp_path, "q.json", '{"q": {"a": 1.0, "b": 1e3, "c": -2, "d": 0}}'))
    assert back == {"q": {"a": 1, "b": 1000, "c": -2, "d": 0}}
    assert all(type(v) is int for v in back["q"].values())


@pytest.mark.parametrize("text, message", [
    ('{"q": {"a": 1e400}}', "not a finite grade"),
    ('{"q": {"a": NaN}}', "not a finite grade"),
    ('{"q": {"a": ' + "9" * 400 + "}}", "not a finite grade"),
    ('{"q": {"a": 2000}}', "not a finite grade"),
    ('{"q": {"a": 1.5}}', "not an integer"),
])
def test_json_grades(tmp_path, text, message):
    raises(read_qrels, write(tmp_path, "q.json", text), message)


@pytest.mark.parametrize("text", ['{"q": {"a": 1e400}}', '{"q": {"a": NaN}}',
                                  '{"q": {"a": -Infinity}}', '{"q": {"a": ' + "9" * 400 + "}}"])
def test_json_scores(tmp_path, text):
    raises(read_run, write(tmp_path, "r.json", text), "not a finite number")


def test_json_duplicate_key_is_an_error(tmp_path):
    raises(read_run, write(tmp_path, "r.json", '{"q": {"a": 1, "a": 2}}'), "key 'a' twice")


# -- 4. trec_eval compatibility ------------------------------------------------------------------

def test_qrels_comment_lines_are_skipped(tmp_path):
    """get_qrels.c: ``#`` in column 0 is a comment; after blanks it is data (query ``#x``)."""
    path = write(tmp_path, "q.txt", "# judged by ...\n# two lines\nq1 0 d1 1\n#q1 0 d2 2\n"
                                    "  #x 0 d#3 1\nq1 0 d2 0\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}, "#x": {"d#3": 1}}
    raises(read_qrels, write(tmp_path, "q.txt", "# only a comment\n\n#\n"), "empty")
    raises(read_qrels, write(tmp_path, "q.txt", "q1 0 d1 1\n   # indented\n"), "4 columns",
           line=2)


RUN_WITH_COMMENTS = ("# run by ...\nq1 Q0 d1 1 0.5 t\n  # indented\n\t#x Q0 d9 1 9 t\n"
                     "#q1 Q0 d3 3 9 t\nq1 Q0 d#2 2 0.25 t\n")


def test_run_comment_lines_are_skipped(tmp_path):
    """get_trec_results.c skips leading blanks, then a ``#`` line; they were refused here."""
    path = write(tmp_path, "run.trec", RUN_WITH_COMMENTS)
    assert read_run(path) == {"q1": {"d1": 0.5, "d#2": 0.25}}
    arrays, _ = files.read_run_arrays(path, {"q1": {"d#2": 1}})
    assert arrays.qids == ("q1",) and arrays.grades[0].tolist() == [-math.inf, 1.0]
    qrels = write(tmp_path, "qrels.txt", "q1 0 d#2 1\n")
    assert mteb_stratified.evaluate(qrels, path, ["RR@10"])["RR@10"].expected == 0.5
    raises(read_run, write(tmp_path, "run.trec", "# only\n  # comments\n"), "empty")


def test_write_run_refuses_query_ids_read_back_as_comments(tmp_path):
    with pytest.raises(InputError, match="comment") as err:
        files.write_run({"#q": {"d": 1.0}}, tmp_path / "run.trec")
    assert "#" in err.value.fix
    run = {"q#": {"#d": 1.0}}  # elsewhere on the line # is data
    files.write_run(run, tmp_path / "run.trec")
    assert read_run(str(tmp_path / "run.trec")) == run


def test_run_fields_after_the_tag_are_ignored(tmp_path):
    path = write(tmp_path, "run.trec", "q1 Q0 d1 1 0.5 tag extra stuff\nq1 Q0 d2 2 0.25 t\n")
    assert read_run(path) == {"q1": {"d1": 0.5, "d2": 0.25}}
    raises(read_run, write(tmp_path, "run.trec", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25\n"),
           "expected 6 columns", line=2)


# -- 5. format sniffing --------------------------------------------------------------------------

def test_qid_starting_with_brace_stays_trec(tmp_path):
    run = write(tmp_path, "run.trec", "{q1 Q0 d1 1 0.5 t\n{q1 Q0 d2 2 0.25 t\n")
    qrels = write(tmp_path, "qrels.txt", "{q1 0 d1 1\n")
    assert read_run(run) == {"{q1": {"d1": 0.5, "d2": 0.25}}
    assert read_qrels(qrels) == {"{q1": {"d1": 1}}
    raises(read_run, write(tmp_path, "r.trec", "{q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.2\n"),
           "expected 6 columns", line=2)


def test_json_one_liner_with_six_fields_is_json(tmp_path):
    path = write(tmp_path, "r.json", '{"q": {"a": 1}, "r": {"b": 2}}')
    assert read_run(path) == {"q": {"a": 1}, "r": {"b": 2}}


@pytest.mark.parametrize("header", ["query-id\tcorpus-id\tscore", "query_id\tdoc_id\tscore",
                                    "qid\tdocid\trel", "Query-ID\tCorpus-ID\tScore"])
def test_beir_qrels_with_any_header(tmp_path, header):
    """BEIR's loader skips the first line whatever it says; a header other than the standard one
    was refused ("relevance 'score' is not a number")."""
    path = write(tmp_path, "test.tsv", f"{header}\nq1\td1\t1\nq1\td2\t0\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}}
    run = write(tmp_path, "run.trec", "q1 Q0 d2 1 0.5 t\nq1 Q0 d1 2 0.25 t\n")
    assert mteb_stratified.evaluate(path, run, ["RR@10"])["RR@10"].expected == 0.5
    assert read_qrels(write(tmp_path, "h.tsv", "q1\td1\t2\nq1\td2\t0\n")) == {
        "q1": {"d1": 2, "d2": 0}}  # headerless: the first line is a judgment
    raises(read_qrels, write(tmp_path, "x.tsv", f"{header}\nq1\td1\tx\n"), "not a number",
           line=2)


def test_beir_has_no_comments(tmp_path):
    """Every BEIR line is data, as BEIR reads it: ``#q1`` is a query; a ``# note`` is refused."""
    path = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\n#q1\td1\t1\nq2\td2\t1\n")
    assert read_qrels(path) == {"#q1": {"d1": 1}, "q2": {"d2": 1}}
    assert read_qrels(write(tmp_path, "h.tsv", "#q1\td1\t1\nq2\td2\t1\n")) == {
        "#q1": {"d1": 1}, "q2": {"d2": 1}}
    err = raises(read_qrels, write(tmp_path, "n.tsv", "# note\nq1\td1\t1\n"), "3 tab", line=1)
    assert "no comment lines" in err.message


def test_tab_in_first_trec_qrels_line(tmp_path):
    path = write(tmp_path, "q.txt", "q1\t0 d1 1\nq1 0 d2 0\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}}
    raises(read_qrels, write(tmp_path, "q.txt", "q1\t0 d1 1\nq1 0 d2\n"), "4 columns", line=2)
    assert read_qrels(write(tmp_path, "q.tsv", "q1\td1\t1\nq1\td2\t0\n")) == {
        "q1": {"d1": 1, "d2": 0}}


# -- 6. no tracebacks ----------------------------------------------------------------------------

def test_bad_utf8_past_8kb_names_line_and_offset(tmp_path):
    head = "".join(f"q{i} Q0 d{i} 1 0.5 t\n" for i in range(1000)).encode()
    assert len(head) > 8192
    path = write(tmp_path, "run.trec", head + b"qx Q0 d\xff 1 0.5 t\n")
    err = raises(read_run, path, f"at byte {len(head) + 7} of the file", line=1001)
    gz = write(tmp_path, "run.gz", gzip.compress(head + b"qx Q0 d\xff 1 0.5 t\n"))
    raises(read_run, gz, f"at byte {len(head) + 7} of the file", line=1001)
    assert "UTF-8" in err.message


def test_bad_utf8_in_json(tmp_path):
    path = write(tmp_path, "r.json", b'{"q":\n {"\xff": 1}}')
    raises(read_run, path, "at byte 9 of the file", line=2)


def test_corrupt_deflate_and_truncated_gzip(tmp_path):
    data = gzip.compress(b"q1 Q0 d1 1 0.5 t\n" * 2000)
    broken = bytearray(data)
    broken[20:30] = b"\xff" * 10
    raises(read_run, write(tmp_path, "bad.gz", bytes(broken)), "corrupt gzip")
    raises(read_run, write(tmp_path, "cut.gz", data[:-12]), "truncated")
    raises(read_run, write(tmp_path, "cut2.gz", data[:len(data) // 2]), "truncated")
    with pytest.raises(zlib.error):  # what the probe saw as a traceback
        zlib.decompress(bytes(broken)[10:], -15)


def test_deeply_nested_json(tmp_path):
    raises(read_run, write(tmp_path, "r.json", '{"a":' + "[" * 100000 + "]" * 100000 + "}"),
           "nested too deeply")
    raises(lambda p: read_jsonl(p, "query"),
           write(tmp_path, "q.jsonl", '{"_id": "a"}\n' + "[" * 100000 + "\n"),
           "nested too deeply", line=2)


def test_unreadable_file(tmp_path):
    if os.geteuid() != 0:
        path = write(tmp_path, "run.trec", "q1 Q0 d1 1 0.5 t\n")
        os.chmod(path, 0)
        raises(read_run, path, "cannot read the file")
    else:  # root reads any mode: an unreadable file is one whose read fails (EIO at address 0)
        raises(read_run, "/proc/self/mem", "cannot read the file")


def test_cli_exit_2_with_file_line_and_fix(tmp_path, capsys):
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    run = write(tmp_path, "run.trec", "q1 Q0 d0 1 0.5 t\nq1 Q0 d1 2 1_000 t\n")
    cli_fails(capsys, ["evaluate", "--qrels", qrels, "--run", run], f"{run}:2:", "fix:")
    bad = write(tmp_path, "q2.txt", "q1 0 d1 5000\n")
    cli_fails(capsys, ["evaluate", "--qrels", bad, "--run", run], f"{bad}:1:", "fix:")


# -- 7. streaming gzip and the bomb guard --------------------------------------------------------

def test_gzip_is_streamed(tmp_path, monkeypatch):
    """A bad first line fails after about one buffer of decompression, not the whole file."""
    body = b"q1 Q0 d1 1 0.5\n" + b"q1 Q0 d2 2 0.5 t\n" * 500_000
    path = write(tmp_path, "run.gz", gzip.compress(body, compresslevel=1))
    streams = []

    class Spy(files._GuardedGzip):
        def __init__(self, *args):
            super().__init__(*args)
            streams.append(self)

    monkeypatch.setattr(files, "_GuardedGzip", Spy)
    raises(read_run, path, "expected 6 columns", line=1)
    assert 0 < streams[0].expanded <= 2 << 20 < len(body)


def test_gzip_bomb_is_refused(tmp_path, monkeypatch):
    data = gzip.compress(b"q1 Q0 d1 1 0.5 t\n" + b" " * (4 << 20))
    path = write(tmp_path, "bomb.gz", data)
    monkeypatch.setattr(files, "GZIP_FLOOR_BYTES", 1 << 20)
    err = raises(read_run, path, "decompression bomb")
    assert "compressed bytes read" in err.message and files.GZIP_RATIO_ENV in err.fix
    # the keyword and the environment variable lift the guard
    assert read_run(path, max_gzip_ratio=1e6) == {"q1": {"d1": 0.5}}
    monkeypatch.setenv(files.GZIP_RATIO_ENV, "1e6")
    assert read_run(path) == {"q1": {"d1": 0.5}}
    monkeypatch.setenv(files.GZIP_RATIO_ENV, "lots")
    with pytest.raises(InputError, match=files.GZIP_RATIO_ENV):
        read_run(path)
