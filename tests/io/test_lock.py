"""One job per output folder: a second job is refused (or waits) with a message naming the
holder; the lock goes with its holder however it ends, and a lock file left behind blocks
nothing."""

import os
import signal
import subprocess
import sys
import time

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.io import lock as lock_module
from mteb_stratified.io.lock import LOCK_NAME, file_lock, folder_lock

_HOLD = ("import sys, time\n"
         "from mteb_stratified.io.lock import folder_lock\n"
         "with folder_lock(sys.argv[1], what='mteb-stratified structure --out ' + sys.argv[1]):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(float(sys.argv[2]))\n")


def _holder(folder, seconds):
    """A second process holding the folder for ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_job_is_refused_at_once_or_after_its_wait(tmp_path):
    out = tmp_path / "out"
    proc = _holder(out, 30)
    try:
        start = time.monotonic()
        with pytest.raises(InputError) as err:
            with folder_lock(out):
                pytest.fail("entered a held folder")
        assert time.monotonic() - start < 5  # refused at once, not after a wait
        text = str(err.value)
        assert err.value.source == str(out)
        assert text.startswith(f"{out}: the folder is in use by another mteb-stratified job")
        assert f"pid {proc.pid}," in text and "started at " in text
        assert f"command mteb-stratified structure --out {out}" in text
        assert err.value.fix == "wait for it to finish, or use another --out folder"
        start = time.monotonic()
        with pytest.raises(InputError, match=r"in use .* after waiting 0.3 s"):
            with folder_lock(out, wait=0.3):
                pass
        assert time.monotonic() - start >= 0.3
    finally:
        proc.kill()
        proc.wait()


def test_a_job_that_may_wait_gets_the_folder_when_the_holder_finishes(tmp_path):
    proc = _holder(tmp_path, 0.5)
    try:
        start = time.monotonic()
        with folder_lock(tmp_path, wait=20, what="second"):
            assert time.monotonic() - start >= 0.4  # only once the holder's 0.5 s are over
            assert '"command": "second"' in (tmp_path / LOCK_NAME).read_text()
    finally:
        proc.wait()


def test_a_killed_holder_frees_the_folder(tmp_path):
    proc = _holder(tmp_path, 30)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert str(proc.pid) in (tmp_path / LOCK_NAME).read_text()  # its note is left behind...
    with folder_lock(tmp_path, what="after"):  # ...and blocks nothing
        assert str(proc.pid) not in (tmp_path / LOCK_NAME).read_text()


def test_release_on_exit_and_on_error_and_a_held_folder_in_the_same_process(tmp_path):
    out = tmp_path / "new" / "out"
    with folder_lock(out) as held:
        assert held == str(out) and os.path.isdir(out)  # the folder is created
        with pytest.raises(InputError, match=f"pid {os.getpid()}"):
            with folder_lock(out):
                pass
    assert not (out / LOCK_NAME).exists()  # no lock file is left after success (#33)
    with pytest.raises(RuntimeError):
        with folder_lock(out):
            raise RuntimeError("the job failed")
    assert not (out / LOCK_NAME).exists()
    with folder_lock(out):
        pass


def test_a_garbled_lock_file_blocks_nothing_and_is_shown_safely(tmp_path):
    (tmp_path / LOCK_NAME).write_text('{"pid": "1\\u001b[31m", "command": "x\\ny"}')
    with folder_lock(tmp_path):
        pass
    (tmp_path / LOCK_NAME).write_text('{"pid": "1\\u001b[31m", "command": "x\\ny"}')
    assert _described(tmp_path) == "pid 1\\x1b[31m, command x\\ny"  # escaped as term_cell does
    (tmp_path / LOCK_NAME).write_bytes(b"\xff not json")
    assert _described(tmp_path) == "pid unknown"


def _described(folder):
    fd = os.open(folder / LOCK_NAME, os.O_RDONLY)
    try:
        return lock_module._describe_holder(fd)
    finally:
        os.close(fd)


def test_an_out_path_that_is_a_file_is_an_input_error(tmp_path):
    target = tmp_path / "out"
    target.write_text("a file")
    with pytest.raises(InputError, match="cannot be created or locked") as err:
        with folder_lock(target):
            pass
    assert err.value.source == str(target) and "--out" in err.value.fix


def test_without_fcntl_the_job_runs_with_a_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(lock_module, "fcntl", None)
    with folder_lock(tmp_path):
        with folder_lock(tmp_path):  # nothing stops a second job there
            pass
    assert capsys.readouterr().err.count("cannot be locked on this platform") == 2


# -- the commands that take it -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["structure", "--corpus", "{data}", "--limit", "20", "--out", "{out}", "--bins-splits",
     "none", "--no-progress"],
    ["generate", "--structure", "bundled", "--dataset", "{data}", "--out", "{out}", "--budget",
     "5", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key", "k",
     "--no-progress"]], ids=["structure", "generate"])
def test_a_second_structure_or_generate_job_is_refused_before_any_work(tmp_path, argv, capsys):
    from mteb_stratified.cli.main import main
    from mteb_stratified.io import bundled_path

    out = tmp_path / "out"
    proc = _holder(out, 30)
    try:
        t0 = time.perf_counter()
        rc = main([a.replace("{out}", str(out)).replace("{data}", bundled_path("nfcorpus"))
                   for a in argv])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert "in use by another mteb-stratified job" in err and f"pid {proc.pid}" in err
        assert str(out) in err and "fix:" in err
        assert time.perf_counter() - t0 < 10  # refused at once: nothing loaded, nothing asked
        assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing written
    finally:
        proc.kill()
        proc.wait()



_COUNT = ("import os, sys, time\n"
          "from mteb_stratified.io.lock import folder_lock\n"
          "folder = sys.argv[1]\n"
          "for _ in range(int(sys.argv[2])):\n"
          "    with folder_lock(folder, wait=60):\n"
          "        path = os.path.join(folder, 'count')\n"
          "        n = int(open(path).read()) if os.path.exists(path) else 0\n"
          "        time.sleep(0.001)\n"
          "        open(path, 'w').write(str(n + 1))\n")


def test_removing_the_lock_file_keeps_one_holder_at_a_time(tmp_path):
    """Each holder removes the lock file as it lets go; jobs that waited on the removed file
    must lock the new one, never hold the folder two at a time: 4 processes × 25 unguarded
    read-increment-writes lose no update, and no lock file is left."""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(lock_module.__file__))
           + os.pathsep + os.path.dirname(os.path.dirname(os.path.dirname(
               lock_module.__file__)))}
    procs = [subprocess.Popen([sys.executable, "-c", _COUNT, str(tmp_path), "25"], env=env)
             for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert (tmp_path / "count").read_text() == "100"
    assert not (tmp_path / LOCK_NAME).exists()


# -- file_lock: one read-modify-write of a shared file at a time (#46) --------------------------

_HOLD_FILE = ("import sys, time\n"
              "from mteb_stratified.io.lock import file_lock\n"
              "with file_lock(sys.argv[1], what='holder'):\n"
              "    print('held', flush=True)\n"
              "    time.sleep(float(sys.argv[2]))\n")


def _env():
    root = os.path.dirname(os.path.dirname(os.path.dirname(lock_module.__file__)))
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_a_file_lock_waits_for_its_holder_then_refuses_clearly_after_the_timeout(tmp_path):
    target = tmp_path / "shared.csv"
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_FILE, str(target), "30"],
                            stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout.readline().strip() == "held"
        assert (tmp_path / ".shared.csv.lock").exists()
        start = time.monotonic()
        with pytest.raises(InputError) as err:
            with file_lock(target, timeout=0.4):
                pytest.fail("entered a held file")
        assert time.monotonic() - start >= 0.4
        text = str(err.value)
        assert f"{target} is being updated by another mteb-stratified job" in text
        assert f"pid {proc.pid}" in text and "command holder" in text
        assert "after waiting 0.4 s" in text and err.value.fix.startswith("wait for it")
    finally:
        proc.kill()
        proc.wait()
    with file_lock(target, timeout=5) as held:  # the killed holder's lock blocks nothing
        assert held == str(target)
    assert os.listdir(tmp_path) == []  # the lock file goes with its holder; nothing else made


def test_a_file_lock_gets_the_file_when_the_holder_lets_go(tmp_path):
    target = tmp_path / "shared.csv"
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_FILE, str(target), "0.6"],
                            stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout.readline().strip() == "held"
        start = time.monotonic()
        with file_lock(target, timeout=30):
            assert time.monotonic() - start >= 0.4
    finally:
        proc.wait()


_COUNT_FILE = ("import os, sys, time\n"
               "from mteb_stratified.io.lock import file_lock\n"
               "path = sys.argv[1]\n"
               "for _ in range(int(sys.argv[2])):\n"
               "    with file_lock(path, timeout=60):\n"
               "        n = int(open(path).read()) if os.path.exists(path) else 0\n"
               "        time.sleep(0.001)\n"
               "        open(path, 'w').write(str(n + 1))\n")


def test_file_lock_keeps_one_writer_at_a_time(tmp_path):
    """4 processes × 25 read-increment-writes of one file under its lock lose no update."""
    path = tmp_path / "count"
    procs = [subprocess.Popen([sys.executable, "-c", _COUNT_FILE, str(path), "25"], env=_env())
             for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert path.read_text() == "100"
    assert os.listdir(tmp_path) == ["count"]
