"""A damaged answer cache is set aside with one warning and rebuilt from every record that can
still be read (no paid answer that survived is asked again); what cannot be repaired (read-only,
locked) is an InputError naming the file, never a traceback."""

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.llm import AnswerCache

PAGE = 4096


def _cache(path, n=300, table="calls"):
    """A real cache of ``n`` records of about 450 bytes (a few dozen pages)."""
    cache = AnswerCache(str(path), table=table)
    for i in range(n):
        record = ({"content": f"answer {i} " + "x" * 400} if table == "calls" else
                  {"status": "ok", "entities": [[f"e{i}", "d" * 400]], "raw": "", "error": None})
        cache.put(f"k{i}", record, kind="write", prompt_tokens=i, completion_tokens=1)
    cache.close()
    again = AnswerCache(str(path), table=table)
    records = {f"k{i}": again.get(f"k{i}") for i in range(n)}
    again.close()
    return records


def _readable(path, table="calls"):
    """The keys plain SQLite can still read one by one (the oracle for what must be kept)."""
    db, keys = sqlite3.connect(path), set()
    for rowid in range(1, 1000):
        try:
            row = db.execute(f"SELECT key FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row:
            keys.add(row[0])
    db.close()
    return keys


def _garble(path, offset, size, seed=0):
    data = bytearray(open(path, "rb").read())
    data[offset:offset + size] = random.Random(seed).randbytes(size)
    open(path, "wb").write(data)


def _reopen(path, capsys, table="calls"):
    cache = AnswerCache(str(path), table=table)
    return cache, capsys.readouterr().err


@pytest.mark.parametrize("content", [os.urandom(8000), b"SQLite format 3\x00" + b"\x10" * 30,
                                     b"key\tanswer\nk1\thello\n"],
                         ids=["random-bytes", "truncated-header", "text-file"])
def test_a_file_that_is_not_a_database_is_set_aside(tmp_path, capsys, content):
    path = tmp_path / "c.sqlite"
    path.write_bytes(content)
    cache, err = _reopen(path, capsys)
    assert err.count("warning:") == 1 and "not a SQLite database" in err
    assert f"moved it to {path}.damaged-1" in err and "0 record(s)" in err
    assert (tmp_path / "c.sqlite.damaged-1").read_bytes() == content
    cache.put("k", {"content": "hi"})
    assert cache.count() == 1 and cache.get("k")["content"] == "hi"


def test_a_second_damage_never_overwrites_the_first(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    for text in ("first", "second"):
        path.write_text(text * 100)
        AnswerCache(str(path)).close()
    err = capsys.readouterr().err
    assert "damaged-1" in err and "damaged-2" in err
    assert (tmp_path / "c.sqlite.damaged-1").read_text() == "first" * 100
    assert (tmp_path / "c.sqlite.damaged-2").read_text() == "second" * 100


@pytest.mark.parametrize("page", [18, 30, 2], ids=["leaf", "late-leaf", "root"])
def test_corrupt_pages_keep_every_readable_record(tmp_path, capsys, page):
    path = tmp_path / "c.sqlite"
    before = _cache(path)
    _garble(str(path), (page - 1) * PAGE + 8, 3000)
    readable = _readable(str(path))
    cache, err = _reopen(path, capsys)
    assert err.count("warning:") == 1 and "c.sqlite.damaged-1" in err
    assert "integrity check failed" in err or "cannot read" in err
    assert f"with the {cache.count()} record(s)" in err
    kept = {k: cache.get(k) for k in before if cache.get(k) is not None}
    assert set(kept) >= readable  # every answer SQLite can still read survives
    assert all(kept[k] == before[k] for k in kept)  # and none comes back altered
    if page != 2:  # a damaged leaf loses its rows only: those after it are read too
        assert len(kept) >= 280 and "k299" in kept


def test_the_index_damaged_loses_nothing_and_a_truncated_file_keeps_its_start(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    before = _cache(path)
    _garble(str(path), 2 * PAGE + 8, 2000)  # page 3: the key index, not the records
    cache, err = _reopen(path, capsys)
    assert "with the 300 record(s)" in err
    assert {k: cache.get(k) for k in before} == before
    cache.close()
    other = tmp_path / "t.sqlite"
    before = _cache(other)
    data = other.read_bytes()
    other.write_bytes(data[:len(data) // 2])
    assert not _readable(str(other))  # plain SQLite reads nothing of a truncated file
    cache, err = _reopen(other, capsys)
    kept = {k: cache.get(k) for k in before if cache.get(k) is not None}
    assert err.count("warning:") == 1 and f"with the {len(kept)} record(s)" in err
    assert len(kept) >= 120 and all(kept[k] == before[k] for k in kept)


def test_a_paid_answer_that_was_readable_is_not_asked_again(tmp_path, capsys):
    """What a caller does: get, and ask (pay) only on a miss."""
    path = tmp_path / "c.sqlite"
    before = _cache(path)
    _garble(str(path), 17 * PAGE + 8, 3000)
    readable = _readable(str(path))
    cache, _ = _reopen(path, capsys)
    paid = [k for k in before if cache.get(k) is None]
    assert not set(paid) & readable and len(paid) <= 300 - len(readable)


def test_a_table_of_an_unknown_layout_is_set_aside(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE calls (a TEXT, b INTEGER)")
        db.execute("INSERT INTO calls VALUES ('x', 1)")
    cache, err = _reopen(path, capsys)
    assert "table calls has the columns (a, b)" in err and "0 record(s)" in err
    assert cache.count() == 0
    with sqlite3.connect(tmp_path / "c.sqlite.damaged-1") as db:
        assert db.execute("SELECT * FROM calls").fetchall() == [("x", 1)]


def test_foreign_tables_and_triggers_are_set_aside_and_never_run(tmp_path, capsys):
    """A shared cache with a trigger that would rewrite token counts (a silently wrong cost)."""
    path = tmp_path / "c.sqlite"
    before = _cache(path, n=20)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
        db.execute("CREATE TRIGGER cheat AFTER INSERT ON calls BEGIN "
                   "UPDATE calls SET prompt_tokens = 0; END")
    cache, err = _reopen(path, capsys)
    assert "not an answer cache's" in err and "trigger cheat" in err and "table notes" in err
    assert "with the 20 record(s)" in err
    cache.put("new", {"content": "x"}, prompt_tokens=7)
    assert cache.get("k19") == before["k19"] and cache.get("new")["prompt_tokens"] == 7


def test_bad_rows_are_dropped_one_by_one(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    before = _cache(path, n=10, table="answers")
    bad = [("j1", "extract", "{not json", 1, 1, 1), ("j2", "extract", "[1, 2]", 1, 1, 1),
           ("j3", "extract", None, 1, 1, 1), ("j4", "extract", '{"status": "ok"}', 1, 1, 1),
           ("j5", "extract", json.dumps(before["k0"]), "many", 1, 1),
           ("j6", "extract", json.dumps(before["k0"]), -5, 1, 1),
           ("j7", "extract", json.dumps(before["k0"]), 1.5, 1, 1)]
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO answers VALUES (?,?,?,?,?,?)", bad)
    cache, err = _reopen(path, capsys, table="answers")
    assert err.count("warning:") == 1 and "are not valid" in err
    # j4 passes the fast check on open but lacks its entities: dropped in the rebuild
    assert "with the 10 record(s)" in err and "(7 invalid record(s) dropped)" in err
    assert {k: cache.get(k) for k in before} == before and cache.count() == 10


def test_a_record_unusable_for_its_table_is_a_miss_not_a_crash(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    AnswerCache(str(path), table="answers").put("k", {"status": "ok"})  # no entities
    cache, err = _reopen(path, capsys, table="answers")
    assert err == "" and cache.get("k") is None
    cache.put("k", {"status": "ok", "entities": []})
    assert cache.get("k")["entities"] == []


def test_stale_wal_and_shm_files_keep_every_answer(tmp_path, capsys):
    """A crash leaves a -wal with committed answers and a -shm: all are read, nothing warned;
    garbage in both next to a sound file is ignored."""
    live = AnswerCache(str(tmp_path / "live.sqlite"), table="calls")
    live._db.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(50):
        live.put(f"k{i}", {"content": str(i)})
    crash = tmp_path / "crash"
    crash.mkdir()
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(tmp_path / f"live.sqlite{suffix}", crash / f"c.sqlite{suffix}")
    live.close()
    assert os.path.getsize(crash / "c.sqlite-wal") > 0
    cache, err = _reopen(crash / "c.sqlite", capsys)
    assert err == "" and cache.count() == 50 and cache.get("k49")["content"] == "49"
    cache.close()
    for suffix in ("-wal", "-shm"):
        (crash / f"c.sqlite{suffix}").write_bytes(random.Random(1).randbytes(40000))
    cache, err = _reopen(crash / "c.sqlite", capsys)
    assert err == "" and cache.count() == 50


def test_a_damaged_file_moves_aside_with_its_wal(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"garbage" * 100)
    (tmp_path / "c.sqlite-wal").write_bytes(b"stale wal" * 100)
    cache, _ = _reopen(path, capsys)
    assert (tmp_path / "c.sqlite.damaged-1-wal").read_bytes() == b"stale wal" * 100
    assert cache.count() == 0


def _as_other_user(fn):
    """``fn()``'s outcome (its InputError text, or "ok") in a forked child that cannot write
    files it does not own (root's child drops to nobody, which root's chmods then bind)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            fn()
            out = "ok"
        except InputError as exc:
            out = "InputError: " + str(exc)
        except BaseException as exc:
            out = "traceback: " + repr(exc)
        os.write(write, out.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


@pytest.fixture
def shared_dir():
    """A folder another user may enter (pytest's tmp_path is private to its owner)."""
    folder = tempfile.mkdtemp(prefix="mteb-stratified-cache-")
    os.chmod(folder, 0o755)
    yield folder
    os.chmod(folder, 0o755)
    shutil.rmtree(folder)


def test_read_only_file_and_folder_are_input_errors(shared_dir):
    path = os.path.join(shared_dir, "c.sqlite")
    _cache(path, n=3)
    os.chmod(path, 0o444)
    os.chmod(shared_dir, 0o555)
    out = _as_other_user(lambda: AnswerCache(path, table="calls"))
    assert out.startswith(f"InputError: {path}: ") and "read-only" in out and "fix:" in out
    out = _as_other_user(lambda: AnswerCache(os.path.join(shared_dir, "new.sqlite")))
    assert out.startswith("InputError: ") and "folder writable" in out
    out = _as_other_user(lambda: AnswerCache(os.path.join(shared_dir, "sub", "new.sqlite")))
    assert out.startswith("InputError: ") and "cannot be created" in out
    with open(os.path.join(shared_dir, "c.sqlite"), "rb") as f:
        assert f.read(16) == b"SQLite format 3\x00"  # untouched


def test_a_damaged_cache_in_a_read_only_folder_is_an_input_error(shared_dir):
    path = os.path.join(shared_dir, "bad.sqlite")
    with open(path, "w") as f:
        f.write("not a cache")
    os.chmod(shared_dir, 0o555)
    out = _as_other_user(lambda: AnswerCache(path))
    assert out.startswith(f"InputError: {path}: ") and "cannot be moved aside" in out
    assert os.listdir(shared_dir) == ["bad.sqlite"]


_HOLD = ("import sqlite3, sys, time\n"
         "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "db.execute('BEGIN IMMEDIATE')\n"
         "db.execute(\"INSERT INTO calls VALUES ('other', '', '{}', 0, 0, 1)\")\n"
         "print('held', flush=True)\n"
         "time.sleep(float(sys.argv[2]))\n"
         "db.execute('COMMIT')\n")


def _holder(path, seconds):
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_locked_cache_waits_then_says_so(tmp_path):
    path = tmp_path / "c.sqlite"
    _cache(path, n=3)
    open_before = AnswerCache(str(path), table="calls", timeout=0.3)
    proc = _holder(path, 30)
    try:
        start = time.monotonic()
        with pytest.raises(InputError) as err:
            AnswerCache(str(path), table="calls", timeout=0.3)
        assert time.monotonic() - start >= 0.3
        assert err.value.source == str(path) and "locked by another process" in str(err.value)
        assert "another cache path" in err.value.fix
        with pytest.raises(InputError, match="locked"):
            open_before.put("mine", {"content": "x"})
        assert open_before.get("k1") is not None  # readers are not blocked (WAL)
    finally:
        proc.kill()
        proc.wait()


def test_a_short_lock_is_waited_for(tmp_path):
    path = tmp_path / "c.sqlite"
    _cache(path, n=3)
    proc = _holder(path, 0.5)
    try:
        cache = AnswerCache(str(path), table="calls", timeout=20)
        cache.put("mine", {"content": "x"})
        assert cache.count() == 5  # the holder's row was committed first
    finally:
        proc.wait()


class _Counting:
    """A provider that answers every document with one entity and counts the paid calls."""

    def __init__(self):
        self.calls = 0

    def complete(self, *, model, messages, temperature, max_tokens):
        from mteb_stratified.llm import Completion
        self.calls += 1
        return Completion('{"entities": [{"name": "iron", "description": "a metal"}], "note": "'
                          + "x" * 1200 + '"}', 50, 9)


def test_the_extractor_pays_again_only_for_the_records_lost(tmp_path, capsys):
    from mteb_stratified.structure.llm import LLMExtractor
    path = str(tmp_path / "llm_cache.sqlite")
    texts = [f"document {i} " + "word " * 150 for i in range(200)]

    def run():
        provider = _Counting()
        extractor = LLMExtractor("http://127.0.0.1:9/v1", "m", "k", cache_path=path,
                                 provider=provider, concurrency=1)
        entities = extractor.extract(texts)
        extractor.cache.close()
        return provider.calls, entities

    assert run()[0] == 200
    _garble(path, 40 * PAGE + 8, 3000)
    readable = len(_readable(path, table="answers"))
    assert 180 <= readable < 200
    paid, entities = run()
    assert paid == 200 - readable and "damaged-1" in capsys.readouterr().err
    assert all(e and e[0].name == "iron" for e in entities)
    assert run()[0] == 0
