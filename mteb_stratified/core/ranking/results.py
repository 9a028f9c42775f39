"""Result objects: frozen dataclasses in the style of scipy.stats.

* :class:`TieAwareValue` — one number's expected/min/max/oblivious, with ``range`` and ``bias``;
* :class:`MeasureResult` — one measure over all queries: per-query arrays and their means;
* :class:`EvaluationResult` — every measure, the tie audit, and what was left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

import numpy as np

from ..errors import InputError
from ..jsonsafe import dumps_json
from .measures import Measure, parse_measure

__all__ = ["TieAwareValue", "MeasureResult", "EvaluationResult", "ConfidenceInterval",
           "VALUE_KEYS", "ARRANGEMENT_KEYS", "SUFFIX_ORDER"]

#: The tie arrangements a walk computes (the order of its output axis): the expected value over
#: tied orders, the worst and best tied order, and the tie-oblivious order.
ARRANGEMENT_KEYS = ("expected", "min", "max", "oblivious")
#: Keys of every tie-aware value, in the order of the JSON contract: the arrangements, then the
#: two derived from them (``range = max - min``, ``bias = oblivious - expected``).
VALUE_KEYS = ARRANGEMENT_KEYS + ("range", "bias")
#: The same keys in the order of the MTEB score keys' suffixes (``ndcg_at_10_expected``, ...,
#: ``ndcg_at_10_oblivious``) and of the BEIR adapter's values: the tie-oblivious value last.
SUFFIX_ORDER = tuple(k for k in VALUE_KEYS if k != "oblivious") + ("oblivious",)


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided interval ``(low, high)``; unpacks like scipy's: ``lo, hi = ci``.  The bounds
    are floats, or arrays (one per stratum) for a :class:`~..stats.estimators.StratumTable`."""

    low: float
    high: float

    def __iter__(self):
        return iter((self.low, self.high))

    def __getitem__(self, index):
        return (self.low, self.high)[index]

    def __len__(self) -> int:
        return 2


@dataclass(frozen=True)
class TieAwareValue:
    """A measure's value under ties.

    ``expected`` is the mean over all orders of every tie group, ``min``/``max`` the worst and
    best orders, ``oblivious`` what a tie-oblivious tool reports; ``range = max - min`` and
    ``bias = oblivious - expected``.
    """

    expected: float
    min: float
    max: float
    oblivious: float

    @property
    def range(self) -> float:
        return self.max - self.min

    @property
    def bias(self) -> float:
        return self.oblivious - self.expected

    def to_dict(self) -> dict:
        return {key: float(getattr(self, key)) for key in VALUE_KEYS}


