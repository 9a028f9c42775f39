"""Output paths of the wrong kind, safe names, atomic writes with per-process temp names."""

from __future__ import annotations

import os
import threading

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.io.outputs import atomic_write, output_dir, output_file, safe_name


def test_output_dir_refuses_a_file_and_a_file_parent(tmp_path):
    f = tmp_path / "f.txt"
    f.write_text("x")
    assert output_dir(tmp_path / "new" / "deeper") == str(tmp_path / "new" / "deeper")
    with pytest.raises(InputError, match="is a file, but a folder is needed") as err:
        output_dir(f)
    assert str(f) in str(err.value) and "fix:" in str(err.value)
    with pytest.raises(InputError, match=r"f\.txt is a file, not a folder"):
        output_dir(f / "sub")
    assert not (tmp_path / "new").exists()  # checked, not made


def test_output_file_refuses_a_folder_and_a_file_parent(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    assert output_file(tmp_path / "report.html") == str(tmp_path / "report.html")
    with pytest.raises(InputError, match="is a folder, but a file is needed"):
        output_file(tmp_path)
    with pytest.raises(InputError, match="is a folder"):
        output_file(str(tmp_path / "nothing") + os.sep)
    with pytest.raises(InputError, match="not a folder"):
        output_file(tmp_path / "f.txt" / "report.html", option="--html")


@pytest.mark.parametrize("name, expected", [
    ("NFCorpus", "NFCorpus"), ("StratifiedNFCorpus", "StratifiedNFCorpus"),
    ("../../etc/passwd", "_.._etc_passwd"), ("/abs/path", "_abs_path"), ("..", "_"), ("", "_"),
    ("a\\b:c", "a_b_c"), ("x\x00y\n", "x_y_"), ("model=v1.2", "model=v1.2")])
def test_safe_name_is_one_harmless_path_component(name, expected):
    got = safe_name(name)
    assert got == expected
    assert os.sep not in got and "/" not in got and not got.startswith(".")


def test_atomic_write_replaces_whole_and_cleans_up_on_error(tmp_path):
    target = tmp_path / "out.json"
    with atomic_write(target) as fh:
        fh.write("first")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("half")
            raise RuntimeError("crash mid-write")
    assert target.read_text() == "first"
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no temp file left behind
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_concurrent_writers_never_share_a_temp_name(tmp_path):
    """Two jobs writing the same file at once (the ``embeddings.tmp.npy`` crash): each write is
    whole, the last one wins, no writer fails."""
    target = tmp_path / "shared.txt"
    errors = []

    def write(i):
        try:
            for _ in range(50):
                with atomic_write(target) as fh:
                    fh.write(str(i) * 1000)
        except Exception as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    text = target.read_text()
    assert len(text) == 1000 and len(set(text)) == 1


#: A child that writes ``NAMES`` (in the folder argv[2]) together as ``argv[3]`` repeated,
#: SIGKILLing itself just after its k-th file operation (``os.replace`` or ``os.unlink``).
_TOGETHER = r"""
import os, signal, sys
from mteb_stratified.io.outputs import write_together
folder, text, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
count = [0]
def counted(fn):
    def op(*a, **kw):
        out = fn(*a, **kw)
        count[0] += 1
        if count[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    return op
os.replace, os.unlink = counted(os.replace), counted(os.unlink)
write_together([(os.path.join(folder, n), (n + text).encode()) for n in NAMES])
print(count[0])
"""


def test_write_together_killed_at_every_file_operation_never_mixes(tmp_path):
    """#46 (every multi-file output: leaderboard.csv/.md, precision_sweep.*, generate's
    folder): a SIGKILL after each file operation of :func:`write_together` over an older set
    leaves old files or new files, some missing, never an old file beside a new one; the run
    not killed leaves the whole new set and no temp file."""
    import subprocess
    import sys

    names = ["a.csv", "a.md", "sub.json"]
    code = _TOGETHER.replace("NAMES", repr(names))
    old = {n: (n + "old").encode() for n in names}
    new = {n: (n + "new").encode() for n in names}
    kills = 0
    for k in range(1, 50):
        for n, data in old.items():
            (tmp_path / n).write_bytes(data)
        for temp in tmp_path.glob(".*.tmp"):  # the last kill's (removing it would count)
            temp.unlink()
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path), "new", str(k)],
                              capture_output=True, text=True, timeout=120)
        found = {n: (tmp_path / n).read_bytes() for n in names if (tmp_path / n).exists()}
        if done.returncode == 0:
            assert found == new and int(done.stdout) == k - 1 == 2 * len(names)
            assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
            break
        assert done.returncode < 0, done.stderr[-1500:]
        kills += 1
        # old files only (some removed), or new files only (some not yet renamed in)
        assert all(old[n] == b for n, b in found.items()) \
            or all(new[n] == b for n, b in found.items()), (k, found)
    assert kills == 2 * len(names)


def test_orphan_cleanup_takes_only_the_written_files_temps_and_never_through_a_link(tmp_path):
    """(the fresh-eyes review) a write into a folder removes the unheld temp files of that
    file only (another tool's ``.x.abcd1234.tmp`` in the user's folder is not ours), and
    :func:`remove_orphan_temps` of a folder that is a link leaves the folder it points to."""
    from mteb_stratified.io.outputs import remove_orphan_temps

    mine, theirs = tmp_path / ".r.html.abcd1234.tmp", tmp_path / ".notes.abcd1234.tmp"
    mine.write_text("orphan")
    theirs.write_text("another tool's")
    with atomic_write(tmp_path / "r.html") as fh:
        fh.write("report")
    assert not mine.exists() and theirs.exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    kept = elsewhere / ".data.abcd1234.tmp"
    kept.write_text("x")
    (tmp_path / "work").symlink_to(elsewhere)
    assert remove_orphan_temps(tmp_path / "work") == [] and kept.exists()
    assert remove_orphan_temps(elsewhere) == [str(kept)] and not kept.exists()
