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