@dataclass(frozen=True, eq=False)
class MeasureResult:
    """One measure over Q queries.

    ``values[key]`` is a (Q,) array for key in expected/min/max/oblivious, aligned with
    ``queries``; the attributes ``expected`` … ``bias`` are the means over queries
    (``range`` and ``bias`` of the means equal the means of the per-query ranges and biases).
    """

    measure: Measure
    queries: tuple
    values: Mapping[str, np.ndarray]

    def _mean(self, key: str) -> float:
        return float(np.mean(self.values[key])) if len(self.queries) else float("nan")

    @property
    def expected(self) -> float:
        return self._mean("expected")

    @property
    def min(self) -> float:
        return self._mean("min")

    @property
    def max(self) -> float:
        return self._mean("max")

    @property
    def oblivious(self) -> float:
        return self._mean("oblivious")

    @property
    def range(self) -> float:
        return self.max - self.min

    @property
    def bias(self) -> float:
        return self.oblivious - self.expected

    @property
    def value(self) -> TieAwareValue:
        """The means as one :class:`TieAwareValue`."""
        return TieAwareValue(self.expected, self.min, self.max, self.oblivious)

    def per_query(self, key: str = "expected") -> dict:
        """``{qid: value}`` for one key (expected, min, max, oblivious, range or bias)."""
        return dict(zip(self.queries, self._column(key).tolist()))

    def _column(self, key: str) -> np.ndarray:
        if key == "range":
            return self.values["max"] - self.values["min"]
        if key == "bias":
            return self.values["oblivious"] - self.values["expected"]
        if key not in self.values:
            raise InputError(f"unknown value {key!r}", fix=f"use one of {', '.join(VALUE_KEYS)}")
        return self.values[key]

    def query(self, qid: str) -> TieAwareValue:
        """The tie-aware value of one query."""
        try:
            i = self.queries.index(qid)
        except ValueError:
            raise InputError(f"query {qid!r} was not evaluated",
                             fix="pick a query id from result.queries") from None
        return TieAwareValue(*(float(self.values[k][i]) for k in ARRANGEMENT_KEYS))

    def confidence_interval(self, confidence_level: float = 0.95, *,
                            key: str = "expected") -> ConfidenceInterval:
        """Student-t interval for the mean over queries of one key (queries as i.i.d. draws)."""
        from scipy import stats

        x = self._column(key)
        if len(x) < 2:
            return ConfidenceInterval(float("nan"), float("nan"))
        sem = float(np.std(x, ddof=1) / np.sqrt(len(x)))
        mean = float(np.mean(x))
        if sem == 0.0:
            return ConfidenceInterval(mean, mean)
        low, high = stats.t.interval(confidence_level, len(x) - 1, loc=mean, scale=sem)
        return ConfidenceInterval(float(low), float(high))

    def to_dict(self) -> dict:
        return self.value.to_dict()

    def __repr__(self) -> str:
        v = self.value
        return (f"MeasureResult({self.measure!r}, expected={v.expected:.4f}, min={v.min:.4f}, "
                f"max={v.max:.4f}, oblivious={v.oblivious:.4f}, range={v.range:.4f}, "
                f"bias={v.bias:+.4f}, queries={len(self.queries)})")


