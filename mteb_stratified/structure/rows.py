"""The extracted rows of a build, read from the extraction checkpoint in chunks.

:func:`~.extraction.extract_documents` returns the rows of every document.  With a work folder
they are a :class:`CheckpointRows`: a read-only mapping ``doc_id -> row`` that keeps only each
document's byte offset in ``extraction.jsonl`` (8 bytes a document) and reads the rows from the
file when asked, so the driver never holds every row at once (issue #32: the rows were the bulk
of its memory).  Without a work folder the rows are a plain dict, held in memory.

:func:`ordered_rows` is how the steps read them: ``(doc_id, row)`` in the order of the ids
given (the corpus order, on which every first-occurrence rule depends), a chunk of rows at a
time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Iterable, Iterator

import numpy as np

__all__ = ["CheckpointRows", "ordered_rows", "CHUNK"]

#: Rows read (and held) at a time.
CHUNK = 4096


class CheckpointRows(Mapping):
    """``{doc_id: row}`` over a checkpoint file: ``ids`` and each one's row offset (module
    docstring).  A row is read again at each access; nothing is cached."""

    def __init__(self, path: str, ids: list, offsets: np.ndarray, *, chunk: int = CHUNK) -> None:
        self.path = path
        self._ids = list(ids)
        self._offsets = np.asarray(offsets, dtype=np.int64)
        if self._offsets.shape != (len(self._ids),):
            raise ValueError("one offset per document id is needed")
        keys = np.asarray(self._ids, dtype=str) if self._ids else np.zeros(0, dtype="<U1")
        self._perm = np.argsort(keys, kind="stable")
        self._sorted = keys[self._perm]
        self.chunk = max(int(chunk), 1)

    def _position(self, doc_id) -> int:
        if not isinstance(doc_id, str) or not self._ids:
            return -1
        i = int(np.searchsorted(self._sorted, doc_id))
        if i < len(self._sorted) and self._ids[self._perm[i]] == doc_id:
            return int(self._perm[i])
        return -1

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, doc_id) -> bool:
        return self._position(doc_id) >= 0

    def __getitem__(self, doc_id) -> dict:
        i = self._position(doc_id)
        if i < 0:
            raise KeyError(doc_id)
        with open(self.path, "rb") as fh:
            fh.seek(int(self._offsets[i]))
            return json.loads(fh.readline())

    def read(self, positions: np.ndarray) -> list[dict]:
        """The rows at ``positions`` (indices into the ids), in that order; the file is read
        in offset order."""
        positions = np.asarray(positions, dtype=np.int64)
        offsets = self._offsets[positions]
        order = np.argsort(offsets, kind="stable")
        out: list = [None] * len(positions)
        with open(self.path, "rb") as fh:
            for j in order.tolist():
                fh.seek(int(offsets[j]))
                out[j] = json.loads(fh.readline())
        return out

    def items_in(self, ids: Iterable | None = None) -> Iterator[tuple[str, dict]]:
        """``(doc_id, row)`` in the order of ``ids`` (None: this mapping's own order), read
        ``chunk`` rows at a time."""
        if ids is None:
            n = len(self._ids)
            for start in range(0, n, self.chunk):
                block = np.arange(start, min(n, start + self.chunk))
                yield from zip(self._ids[start:start + self.chunk], self.read(block))
            return
        block_ids: list = []
        for d in ids:
            block_ids.append(d)
            if len(block_ids) == self.chunk:
                yield from self._block(block_ids)
                block_ids = []
        if block_ids:
            yield from self._block(block_ids)

    def _block(self, ids: list) -> Iterator[tuple[str, dict]]:
        pos = [self._position(d) for d in ids]
        missing = [d for d, p in zip(ids, pos) if p < 0]
        if missing:
            raise KeyError(missing[0])
        return zip(ids, self.read(np.asarray(pos, dtype=np.int64)))

    def items(self):
        return self.items_in()

    def values(self):
        return (row for _, row in self.items_in())


def ordered_rows(rows: Mapping, ids: Iterable) -> Iterator[tuple[str, dict]]:
    """``(doc_id, row)`` of ``rows`` in the order of ``ids``: from a :class:`CheckpointRows`
    a chunk at a time, from a dict one lookup each."""
    if isinstance(rows, CheckpointRows):
        return rows.items_in(ids)
    return ((d, rows[d]) for d in ids)
