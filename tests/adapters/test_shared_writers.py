"""Shared files that several jobs read, change and write back lose nothing when the jobs run at
once (#46): the per-query CSV of a shared prediction folder (#46.5), a results file that
``stratify`` updates in place (#46.4) and the LLM answer cache's open.  Each is locked
(:func:`mteb_stratified.io.lock.file_lock`): a second writer waits for the first, then both
land.  Each is checked twice: with the interleaving forced (the test holds the lock, starts the
second writer, sees it wait, writes, lets go) and in a race of several real processes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mteb_stratified.io.lock import file_lock

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
N_QUERIES, N_MEASURES = 20, 5

# a child that loads what it needs, says "ready", waits for the file GO (when given), writes
_PER_QUERY = """
import os, sys, time
from mteb_stratified.adapters.mteb.scoring import tie_aware_evaluation, write_per_query
path, model, go, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
qrels = {f"q{i}": {"d1": 1, "d2": 0} for i in range(%d)}
run = {f"q{i}": {"d1": 0.5, "d2": 0.5, "d3": 0.1} for i in range(%d)}
result = tie_aware_evaluation(qrels, run, [10])
print("ready", flush=True)
while go != "-" and not os.path.exists(go):
    time.sleep(0.001)
for k in range(rounds):
    write_per_query(result, path, hf_subset=f"s{k}", hf_split="test", model=model,
                    revision="r")
print("done", flush=True)
""" % (N_QUERIES, N_QUERIES)


def _child(script, *args):
    proc = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=ENV,
                            stdout=subprocess.PIPE, text=True)
    return proc


def _ready(proc):
    assert proc.stdout.readline().strip() == "ready"


def _finish(proc, timeout=60):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0 and out.strip() == "done"


def _race(procs, go):
    """Start ``procs`` together (each waits, ready, for the file ``go``) and wait for each to
    finish; none is left running."""
    try:
        for proc in procs:
            _ready(proc)
        go.touch()
        for proc in procs:
            _finish(proc)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _rows(path):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.groupby(["model", "hf_subset"]).size().to_dict()


def test_per_query_rows_of_a_second_run_wait_for_the_first(tmp_path):
    """#46.5: two mteb runs sharing a --prediction-folder: while one holds the per-query CSV
    (read, update, write), the other waits, then adds its rows to the updated file: both
    runs' rows are kept (before: the second wrote at once and one run's rows were lost)."""
    from mteb_stratified.adapters.mteb.scoring import tie_aware_evaluation, write_per_query

    path = tmp_path / "pred" / "Task_per_query.csv"
    proc = _child(_PER_QUERY, path, "model-b", "-", 1)
    try:
        with file_lock(path):  # the first run's update, held by hand
            _ready(proc)
            time.sleep(0.5)
            assert proc.poll() is None and not path.exists()  # the second run waits
            qrels = {f"q{i}": {"d1": 1} for i in range(N_QUERIES)}
            result = tie_aware_evaluation(qrels, {q: {"d1": 1.0} for q in qrels}, [10])
            from mteb_stratified.adapters.mteb.scoring import _merge_write

            frame = result.to_dataframe()
            for col, value in (("hf_split", "test"), ("hf_subset", "s0"), ("revision", "r"),
                               ("model", "model-a")):
                frame.insert(0, col, value)
            _merge_write(path, frame, hf_subset="s0", hf_split="test", model="model-a",
                         revision="r")
        _finish(proc)
    finally:
        proc.kill()
        proc.wait()
    rows = N_QUERIES * N_MEASURES
    assert _rows(path) == {("model-a", "s0"): rows, ("model-b", "s0"): rows}
    # and the public writer, run again, replaces its own rows only
    qrels = {f"q{i}": {"d1": 1} for i in range(N_QUERIES)}
    result = tie_aware_evaluation(qrels, {q: {"d1": 1.0} for q in qrels}, [10])
    write_per_query(result, path, hf_subset="s0", hf_split="test", model="model-a",
                    revision="r")
    assert _rows(path) == {("model-a", "s0"): rows, ("model-b", "s0"): rows}
    assert sorted(os.listdir(path.parent)) == ["Task_per_query.csv"]  # no lock file left


@pytest.mark.parametrize("trial", range(2))
def test_several_runs_sharing_a_prediction_folder_lose_no_per_query_row(tmp_path, trial):
    """#46.5, a real race: 4 processes × 4 updates (one per subset) of one per-query CSV,
    started together: every one of the 16 (model, subset) groups keeps its 100 rows."""
    path, go = tmp_path / "Task_per_query.csv", tmp_path / "go"
    _race([_child(_PER_QUERY, path, f"model-{m}", go, 4) for m in range(4)], go)
    assert _rows(path) == {(f"model-{m}", f"s{k}"): N_QUERIES * N_MEASURES
                           for m in range(4) for k in range(4)}


# -- stratify in place ---------------------------------------------------------------------------

def _results_file(folder, splits):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "StratifiedNFCorpus.json"
    path.write_text(json.dumps({
        "task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
        "scores": {s: [{"ndcg_at_10": 0.3, "main_score": 0.3, "hf_subset": "default"}]
                   for s in splits}}))
    return path


# "another stratify run" on SPLIT: under the file's lock, reads the file, says "held", waits,
# then writes its block (what an unlocked writer read before the wait is what it writes back)
_OTHER_STRATIFY = """
import json, sys, time
from mteb_stratified.io.lock import file_lock
from mteb_stratified.io.outputs import atomic_write_text
path, split = sys.argv[1], sys.argv[2]
with file_lock(path):
    data = json.load(open(path))
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
    data.setdefault("strata", {})[split] = {"n_queries": 7}
    for entry in data["scores"][split]:
        entry["strata_msc"] = 0.25
    atomic_write_text(path, json.dumps(data))
