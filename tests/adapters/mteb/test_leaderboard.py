"""Leaderboard export from an MTEB results folder, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mteb_stratified.core.errors import InputError


def _write_result(root, model, task, scores, revision="r1"):
    folder = root / "results" / model.replace("/", "__") / revision
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": model, "revision": revision}))
    data = {"dataset_revision": "x", "task_name": task, "mteb_version": "2.26.24",
            "scores": {"test": [{"hf_subset": "default", "languages": ["eng-Latn"], **scores}]},
            "evaluation_time": 1.0, "kg_co2_emissions": None}
    (folder / f"{task}.json").write_text(json.dumps(data))
    return folder / f"{task}.json"


def _scores(expected, oblivious, rng=0.01, share=0.1):
    return {"main_score": expected, "ndcg_at_10": round(oblivious, 5),
            "ndcg_at_10_expected": expected, "ndcg_at_10_oblivious": oblivious,
            "ndcg_at_10_range": rng, "ndcg_at_10_bias": oblivious - expected,
            "ndcg_at_10_min": expected - rng / 2, "ndcg_at_10_max": expected + rng / 2,
            "ties_query_share_at_10": share}


def test_leaderboard_sorts_and_flags_rank_flip(tmp_path, capsys):
    from mteb_stratified.cli import leaderboard

    _write_result(tmp_path, "org/a", "StratifiedNFCorpus", _scores(0.30, 0.32))
    _write_result(tmp_path, "org/b", "StratifiedNFCorpus", _scores(0.31, 0.30))
    _write_result(tmp_path, "org/c", "StratifiedNFCorpus", _scores(0.20, 0.20, rng=0.0, share=0.0))
    out_dir = tmp_path / "lb"
    assert leaderboard.main([str(tmp_path), "-o", str(out_dir)]) == 0
    printed = capsys.readouterr().out
    assert "WOULD DIFFER" in printed and "org/a" in printed
    import pandas as pd

    frame = pd.read_csv(out_dir / "leaderboard.csv")
    assert list(frame["model"]) == ["org/b", "org/a", "org/c"]
    assert {"StratifiedNFCorpus expected", "StratifiedNFCorpus range", "StratifiedNFCorpus bias",
            "StratifiedNFCorpus tied_share"} <= set(frame.columns)
    md = (out_dir / "leaderboard.md").read_text()
    assert md.count("| org/") == 3


def test_leaderboard_same_ranking_note(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    _write_result(tmp_path, "org/a", "T", _scores(0.3, 0.3))
    _write_result(tmp_path, "org/b", "T", _scores(0.2, 0.2))
    out = export_leaderboard(tmp_path)
    assert "is the same" in out["note"]
    assert (tmp_path / "leaderboard.csv").exists()


def test_leaderboard_errors(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    with pytest.raises(InputError, match="results folder not found"):
        export_leaderboard(tmp_path / "nope")
    plain = tmp_path / "plain"
    _write_result(plain, "org/a", "NFCorpus", {"main_score": 0.3, "ndcg_at_10": 0.3})
    with pytest.raises(InputError) as err:
        export_leaderboard(plain)
    assert "no tie-aware columns" in str(err.value) and "StratifiedNFCorpus" in str(err.value)
    bad = tmp_path / "bad"
    path = _write_result(bad, "org/a", "StratifiedNFCorpus", _scores(0.3, 0.3))
    path.write_text('{"task_name": "StratifiedNFCorpus", "scores": {')
    with pytest.raises(InputError) as err:
        export_leaderboard(bad)
    assert "corrupt results file" in str(err.value) and "--overwrite-strategy always" in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no MTEB result files"):
        export_leaderboard(tmp_path / "empty")


def test_leaderboard_cli_exit_code_on_bad_input(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified.cli.leaderboard",
                           str(tmp_path / "missing")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "results folder not found" in proc.stderr and "fix:" in proc.stderr


def _strata_scores(post):
    return {"strata_post_stratified_ndcg_at_10_expected": post,
            "strata_post_stratified_ndcg_at_10_expected_ci_low": post - 0.05,
            "strata_post_stratified_ndcg_at_10_expected_ci_high": post + 0.05,
            "strata_pooled_ndcg_at_10_expected": post + 0.01, "strata_msc": 0.25,
            "strata_scc": 0.5, "strata_uncovered_weight": 0.2}


def test_leaderboard_reads_the_readme_layout_and_skips_its_own_files(tmp_path, capsys):
    """`--output-folder runs --prediction-folder runs/pred`: the prediction folder holds the
    predictions, the per-query CSV and the strata block, none of them a TaskResult."""
    from mteb_stratified.cli.main import main

    _write_result(tmp_path, "org/a", "StratifiedNFCorpus", {**_scores(0.3, 0.3),
                                                            **_strata_scores(0.28)})
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "StratifiedNFCorpus_predictions.json").write_text('{"default": {"test": {}}}')
    (pred / "StratifiedNFCorpus_strata_test.json").write_text('{"measure": "nDCG@10"}')
    (pred / "StratifiedNFCorpus_per_query.csv").write_text("qid\n")
    assert main(["leaderboard", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("| rank"))
    # the compact default: E, range, bias and one stratified estimate; short headers
    assert header == "| rank | model | revision | E | range | bias | corpus-weighted E |"
    assert "0.2800" in printed and "StratifiedNFCorpus" in printed


def test_leaderboard_columns_option_and_full_csv(tmp_path, capsys):
    from mteb_stratified.cli.main import main

    _write_result(tmp_path, "org/a", "T1", {**_scores(0.3, 0.31), **_strata_scores(0.28)})
    _write_result(tmp_path, "org/a", "T2", _scores(0.5, 0.5))
    assert main(["leaderboard", str(tmp_path), "--columns", "expected", "oblivious",
                 "strata_msc", "-o", str(tmp_path / "lb")]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("| rank"))
    assert header == ("| rank | model | revision | T1 E | T1 oblivious | T1 MSC | T2 E | "
                      "T2 oblivious | T2 MSC | mean E |")
    import pandas as pd

    frame = pd.read_csv(tmp_path / "lb" / "leaderboard.csv")  # every column, full names
    assert {"T1 expected", "T1 strata_post_stratified_ci_high", "T2 tied_share",
            "mean_expected"} <= set(frame.columns)
    assert main(["leaderboard", str(tmp_path), "--columns", "ndcg"]) == 2
    assert "invalid choice: 'ndcg'" in capsys.readouterr().err


def test_leaderboard_out_must_be_a_folder(tmp_path, capsys):
    from mteb_stratified.cli.main import main

    _write_result(tmp_path, "org/a", "T", _scores(0.3, 0.3))
    (tmp_path / "file").write_text("x")
    assert main(["leaderboard", str(tmp_path), "-o", str(tmp_path / "file")]) == 2
    assert "is a file, but a folder is needed" in capsys.readouterr().err


def test_model_names_from_data_are_escaped_in_markdown(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    _write_result(tmp_path, "org/a|<b>x</b>", "T", _scores(0.3, 0.3))
    md = export_leaderboard(tmp_path)["markdown"]
    row = next(line for line in md.splitlines() if line.startswith("| 1 "))
    assert "<b>" not in md and row.count(" | ") == 5  # the | in the name did not add a column


def test_names_from_data_make_no_markdown_link_image_or_spreadsheet_formula(tmp_path):
    """A model called ``![x](http://…)``, ``[click](javascript:…)`` or ``=HYPERLINK(…)`` is shown
    as text: no image fetched, no link, no formula run when the CSV is opened."""
    import csv

    from mteb_stratified.adapters.mteb.results import export_leaderboard

    _write_result(tmp_path, "org/![x](http://attacker.test/p.png)", "T", _scores(0.3, 0.3))
    _write_result(tmp_path, "org/[click](javascript:alert(1))", "T", _scores(0.4, 0.4))
    _write_result(tmp_path, '=HYPERLINK("http://attacker.test","x")', "T", _scores(0.5, 0.5))
    out = export_leaderboard(tmp_path)
    md = out["markdown"]
    assert "![x](" not in md and "[click](" not in md
    assert "\\!\\[x\\](http://attacker.test/p.png)" in md and "\\[click\\]" in md
    rows = list(csv.reader(open(out["csv"], encoding="utf-8")))
    cells = [c for r in rows for c in r]
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
    assert any(c.startswith("'=HYPERLINK") for c in cells)
    assert not any(c.startswith("'-") and c[2:3].isdigit() for c in cells)  # numbers untouched



def _with_queries(scores, qids, subset=None):
    from mteb_stratified.core.query_set import QuerySet

    return {**scores, **QuerySet.of(qids, "test", subset=subset).to_keys()}


def test_results_of_different_query_sets_are_never_ranked_together(tmp_path, capsys):
    """The issue's case: a 5-query subset run next to full runs. Before, the 5-query run was
    ranked first with no word; now each query set is its own table, and
    --require-same-queries refuses."""
    from mteb_stratified.cli import leaderboard

    full = [f"q{i}" for i in range(323)]
    _write_result(tmp_path, "org/fp32", "StratifiedNFCorpus", _with_queries(_scores(0.3163, 0.316), full))
    _write_result(tmp_path, "org/bm25", "StratifiedNFCorpus", _with_queries(_scores(0.3064, 0.306), full))
    _write_result(tmp_path, "org/bf16", "StratifiedNFCorpus",
                  _with_queries(_scores(0.6857, 0.68), full[:5], "MTEB_STRATIFIED_MAX_QUERIES=5"))
    out_dir = tmp_path / "lb"
    assert leaderboard.main([str(tmp_path), "-o", str(out_dir)]) == 0
    md = (out_dir / "leaderboard.md").read_text()
    assert "2 different query sets" in md and "never against another" in md
    first, second = md.split("### ")[1:]
    assert "323 queries" in first and "org/fp32" in first and "org/bm25" in first
    assert "org/bf16" not in first and "| 1 | org/fp32" in first
    assert "5 queries" in second and "subset MTEB" in second and "| 1 | org/bf16" in second
    import pandas as pd

    frame = pd.read_csv(out_dir / "leaderboard.csv")
    assert list(frame["rank"]) == [1, 2, 1]  # ranked within each query set
    assert frame["query_set"].str.contains("323 queries").tolist() == [True, True, False]
    assert list(frame["StratifiedNFCorpus queries"]) == [323, 323, 5]
    capsys.readouterr()
    assert leaderboard.main([str(tmp_path), "-o", str(out_dir), "--require-same-queries"]) == 2
    err = capsys.readouterr().err
    assert "different query sets" in err and "323 queries" in err and "5 queries" in err
    assert "org/bf16" in err


def test_one_query_set_is_one_table_with_a_queries_column(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    qids = ["a", "b", "c"]
    _write_result(tmp_path, "org/a", "T", _with_queries(_scores(0.3, 0.3), qids))
    _write_result(tmp_path, "org/b", "T", _with_queries(_scores(0.2, 0.2), list(reversed(qids))))
    out = export_leaderboard(tmp_path, require_same_queries=True)
    assert len(out["groups"]) == 1 and "###" not in out["markdown"]
    assert "| rank | model | revision | queries | E |" in out["markdown"]
    assert "| 1 | org/a | r1 | 3 |" in out["markdown"]


def test_a_subset_task_name_is_its_task_ranked_apart(tmp_path):
    """A quick run's results file (``<Task>__subset-q5-d100.json``) counts as the task's, on
    its own query set: never a column or a task of its own, never ranked with the full run."""
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    full = [f"q{i}" for i in range(20)]
    _write_result(tmp_path, "org/a", "StratifiedNFCorpus", _with_queries(_scores(0.3, 0.3), full))
    _write_result(tmp_path, "org/a", "StratifiedNFCorpus__subset-q5-d100",
                  _with_queries(_scores(0.5, 0.5), full[:5], subset="MTEB_STRATIFIED_MAX_"
                                "QUERIES=5, MTEB_STRATIFIED_MAX_DOCS=100"))
    out = export_leaderboard(tmp_path, tasks=["StratifiedNFCorpus"])
    assert [len(g) for g in out["groups"]] == [1, 1]
    assert {g[0].task for g in out["groups"]} == {"StratifiedNFCorpus"}
    first, second = out["markdown"].split("### ")[1:]
    assert "20 queries" in first and "0.3000" in first
    assert "5 queries" in second and "subset" in second and "0.5000" in second
    # a folder of subset runs alone is ranked on its own and labelled as a subset
    only = tmp_path / "only"
    _write_result(only, "org/a", "StratifiedNFCorpus__subset-q5-d100",
                  _with_queries(_scores(0.5, 0.5), full[:5], subset="MTEB_STRATIFIED_MAX_"
                                "QUERIES=5, MTEB_STRATIFIED_MAX_DOCS=100"))
    out = export_leaderboard(only, tasks=["StratifiedNFCorpus"])
    assert "A QUICK-RUN SUBSET: test, 5 queries" in out["text"]
    assert "subset MTEB_STRATIFIED_MAX_QUERIES=5" in out["text"]


def test_a_task_name_no_file_has_lists_the_names_found(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard

    _write_result(tmp_path, "org/a", "StratifiedNFCorpus", _scores(0.3, 0.3))
    _write_result(tmp_path, "org/a", "StratifiedSciDocs", _scores(0.3, 0.3))
    with pytest.raises(InputError) as err:
        export_leaderboard(tmp_path, tasks=["StratifiedNFCorpsu"])
    text = str(err.value)
    assert "no results of StratifiedNFCorpsu" in text and "no MTEB result files" not in text
    assert "StratifiedNFCorpus, StratifiedSciDocs" in text
    assert "did you mean -t StratifiedNFCorpus?" in text


def test_a_corrupt_results_file_is_named_and_the_others_are_read(tmp_path):
    from mteb_stratified.adapters.mteb.results import export_leaderboard
    from mteb_stratified.core.errors import InputWarning

    _write_result(tmp_path, "org/a", "StratifiedNFCorpus", _scores(0.3, 0.3))
    bad = _write_result(tmp_path, "org/b", "StratifiedNFCorpus", _scores(0.2, 0.2))
    bad.write_text('{"task_name": "StratifiedNFCorpus", "scores": {')  # half-written
    with pytest.warns(InputWarning) as caught:
        out = export_leaderboard(tmp_path)
    assert "| 1 | org/a |" in out["markdown"] and "org/b" not in out["markdown"]
    said = " ".join(str(w.message) for w in caught)
    assert str(bad) in said and "corrupt results file" in said


def test_the_printed_leaderboard_has_no_markdown_escapes(tmp_path, capsys):
    """leaderboard.md escapes Markdown; the terminal shows the plain names (``#1``, ``_``),
    with control characters from a data file shown as escapes, not run."""
    from mteb_stratified.cli import leaderboard

    _write_result(tmp_path, "org/a_b", "StratifiedNFCorpus", _scores(0.30, 0.32))
    _write_result(tmp_path, "org/c\x1b[31m", "StratifiedNFCorpus", _scores(0.31, 0.30))
    assert leaderboard.main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "(expected #1, oblivious #2)" in printed and "org/a_b" in printed
    assert "\\" not in printed.replace("\\x1b", "") and "\x1b" not in printed
    md = (tmp_path / "leaderboard.md").read_text()
    assert "org/a\\_b" in md and "\\#1" in md
