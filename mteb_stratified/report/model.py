"""The report as data: :class:`ReportModel` (what the renderers read, :func:`build_report`),
the grouping of its systems by the query set they were evaluated on (:func:`set_groups`) and
small accessors over its typed results (the pairs, the stabilities, a pooled value).

Inside :mod:`mteb_stratified.report` the imports point one way: :mod:`.model` ←
:mod:`.prose` ← :mod:`.figures` ← :mod:`.render`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

__all__ = ["ReportModel", "build_report", "set_groups", "same_set", "stabilities", "pairs_of",
           "pairs_note", "pair_of", "value_of"]


@dataclass(frozen=True)
class ReportModel:
    """What the renderers read (:func:`build_report`; :func:`render_html`, :func:`to_markdown`).

    Attributes
    ----------
    title : the report's title.
    systems : ``{system: StratifiedSummary}`` (read-only), in the order the report shows them.
    stability : the decision stability of the systems, a list of ``(query-set label,
        stability)`` when they were evaluated on different query sets, or None.
    pairs : the paired summary, or None.
    query_sets : ``{system: label of its evaluated queries}`` (read-only) when the systems were
        evaluated on different query sets; None when they share one.
    """

    title: str
    systems: Mapping
    stability: object = None
    pairs: object = None
    query_sets: Mapping | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "systems", MappingProxyType(dict(self.systems)))
        if self.query_sets is not None:
            object.__setattr__(self, "query_sets", MappingProxyType(dict(self.query_sets)))


def build_report(summaries: dict, stability=None, pairs=None, *, title: str | None = None,
                 query_sets: dict | None = None) -> ReportModel:
    """Bundle per-system stratified summaries (``{system: StratifiedSummary}``, from
    :func:`mteb_stratified.stratification.stratified_summary`), the stability summary and the
    paired summary (:func:`mteb_stratified.stratification.paired_summary`).

    ``query_sets``: ``{system: label of its evaluated queries}``.  When the systems were
    evaluated on different query sets, ``stability`` is a list of ``(label, summary)``, one
    per query set with two or more systems, and ``pairs`` holds pairs within a set only: the
    report then says so first, and never compares systems across sets."""
    first = next(iter(summaries.values()))
    mixed = query_sets is not None and len(set(query_sets.values())) > 1
    return ReportModel(title or f"Stratified evaluation ({first.measure})", summaries,
                       stability, pairs, query_sets if mixed else None)


def set_groups(report) -> list:
    """``[(query-set label, [system, ...])]``, the largest set first (the order the systems
    come in); ``[(None, every system)]`` when they share one query set.  Every table and plot
    that puts systems side by side shows one group at a time."""
    sets = report.query_sets
    names = list(report.systems)
    if not sets:
        return [(None, names)]
    groups: dict = {}
    for n in names:
        groups.setdefault(sets[n], []).append(n)
    return list(groups.items())


def same_set(report) -> list:
    """The systems compared in the per-stratum plot and table: those of the first system's
    query set (every system when they share one)."""
    return set_groups(report)[0][1]


def stabilities(report) -> list:
    """``[(query-set label or None, Stability)]`` of a report
    (:class:`~mteb_stratified.stratification.Stability`)."""
    st = report.stability
    if not st:
        return []
    return list(st) if isinstance(st, list) else [(None, st)]


def pairs_of(report) -> tuple:
    """The report's paired results (:class:`~mteb_stratified.stratification.PairResult`)."""
    paired = report.pairs
    return () if paired is None else paired.pairs


def pairs_note(report) -> str | None:
    """Why the report compares no pair (None when it does, or has no paired summary)."""
    paired = report.pairs
    return None if paired is None else paired.note


def pair_of(report, a: str, b: str):
    """The paired result of ``a`` and ``b`` (either order), or None."""
    for pair in pairs_of(report):
        if {pair.a, pair.b} == {a, b}:
            return pair
    return None


def value_of(summary, value: str, estimator: str = "pooled"):
    """The pooled (or ``estimator``) estimate of ``value`` of a summary; None when absent."""
    est = summary.estimate(estimator, value=value)
    return None if est is None else est.estimate
