"""Nothing is written through a link planted in an output folder (#46.3): the folder's lock
file, its work files and its outputs are opened without following a symbolic link (and a file
with a second hard link is refused too), so a file outside the folder is never changed; the
refusal is a clear error naming the path."""

import json
import os

import pytest

from mteb_stratified.cli.main import main
from mteb_stratified.core.errors import InputError
from mteb_stratified.io import bundled_path
from mteb_stratified.io.lock import LOCK_NAME, file_lock, folder_lock, open_no_follow
from mteb_stratified.structure.extraction import Checkpoint

VICTIM = "the user's own file, outside the output folder\n"

_STRUCTURE = ["structure", "--corpus", "{data}", "--limit", "20", "--out", "{out}",
              "--bins-splits", "none", "--no-progress"]
_GENERATE = ["generate", "--structure", "bundled", "--dataset", "{data}", "--out", "{out}",
             "--budget", "5", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
             "--api-key", "k", "--no-progress"]


def _victim(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    return victim


def _argv(argv, out):
    return [a.replace("{out}", str(out)).replace("{data}", bundled_path("nfcorpus"))
            for a in argv]


@pytest.mark.parametrize("argv", [_STRUCTURE, _GENERATE], ids=["structure", "generate"])
def test_a_lock_file_linked_outside_the_folder_is_refused(tmp_path, capsys, argv):
    """#46.3: OUT/.lock -> victim: the victim kept its content (it was replaced by the lock's
    JSON note); the command ends with exit 2 and a message naming the link."""
    victim, out = _victim(tmp_path), tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / LOCK_NAME)
    assert main(_argv(argv, out)) == 2
    err = capsys.readouterr().err
    assert victim.read_text() == VICTIM
    assert f"{out / LOCK_NAME}: refusing to write through a symbolic link" in err, err
    assert "fix: remove it" in err and "Traceback" not in err


def test_an_extraction_checkpoint_linked_outside_the_folder_is_refused(tmp_path, capsys):
    """#46.3: OUT/.work/extraction.jsonl -> victim: the victim is neither truncated nor filled
    with extraction rows; the command ends with exit 2 naming the link."""
    victim, out = _victim(tmp_path), tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    os.symlink(victim, out / ".work" / "extraction.jsonl")
    assert main(_argv(_STRUCTURE, out)) == 2
    err = capsys.readouterr().err
    assert victim.read_text() == VICTIM
    assert f"{out / '.work' / 'extraction.jsonl'}: refusing to write through a symbolic" in err
    assert "Traceback" not in err


def test_a_work_folder_linked_elsewhere_is_refused(tmp_path):
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    out.mkdir()
    os.symlink(elsewhere, out / ".work")
    with pytest.raises(InputError, match="work folder must be the output folder's own") as err:
        Checkpoint(str(out / ".work"), "key")
    assert err.value.source == str(out / ".work") and os.listdir(elsewhere) == []
    (out / "file").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        Checkpoint(str(out / "file"), "key")


@pytest.mark.parametrize("kind", ["symlink", "dangling", "hardlink"])
def test_checkpoint_files_are_never_followed(tmp_path, kind):
    """Every open of the checkpoint (scan, its truncation of a torn tail, append) refuses a
    link; the victim is unchanged."""
    victim, work = _victim(tmp_path), tmp_path / "work"
    ckpt = Checkpoint(str(work), "key")
    ckpt.append([{"doc_id": "d1", "entities": []}])
    os.remove(ckpt.path)
    if kind == "hardlink":
        os.link(victim, ckpt.path)
    else:
        os.symlink(victim if kind == "symlink" else tmp_path / "missing", ckpt.path)
    with pytest.raises(InputError, match="refusing to write through") as err:
        list(ckpt.scan())
    assert err.value.source == ckpt.path
    with pytest.raises(InputError, match="refusing to write through"):
        ckpt.append([{"doc_id": "d2", "entities": []}])
    assert victim.read_text() == VICTIM and not (tmp_path / "missing").exists()


def test_open_no_follow_refuses_links_and_special_files_and_opens_a_plain_file(tmp_path):
    victim = _victim(tmp_path)
    os.symlink(victim, tmp_path / "link")
    os.link(victim, tmp_path / "hard")
    os.mkfifo(tmp_path / "fifo")
    for name, what in (("link", "a symbolic link"), ("hard", "a file with 2 hard links"),
                       ("fifo", "not a regular file")):
        with pytest.raises(InputError, match=what) as err:
            open_no_follow(tmp_path / name, os.O_RDWR | os.O_NONBLOCK)
        assert err.value.source == str(tmp_path / name)
    os.remove(tmp_path / "hard")
    fd = open_no_follow(victim, os.O_RDONLY)
    os.close(fd)
    fd = open_no_follow(tmp_path / "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.close(fd)
    assert victim.read_text() == VICTIM and (tmp_path / "new").exists()


def test_folder_and_file_locks_refuse_a_planted_link(tmp_path):
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / LOCK_NAME)
    with pytest.raises(InputError, match="symbolic link"):
        with folder_lock(out):
            pytest.fail("locked through a link")
    target = out / "Task_per_query.csv"
    os.symlink(victim, out / ".Task_per_query.csv.lock")
    with pytest.raises(InputError, match="symbolic link") as err:
        with file_lock(target):
            pytest.fail("locked through a link")
    assert err.value.source == str(out / ".Task_per_query.csv.lock")
    assert victim.read_text() == VICTIM
    assert os.path.islink(out / LOCK_NAME)  # left for the user to look at


def test_stratify_out_replaces_a_linked_copy_and_never_writes_through_it(tmp_path, capsys):
    """``stratify -o``: a model_meta.json or results copy that is a link in the copies folder is
    replaced by the copy (the victim it pointed to is unchanged)."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
    from test_stratify_report import N, _results
    from mteb_stratified.io import load_beir

    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:N]
    src = tmp_path / "runs" / "results" / "org__m" / "rev"
    path, _ = _results(src, qids, 1)
    (src / "model_meta.json").write_text(json.dumps({"name": "org/m", "revision": "rev"}))
    victim, copies = _victim(tmp_path), tmp_path / "copies"
    rc = main(["stratify", path, "-o", str(copies), "--resamples", "10", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    linked = [p for p in copies.rglob("*") if p.name in ("model_meta.json",
                                                          "StratifiedNFCorpus.json")]
    assert len(linked) == 2
    for p in linked:
        p.unlink()
        os.symlink(victim, p)
    rc = main(["stratify", path, "-o", str(copies), "--resamples", "10", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert victim.read_text() == VICTIM
    assert not any(p.is_symlink() for p in linked)


@pytest.mark.parametrize("beside", ["", "-wal", "-shm", "-journal"])
def test_an_answer_cache_linked_outside_the_folder_is_refused(tmp_path, beside):
    """#46.3 (the fresh-eyes review): ``OUT/llm_cache.sqlite`` (or the ``-wal``/``-shm``/
    ``-journal`` file SQLite keeps beside it) linked to a file elsewhere made that file a
    SQLite database; now the cache is refused, naming the link, and the file is unchanged."""
    from mteb_stratified.llm.cache import AnswerCache

    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"")
    out = tmp_path / "out"
    out.mkdir()
    cache = out / "llm_cache.sqlite"
    link = out / f"llm_cache.sqlite{beside}"
    link.symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link") as err:
        AnswerCache(str(cache))
    assert str(link) in str(err.value)
    assert victim.read_bytes() == b""
