"""The one persistent cache of LLM answers: SQLite, crash-safe, one JSON record per key.

Every answer is committed the moment it arrives (WAL, ``synchronous=FULL``), so a crash — even
SIGKILL — loses at most the requests in flight, and a rerun repeats no answered call.  A file
holds one table per user (``answers`` for the entity extractor: one record per document;
``calls`` for query generation: one record per chat call); each row is ``(key, kind, record,
prompt_tokens, completion_tokens, calls)`` with ``record`` a JSON object.  Caches written by
earlier versions (the extractor's column-per-field ``answers`` table, generation's
``calls(key, kind, content, ...)`` table) are migrated in place on open, keeping every answer.

A damaged file (not a database, pages that fail SQLite's check, a table of an unknown layout,
foreign tables, views or triggers, records that are not JSON objects or counts that are not
integers) is found on open, renamed aside to ``<name>.damaged-<N>`` with its ``-wal``/``-shm``,
and replaced by a fresh cache holding every record that could still be read (one warning on
stderr says what and how many), so no paid answer that survived is asked again.  What no repair
can fix (a locked, read-only or full location) is an
:class:`~mteb_stratified.core.errors.InputError`.  ``retry_failed`` deletes the records stored
as failures, so that the next run asks for them again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import stat
import tempfile
import sys
import threading

from ..core.errors import InputError

__all__ = ["AnswerCache", "cache_key", "open_cache_db"]

_COLUMNS = ("key", "kind", "record", "prompt_tokens", "completion_tokens", "calls")
_COUNTS = _COLUMNS[3:]
_CREATE = ("CREATE TABLE IF NOT EXISTS {} (key TEXT PRIMARY KEY, kind TEXT, record TEXT, "
           "prompt_tokens INTEGER, completion_tokens INTEGER, calls INTEGER)")
_HEADER = b"SQLite format 3\x00"
_MAX_ROWID = 2 ** 63 - 1
#: Fields a record of a known table must hold, with their type (a record without them is unusable).
_REQUIRED = {"answers": {"status": str, "entities": list}, "calls": {"content": str}}
#: A fast SQL test of a current-layout row (JSON object, non-negative integer counts); rows that
#: pass it and still fail :func:`_decode` are treated as misses by ``get``.
_SOUND_ROW = ("typeof(key) = 'text' AND typeof(kind) IN ('text', 'null') AND "
              "CASE WHEN typeof(record) = 'text' AND json_valid(record) "
              "THEN json_type(record) = 'object' ELSE 0 END AND "
              + " AND ".join(f"(typeof({c}) = 'null' OR (typeof({c}) = 'integer' AND {c} >= 0))"
                             for c in _COUNTS))
#: A record's ``status`` (NULL for a record that is not JSON).
_STATUS = "CASE WHEN json_valid(record) THEN json_extract(record, '$.status') END"


def cache_key(*parts) -> str:
    """sha256 of the parts (strings joined by NUL; anything else as sorted JSON)."""
    text = "\0".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False,
                                                              sort_keys=True) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_cache_db(path: str, timeout: float = 30.0) -> sqlite3.Connection:
    """A crash-safe SQLite connection (WAL, synchronous=FULL) that runs no SQL function the file's
    schema names (``trusted_schema=OFF``)."""
    if os.path.dirname(path):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise InputError(f"the cache's folder cannot be created ({exc.strerror})",
                             source=path, fix="pass a cache path in a writable folder") from None
    _refuse_links(path)
    db = _connect(path, timeout)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


def _refuse_links(path: str) -> None:
    """An :class:`InputError` when the cache or a file SQLite keeps beside it (``-wal``,
    ``-shm``, ``-journal``) is a symbolic link, or the cache has another hard link: SQLite
    would write the file it points to, outside the folder the cache was named in."""
    for name in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        try:
            info = os.lstat(name)
        except OSError:
            continue
        what = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else
                f"a file with {info.st_nlink} hard links" if info.st_nlink > 1 else "")
        if what:
            raise InputError(f"the cache is not written through {what}: it would change a "
                             "file elsewhere", source=name,
                             fix="remove it, or pass the real path of the cache you mean "
                                 "(--cache)")


def _connect(path: str, timeout: float) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, timeout=timeout)
    db.execute("PRAGMA trusted_schema=OFF")
    return db


def _fatal(exc: sqlite3.Error, path: str, timeout: float) -> InputError | None:
    """The :class:`InputError` for a SQLite error no repair can fix; None for damage."""
    name, text = getattr(exc, "sqlite_errorname", ""), str(exc).lower()
    if "BUSY" in name or "LOCKED" in name or "is locked" in text:
        return InputError(f"the cache is locked by another process (waited {timeout:g} s)",
                          source=path, fix="wait for the other job that uses this cache to "
                                           "finish, or pass another cache path")
    if "READONLY" in name or "readonly database" in text:
        return InputError("the cache cannot be written (read-only file or folder)", source=path,
                          fix="make the file and its folder writable, or pass another cache path")
    if "CANTOPEN" in name or "unable to open database" in text:
        return InputError("the cache cannot be opened or created (is its folder writable?)",
                          source=path, fix="make the folder writable, or pass another cache path")
    if "FULL" in name or "IOERR" in name or "disk is full" in text or "i/o error" in text:
        return InputError(f"the cache could not be written: {exc}", source=path,
                          fix="free disk space or check the disk, then run again")
    if "no such function" in text:  # an old SQLite without JSON1: not the file's fault
        return InputError(f"this Python's SQLite {sqlite3.sqlite_version} cannot read the cache "
                          f"({exc})", source=path,
                          fix="use a Python whose sqlite3 has the JSON functions (SQLite 3.38+)")
    return None


def _layout(cols) -> str | None:
    """``"current"``, ``"extract-v0"`` or ``"calls-v0"`` for a table this cache can read."""
    cols = tuple(cols)
    if cols == _COLUMNS:
        return "current"
    if "key" in cols and "entities" in cols:
        return "extract-v0"
    if "key" in cols and "content" in cols:
        return "calls-v0"
    return None


def _decode(table: str, cols, row) -> tuple | None:
    """A row of any known layout as ``(key, kind, record, prompt_tokens, completion_tokens,
    calls)``; None when it is not valid (not JSON, not an object, a required field missing, a
    count that is not a non-negative integer)."""
    r = dict(zip(cols, row))
    try:
        if "record" in r:
            record, kind = json.loads(r["record"]), r["kind"]
        elif "entities" in r:
            record = {"status": r.get("status"), "entities": json.loads(r["entities"] or "[]"),
                      "raw": r.get("raw") or "", "error": r.get("error")}
            kind = "extract"
        else:
            record, kind = {"content": r["content"]}, r.get("kind")
    except (TypeError, ValueError):
        return None
    counts = [r.get(c) for c in _COUNTS]
    counts = [0 if counts[0] is None else counts[0], 0 if counts[1] is None else counts[1],
              1 if counts[2] is None else counts[2]]
    if not (isinstance(r["key"], str) and isinstance(kind, (str, type(None)))
            and isinstance(record, dict)
            and all(type(c) is int and c >= 0 for c in counts)
            and all(isinstance(record.get(f), t) for f, t in _REQUIRED.get(table, {}).items())):
        return None
    return (r["key"], kind or "", record, *counts)


def _encode(decoded: tuple) -> tuple:
    key, kind, record, pt, ct, calls = decoded
    return key, kind, json.dumps(record, ensure_ascii=False), pt, ct, calls


def _our_tables(db: sqlite3.Connection) -> dict:
    """``{table: columns}`` of the tables of a layout this cache reads."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    cols = {n: [r[1] for r in db.execute(f'PRAGMA table_info("{n}")')] for n in names
            if re.fullmatch(r"[a-z_0-9]+", n)}
    return {n: c for n, c in cols.items() if _layout(c)}


