"""Readers of runs and qrels: formats, gzip, and a clear error for every kind of bad input."""

import gzip
import json

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io import read_qrels, read_run, write_run


def write(tmp_path, name, text, gz=False):
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def test_trec_run_and_qrels_round_trip(tmp_path):
    run = write(tmp_path, "run.trec", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25 t\nq2 Q0 d1 1 -1e-3 t\n")
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 2\nq1 0 d3 0\nq2 0 d9 1\n")
    assert read_run(run) == {"q1": {"d1": 0.5, "d2": 0.25}, "q2": {"d1": -1e-3}}
    assert read_qrels(qrels) == {"q1": {"d1": 2, "d3": 0}, "q2": {"d9": 1}}


def test_beir_qrels_with_header_and_crlf(tmp_path):
    path = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\td2\t2\r\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 2}}


def test_gzip_detected_by_content(tmp_path):
    path = write(tmp_path, "run.txt", "q1 Q0 d1 1 0.5 t\n", gz=True)
    assert read_run(path) == {"q1": {"d1": 0.5}}


def test_json_inputs(tmp_path):
    run = write(tmp_path, "run.json", json.dumps({"q1": {"d1": 0.5, "d2": 0.5}}))
    qrels = write(tmp_path, "qrels.json", json.dumps({"q1": {"d1": 1}}))
    assert read_run(run) == {"q1": {"d1": 0.5, "d2": 0.5}}
    assert read_qrels(qrels) == {"q1": {"d1": 1}}


def test_write_run_keeps_exact_scores_and_trec_order(tmp_path):
    run = {"q": {"a": 0.1 + 0.2, "b": 0.1 + 0.2, "c": 1 / 3}}
    path = tmp_path / "out.trec"
    write_run(run, path)
    assert read_run(str(path)) == run
    lines = path.read_text().splitlines()
    assert [line.split()[2] for line in lines] == ["c", "b", "a"]  # ties: doc id descending


@pytest.mark.parametrize("text, message", [
    ("q1 Q0 d1 1 nan t\n", "score is nan"),
    ("q1 Q0 d1 1 inf t\n", "score is inf"),
    ("q1 Q0 d1 1 -inf t\n", "score is -inf"),
    ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "listed twice"),
    ("q1 Q0 d1 1 0.5\n", "expected 6 columns"),
    ("q1 Q0 d1 1 high t\n", "is not a number"),
    ("", "file is empty"),
    ("\n\n", "file is empty"),
])
def test_bad_run_lines(tmp_path, text, message):
    path = write(tmp_path, "run.trec", text)
    with pytest.raises(InputError, match=message) as err:
        read_run(path)
    assert err.value.source == path
    assert err.value.fix
    if text.strip():
        assert err.value.line == len(text.strip().splitlines())


@pytest.mark.parametrize("text, message", [
    ("q1 0 d1 yes\n", "is not a number"),
    ("q1 0 d1 1.5\n", "is not an integer"),
    ("q1 0 d1\n", "expected 4 columns"),
    ("q1 0 d1 1\nq1 0 d1 0\n", "judged twice"),
    ("query-id\tcorpus-id\tscore\n", "no judgments"),
    ("query-id\tcorpus-id\tscore\nq1\td1\n", "expected 3 tab-separated columns"),
    ("query-id\tcorpus-id\tscore\nq1\td1\tx\n", "is not a number"),
])
def test_bad_qrels_lines(tmp_path, text, message):
    path = write(tmp_path, "qrels.txt", text)
    with pytest.raises(InputError, match=message) as err:
        read_qrels(path)
    assert err.value.source == path


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_run(str(tmp_path / "nope.trec"))
    with pytest.raises(InputError, match="is a folder"):
        read_qrels(str(tmp_path))


def test_bad_json(tmp_path):
    with pytest.raises(InputError, match="malformed JSON"):
        read_run(write(tmp_path, "r.json", '{"q1": {"d1": 0.5,}}'))
    with pytest.raises(InputError, match="not a number"):
        read_run(write(tmp_path, "r.json", '{"q1": {"d1": "x"}}'))
    with pytest.raises(InputError, match="score nan of document 'd1' for query 'q1' is not a finite"):
        read_run(write(tmp_path, "r.json", '{"q1": {"d1": NaN}}'))
    with pytest.raises(InputError, match="not an integer"):
        read_qrels(write(tmp_path, "q.json", '{"q1": {"d1": 0.5}}'))


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 0.5 t\n" * 100)[:40])
    with pytest.raises(InputError, match="corrupt gzip"):
        read_run(str(path))