@dataclass(frozen=True, eq=False)
class EvaluationResult:
    """The tie-aware evaluation of one run.

    Index it with a measure (``result["nDCG@10"]``) to get a :class:`MeasureResult`.
    ``truncated_tie`` flags, per query, a last retrieved tie group that may continue past the
    run's depth (see :func:`mteb_stratified.core.ranking.evaluate.evaluate_arrays`).
    """

    queries: tuple
    results: Mapping[Measure, MeasureResult]
    truncated_tie: np.ndarray
    tie_audit: Mapping[object, Mapping[str, np.ndarray]]
    settings: Mapping[str, object] = field(default_factory=dict)
    left_out: Mapping[str, list] = field(default_factory=dict)

    @property
    def measures(self) -> tuple:
        return tuple(self.results)

    @property
    def truncated_tie_queries(self) -> int:
        return int(np.sum(self.truncated_tie))

    def __getitem__(self, measure: "str | Measure") -> MeasureResult:
        m = parse_measure(measure)
        try:
            return self.results[m]
        except KeyError:
            raise InputError(f"measure {m!r} was not evaluated",
                             fix=f"evaluated measures: {', '.join(map(repr, self.results))}") from None

    def __iter__(self) -> Iterator[Measure]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def per_query(self) -> dict:
        """``{qid: {measure name: TieAwareValue}}``."""
        cols = {m: {k: r.values[k].tolist() for k in ARRANGEMENT_KEYS} for m, r in self.results.items()}
        return {q: {repr(m): TieAwareValue(*(c[k][i] for k in ARRANGEMENT_KEYS))
                    for m, c in cols.items()}
                for i, q in enumerate(self.queries)}

    def tie_stats(self, k: int | None = None) -> dict:
        """Tie audit over the top-k of every query (k=None: whole lists).

        ``tied_query_share``: share of queries with a tie group of ≥ 2 documents that reaches
        into the top k; ``mean_tie_group_size``: documents per tie group over all groups that
        reach into the top k (1.0 means no ties); ``max_tie_group_size``; and, when the whole
        lists were audited (``whole_list_audit=True``), ``distinct_scores_per_query``: mean
        number of distinct scores per query (whole list).
        """
        if k not in self.tie_audit:
            have = ", ".join("all" if c is None else str(c) for c in self.tie_audit)
            raise InputError(f"no tie audit at k={k}",
                             fix=f"audited cutoffs: {have}; pass "
                                 + ("whole_list_audit=True" if k is None else f"tie_cutoffs=[{k}]")
                                 + " to evaluate")
        a = self.tie_audit[k]
        groups = float(np.sum(a["groups"]))
        out = {"tied_query_share": float(np.mean(a["max_group"] >= 2)),
               "mean_tie_group_size": float(np.sum(a["docs"]) / groups) if groups else 0.0,
               "max_tie_group_size": int(np.max(a["max_group"], initial=0))}
        if None in self.tie_audit:
            out["distinct_scores_per_query"] = float(np.mean(self.tie_audit[None]["groups"]))
        return out

    def to_dict(self, per_query: bool = False) -> dict:
        """The JSON contract of ``mteb-stratified evaluate --json``."""
        out: dict = {"queries": len(self.queries),
                     "truncated_tie_queries": self.truncated_tie_queries,
                     "measures": {repr(m): r.to_dict() for m, r in self.results.items()}}
        if per_query:
            out["per_query"] = {q: {m: v.to_dict() for m, v in row.items()}
                                for q, row in self.per_query().items()}
        out["tie_audit"] = {("all" if k is None else str(k)): self.tie_stats(k) for k in self.tie_audit}
        out["left_out"] = {k: len(v) for k, v in self.left_out.items()}
        out["settings"] = dict(self.settings)
        return out

    def to_json(self, per_query: bool = False, **kwargs) -> str:
        """:meth:`to_dict` as valid JSON (a non-finite value, if any, is ``null``)."""
        return dumps_json(self.to_dict(per_query), **kwargs)

    def to_dataframe(self):
        """Long format: one row per query and measure (qid, measure, expected … bias)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_dataframe() needs pandas: pip install pandas") from None
        frames = []
        for m, r in self.results.items():
            data = {"qid": list(self.queries), "measure": repr(m)}
            for key in VALUE_KEYS:
                data[key] = r._column(key)
            frames.append(pd.DataFrame(data))
        return pd.concat(frames, ignore_index=True)

    def table(self, digits: int = 4) -> str:
        """A readable fixed-width table of the means."""
        head = ["measure", *VALUE_KEYS]
        def fmt(key: str, v: float) -> str:
            v = round(v, digits) + 0.0  # no "-0.0000"
            return f"{v:+.{digits}f}" if key == "bias" else f"{v:.{digits}f}"

        rows = [[repr(m)] + [fmt(k, v) for k, v in r.to_dict().items()]
                for m, r in self.results.items()]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        lines = ["  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                           for i, (x, w) in enumerate(zip(row, widths))) for row in [head, *rows]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        foot = [f"{len(self.queries)} queries"]
        if self.truncated_tie_queries:
            n = self.truncated_tie_queries
            foot[0] += (f"; {n} of them {'ends' if n == 1 else 'end'} in a tie at the run's "
                        "depth (documents with that score may have been cut off, so the "
                        "expected value covers only what was retrieved)")
        cutoffs = sorted((k for k in self.tie_audit if k is not None)) + (
            [None] if None in self.tie_audit else [])
        parts = []
        for k in cutoffs:
            s = self.tie_stats(k)
            where = "anywhere in the list" if k is None else f"in the top {k}"
            parts.append(f"{100 * s['tied_query_share']:.1f}% {where} (mean group "
                         f"{s['mean_tie_group_size']:.2f} documents, largest "
                         f"{s['max_tie_group_size']})")
        if parts:
            foot.append("queries with tied scores: " + "; ".join(parts))
        plain = {"queries_only_in_run": "in the run but not in the qrels (left out)",
                 "queries_only_in_qrels": "in the qrels but not in the run (left out; "
                                          "-c scores them 0)",
                 "queries_scored_zero": "in the qrels but not in the run, scored 0 (-c)"}
        for key, items in self.left_out.items():
            if items:
                noun = "query" if len(items) == 1 else "queries"
                foot.append(f"{len(items)} {noun} {plain.get(key, key)}: "
                            f"{', '.join(map(str, items[:3]))}{', ...' if len(items) > 3 else ''}")
        return "\n".join(lines + [""] + foot)