def _head(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(100)


def _is_sqlite(head: bytes) -> bool:
    return len(head) == 100 and head.startswith(_HEADER)


def _salvage(path: str):
    """``(table, decoded row or None)`` for every row of a cache table SQLite can still read in
    the damaged file ``path`` (none from a file that is not SQLite, whose -wal stays as it is)."""
    head = _head(path)
    if not _is_sqlite(head):
        return
    padded = _pad_truncated(path, head)
    db = _connect(padded or path, 30.0)
    try:
        try:
            tables = _our_tables(db)
        except sqlite3.DatabaseError:
            return
        for table, cols in tables.items():
            for row in _readable_rows(db, table):
                yield table, _decode(table, cols, row)
    finally:
        db.close()
        if padded:
            os.remove(padded)


def _pad_truncated(path: str, head: bytes) -> str | None:
    """A copy of a truncated database padded to the page count its header gives (SQLite reads
    nothing of a file shorter than that, and the pages that are left when it is padded); None
    when the file is not shorter."""
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    want, size = int.from_bytes(head[28:32], "big") * page, os.path.getsize(path)
    if not page or size >= want or want > 4 * size + 2 ** 20:
        return None
    fd, copy = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".padded",
                                dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, "wb") as f, open(path, "rb") as src:  # unique per process
        shutil.copyfileobj(src, f)
        f.truncate(want)
    return copy


