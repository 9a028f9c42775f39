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
    # 40 queries: strata of ≥ 10 (the default 50 would make them one stratum)
    assert main(["stratify", path, "--resamples", "50", "--seed", "1", "--min-queries", "10"]) == 0
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
    # the chance figures travel with the block
    het = block["heterogeneity"]
    assert 0 <= het["p_value"] <= 1 and "split_half" in het
    grain = block["grain"]
    assert grain["min_queries"] == 10 and not grain["short"]
    assert all(r["n"] >= 10 for r in block["per_stratum"])
    assert block["power"]["mde"].keys() == {"0.2", "0.1"}


def test_stratify_writes_the_per_query_strata_table(tmp_path, qids):
    from mteb_stratified.stratification.bundled import bundled_strata

    path, _ = _results(tmp_path / "a", qids, 1)
    assert main(["stratify", path, "--resamples", "20"]) == 0
    table = tmp_path / "a" / "StratifiedNFCorpus_strata_test.tsv"
    rows = list(csv.DictReader(open(table, encoding="utf-8"), delimiter="\t"))
    _, strata = bundled_strata("nfcorpus", "test")
    judged = load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels
    assert len(rows) == strata.n_queries + len(strata.excluded)
    by_id = {r["query_id"]: r for r in rows}
    rec = strata.records()
    for q in strata.queries[:50]:
        r = by_id[q]
        assert int(r["cluster"]) == rec[q]["cluster"]
        assert r["dispersion_bin"] == rec[q]["dispersion_bin"]
        assert int(r["n_relevant"]) == sum(1 for g in judged[q].values() if g >= 1)
        if rec[q]["dispersion"] is None:
            assert r["dispersion"] == "" and r["dispersion_bin"] == "N/A"
        else:
            assert float(r["dispersion"]) == pytest.approx(rec[q]["dispersion"], rel=1e-5)
    # Δ is N/A for every query with one relevant document (and, rarely, for one whose other
    # relevant documents carry no cluster mass)
    kept = [r for r in rows if not r["excluded"]]
    for r in kept:
        if int(r["n_relevant"]) == 1:
            assert r["dispersion_bin"] == "N/A"
    na_many = [r for r in kept if r["dispersion_bin"] == "N/A" and int(r["n_relevant"]) > 1]
    assert len(na_many) <= 3
    # every stratified query names its evaluated stratum (with 40 scored queries and
    # --min-queries 50, the top of the tree), and each fine cluster lies in exactly one
    assert all(r["evaluated_stratum"] for r in kept)
    home: dict = {}
    for r in kept:
        assert home.setdefault(r["cluster"], r["evaluated_stratum"]) == r["evaluated_stratum"]
        assert r["evaluated_label"]


def test_two_tasks_in_one_folder_keep_a_strata_table_each(tmp_path, qids):
    """A full run and a quick-run subset (``<Task>__subset-q40-dall``, its own task name) in one
    folder: each result gets ``<its task>_strata_test.tsv``, evaluated at its own grain, and
    neither overwrites the other's (issue 45: the table was named after --task, so the second
    result's table replaced the first's)."""
    from mteb_stratified.core.query_set import subset_task_name

    folder = tmp_path / "two"
    judged = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)
    full, _ = _results(folder, judged, 11)  # every judged query: a finer grain than 40 queries
    subset = subset_task_name("StratifiedNFCorpus", N, None)
    res = json.loads(open(full).read()) | {"task_name": subset}
    (folder / f"{subset}.json").write_text(json.dumps(res))
    _write_csv(folder / f"{subset}_per_query.csv", qids, 12)
    assert main(["stratify", str(folder), "--resamples", "20", "--min-queries", "10"]) == 0

    grains = {}
    for task, n in (("StratifiedNFCorpus", len(judged)), (subset, N)):
        block = json.loads((folder / f"{task}.json").read_text())["strata"]["test"]
        assert block["n_queries"] + block["n_excluded"] == n
        table = folder / f"{task}_strata_test.tsv"
        assert table.is_file(), f"{table.name} missing: {sorted(p.name for p in folder.iterdir())}"
        rows = list(csv.DictReader(open(table, encoding="utf-8"), delimiter="\t"))
        # the table's evaluated strata are the ones of its own result's grain, cluster by cluster
        home = {str(c): s["name"] for s in block["grain"]["strata"] for c in s["clusters"]}
        kept = [r for r in rows if not r["excluded"]]
        wrong = [r["query_id"] for r in kept if r["evaluated_stratum"] != home[r["cluster"]]]
        assert kept and not wrong, (f"{table.name}: {len(wrong)} of {len(kept)} queries stand "
                                    f"in a stratum of another result's grain")
        grains[task] = {r["evaluated_stratum"] for r in kept}
    # the two results stand at different grains, so one table in place of the other shows
    assert grains["StratifiedNFCorpus"] != grains[subset]
    assert sorted(p.name for p in folder.glob("*_strata_*.tsv")) == sorted(
        [f"{subset}_strata_test.tsv", "StratifiedNFCorpus_strata_test.tsv"])


