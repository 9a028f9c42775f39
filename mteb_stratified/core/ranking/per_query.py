"""Per-query values of one system, typed and aligned once: ``PerQuery(queries, keys, values)``.

``values[k, q]`` is the value of key ``keys[k]`` (expected, min, max, oblivious, bias, ...) for
query ``queries[q]``, as one (K, Q) float64 array.  Readers (the per-query CSV, a TREC run) build
one; the estimators take it directly, and :meth:`PerQuery.aligned` reorders it to a design's
queries once, so a summary aligns each system once instead of once per key and estimator.

**bias** = oblivious − expected is derived here (:meth:`PerQuery.from_columns`) when a source
gives expected and oblivious but no bias — the one place per-query bias is computed (the
per-measure means have theirs in :class:`~.results.MeasureResult`).

A ``PerQuery`` is also a read-only mapping ``{key: {qid: value}}`` (``pq["expected"]``), the
shape the rest of the package used before it existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .results import ARRANGEMENT_KEYS

__all__ = ["PerQuery", "TIE_AWARE_KEYS", "mismatch_error"]

#: The keys of tie-aware per-query values (bias derived from oblivious and expected).
TIE_AWARE_KEYS = ARRANGEMENT_KEYS + ("bias",)


def mismatch_error(extra, missing) -> InputError:
    """The error for per-query values whose queries are not the stratified ones."""
    return InputError(
        f"per-query results do not match the stratified queries: {len(extra)} unknown (e.g. "
        f"{list(extra)[:3]}), {len(missing)} missing (e.g. {list(missing)[:3]})",
        fix="evaluate the same query set over the same corpus as the structure "
            "(score queries absent from the run as 0 with missing='zero')")


@dataclass(frozen=True, eq=False)
class PerQuery(Mapping):
    """``values[k, q]``: key ``keys[k]`` of query ``queries[q]`` (module docstring)."""

    queries: tuple
    keys: tuple
    values: np.ndarray
    _row: dict = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64)
        if v.shape != (len(self.keys), len(self.queries)):
            raise InputError(f"per-query values have shape {v.shape}, expected "
                             f"({len(self.keys)} keys, {len(self.queries)} queries)",
                             fix="give one row of values per key, one column per query")
        if len(set(self.queries)) != len(self.queries):
            raise InputError("a query is listed twice in the per-query values",
                             fix="give each query once")
        if not np.all(np.isfinite(v)):
            raise InputError("per-query values must be finite", fix="check the per-query scores")
        v.setflags(write=False)
        object.__setattr__(self, "queries", tuple(self.queries))
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "_row", {k: i for i, k in enumerate(self.keys)})

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_columns(cls, queries, columns: Mapping) -> "PerQuery":
        """From ``{key: (Q,) array}`` in ``queries`` order; bias derived when missing."""
        cols = {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}
        if "bias" not in cols and "expected" in cols and "oblivious" in cols:
            cols["bias"] = cols["oblivious"] - cols["expected"]
        keys = tuple(cols)
        values = np.stack([cols[k] for k in keys]) if keys else np.zeros((0, len(queries)))
        return cls(tuple(queries), keys, values)

    @classmethod
    def from_mapping(cls, mapping) -> "PerQuery":
        """From ``{key: {qid: value}}`` (every key over the same queries) or a plain
        ``{qid: value}`` (taken as expected); a ``PerQuery`` is returned as it is."""
        if isinstance(mapping, PerQuery):
            return mapping
        if not isinstance(mapping, Mapping) or not mapping:
            raise InputError("no per-query values", fix="pass {qid: value} or {key: {qid: value}}")
        first = next(iter(mapping.values()))
        if not isinstance(first, Mapping):
            mapping = {"expected": mapping}
        if "expected" not in mapping:
            raise InputError("per-query values lack 'expected'",
                             fix="pass {'expected': {qid: v}, 'min': ..., 'max': ..., ...}")
        queries = tuple(mapping["expected"])
        qset = set(queries)
        for k, v in mapping.items():
            if set(v) != qset:
                raise InputError(f"per-query {k!r} values cover other queries than 'expected'",
                                 fix="give every key the same query ids")
        try:
            cols = {k: np.fromiter((float(v[q]) for q in queries), np.float64, len(queries))
                    for k, v in mapping.items()}
        except (TypeError, ValueError):
            raise InputError("per-query values must be numbers", fix="check the values") from None
        return cls.from_columns(queries, cols)

    @classmethod
    def from_result(cls, result) -> "PerQuery":
        """From a :class:`~.results.MeasureResult` (``values`` aligned with ``queries``)."""
        return cls.from_columns(result.queries, {k: result.values[k] for k in ARRANGEMENT_KEYS})

    # -- access ------------------------------------------------------------------------------
    def column(self, key: str) -> np.ndarray:
        """The (Q,) values of ``key``, in :attr:`queries` order (read-only)."""
        if key not in self._row:
            raise InputError(f"no per-query {key!r} values (have: {', '.join(self.keys)})",
                             fix="pick one of the keys listed")
        return self.values[self._row[key]]

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    def subset(self, queries) -> "PerQuery":
        """The values of ``queries`` (each must be present), in that order."""
        index = {q: i for i, q in enumerate(self.queries)}
        missing = [q for q in queries if q not in index]
        if missing:
            raise InputError(f"{len(missing)} queries have no per-query values "
                             f"(e.g. {missing[:3]})", fix="evaluate the same query set")
        cols = [index[q] for q in queries]
        return PerQuery(tuple(queries), self.keys, self.values[:, cols])

    def aligned(self, design) -> "PerQuery":
        """Reordered to exactly ``design.queries`` (ids in ``design.excluded`` ignored);
        extra or missing queries are an :class:`InputError`."""
        if design.queries is None:
            raise InputError("this design has no query ids to align per-query values with",
                             fix="build the design with queries=")
        if tuple(design.queries) == self.queries:
            return self
        known = set(design.queries)
        extra = [q for q in self.queries if q not in known and q not in design.excluded]
        have = set(self.queries)
        missing = [q for q in design.queries if q not in have]
        if extra or missing:
            raise mismatch_error(extra, missing)
        return self.subset(design.queries)

    # -- the mapping view --------------------------------------------------------------------
    def __getitem__(self, key: str) -> dict:
        if key not in self._row:
            raise KeyError(key)  # the Mapping contract: `in` and .get() work
        return dict(zip(self.queries, self.column(key).tolist()))

    def __iter__(self):
        return iter(self.keys)

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"PerQuery({self.n_queries} queries, keys={list(self.keys)})"
