"""``mteb-stratified evaluate``: the JSON contract, the table, and exit status 2 on bad input."""

import json
import subprocess
import sys

import pytest

import mteb_stratified


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified", *args], capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 z 2\nq2 0 x 1\nq3 0 y 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.5 t\nq1 Q0 z 3 0.5 t\nq1 Q0 c 4 0.1 t\n"
                   "q2 Q0 x 1 0.2 t\nq2 Q0 w 2 0.9 t\nq9 Q0 x 1 0.3 t\n")
    return str(qrels), str(run), tmp_path


def test_json_contract_matches_python_api(files):
    qrels, run, _ = files
    measures = ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100"]
    out = json.loads(cli("evaluate", "--qrels", qrels, "--run", run, "--measures", *measures,
                         "--json", "--per-query").stdout)
    api = mteb_stratified.evaluate(qrels, run, measures)
    assert out["queries"] == 2 and out["truncated_tie_queries"] == 0
    assert list(out["measures"]) == measures
    for name in measures:
        assert set(out["measures"][name]) == {"expected", "min", "max", "oblivious", "range",
                                              "bias"}
        assert out["measures"][name]["expected"] == pytest.approx(api[name].expected, abs=0)
    assert set(out["per_query"]) == {"q1", "q2"}
    assert out["per_query"]["q1"]["RR@10"] == pytest.approx(
        {"expected": 2 / 3 + 1 / 3 * 1 / 2, "min": 0.5, "max": 1.0, "oblivious": 1.0,
         "range": 0.5, "bias": 1 - (2 / 3 + 1 / 6)})
    # nothing silently dropped: the query only in the run and the one only in the qrels
    assert out["left_out"] == {"queries_only_in_run": 1, "queries_only_in_qrels": 1,
                               "queries_scored_zero": 0}


def test_without_per_query_and_missing_as_zero(files):
    qrels, run, _ = files
    out = json.loads(cli("evaluate", "--qrels", qrels, "--run", run, "--measures", "RR@10",
                         "--json", "-c").stdout)
    assert "per_query" not in out
    assert out["queries"] == 3  # q3 scored 0, as trec_eval -c


def test_whole_list_audit_only_when_asked(files):
    """The whole-list tie audit sorts every whole list: only with --whole-list-audit."""
    qrels, run, _ = files
    args = ("evaluate", "--qrels", qrels, "--run", run, "--measures", "P@1", "--json")
    plain = json.loads(cli(*args).stdout)["tie_audit"]
    full = json.loads(cli(*args, "--whole-list-audit").stdout)["tie_audit"]
    assert set(plain) == {"1"} and set(full) == {"1", "all"}
    assert full["all"]["distinct_scores_per_query"] == 2.0  # q1: 0.5, 0.1; q2: 0.9, 0.2
    assert "distinct_scores_per_query" not in plain["1"]


def test_table_output(files):
    qrels, run, _ = files
    text = cli("evaluate", "--qrels", qrels, "--run", run).stdout
    assert "nDCG@10" in text and "expected" in text and "bias" in text
    assert "1 query in the run but not in the qrels (left out): q9" in text


def test_relevance_level_and_input_order(files):
    qrels, run, _ = files
    out = json.loads(cli("evaluate", "--qrels", qrels, "--run", run, "--measures", "RR@10",
                         "--json", "--relevance-level", "2", "--oblivious", "input",
                         "--per-query").stdout)
    q1 = out["per_query"]["q1"]["RR@10"]
    assert q1["oblivious"] == pytest.approx(1 / 3)  # z (grade 2) is third in the input order
    assert q1["min"] == pytest.approx(1 / 3) and q1["max"] == 1.0


def bad(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case, run_text, qrels_text, expect", [
    ("nan", "q1 Q0 a 1 nan t\n", "q1 0 a 1\n", ["run.trec:1:", "score is nan", "fix:"]),
    ("inf", "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 -inf t\n", "q1 0 a 1\n", ["run.trec:2:", "score is -inf"]),
    ("duplicate", "q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n", "q1 0 a 1\n",
     ["run.trec:2:", "listed twice", "first on line 1"]),
    ("columns", "q1 Q0 a 0.5 t\n", "q1 0 a 1\n", ["run.trec:1:", "expected 6 columns"]),
    ("relevance", "q1 Q0 a 1 0.5 t\n", "q1 0 a high\n", ["qrels.txt:1:", "not a number"]),
    ("empty-run", "", "q1 0 a 1\n", ["run.trec:", "file is empty"]),
    ("empty-qrels", "q1 Q0 a 1 0.5 t\n", "", ["qrels.txt:", "file is empty"]),
    ("no-shared", "q1 Q0 a 1 0.5 t\n", "q7 0 a 1\n", ["share no query id", "fix:"]),
])
def test_bad_input_exits_2_without_traceback(tmp_path, case, run_text, qrels_text, expect):
    run = bad(tmp_path, "run.trec", run_text)
    qrels = bad(tmp_path, "qrels.txt", qrels_text)
    proc = cli("evaluate", "--qrels", qrels, "--run", run, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for piece in expect:
        assert piece in proc.stderr, (piece, proc.stderr)


def test_unknown_measure_suggests_nearest(files):
    qrels, run, _ = files
    proc = cli("evaluate", "--qrels", qrels, "--run", run, "--measures", "nDGC@10", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "unknown measure 'nDGC@10'" in proc.stderr and "did you mean" in proc.stderr
    assert "nDCG@10" in proc.stderr


def test_missing_file(tmp_path):
    proc = cli("evaluate", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"),
               check=False)
    assert proc.returncode == 2 and "file not found" in proc.stderr


def test_bundled_qrels_by_name_from_any_folder(tmp_path):
    """``--qrels nfcorpus:test`` names the bundled qrels, so the quick start works outside the
    clone (before: ``mteb_stratified/data/nfcorpus/qrels/test.tsv: file not found``)."""
    import os

    from mteb_stratified.io import bundled_path, load_beir

    qrels = load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels
    q, docs = next(iter(sorted(qrels.items())))
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {1.0 / (i + 1)} t\n" for i, d in enumerate(docs)))
    root = os.path.dirname(os.path.dirname(mteb_stratified.__file__))
    env = {**os.environ, "PYTHONPATH": root}

    def at(*args):
        return subprocess.run([sys.executable, "-m", "mteb_stratified", "evaluate", *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env)

    ok = at("--qrels", "nfcorpus:test", "--run", str(run), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["measures"]["nDCG@10"]["expected"] == 1.0
    bad = at("--qrels", "nfcorpus:tset", "--run", str(run))
    assert bad.returncode == 2 and "nfcorpus:dev, nfcorpus:test" in bad.stderr
    other = at("--qrels", "elsewhere:test", "--run", str(run))
    assert other.returncode == 2 and "not a bundled dataset" in other.stderr
    assert "Traceback" not in bad.stderr + other.stderr