def _readable_rows(db: sqlite3.Connection, table: str):
    """Every row of ``table`` SQLite can still read, in rowid order, stepping over damaged pages."""
    start = -_MAX_ROWID - 1
    while True:
        try:
            for row in db.execute(f"SELECT rowid, * FROM {table} WHERE rowid >= ? "
                                  "ORDER BY rowid", (start,)):
                start = row[0] + 1
                yield row[1:]
            return
        except sqlite3.DatabaseError:
            pass
        # the scan reads a row ahead: the first row of the damaged stretch may still be whole
        row = _first_row(db, table, start)
        if row is False:
            start = _resume_after(db, table, start)
        elif row is not None:
            start = row[0] + 1
            yield row[1:]
        if row is None or start is None:
            return


def _first_row(db: sqlite3.Connection, table: str, start: int):
    """``(rowid, *row)`` of the first row at or above ``start``; None if none, False if damaged."""
    if start > _MAX_ROWID:
        return None
    try:
        return db.execute(f"SELECT rowid, * FROM {table} WHERE rowid >= ? ORDER BY rowid "
                          "LIMIT 1", (start,)).fetchone()
    except sqlite3.DatabaseError:
        return False


def _resume_after(db: sqlite3.Connection, table: str, bad: int) -> int | None:
    """The smallest rowid above ``bad`` from which ``table`` reads again (None: nothing does):
    steps of doubling length past the damage, then a bisection back to its end."""
    lo, step = bad, 1
    while _first_row(db, table, lo + step) is False:
        lo, step = lo + step, step * 2
        if lo + step > _MAX_ROWID:
            return None
    hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _first_row(db, table, mid) is not False else (mid, hi)
    return hi