def test_stratify_per_query_path_and_out(tmp_path, qids):
    path, pq = _results(tmp_path / "b", qids, 2, csv_next_to_it=False)
    out = tmp_path / "out"
    assert main(["stratify", path, "--per-query", pq, "--out", str(out), "--resamples", "20",
                 "--measure", "RR@10", "--scheme", "cell"]) == 0
    data = json.loads((out / "StratifiedNFCorpus.json").read_text())
    assert data["strata"]["test"]["scheme"] == "cell"
    assert "strata" not in json.loads(open(path).read())  # input untouched


@pytest.mark.parametrize("extra, message", [
    (["--scheme", "topics"], "argument --scheme: invalid choice: 'topics'"),
    (["--n-min", "0"], "argument --n-min: must be an integer >= 1, got 0"),
    (["--alignment", "fuzzy"], "argument --alignment: invalid choice: 'fuzzy'"),
    (["--min-queries", "0"], "argument --min-queries: must be an integer in [1, 1000000], got 0"),
    (["--min-queries", "-4"], "argument --min-queries: must be an integer in [1, 1000000], "
                              "got -4"),
    (["--min-queries", "2.5"], "argument --min-queries: must be an integer in [1, 1000000], "
                               "got '2.5'"),
    (["--level", "-1"], "argument --level: must be an integer in [0, 64], got -1"),
])
def test_stratify_bad_options(tmp_path, qids, capsys, extra, message):
    path, _ = _results(tmp_path / "c", qids, 3)
    assert main(["stratify", path] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["stratify", "report"])
def test_a_level_the_tree_lacks_names_the_valid_range(tmp_path, qids, capsys, command):
    from mteb_stratified.structure.artifact import StructureArtifact

    top = StructureArtifact.bundled("nfcorpus").cluster_tree.n_levels - 1
    path, _ = _results(tmp_path / "lv", qids, 3)
    out = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    assert main([command, path, "--level", str(top + 1)] + out) == 2
    err = capsys.readouterr().err
    assert f"levels 0..{top}" in err and "Traceback" not in err


def test_report_with_one_system_says_the_paired_tests_are_left_out(tmp_path, qids, capsys):
    path, _ = _results(tmp_path / "one", qids, 3)
    out = tmp_path / "r.html"
    assert main(["report", path, "-o", str(out), "--resamples", "20"]) == 0
    md = (tmp_path / "r.md").read_text()
    assert "Paired tests: one system only" in md
    assert "Paired tests: one system only" in out.read_text()


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


def _mteb_layout(out, qids, seed, *, model="org/model-a", revision="rev1", pred=None,
                 expected_key=True):
    """`mteb run --output-folder OUT --prediction-folder PRED`: the TaskResult under
    OUT/results/<model>/<revision>/, the per-query CSV (with model columns) in PRED."""
    folder = out / "results" / model.replace("/", "__") / revision
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": model, "revision": revision}))
    pred = pred or out / "pred"
    pred.mkdir(parents=True, exist_ok=True)
    csv_path = pred / "StratifiedNFCorpus_per_query.csv"
    rng = np.random.default_rng(seed)
    rows = []
    if csv_path.exists():
        rows = list(csv.reader(open(csv_path)))[1:]
    values = rng.uniform(0, 1, len(qids))
    for q, e in zip(qids, values):
        rows.append([model, revision, "default", "test", q, "nDCG@10", e, e, e, e, 0.0, 0.0])
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "revision", "hf_subset", "hf_split", "qid", "measure", "expected",
                    "min", "max", "oblivious", "range", "bias"])
        w.writerows(rows)
    entry = {"ndcg_at_10": 0.3, "main_score": 0.3, "hf_subset": "default"}
    if expected_key:
        entry["ndcg_at_10_expected"] = round(float(values.mean()), 6)
    res = {"task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
           "scores": {"test": [entry]}}
    path = folder / "StratifiedNFCorpus.json"
    path.write_text(json.dumps(res))
    return path, csv_path


