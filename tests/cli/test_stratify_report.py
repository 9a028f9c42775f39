"""``mteb-stratified stratify`` and ``report`` end to end on small synthetic results."""

import csv
import json

import numpy as np
import pytest

from mteb_stratified.cli.main import main
from mteb_stratified.io import bundled_path, load_beir

N = 40


@pytest.fixture(scope="module")
def qids():
    return sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:N]


def _write_csv(path, qids, seed):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hf_subset", "hf_split", "qid", "measure", "expected", "min", "max",
                    "oblivious", "range", "bias"])
        for q in qids:
            e = float(rng.uniform(0, 1))
            w.writerow(["default", "test", q, "nDCG@10", e, e, e, e, 0.0, 0.0])
            w.writerow(["default", "test", q, "RR@10", e, e, e, e, 0.0, 0.0])
    return str(path)


def _results(folder, qids, seed, csv_next_to_it=True):
    folder.mkdir(parents=True, exist_ok=True)
    res = {"task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
           "scores": {"test": [{"ndcg_at_10": 0.3, "main_score": 0.3, "hf_subset": "default"}]}}
    path = folder / "StratifiedNFCorpus.json"
    path.write_text(json.dumps(res))
    csv_path = folder / "StratifiedNFCorpus_per_query.csv"
    if not csv_next_to_it:
        csv_path = folder.parent / f"pq{seed}.csv"
    _write_csv(csv_path, qids, seed)
    return str(path), str(csv_path)


def test_stratify_adds_block(tmp_path, qids, capsys):
    path, _ = _results(tmp_path / "a", qids, 1)
    assert main(["stratify", path, "--resamples", "50", "--seed", "1"]) == 0
    data = json.loads(open(path).read())
    block = data["strata"]["test"]
    assert block["n_queries"] == N and block["measure"] == "nDCG@10"
    assert 0 < block["coverage"]["cluster"]["msc"] < 1
    assert block["gaps"] and block["per_stratum"]
    entry = data["scores"]["test"][0]
    assert entry["strata_pooled_ndcg_at_10_expected"] == pytest.approx(
        block["estimates"]["expected"]["analytic"]["pooled"]["estimate"])
    assert "strata_post_stratified_ndcg_at_10_expected" in entry and "strata_msc" in entry
    assert "MSC" in capsys.readouterr().out


def test_stratify_per_query_path_and_out(tmp_path, qids):
    path, pq = _results(tmp_path / "b", qids, 2, csv_next_to_it=False)
    out = tmp_path / "out"
    assert main(["stratify", path, "--per-query", pq, "--out", str(out), "--resamples", "20",
                 "--measure", "RR@10", "--scheme", "cell"]) == 0
    data = json.loads((out / "StratifiedNFCorpus.json").read_text())
    assert data["strata"]["test"]["scheme"] == "cell"
    assert "strata" not in json.loads(open(path).read())  # input untouched


@pytest.mark.parametrize("extra, message", [
    (["--scheme", "topics"], "unknown stratum scheme"),
    (["--n-min", "0"], "n_min must be an integer ≥ 1"),
    (["--alignment", "fuzzy"], "unknown alignment 'fuzzy'"),
])
def test_stratify_bad_options(tmp_path, qids, capsys, extra, message):
    path, _ = _results(tmp_path / "c", qids, 3)
    assert main(["stratify", path] + extra) == 2
    assert message in capsys.readouterr().err


def test_stratify_missing_per_query(tmp_path, qids, capsys):
    path, _ = _results(tmp_path / "d", qids, 4, csv_next_to_it=False)
    assert main(["stratify", path]) == 2
    assert "--per-query" in capsys.readouterr().err


def test_stratify_results_of_another_query_set(tmp_path, qids, capsys):
    path, _ = _results(tmp_path / "e", qids + ["NOT-NFCORPUS-1"], 5)
    assert main(["stratify", path, "--resamples", "20"]) == 2
    assert "not in the stratified dataset" in capsys.readouterr().err


def test_stratify_structure_of_another_corpus(tmp_path, qids, capsys):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "tea"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "tea"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    path, _ = _results(tmp_path / "f", qids, 6)
    assert main(["stratify", path, "--dataset", str(folder)]) == 2
    assert "fingerprint" in capsys.readouterr().err


def test_report_two_systems(tmp_path, qids):
    a, _ = _results(tmp_path / "org__model-a" / "rev", qids, 7)
    b = _write_csv(tmp_path / "b.csv", qids, 8)
    out = tmp_path / "rep" / "report.html"
    assert main(["report", a, f"B={b}", "--out", str(out), "--resamples", "50",
                 "--n-min", "2"]) == 0
    html = out.read_text()
    assert html.count("<svg") >= 4 and "org/model-a" in html
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Decision stability" in md and "| B | pooled |" in md