"""


def test_in_place_stratify_of_two_splits_at_once_keeps_both_blocks(tmp_path, monkeypatch):
    """#46.4: stratify --split test runs while another run writes the dev block of the same
    results file: the test run waits for the other's update, then adds its block to the file
    as it is now: both blocks are kept (before: the dev block was lost, exit 0)."""
    import csv

    import numpy as np

    import mteb_stratified.cli.stratify as stratify_cli
    from mteb_stratified.cli.main import main
    from mteb_stratified.io import bundled_path, load_beir

    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:40]
    path = _results_file(tmp_path / "res", ["test", "dev"])
    values = np.random.default_rng(0).uniform(0, 1, len(qids))
    data = json.loads(path.read_text())
    data["scores"]["test"][0].update(ndcg_at_10=float(values.mean()),
                                     main_score=float(values.mean()))
    path.write_text(json.dumps(data))
    with open(path.parent / "StratifiedNFCorpus_per_query.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hf_subset", "hf_split", "qid", "measure", "expected", "min", "max",
                    "oblivious", "range", "bias"])
        w.writerows(["default", "test", q, "nDCG@10", v, v, v, v, 0.0, 0.0]
                    for q, v in zip(qids, values))
    other = []
    real_load = stratify_cli.load_context

    def load_then_the_other_run_starts(args):  # after stratify read the file, before it writes
        context = real_load(args)
        other.append(subprocess.Popen([sys.executable, "-c", _OTHER_STRATIFY, str(path), "dev",
                                       "1.5"], env=ENV, stdout=subprocess.PIPE, text=True))
        assert other[0].stdout.readline().strip() == "held"
        return context

    monkeypatch.setattr(stratify_cli, "load_context", load_then_the_other_run_starts)
    try:
        start = time.monotonic()
        assert main(["stratify", str(path), "--split", "test", "--resamples", "10",
                     "--min-queries", "10", "--no-progress"]) == 0
        assert other[0].wait(timeout=30) == 0
    finally:
        for proc in other:
            proc.kill()
            proc.wait()
    assert time.monotonic() - start >= 1.0  # it waited for the other run's update
    final = json.loads(path.read_text())
    assert sorted(final["strata"]) == ["dev", "test"]
    assert final["strata"]["dev"] == {"n_queries": 7}
    assert final["strata"]["test"]["n_queries"] == 40
    assert final["scores"]["dev"][0]["strata_msc"] == 0.25
    assert "strata_pooled_ndcg_at_10_expected" in final["scores"]["test"][0]


_SAVE = """
import os, sys, time
from types import SimpleNamespace
from mteb_stratified.stratification.results import save_block as _save
from mteb_stratified.io.mteb_results import load_task_result
path, split, go = sys.argv[1], sys.argv[2], sys.argv[3]
item = SimpleNamespace(path=path, data=load_task_result(path))  # read when the run starts
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
_save(item, path, split, {"n_queries": int(split[1:])}, {"strata_msc": 0.5}, in_place=True)
print("done", flush=True)
"""


@pytest.mark.parametrize("trial", range(3))
def test_in_place_stratify_runs_of_several_splits_race_and_lose_no_block(tmp_path, trial):
    """#46.4, a real race: 4 processes each write their split's block into one results file
    (each read the file when it started): every block and its keys are kept."""
    splits = [f"s{k}" for k in range(4)]
    path, go = _results_file(tmp_path, splits), tmp_path / "go"
    _race([_child(_SAVE, path, split, go) for split in splits], go)
    final = json.loads(path.read_text())
    assert final["strata"] == {s: {"n_queries": int(s[1:])} for s in splits}
    assert all(final["scores"][s][0]["strata_msc"] == 0.5 for s in splits)


def test_in_place_stratify_refuses_a_results_file_whose_scores_changed(tmp_path):
    """A results file rewritten with other scores while stratify ran is not given a block
    computed from the old ones."""
    from types import SimpleNamespace

    from mteb_stratified.stratification.results import save_block as _save
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.io.mteb_results import load_task_result

    path = _results_file(tmp_path, ["test"])
    item = SimpleNamespace(path=str(path), data=load_task_result(path))
    data = json.loads(path.read_text())
    data["scores"]["test"][0]["ndcg_at_10"] = 0.9
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="changed while stratify ran") as err:
        _save(item, str(path), "test", {"n_queries": 1}, {"strata_msc": 0.5}, in_place=True)
    assert err.value.source == str(path)
    assert "strata" not in json.loads(path.read_text())


# -- the LLM answer cache ------------------------------------------------------------------------

_CACHE = """
import os, sys, time
from mteb_stratified.llm import AnswerCache
path, key, go = sys.argv[1], sys.argv[2], sys.argv[3]
print("ready", flush=True)
while go != "-" and not os.path.exists(go):
    time.sleep(0.001)
cache = AnswerCache(path, table="calls")
cache.put(key, {"content": "answer " + key})
cache.close()
print("done", flush=True)
"""


def _damaged_cache(path):
    path.write_bytes(b"not a database" * 100)


def _keys(path):
    from mteb_stratified.llm import AnswerCache

    cache = AnswerCache(str(path), table="calls")
    try:
        return {k for k in (f"k{i}" for i in range(8)) if cache.get(k) is not None}
    finally:
        cache.close()


def test_a_cache_being_repaired_is_waited_for(tmp_path):
    """While one job opens (checks, repairs) the cache, another waits instead of setting the
    file aside under it; then it finds the cache sound and adds its answer."""
    path = tmp_path / "llm_cache.sqlite"
    _damaged_cache(path)
    proc = _child(_CACHE, path, "k1", "-")
    try:
        with file_lock(path):
            _ready(proc)
            time.sleep(0.5)
            assert proc.poll() is None  # it waits ...
            assert sorted(os.listdir(tmp_path)) == [".llm_cache.sqlite.lock", "llm_cache.sqlite"]
        _finish(proc)  # ... then repairs
    finally:
        proc.kill()
        proc.wait()
    assert _keys(path) == {"k1"}