class AnswerCache:
    """``key -> record`` (a JSON object) in table ``table`` of the SQLite file ``path``.

    ``put`` stores a record with its token counts and number of calls; ``get`` returns the
    record (with ``prompt_tokens``, ``completion_tokens`` and ``calls`` set) or None.  A damaged
    file is set aside and rebuilt from its readable records on open (see the module); a writer
    of another process is waited for ``timeout`` seconds, then an :class:`InputError` is raised.
    """

    def __init__(self, path: str, table: str = "answers", *, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[a-z_]+", table):
            raise ValueError(f"bad cache table name {table!r}")
        self.path, self.table, self.timeout = os.fspath(path), table, float(timeout)
        self._lock = threading.Lock()
        # the checks, the repair and the migration read the file and rewrite it: one process
        # at a time (a second one waits), so two jobs opening one damaged cache lose nothing
        with self._open_lock(), self._errors():
            problem = self._damage()
            if problem:
                self._rebuild(problem)
            self._db = open_cache_db(self.path, self.timeout)
            self._migrate()
            self._db.execute(_CREATE.format(table))
            self._db.commit()
            self._db.execute("BEGIN IMMEDIATE")  # fail now, not at the first paid answer, when
            self._db.rollback()                  # the file is read-only or held by a writer

    def _open_lock(self):
        """The lock held while the cache is opened (:func:`~..io.lock.file_lock`, waiting up
        to ``timeout``); none in a folder we cannot write (nothing is repaired there: the open
        ends in the read-only error)."""
        from ..io.lock import file_lock

        folder = os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(folder) and not os.access(folder, os.W_OK):
            return contextlib.nullcontext()
        return file_lock(self.path, timeout=self.timeout, what="the LLM answer cache's open")

    @contextlib.contextmanager
    def _errors(self):
        """Turn a SQLite error no repair can fix into an :class:`InputError`, and any other one
        met after the open checks into one that says to run again (the open repairs the file)."""
        try:
            yield
        except sqlite3.Error as exc:
            raise (_fatal(exc, self.path, self.timeout)
                   or InputError(f"the cache failed while in use ({exc})", source=self.path,
                                 fix="run again: the cache is checked and repaired on open")
                   ) from None

    # -- damage ---------------------------------------------------------------------------------
    def _damage(self) -> str | None:
        """What is wrong with the file, or None when it is a sound cache or absent."""
        if os.path.isdir(self.path):
            raise InputError("the cache path is a folder", source=self.path,
                             fix="pass a file path for the cache")
        try:
            head = _head(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"the cache cannot be read ({exc.strerror})", source=self.path,
                             fix="make it readable, or pass another cache path") from None
        if not head:
            return None
        if not _is_sqlite(head):
            return "it is not a SQLite database"
        db = _connect(self.path, self.timeout)
        try:
            check = db.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                first = [ln for ln in str(check[0][0]).splitlines() if not ln.startswith("***")]
                return f"SQLite's integrity check failed: {(first or ['?'])[0][:200]}"
            return self._schema_problem(db) or self._row_problem(db)
        except sqlite3.DatabaseError as exc:
            if _fatal(exc, self.path, self.timeout):
                raise
            return f"SQLite cannot read it ({exc})"
        finally:
            db.close()

    def _schema_problem(self, db: sqlite3.Connection) -> str | None:
        ours = _our_tables(db)
        foreign = []
        for kind, name, table in db.execute("SELECT type, name, tbl_name FROM sqlite_master"):
            if kind == "table" and name == self.table and name not in ours:
                cols = [r[1] for r in db.execute(f'PRAGMA table_info("{name}")')]
                return f"its table {name} has the columns ({', '.join(cols)}), not a cache's"
            if name in ours or (name.startswith("sqlite_")
                                and (kind == "table" or table in ours)):
                continue
            foreign.append(f"{kind} {name}")
        if foreign:
            return "it holds objects that are not an answer cache's: " + ", ".join(foreign[:5])
        return None

    def _row_problem(self, db: sqlite3.Connection) -> str | None:
        for table, cols in _our_tables(db).items():
            if _layout(cols) == "current":
                bad = db.execute(f"SELECT COUNT(*) FROM {table} WHERE NOT "
                                 f"({_SOUND_ROW})").fetchone()[0]
            else:
                bad = sum(_decode(table, cols, r) is None
                          for r in db.execute(f"SELECT * FROM {table}"))
            if bad:
                return (f"{bad} record(s) of table {table} are not valid (a record that is not "
                        "a JSON object, or a token count that is not an integer)")
        return None

    def _set_aside(self) -> str:
        """Rename the file (and its -wal, -shm) to the first free ``<name>.damaged-<N>``."""
        n = 1
        while any(os.path.lexists(f"{self.path}.damaged-{n}{s}") for s in ("", "-wal", "-shm")):
            n += 1
        aside = f"{self.path}.damaged-{n}"
        try:
            for suffix in ("-wal", "-shm", ""):
                if os.path.lexists(self.path + suffix):
                    os.rename(self.path + suffix, aside + suffix)
        except OSError as exc:
            raise InputError(f"the cache is damaged and cannot be moved aside ({exc.strerror})",
                             source=self.path, fix="make its folder writable, or move or delete "
                                                   "the file yourself") from None
        return aside

    def _rebuild(self, problem: str) -> None:
        """Set the damaged file aside and copy every readable record into a fresh cache."""
        aside = self._set_aside()
        kept = dropped = 0
        fresh = open_cache_db(self.path, self.timeout)
        try:
            for table, decoded in _salvage(aside):
                if decoded is None:
                    dropped += 1
                    continue
                fresh.execute(_CREATE.format(table))
                fresh.execute(f"INSERT OR REPLACE INTO {table} VALUES (?,?,?,?,?,?)",
                              _encode(decoded))
                kept += 1
            fresh.commit()
        finally:
            fresh.close()
        print(f"warning: {self.path}: the answer cache was damaged ({problem}); moved it to "
              f"{aside} and started a fresh cache with the {kept} record(s) that could be read"
              + (f" ({dropped} invalid record(s) dropped)" if dropped else ""),
              file=sys.stderr, flush=True)

    # -- layout ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Rewrite a table of an earlier layout into the one above, keeping every answer."""
        cols = [r[1] for r in self._db.execute(f"PRAGMA table_info({self.table})")]
        if not cols or tuple(cols) == _COLUMNS:
            return
        rows = self._db.execute(f"SELECT * FROM {self.table}").fetchall()
        new = [_encode(d) for d in (_decode(self.table, cols, r) for r in rows) if d]
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(f"ALTER TABLE {self.table} RENAME TO {self.table}_v0")
            self._db.execute(_CREATE.format(self.table))
            self._db.executemany(f"INSERT INTO {self.table} VALUES (?,?,?,?,?,?)", new)
            self._db.execute(f"DROP TABLE {self.table}_v0")

    # -- records --------------------------------------------------------------------------------
    def get(self, key: str) -> dict | None:
        """The record stored for ``key``, or None (also for a record that cannot be used)."""
        with self._lock, self._errors():
            row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM {self.table} "
                                   "WHERE key = ?", (key,)).fetchone()
        decoded = None if row is None else _decode(self.table, _COLUMNS, row)
        if decoded is None:
            return None
        record = decoded[2]
        record.update(prompt_tokens=decoded[3], completion_tokens=decoded[4], calls=decoded[5])
        return record

    def put(self, key: str, record: dict, *, kind: str = "", prompt_tokens: int = 0,
            completion_tokens: int = 0, calls: int = 1) -> None:
        body = {k: v for k, v in record.items()
                if k not in ("prompt_tokens", "completion_tokens", "calls")}
        with self._lock, self._errors():
            self._db.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?,?,?,?,?,?)",
                             (key, kind, json.dumps(body, ensure_ascii=False),
                              int(prompt_tokens), int(completion_tokens), int(calls)))
            self._db.commit()

    def count(self, status: str | None = None) -> int:
        """Rows, or rows whose record has ``status``."""
        where, args = ("", ()) if status is None else (f" WHERE {_STATUS} = ?", (status,))
        with self._lock, self._errors():
            return self._db.execute(f"SELECT COUNT(*) FROM {self.table}{where}",
                                    args).fetchone()[0]

    def retry_failed(self) -> int:
        """Delete the records stored as failures (``status == "failed"``: the extractor's failed
        documents) so the next run asks for them again; returns how many were deleted."""
        with self._lock, self._errors():
            n = self._db.execute(f"DELETE FROM {self.table} WHERE {_STATUS} = 'failed'").rowcount
            self._db.commit()
        return n

    def close(self) -> None:
        with self._lock:
            self._db.close()
