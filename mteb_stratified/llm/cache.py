"""The one persistent cache of LLM answers: SQLite, crash-safe, one JSON record per key.

Every answer is committed the moment it arrives (WAL, ``synchronous=FULL``), so a crash — even
SIGKILL — loses at most the requests in flight, and a rerun repeats no answered call.  A file
holds one table per user (``answers`` for the entity extractor: one record per document;
``calls`` for query generation: one record per chat call); each row is ``(key, kind, record,
prompt_tokens, completion_tokens, calls)`` with ``record`` a JSON object.  Caches written by
earlier versions (the extractor's column-per-field ``answers`` table, generation's
``calls(key, kind, content, ...)`` table) are migrated in place on open, keeping every answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading

__all__ = ["AnswerCache", "cache_key", "open_cache_db"]

_COLUMNS = ("key", "kind", "record", "prompt_tokens", "completion_tokens", "calls")


def cache_key(*parts) -> str:
    """sha256 of the parts (strings joined by NUL; anything else as sorted JSON)."""
    text = "\0".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False,
                                                              sort_keys=True) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_cache_db(path: str) -> sqlite3.Connection:
    """A crash-safe SQLite connection (WAL, synchronous=FULL)."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


class AnswerCache:
    """``key -> record`` (a JSON object) in table ``table`` of the SQLite file ``path``.

    ``put`` stores a record with its token counts and number of calls; ``get`` returns the
    record (with ``prompt_tokens``, ``completion_tokens`` and ``calls`` set) or None.
    """

    def __init__(self, path: str, table: str = "answers") -> None:
        if not re.fullmatch(r"[a-z_]+", table):
            raise ValueError(f"bad cache table name {table!r}")
        self.path, self.table = path, table
        self._lock = threading.Lock()
        self._db = open_cache_db(path)
        self._migrate()
        self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, kind TEXT, "
                         "record TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                         "calls INTEGER)")
        self._db.commit()

    def _columns(self, table: str) -> list:
        return [r[1] for r in self._db.execute(f"PRAGMA table_info({table})")]

    def _migrate(self) -> None:
        """Rewrite a table of an earlier layout into the one above, keeping every answer."""
        cols = self._columns(self.table)
        if not cols or tuple(cols) == _COLUMNS:
            return
        rows = self._db.execute(f"SELECT * FROM {self.table}").fetchall()
        old = [dict(zip(cols, r)) for r in rows]
        new = []
        for r in old:
            if "entities" in r:  # the extractor's table
                record = {"status": r.get("status"), "entities": json.loads(r.get("entities")
                                                                            or "[]"),
                          "raw": r.get("raw") or "", "error": r.get("error")}
                kind = "extract"
            else:                # generation's table
                record = {"content": r.get("content")}
                kind = r.get("kind") or ""
            new.append((r["key"], kind, json.dumps(record, ensure_ascii=False),
                        r.get("prompt_tokens") or 0, r.get("completion_tokens") or 0,
                        r.get("calls") if r.get("calls") is not None else 1))
        with self._db:
            self._db.execute(f"ALTER TABLE {self.table} RENAME TO {self.table}_v0")
            self._db.execute(f"CREATE TABLE {self.table} (key TEXT PRIMARY KEY, kind TEXT, "
                             "record TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                             "calls INTEGER)")
            self._db.executemany(f"INSERT INTO {self.table} VALUES (?,?,?,?,?,?)", new)
            self._db.execute(f"DROP TABLE {self.table}_v0")

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute(f"SELECT record, prompt_tokens, completion_tokens, calls "
                                   f"FROM {self.table} WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        record = json.loads(row[0] or "{}")
        record.update(prompt_tokens=row[1] or 0, completion_tokens=row[2] or 0,
                      calls=row[3] or 0)
        return record

    def put(self, key: str, record: dict, *, kind: str = "", prompt_tokens: int = 0,
            completion_tokens: int = 0, calls: int = 1) -> None:
        body = {k: v for k, v in record.items()
                if k not in ("prompt_tokens", "completion_tokens", "calls")}
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?,?,?,?,?,?)",
                             (key, kind, json.dumps(body, ensure_ascii=False),
                              int(prompt_tokens), int(completion_tokens), int(calls)))
            self._db.commit()

    def count(self, status: str | None = None) -> int:
        """Rows, or rows whose record has ``status``."""
        with self._lock:
            if status is None:
                return self._db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
            rows = self._db.execute(f"SELECT record FROM {self.table}").fetchall()
        return sum(json.loads(r[0] or "{}").get("status") == status for r in rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()
