"""Results folders that hold one model and revision twice (#46.7): ``leaderboard`` and
``report`` share one check (:func:`mteb_stratified.io.mteb_results.distinct_results`). Two
files of the same model, revision and task with different scores are refused, naming both
files; a copy (the same scores) is read once, with a warning. (The unreadable folders of
#46.6 need chmod and links, so they are in tests/io/test_unreadable.py.)"""

from __future__ import annotations

import csv
import io
import json

from bad_inputs import Case, Error, Works

TASK = "StratifiedNFCorpus"


def _result(score: float) -> str:
    """A tie-aware TaskResult whose nDCG@10 (expected, stock and main score) is ``score``."""
    entry = {"ndcg_at_10": score, "ndcg_at_10_expected": score, "main_score": score,
             "hf_subset": "default"}
    return json.dumps({"task_name": TASK, "dataset_revision": "x", "mteb_version": "2",
                       "scores": {"test": [entry]}})


def _run(folder: str, score: float, revision: str = "rev1") -> dict:
    """``folder/org__m/<revision>/``: a TaskResult of model org/m and its model_meta.json."""
    base = f"runs/{folder}/org__m/{revision}"
    return {"runs/": "",
            f"{base}/model_meta.json": json.dumps({"name": "org/m", "revision": revision}),
            f"{base}/{TASK}.json": _result(score)}


def _board_rows(want: list) -> object:
    """A check: leaderboard.csv holds the rows ``[(revision, E), ...]`` of org/m, no other."""
    def check(paths, stdout):
        with open(f"{paths['o']}/leaderboard.csv", encoding="utf-8") as fh:
            rows = list(csv.DictReader(io.StringIO(fh.read())))
        got = sorted((r["revision"], round(float(r[f"{TASK} expected"]), 4)) for r in rows
                     if r["model"] == "org/m")
        if len(rows) != len(want) or got != sorted(want):
            return f"leaderboard rows {got} (of {len(rows)}), not {sorted(want)}"
        return None
    return check


def cases() -> list[Case]:
    first = f"runs/run1/org__m/rev1/{TASK}.json"
    second = f"run2/org__m/rev1/{TASK}.json"
    differ = {**_run("run1", 0.5022), **_run("run2", 0.4991)}
    says = rf"and \S*{second} hold different scores of the same model and revision"
    board = ("leaderboard", "{runs/}", "-o", "{o}")
    return [
        Case("folders-leaderboard-same-model-different-scores",
             "#46.7: leaderboard showed one of two runs of one model and revision (0.5022) and "
             "dropped the other (0.4991) without a word", differ, board,
             Error(first, None, says)),
        Case("folders-report-same-model-different-scores",
             "#46.7: report refuses two runs of one model and revision in one folder, naming "
             "both files (the check leaderboard now shares)", differ,
             ("report", "{runs/}", "--out", "{o}/r.html"), Error(first, None, says)),
        Case("folders-leaderboard-copy",
             "#46.7: a copy of a result (the same scores in a second folder) is one row, with "
             "a warning", {**_run("run1", 0.5022), **_run("run2", 0.5022)}, board,
             Works(_board_rows([("rev1", 0.5022)]))),
        Case("folders-leaderboard-two-revisions",
             "#46.7: two revisions of one model are two rows, never one run dropped",
             {**_run("run1", 0.5022), **_run("run2", 0.4991, "rev2")}, board,
             Works(_board_rows([("rev1", 0.5022), ("rev2", 0.4991)]))),
    ]
