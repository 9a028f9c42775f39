"""What the system refuses, and Ctrl-C (issue #46): every command meets a full disk and a
read-only output folder with exit 2, the path and a fix, never a traceback; Ctrl-C exits 130
with one line.  And what the catalogue (``bad_inputs.py``) cannot see, on stderr: a name read
from a file reaches the terminal escaped in an error message too, and a corpus that maps
nothing is said to.

Each command runs in a child process.  A real full or read-only file system is a tmpfs mounted
in a private mount namespace (``unshare -rm``: no root needed); where that is not allowed, a
full disk is the file size limit (``RLIMIT_FSIZE`` 0 with SIGXFSZ ignored: every write fails
with EFBIG) and a read-only folder is one without write permission (``chmod 555``; as root,
which that does not stop, a folder of ``/sys``, which root cannot write either).
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bad_inputs import _per_query_csv, _results_json

REPO = Path(__file__).resolve().parents[2]

#: The child: the file size limit when asked (a write past it fails with EFBIG, not a signal),
#: then the command line, as ``mteb-stratified`` runs it.
_CHILD = ("import os, resource, signal, sys\n"
          "limit = int(os.environ.pop('MTEB46_FSIZE', '-1'))\n"
          "if limit >= 0:\n"
          "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
          "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
          "from mteb_stratified.cli.main import main\n"
          "sys.exit(main(sys.argv[1:]))\n")

#: A tmpfs at "$0", full (one file takes all its blocks) or mounted read-only, then the child.
_MOUNT = {"full": 'mount -t tmpfs -o size=64k none "$0" && '
                  '{ dd if=/dev/zero of="$0/.fill" bs=4k 2>/dev/null; true; } && exec "$@"',
          "ro": 'mount -t tmpfs -o ro none "$0" && exec "$@"'}

#: What each way of refusing says (the errno's words).
_SAYS = {"ENOSPC": "no space left", "EFBIG": "file too large", "EROFS": "read-only file system",
         "EACCES": "permission denied"}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}


@functools.lru_cache(maxsize=1)
def _namespaces() -> bool:
    """Whether a tmpfs can be mounted in a private mount namespace here (asked once)."""
    import tempfile

    with tempfile.TemporaryDirectory() as probe:
        try:
            done = subprocess.run(["unshare", "-rm", "sh", "-c", _MOUNT["ro"], probe, "true"],
                                  capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def _refusing_folder(tmp_path: Path, kind: str) -> tuple[Path, str, list, dict]:
    """``(folder, errno name, command prefix, extra env)``: a folder whose writes fail as a
    ``kind`` ("full" or "ro") file system does, and how to run the child so that they do."""
    point = tmp_path / "mnt"
    point.mkdir()
    if _namespaces():
        prefix = ["unshare", "-rm", "sh", "-c", _MOUNT[kind], str(point)]
        return point, "ENOSPC" if kind == "full" else "EROFS", prefix, {}
    if kind == "full":
        return point, "EFBIG", [], {"MTEB46_FSIZE": "0"}
    if os.geteuid() != 0:
        point.chmod(0o555)
        return point, "EACCES", [], {}
    return Path("/sys/kernel"), "EACCES", [], {}  # root may not write here either


def _run(argv, prefix=(), env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-c", _CHILD, *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**_env(), **(env or {})})


# -- the inputs of each command ---------------------------------------------------------------

def _qids(n=30) -> list:
    from mteb_stratified.io import bundled_path, load_beir

    return sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:n]


def _task_result(folder: Path, qids, model="org/model") -> Path:
    """A tie-aware TaskResult with its per-query CSV and model_meta.json in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    data = json.loads(_results_json(qids))
    mean = data["scores"]["test"][0]["ndcg_at_10"]
    data["scores"]["test"][0].update(ndcg_at_10_expected=mean, ndcg_at_10_oblivious=mean,
                                     ndcg_at_10_min=mean, ndcg_at_10_max=mean,
                                     ndcg_at_10_range=0.0, ndcg_at_10_bias=0.0)
    (folder / "StratifiedNFCorpus.json").write_text(json.dumps(data))
    (folder / "StratifiedNFCorpus_per_query.csv").write_text(_per_query_csv(qids))
    (folder / "model_meta.json").write_text(json.dumps({"name": model, "revision": "r1"}))
    return folder / "StratifiedNFCorpus.json"


def _argv(command: str, tmp_path: Path, out: Path) -> list:
    """The command line of ``command`` with its inputs written under ``tmp_path``, writing to
    ``out`` (a path inside the refusing folder)."""
    if command in ("stratify", "report", "leaderboard"):
        results = tmp_path / "runs"
        res = _task_result(results / "results" / "org__model" / "r1", _qids())
        return {"stratify": ["stratify", res, "--resamples", "10", "-o", out, "--no-progress"],
                "report": ["report", res, "--resamples", "10", "-o", out / "r.html",
                           "--no-progress"],
                "leaderboard": ["leaderboard", results, "-o", out]}[command]
    if command == "demo":
        return ["demo", "-o", out, "--depth", "10"]
    if command == "structure":
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        (corpus / "corpus.jsonl").write_text("".join(
            json.dumps({"_id": f"d{i}", "text": f"document {i} on vitamin D and bone"}) + "\n"
            for i in range(3)))
        return ["structure", "--corpus", corpus, "-o", out, "--no-progress"]
    from mteb_stratified.io import bundled_path

    return ["generate", "--dataset", "nfcorpus", "--structure",
            os.path.join(bundled_path("nfcorpus"), "structure"), "-o", out, "--no-progress"]


