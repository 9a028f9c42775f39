"""Qrels held as columns: :class:`Judgments`, what the vectorised qrels reader gives and the run
join (:mod:`._vectorised`) reads, with no Python object per judgment.

The doc ids stay in one pyarrow binary array (the id table of the judgments, grouped by query,
each query's in file order), the grades in one int64 array, the query ids in a list (first
appearance order) with where each query's rows begin.  It is also a read-only
``Mapping[qid, {docid: grade}]`` equal to :func:`~.files.read_qrels`' dict, order included,
built per query on access, so every reader of qrels dicts takes it as it is.

pyarrow is imported by the reader that builds one, never here.
"""

from __future__ import annotations

import itertools
from typing import Iterator, Mapping

import numpy as np

__all__ = ["Judgments"]


class Judgments(Mapping):
    """Judgments of ``qids`` (``qids[i]``'s rows ``starts[i]:starts[i + 1]`` of ``docs``, a
    pyarrow binary array of UTF-8 ids, and ``grades``: int64 as read from a file, float64 from
    :meth:`from_mapping`); no query without rows, no (query, document) twice."""

    def __init__(self, qids: list, starts: np.ndarray, docs, grades: np.ndarray) -> None:
        self.qids = qids
        self.index = {q: i for i, q in enumerate(qids)}
        self.starts = starts
        self.docs = docs
        self.grades = grades

    @classmethod
    def from_mapping(cls, pa, qrels: Mapping) -> "Judgments":
        """The judgments of a ``{qid: {docid: grade}}`` mapping, for the join (queries without
        judgments dropped, as a file cannot hold them; grades as float64): a grade that is not
        a number raises TypeError or ValueError, an id that is not a string AttributeError or
        UnicodeError."""
        if isinstance(qrels, Judgments):
            return qrels
        rels = [(q, d) for q, d in qrels.items() if d]
        counts = np.fromiter((len(d) for _, d in rels), dtype=np.int64, count=len(rels))
        starts = np.zeros(len(rels) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        grades = np.fromiter(itertools.chain.from_iterable(d.values() for _, d in rels),
                             dtype=np.float64, count=int(starts[-1]))
        docs = binary_array(pa, itertools.chain.from_iterable(d for _, d in rels))
        return cls([q for q, _ in rels], starts, docs, grades)

    # --- the Mapping, as read_qrels' dict ------------------------------------------------------
    def __getitem__(self, qid: str) -> dict:
        i = self.index[qid]
        lo, hi = int(self.starts[i]), int(self.starts[i + 1])
        docs = self.docs.slice(lo, hi - lo).cast("string").to_pylist()
        return dict(zip(docs, self.grades[lo:hi].tolist()))

    def __contains__(self, qid) -> bool:
        return qid in self.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.qids)

    def __len__(self) -> int:
        return len(self.qids)

    def to_dict(self) -> dict:
        """``{qid: {docid: grade}}``, all at once (one conversion of the columns)."""
        docs = self.docs.cast("string").to_pylist()
        grades = self.grades.tolist()
        bounds = self.starts.tolist()
        return {q: dict(zip(docs[lo:hi], grades[lo:hi]))
                for q, lo, hi in zip(self.qids, bounds, bounds[1:])}

    # --- the columns, for the join -------------------------------------------------------------
    def rows(self, pa, qids: list) -> tuple:
        """``(doc ids, grades as float64, counts)`` of these queries' rows, query after query
        (doc ids a pyarrow binary array taken from the id table)."""
        at = np.fromiter((self.index[q] for q in qids), dtype=np.int64, count=len(qids))
        begin = self.starts[at]
        counts = self.starts[at + 1] - begin
        total = int(counts.sum())
        first = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=first[1:])
        take = np.repeat(begin - first, counts) + np.arange(total, dtype=np.int64)
        docs = self.docs.take(pa.Array.from_buffers(pa.int64(), total,
                                                    [None, pa.py_buffer(take)]))
        return docs, self.grades[take].astype(np.float64), counts


def binary_array(pa, texts):
    """Python strings as a pyarrow binary array of their UTF-8 bytes, built from buffers
    (``pa.array`` would import pandas, where it is installed: a second of start-up); a string
    UTF-8 cannot hold raises UnicodeError, a non-string AttributeError."""
    data = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, data), dtype=np.int64, count=len(data)), out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), len(data),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