def test_stratify_finds_the_per_query_csv_in_the_prediction_folder(tmp_path, qids, capsys):
    """The README layout: the CSV is in OUT/pred, not next to the results file; an output
    folder argument stands for every StratifiedNFCorpus result in it."""
    out = tmp_path / "runs"
    a, _ = _mteb_layout(out, qids, 1, model="org/a")
    b, _ = _mteb_layout(out, qids, 2, model="org/b")  # the same prediction folder, two models
    assert main(["stratify", str(out), "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert "org/a" in printed and "org/b" in printed
    for path, seed in ((a, 1), (b, 2)):
        block = json.loads(path.read_text())["strata"]["test"]
        expected = np.random.default_rng(seed).uniform(0, 1, N).mean()
        assert block["estimates"]["expected"]["analytic"]["pooled"]["estimate"] == \
            pytest.approx(expected, abs=1e-12)  # each model's own rows


def test_stratify_prediction_folder_flag_and_its_errors(tmp_path, qids, capsys):
    elsewhere = tmp_path / "elsewhere"
    path, _ = _mteb_layout(tmp_path / "runs", qids, 3, pred=elsewhere)
    assert main(["stratify", str(path), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert "no StratifiedNFCorpus_per_query.csv with rows of model org/model-a" in err
    assert "--prediction-folder" in err
    assert main(["stratify", str(path), "--resamples", "20",
                 "--prediction-folder", str(elsewhere)]) == 0
    capsys.readouterr()
    assert main(["stratify", str(path), "--prediction-folder", str(tmp_path)]) == 2
    assert "no StratifiedNFCorpus_per_query.csv in the prediction folder" in \
        capsys.readouterr().err


def _stratify_edited(tmp_path, qids, seed, edit, target=None):
    """Stratify a README-layout result after ``edit(data)`` changed its JSON; (rc, stderr)."""
    path, _ = _mteb_layout(tmp_path / "runs", qids, seed)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return main(["stratify", str(target or path)])


def test_a_per_query_csv_of_another_run_is_refused(tmp_path, qids, capsys):
    """The CSV's mean must equal the results file's score: a stale CSV is never used."""
    def shift(data):
        data["scores"]["test"][0]["ndcg_at_10_expected"] += 0.01
    assert _stratify_edited(tmp_path, qids, 4, shift) == 2
    err = capsys.readouterr().err
    assert "do not match the results file" in err and "comes from another run" in err


def test_a_folder_without_results_of_the_task(tmp_path, qids, capsys):
    assert _stratify_edited(tmp_path, qids, 5, lambda d: d.update(task_name="NFCorpus"),
                            target=tmp_path / "runs") == 2
    err = capsys.readouterr().err
    assert "no StratifiedNFCorpus results under" in err and "NFCorpus" in err


def test_a_task_name_with_a_path_is_refused(tmp_path, qids, capsys):
    assert _stratify_edited(tmp_path, qids, 6, lambda d: d.update(
        task_name="../../../etc/StratifiedNFCorpus")) == 2
    assert "is not a plain task name" in capsys.readouterr().err


def test_report_folder_and_trec_run(tmp_path, qids):
    out = tmp_path / "runs"
    _mteb_layout(out, qids, 7, model="org/a")
    run = tmp_path / "bm25.trec"
    run.write_text("".join(f"{q} Q0 MED-10 1 1.0 bm25\n" for q in qids))
    html = tmp_path / "r" / "report.html"
    assert main(["report", str(out), str(run), "-o", str(html), "--resamples", "20",
                 "--n-min", "2"]) == 0
    text = html.read_text()
    assert "org/a" in text and "bm25" in text


def test_inputs_are_checked_before_anything_heavy_loads(tmp_path):
    """A missing input fails at once: the structure, spaCy and matplotlib are not loaded."""
    import subprocess
    import sys

    code = ("import sys; from mteb_stratified.cli.main import main; "
            f"rc = main(['report', {str(tmp_path / 'missing.json')!r}]); "
            "heavy = [m for m in ('spacy', 'matplotlib', 'torch', "
            "'mteb_stratified.structure.artifact') if m in sys.modules]; "
            "print(rc, heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split("\n")[0] == "2 []", proc.stdout + proc.stderr
    assert "file or folder not found" in proc.stderr
    code = code.replace("'report'", "'stratify'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split("\n")[0] == "2 []", proc.stdout + proc.stderr
    assert "results file not found" in proc.stderr


def test_stratify_out_mirrors_the_output_folder(tmp_path, qids, capsys):
    """-o/--out copies each result to results/<model>/<revision>/ under the folder, with its
    model_meta.json, so two models' StratifiedNFCorpus.json do not collide and the copies stay
    readable by the leaderboard."""
    out = tmp_path / "runs"
    _mteb_layout(out, qids, 1, model="org/a")
    _mteb_layout(out, qids, 2, model="org/b")
    copies = tmp_path / "copies"
    assert main(["stratify", str(out), "--resamples", "20", "-o", str(copies)]) == 0
    for model in ("org__a", "org__b"):
        folder = copies / "results" / model / "rev1"
        assert (folder / "StratifiedNFCorpus.json").exists()
        assert (folder / "model_meta.json").exists()
    assert "strata" not in json.loads((out / "results" / "org__a" / "rev1" /
                                       "StratifiedNFCorpus.json").read_text())
    capsys.readouterr()
    assert main(["leaderboard", str(copies)]) == 0
    printed = capsys.readouterr().out
    assert "org/a" in printed and "org/b" in printed


def test_a_single_query_gives_a_block_without_the_chance_test(tmp_path, qids, capsys):
    path, _ = _results(tmp_path / "one", qids[:1], 3)
    assert main(["stratify", path, "--resamples", "20"]) == 0
    block = json.loads(open(path).read())["strata"]["test"]
    assert block["n_queries"] == 1 and block["heterogeneity"] is None


def test_report_refuses_an_md_output(tmp_path, qids, capsys):
    a, _ = _results(tmp_path / "org__m" / "rev", qids, 4)
    assert main(["report", a, "-o", str(tmp_path / "r.md")]) == 2
    assert "ends in .md" in capsys.readouterr().err


# -- issue #15: bad input is a clear error (FILE:LINE, fix), names never become other paths ---
def _decoy(tmp_path, qids):
    """A per-query CSV outside the output folder that would pass every check if it were read."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    return _write_csv(decoy / "StratifiedNFCorpus_per_query.csv", qids, 1)


@pytest.mark.parametrize("command", ["stratify", "report"])
@pytest.mark.parametrize("task_name", ["../../../../decoy/StratifiedNFCorpus", "ABS"])
def test_a_task_name_with_a_path_never_reads_the_decoy(tmp_path, qids, capsys, monkeypatch,
                                                      command, task_name):
    decoy = _decoy(tmp_path, qids)
    if task_name == "ABS":
        task_name = decoy[: -len("_per_query.csv")]
    path, _ = _mteb_layout(tmp_path / "runs", qids, 1, expected_key=False)
    (tmp_path / "runs" / "pred" / "StratifiedNFCorpus_per_query.csv").unlink()
    data = json.loads(path.read_text())
    data["task_name"] = task_name
    path.write_text(json.dumps(data))
    opened = []
    real_open = open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    rc = main([command, str(path), "-o", str(tmp_path / "out" / "r.html")]
              if command == "report" else [command, str(path)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert rc == 2 and f"{path}: task_name" in err and "is not a plain task name" in err
    assert "fix:" in err and decoy not in opened


def test_a_linked_per_query_csv_outside_the_output_folder_is_refused(tmp_path, qids, capsys):
    decoy = _decoy(tmp_path, qids)
    path, csv_path = _mteb_layout(tmp_path / "runs", qids, 1, expected_key=False)
    csv_path.unlink()
    csv_path.symlink_to(decoy)
    assert main(["stratify", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: " in err and "leads outside" in err and "fix:" in err


def test_report_with_a_corrupt_results_file_or_csv(tmp_path, qids, capsys):
    path, csv_path = _mteb_layout(tmp_path / "runs", qids, 1)
    out = str(tmp_path / "r.html")
    text = path.read_text()
    path.write_text(text[:-5])
    assert main(["report", str(path), "-o", out]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: corrupt results file: not valid JSON" in err and "fix:" in err
    path.write_text(text)
    lines = csv_path.read_text().splitlines(keepends=True)
    lines[3] = ",".join(lines[3].split(",")[:-2]) + "\n"
    csv_path.write_text("".join(lines))
    assert main(["report", str(path), "-o", out]) == 2
    err = capsys.readouterr().err
    assert f"{csv_path}:4: row has 10 fields, the header has 12" in err and "fix:" in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("argv, message", [
    (["report", "SYS", "-o", "DIR"], "-o/--out is a folder, but a file is needed here"),
    (["report", "SYS", "-o", "FILE/r.html"], "-o/--out cannot be created: "),
    (["leaderboard", "RUNS", "-o", "FILE"], "-o/--out is a file, but a folder is needed here"),
    (["leaderboard", "RUNS", "-o", "FILE/sub"], "-o/--out cannot be created: "),
    (["demo", "-o", "FILE"], "-o/--out is a file, but a folder is needed here"),
    (["demo", "-o", "FILE/sub/deeper"], "-o/--out cannot be created: "),
    (["precision-sweep", "-o", "FILE"], "-o/--out is a file, but a folder is needed here"),
    (["precision-sweep", "-o", "FILE/sub"], "-o/--out cannot be created: "),
])
def test_out_of_the_wrong_kind_fails_before_any_work(tmp_path, qids, capsys, argv, message):
    """A folder where a file is wanted, a file where a folder is wanted, a file as parent:
    exit 2 at once (no BM25, no model, no structure), nothing written."""
    import time

    path, _ = _mteb_layout(tmp_path / "runs", qids, 1)
    (tmp_path / "DIR").mkdir()
    (tmp_path / "FILE").write_text("x")
    subs = {"SYS": str(path), "RUNS": str(tmp_path / "runs"), "DIR": str(tmp_path / "DIR"),
            "FILE": str(tmp_path / "FILE")}
    argv = [next((arg.replace(k, v, 1) for k, v in subs.items() if arg.startswith(k)), arg)
            for arg in argv]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    t0 = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err
    assert message in err and "fix:" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("content, where, message", [
    ('{"task_name": "StratifiedNFCorpus",\n "scores": {"test": {"ndcg_at_10": 1}}}', 2,
     "scores['test'] is not a list of score entries"),
    ('{"task_name": "StratifiedNFCorpus",\n "scores": {', 2, "not valid JSON"),
])
def test_leaderboard_with_a_corrupt_results_file(tmp_path, qids, capsys, content, where,
                                                 message):
    path, _ = _mteb_layout(tmp_path / "runs", qids, 1)
    path.write_text(content)
    assert main(["leaderboard", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{where}: corrupt results file: {message}" in err and "fix:" in err


def test_results_of_different_query_sets_are_compared_only_within_a_set(tmp_path, qids, capsys):
    """A 5-query result next to full ones (the issue's mixed folder): report and stratify say
    the sets apart and never pair or rank across them; --require-same-queries exits 2 naming
    both sets."""
    out = tmp_path / "runs"
    _mteb_layout(out, qids, 1, model="org/full-a", pred=out / "pa")
    _mteb_layout(out, qids, 2, model="org/full-b", pred=out / "pb")
    _mteb_layout(out, qids[:5], 3, model="org/five", pred=out / "p5")
    html = tmp_path / "rep" / "report.html"
    base = ["--resamples", "50", "--n-min", "2", "--min-queries", "10"]
    assert main(["report", str(out), "--out", str(html), *base]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"2 different query sets (test, {len(qids)} queries" in md
    assert "test, 5 queries" in md and "none is ranked across sets" in md
    assert f"Ranking (test, {len(qids)} queries" in md  # the full set's two systems only
    assert "org/five −" not in md and "− org/five" not in md  # no pair across sets
    assert "Shown: the systems of one query set" in md
    # every table and plot that puts systems side by side shows one query set (#43): the
    # estimates, the ties plot and table (HTML and Markdown) and the printed line
    page = html.read_text()
    full_label = f"test, {len(qids)} queries"
    est = page.split("<h2 id='estimates'>")[1].split("<h2")[0]
    first_est, second_est = est.split("<h3>")[1:]
    assert first_est.startswith(full_label) and "org/five" not in first_est
    assert second_est.startswith("test, 5 queries") and "org/full-a" not in second_est
    ties = page.split("<h2 id='ties-section'>")[1].split("<h2")[0]
    first_ties, second_ties = ties.split("<h3>")[1:]
    assert "id='ties'" in first_ties and "org/five" not in first_ties
    assert "id='ties-2'" in second_ties and "org/full-a" not in second_ties
    for table in ("Estimates of", "Ties of"):
        blocks = [b for b in md.split("\n\n") if b.startswith(table)]
        assert len(blocks) == 2, (table, blocks)
        assert full_label in blocks[0] and "5 queries" in blocks[1]
    tables = md.split("Estimates of")[1:]
    assert "org/five" not in tables[0].split("Estimates of")[0].split("\n\n")[1]
    printed = capsys.readouterr().out.splitlines()[-1]
    assert printed.count("[test, ") == 2 and printed.index("org/full-a") < printed.index(
        "[test, 5 queries") < printed.index("org/five")
    assert main(["report", str(out), "--out", str(html), "--require-same-queries", *base]) == 2
    err = capsys.readouterr().err
    assert "different query sets" in err and "5 queries" in err and "org/five" in err
    assert main(["stratify", str(out), "--resamples", "20", "--require-same-queries"]) == 2
    assert "org/five" in capsys.readouterr().err
    assert main(["stratify", str(out), "--resamples", "20", "--n-min", "2"]) == 0
    assert "2 different query sets" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["stratify", "report"])
def test_every_long_step_prints_a_progress_line(tmp_path, qids, capsys, command):
    """#43: ``stratify`` and ``report`` were silent for 10-30 s on NFCorpus.  Each long step
    now prints a line on stderr that ends in its time (a carriage return first, as a progress
    bar's); stdout stays the result; --no-progress silences them."""
    import re

    out = tmp_path / "runs"
    _mteb_layout(out, qids, 1, model="org/a", pred=out / "pa")
    _mteb_layout(out, qids, 2, model="org/b", pred=out / "pb")
    argv = [command, str(out), "--resamples", "20", "--n-min", "2"]
    if command == "report":
        argv += ["--out", str(tmp_path / "rep" / "report.html")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    steps = re.findall(rf"\r{command}: ([^\r\n]+): \d+\.\d s\n", captured.err)
    assert steps[0] == "loading the structure, the queries and their strata"
    assert any(s.startswith("1/2 org/a: estimates") for s in steps)
    assert any(s.startswith("2/2 org/b: estimates") for s in steps)
    if command == "report":
        assert "paired tests and ranking stability" in steps
        assert "drawing the plots and writing the HTML and Markdown" in steps
    assert "\r" not in captured.out
    assert main(argv + ["--no-progress"]) == 0
    assert "\r" not in capsys.readouterr().err


def test_a_corrupt_result_in_the_folder_is_named_and_the_others_still_read(tmp_path, qids,
                                                                          capsys):
    """#43's bad input: a half-written results JSON next to good ones is named (file and
    reason) on stderr, and stratify and report go on with the others; given alone by its
    path it is still an error (exit 2)."""
    out = tmp_path / "runs"
    _mteb_layout(out, qids, 1, model="org/a", pred=out / "pa")
    bad, _ = _mteb_layout(out, qids, 2, model="org/b", pred=out / "pb")
    bad.write_text(bad.read_text()[:-5])
    html = tmp_path / "rep" / "report.html"
    assert main(["report", str(out), "--out", str(html), "--resamples", "20", "--n-min", "2",
                 "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert f"left out: {bad}:1: corrupt results file: not valid JSON" in captured.err
    assert "org/a" in html.read_text() and "org/b" not in html.read_text()
    assert main(["stratify", str(out), "--resamples", "20", "--n-min", "2",
                 "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert f"left out: {bad}:1" in captured.err and "org/a" in captured.out
    assert main(["stratify", str(bad), "--no-progress"]) == 2