def _assert_clear(done: subprocess.CompletedProcess, path, says: str) -> None:
    err = done.stderr
    assert done.returncode == 2, f"exit {done.returncode}: {err[-1500:]}"
    assert "Traceback" not in err, err[-1500:]
    assert str(path) in err and "fix:" in err, err[-1500:]
    assert re.search(says, err, re.I), err[-1500:]


# -- #46.9: a full disk and a read-only output folder, command by command --------------------

@pytest.mark.parametrize("kind, command", [
    ("ro", "report"), ("ro", "stratify"), ("ro", "leaderboard"), ("ro", "demo"),
    ("full", "demo"), ("full", "report"), ("full", "stratify"), ("full", "leaderboard"),
    ("full", "structure"), ("full", "generate")])
def test_full_disk_and_read_only_folder(tmp_path, kind, command):
    """#46.9: a read-only output folder gave PermissionError tracebacks (report, stratify,
    leaderboard, demo), a full disk ENOSPC tracebacks (demo, report, stratify, leaderboard,
    structure, generate): now exit 2, the path, what happened and a fix."""
    folder, name, prefix, env = _refusing_folder(tmp_path, kind)
    out = folder / "out"
    done = _run(_argv(command, tmp_path, out), prefix, env)
    _assert_clear(done, out if folder != Path("/sys/kernel") else folder, _SAYS[name])


def test_full_disk_behind_stdout(tmp_path):
    """#46.9: ``evaluate ... > /dev/full``: the table cannot be written; exit 2 naming the
    standard output, not a traceback (or an 'Exception ignored' at exit)."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-c", _CHILD, "evaluate", "--qrels",
                               str(tmp_path / "qrels"), "--run", str(tmp_path / "run")],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                              cwd=REPO, env=_env())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert "<standard output>" in done.stderr and "no space left" in done.stderr
    assert "Exception ignored" not in done.stderr


def test_a_bug_keeps_its_traceback():
    """#46.9: only what the system refused is mapped: an OSError without an errno (raised by a
    program, not the system), or one met while handling another error that is not about the
    disk, stays a traceback."""
    import errno

    from mteb_stratified.cli.main import os_error_of, os_error_message

    assert os_error_of(ValueError("bug")) is None
    assert os_error_of(OSError("made up")) is None
    expected = FileNotFoundError(errno.ENOENT, "No such file", "/x/expected")
    try:
        try:
            raise expected
        except FileNotFoundError:
            raise KeyError("a bug in the handler")
    except KeyError as bug:
        assert os_error_of(bug) is None
    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        try:
            raise full
        except OSError:
            raise RuntimeError("a library's own error")
    except RuntimeError as wrapped:
        assert os_error_of(wrapped) is full
    said = str(os_error_message(full, "/out"))
    assert said.startswith("/out: no space left") and "fix:" in said


# -- #46.13a: Ctrl-C ------------------------------------------------------------------------

def test_ctrl_c_exits_130_with_one_line(tmp_path):
    """#46.13a: Ctrl-C printed a traceback; now one line and exit status 130."""
    res = _task_result(tmp_path / "a", _qids())
    child = subprocess.Popen([sys.executable, "-c", _CHILD, "stratify", str(res)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                             env=_env())
    seen, start = b"", time.monotonic()
    while b"loading the structure" not in seen and time.monotonic() - start < 120:
        chunk = os.read(child.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert b"loading the structure" in seen, seen.decode(errors="replace")
    child.send_signal(signal.SIGINT)
    _, rest = child.communicate(timeout=120)
    err = (seen + rest).decode(errors="replace")
    assert child.returncode == 130, err[-1500:]
    assert "Traceback" not in err and err.rstrip().endswith("mteb-stratified stratify: "
                                                            "interrupted"), err[-1500:]


# -- #46.12: error messages print names from files escaped -----------------------------------

def test_error_messages_are_escaped(tmp_path, capsys):
    """#46.12: an error (or warning) message holding a model name from model_meta.json sent its
    escape sequences to the terminal; every message line is printed escaped now."""
    from mteb_stratified.cli.main import main

    evil = "org/\x1b]0;owned\x07\x1b[2Jevil"
    for k in range(2):
        _task_result(tmp_path / "runs" / "results" / f"org__m{k}" / "r1", _qids(), evil + str(k))
    code = main(["report", f"mine={tmp_path / 'runs'}", "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 2 and "one name cannot" in err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b" in err


# -- #46.13h: a corpus that maps nothing ---------------------------------------------------

@pytest.mark.parametrize("texts", [
    ["Vitamin D deficiency is common in elderly patients with osteoporosis."],
    ["Der schnelle braune Fuchs springt über den faulen Hund.",
     "Die Katze schläft auf dem warmen Sofa im Wohnzimmer.",
     "Im Sommer fahren wir gern an die Ostsee zum Baden.",
     "Das Brot beim Bäcker an der Ecke ist immer frisch."]], ids=["one-document", "german"])
def test_a_corpus_that_maps_nothing_is_said(tmp_path, capsys, texts):
    """#46.13h: a 1-document or non-English corpus built 0 entities and 1 cluster without a
    word; now a warning says each, why, and what to do."""
    from mteb_stratified.cli.main import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(texts)))
    assert main(["structure", "--corpus", str(corpus), "-o", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "warning: no entity passed the filters" in err and "--extractor llm" in err
    assert "warning: the map has 1 cluster" in err and "fix:" in err
