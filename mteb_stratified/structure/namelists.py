"""Every document's list of names, held as integer codes: the compact form of ``{doc_id:
[name, ...]}`` that the driver keeps for the whole corpus (issue #32).

A :class:`NameLists` is a read-only mapping ``doc_id -> list of names`` (a new list at each
access) over three arrays: the names (each distinct name once, one string object), and the
documents' codes into them, one run per document (CSR: ``offsets``, ``codes``).  4 bytes per
name of a document and 8 per document, against a Python list and string per name.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Iterator

import numpy as np

__all__ = ["NameLists"]


class NameLists(Mapping):
    """``{doc_id: [name, ...]}`` as codes into ``names`` (module docstring); ``ids`` in order."""

    def __init__(self, ids: list, names: list, offsets: np.ndarray, codes: np.ndarray) -> None:
        self.ids = ids
        self.names = names
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.codes = np.asarray(codes, dtype=np.int32)
        if self.offsets.shape != (len(ids) + 1,):
            raise ValueError("offsets must hold one more entry than ids")
        self._pos: dict | None = None

    def _position(self, doc_id) -> int:
        """The position of ``doc_id`` (a KeyError when absent): by bisection when the ids
        are sorted (the pipeline's), else through a dict built at the first call."""
        if self._pos is None:
            ids = self.ids
            ordered = all(ids[i] < ids[i + 1] for i in range(len(ids) - 1))
            self._pos = {} if ordered else {d: i for i, d in enumerate(ids)}
            self._bisect = ordered
        if self._bisect:
            i = bisect.bisect_left(self.ids, doc_id)
            if i < len(self.ids) and self.ids[i] == doc_id:
                return i
            raise KeyError(doc_id)
        return self._pos[doc_id]

    def codes_of(self, i: int) -> np.ndarray:
        """The codes of the ``i``-th document."""
        return self.codes[self.offsets[i]:self.offsets[i + 1]]

    def __getitem__(self, doc_id) -> list:
        names = self.names
        return [names[c] for c in self.codes_of(self._position(doc_id)).tolist()]

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator:
        return iter(self.ids)

    def __contains__(self, doc_id) -> bool:
        try:
            self._position(doc_id)
        except (KeyError, TypeError):
            return False
        return True

    def items(self):
        names = self.names
        return ((d, [names[c] for c in self.codes_of(i).tolist()])
                for i, d in enumerate(self.ids))

    def values(self):
        return (v for _, v in self.items())

    def doc_index(self) -> np.ndarray:
        """The document (position in ``ids``) of each code."""
        return np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.offsets))
