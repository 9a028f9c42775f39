"""Bad MTEB results JSON and per-query CSV files: a clear InputError (file, line, fix), never a
traceback or a silently wrong number; names from a file never lead to another file."""

import json
import os

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.io.mteb_results import (check_matches_results, find_per_query,
                                             load_task_result, per_query_name,
                                             read_per_query_csv)

HEADER = "hf_subset,hf_split,qid,measure,expected,min,max,oblivious\n"
ROW = "default,test,{q},nDCG@10,{e},{lo},{hi},{o}\n"


def _row(q, e=0.5, lo=None, hi=None, o=None):
    return ROW.format(q=q, e=e, lo=e if lo is None else lo, hi=e if hi is None else hi,
                      o=e if o is None else o)


def _error(fn, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.fix, str(err)  # every error says how to fix it
    return err


# -- the results JSON ------------------------------------------------------------------------
@pytest.mark.parametrize("text, line, message", [
    ("", 1, "empty results file"),
    ("  \n", 1, "empty results file"),
    ('{\n"task_name": "T",\n"scores": {,}\n}', 3, "not valid JSON"),
    ("[1, 2]", None, "not an MTEB TaskResult file"),
    ('{"task_name": "T"}', None, "not an MTEB TaskResult file"),
    ('{\n"task_name": 5,\n"scores": {}}', 2, "task_name is int"),
    ('{"task_name": "T",\n"scores": [1]}', 2, "scores is list"),
    ('{"task_name": "T",\n"scores": {\n"test": {"a": 1}}}', 3, "scores['test'] is not a list"),
    ('{"task_name": "T", "scores": {"test": [1, 2]}}', 1, "scores['test'] is not a list"),
    ("[" * 100_000, None, "nested too deeply"),
], ids=lambda v: repr(v)[:30] if isinstance(v, str) else None)
def test_bad_results_json(tmp_path, text, line, message):
    path = tmp_path / "T.json"
    path.write_text(text, encoding="utf-8")
    err = _error(load_task_result, path)
    assert message in err.message and err.source == str(path)
    if line is not None:
        assert err.line == line


def test_results_json_not_utf8_and_a_folder(tmp_path):
    path = tmp_path / "T.json"
    path.write_bytes(b'{"task_name": "\xff", "scores": {}}')
    assert "not UTF-8" in _error(load_task_result, path).message
    assert "is a folder" in _error(load_task_result, tmp_path).message


def test_results_json_with_a_bom_is_read(tmp_path):
    path = tmp_path / "T.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"task_name": "T", "scores": {}}).encode())
    assert load_task_result(path)["task_name"] == "T"


def test_a_nan_score_in_the_results_file_is_not_a_silent_match(tmp_path):
    """NaN never equals the mean, but abs(mean - NaN) > tol is False: the check must refuse."""
    path = tmp_path / "T.json"
    path.write_text('{"task_name": "T", "scores": {"test": [{"ndcg_at_10_expected": NaN}]}}')
    data = load_task_result(path)
    err = _error(check_matches_results, {"expected": {"q": 0.5}}, data, "ndcg_at_10",
                 split="test", per_query_path="pq.csv", results_path=str(path))
    assert err.source == str(path) and "ndcg_at_10_expected is nan" in err.message


# -- the per-query CSV -----------------------------------------------------------------------
@pytest.mark.parametrize("body, line, message", [
    ("", 1, "empty per-query file"),
    ("qid,expected\nq1,0.5\n", 1, "not a per-query CSV"),
    (HEADER + _row("q1") + "default,test,q2,nDCG@10,0.5,0.5,0.5\n", 3,
     "row has 7 fields, the header has 8"),
    (HEADER + _row("q1") + "default,test,q2,nDCG@10,0.5,0.5,0.5,0.5,9\n", 3,
     "row has 9 fields, the header has 8"),
    (HEADER + _row("q1", e="abc"), 2, "expected 'abc' is not a number"),
    (HEADER + _row("q1", e="nan"), 2, "expected is nan: NaN and infinity are not accepted"),
    (HEADER + _row("q1", e=0.5, lo=0.5, hi="inf"), 2, "max is inf: NaN and infinity"),
    (HEADER + _row("q1") + _row("q1"), 3, "query 'q1' listed twice"),
    (HEADER + _row(""), 2, "empty qid"),
    (HEADER + _row("q1", e=0.9, lo=0.1, hi=0.5), 2, "are not in order"),
    (HEADER + _row("q1", e=0.3, lo=0.1, hi=0.5, o=0.7), 2, "are not in order"),
    # a quoted field over two lines: the line numbers still point at the right row
    (HEADER + 'default,test,"q\n1",nDCG@10,0.5,0.5,0.5,0.5\n' + _row("q2", e="x"), 4,
     "expected 'x' is not a number"),
    (HEADER + _row("q" * 200_000), 2, "corrupt per-query CSV"),
], ids=lambda v: repr(v)[-30:] if isinstance(v, str) else None)
def test_bad_per_query_csv(tmp_path, body, line, message):
    path = tmp_path / "T_per_query.csv"
    path.write_text(body, encoding="utf-8")
    err = _error(read_per_query_csv, path)
    assert message in err.message and err.source == str(path)
    assert err.line == line


def test_per_query_csv_not_utf8_a_folder_and_a_bom(tmp_path):
    path = tmp_path / "T_per_query.csv"
    path.write_bytes(HEADER.encode() + b"default,test,q\xff,nDCG@10,1,1,1,1\n")
    assert "not UTF-8" in _error(read_per_query_csv, path).message
    folder = tmp_path / "dir.csv"
    folder.mkdir()
    assert "is a folder" in _error(read_per_query_csv, folder).message
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + _row("q1", 0.25)).encode())
    assert read_per_query_csv(path)["expected"] == {"q1": 0.25}


# -- names from a file never lead elsewhere --------------------------------------------------
@pytest.mark.parametrize("name", ["../decoy/T", "/abs/T", "a/b", "..", ".hidden", "", 5,
                                  "C:\\x\\T", "T\n"])
def test_a_task_name_that_is_not_a_plain_name_is_refused(name):
    err = _error(per_query_name, name, source="res/T.json")
    assert err.source == "res/T.json" and "is not a plain task name" in err.message


def test_find_per_query_never_reads_a_decoy_outside(tmp_path):
    """A task_name with a path, or a link in the output folder, never reaches a CSV outside."""
    decoy_dir = tmp_path / "decoy"
    decoy_dir.mkdir()
    decoy = decoy_dir / "T_per_query.csv"
    decoy.write_text(HEADER + _row("q1"))
    out = tmp_path / "out"
    folder = out / "results" / "org__m" / "rev"
    folder.mkdir(parents=True)
    res = folder / "T.json"
    for name in ("../../../../decoy/T", str(decoy_dir / "T")):
        err = _error(find_per_query, res, name, model="org/m", revision="rev")
        assert err.source == str(res) and "task_name" in err.message
        err = _error(find_per_query, res, name, prediction_folder=out / "pred")
        assert "task_name" in err.message
    (out / "pred").mkdir()
    (out / "pred" / "T_per_query.csv").symlink_to(decoy)
    err = _error(find_per_query, res, "T", model="org/m", revision="rev")
    assert "leads outside" in err.message and err.source == str(res)
    err = _error(find_per_query, res, "T", prediction_folder=out / "pred")
    assert "leads outside" in err.message
    os.unlink(out / "pred" / "T_per_query.csv")
    (folder / "T_per_query.csv").symlink_to(decoy)
    assert "leads outside" in _error(find_per_query, res, "T").message
