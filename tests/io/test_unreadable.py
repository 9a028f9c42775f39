"""What could not be read is said (#46.6): a results folder or file that cannot be read is
listed with its reason and the command exits 2, unless ``--skip-unreadable`` is given (then
each is named in a warning and the others are read) -- for every command that walks results
folders: ``leaderboard``, ``stratify`` and ``report``.

Two ways to make a folder unreadable, so that the tests fail rather than pass vacuously when
they run as root (whose CAP_DAC_OVERRIDE reads through ``chmod 000``):

* ``chmod 000``, with the command run in a child process; as root the child drops
  CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its bounding set before it starts
  (``prctl(PR_CAPBSET_DROP)``), so the kernel refuses it as it refuses any user (EACCES);
* links that no one can follow, root included: a folder that is a link to itself (ELOOP) and
  a results file that is a link to nowhere (ENOENT), run in-process.
"""

from __future__ import annotations

import csv
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mteb_stratified.cli.main import main
from mteb_stratified.io import bundled_path, load_beir

TASK = "StratifiedNFCorpus"
#: PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH (linux/prctl.h, capability.h).
_PR_CAPBSET_DROP, _DAC_CAPS = 24, (1, 2)
_FAST = ["--resamples", "20", "--n-min", "2", "--no-progress"]


@pytest.fixture(scope="module")
def qids():
    return sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]


def _model(out, qids, model: str, seed: int):
    """``out/results/<org__model>/rev1/``: the TaskResult, its model_meta.json and the
    per-query CSV beside it (as a tie-aware task writes them); returns the folder."""
    folder = out / "results" / model.replace("/", "__") / "rev1"
    folder.mkdir(parents=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": model, "revision": "rev1"}))
    values = np.random.default_rng(seed).uniform(0, 1, len(qids))
    with open(folder / f"{TASK}_per_query.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "revision", "hf_subset", "hf_split", "qid", "measure", "expected",
                    "min", "max", "oblivious", "range", "bias"])
        for q, e in zip(qids, values):
            w.writerow([model, "rev1", "default", "test", q, "nDCG@10", e, e, e, e, 0.0, 0.0])
    mean = round(float(values.mean()), 6)
    entry = {"ndcg_at_10": mean, "ndcg_at_10_expected": mean, "main_score": mean,
             "hf_subset": "default"}
    (folder / f"{TASK}.json").write_text(json.dumps(
        {"task_name": TASK, "dataset_revision": "x", "mteb_version": "2",
         "scores": {"test": [entry]}}))
    return folder


def _commands(out, tmp_path) -> dict:
    """The argv of each command that walks the results folder ``out``."""
    return {"leaderboard": ["leaderboard", str(out), "-o", str(tmp_path / "board")],
            "stratify": ["stratify", str(out), "-o", str(tmp_path / "copies"), *_FAST],
            "report": ["report", str(out), "-o", str(tmp_path / "rep" / "r.html"), *_FAST]}


def _without_dac_override() -> None:  # runs in the child, before it starts the command
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _DAC_CAPS:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _run_child(argv) -> tuple[int, str, str]:
    """``python -m mteb_stratified ARGV`` as a user that file modes bind (see the module
    docstring); ``(exit status, stdout, stderr)``."""
    root = os.geteuid() == 0
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified", *argv],
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=_without_dac_override if root else None)
    return proc.returncode, proc.stdout, proc.stderr


def test_an_unreadable_model_folder_or_file_is_listed_not_left_out(tmp_path, qids):
    """#46.6: a model folder (and a results file) that cannot be read (chmod 000: EACCES,
    which ``Path.rglob`` swallowed) made leaderboard, stratify and report leave the model out
    without a word, exit 0; now each is listed with its reason and the command exits 2, and
    with --skip-unreadable the others are used and each is named in a warning."""
    out = tmp_path / "runs"
    _model(out, qids, "org/a", 1)
    hidden = _model(out, qids, "org/b", 2)
    closed = _model(out, qids, "org/c", 3) / f"{TASK}.json"
    hidden.parent.chmod(0)  # results/org__b: its rev1 folder cannot even be found
    closed.chmod(0)
    try:
        for command, argv in _commands(out, tmp_path).items():
            rc, _, err = _run_child(argv)
            assert rc == 2, (command, err[-500:])
            assert "2 folder(s) or file(s)" in err and "could not be read" in err, command
            assert f"{hidden.parent} (Permission denied)" in err, (command, err[-500:])
            assert f"{closed} (Permission denied)" in err, (command, err[-500:])
            assert "--skip-unreadable" in err and "Traceback" not in err, command
            rc, stdout, err = _run_child(argv + ["--skip-unreadable"])
            assert rc == 0, (command, err[-500:])
            assert f"warning: {hidden.parent}: left out (--skip-unreadable): cannot be read " \
                   "(Permission denied)" in err, (command, err[-500:])
            assert f"warning: {closed}: left out (--skip-unreadable)" in err, command
            assert "org/a" in stdout or command == "report", (command, stdout[-500:])
        assert "org/a" in (tmp_path / "rep" / "r.html").read_text()
        assert "org/a" in (tmp_path / "board" / "leaderboard.csv").read_text()
    finally:
        hidden.parent.chmod(0o755)
        closed.chmod(0o644)


def test_a_looping_folder_link_and_a_broken_file_link_are_listed(tmp_path, qids, capsys):
    """#46.6: links no one can follow, root included: a model folder that is a link to itself
    was passed over in silence and a results file that links to nowhere was only warned
    about, exit 0; now both are listed, exit 2 (leaderboard, stratify, report), and
    --skip-unreadable names each and goes on."""
    out = tmp_path / "runs"
    _model(out, qids, "org/a", 1)
    loop = out / "results" / "org__loop"
    loop.symlink_to("org__loop")
    broken = out / "results" / "org__a" / "rev1" / "Other.json"
    broken.symlink_to(tmp_path / "gone.json")
    commands = _commands(out, tmp_path)
    for command, argv in commands.items():
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert "2 folder(s) or file(s)" in err, (command, err)
        assert f"{loop} (a broken link: Too many levels of symbolic links)" in err, command
        assert f"{broken} (a broken link: No such file or directory)" in err, command
    # the walk is shared: one command shows that --skip-unreadable goes on (the chmod test
    # above runs all three)
    assert main(commands["leaderboard"] + ["--skip-unreadable"]) == 0
    captured = capsys.readouterr()
    assert f"warning: {loop}: left out (--skip-unreadable)" in captured.err
    assert f"warning: {broken}: left out (--skip-unreadable)" in captured.err
    assert "org/a" in captured.out


def test_a_fifo_where_a_results_file_is_expected_is_listed(tmp_path, qids, capsys):
    """#46.6: a named pipe called <Task>.json is not a results file that could be read; it is
    listed (not opened for reading, which would block) and the command exits 2."""
    out = tmp_path / "runs"
    _model(out, qids, "org/a", 1)
    fifo = out / "results" / "org__a" / "rev1" / "Late.json"
    os.mkfifo(fifo)
    assert main(["leaderboard", str(out), "-o", str(tmp_path / "board")]) == 2
    assert f"{fifo} (not a regular file)" in capsys.readouterr().err
