"""The typed result of :func:`.block.stratified_summary`: one system's stratified evaluation.

A frozen, scipy-style result.  Code reads its attributes; :meth:`StratifiedSummary.to_dict`
writes the JSON ``strata`` block of the results files (its keys and their order are the JSON
contract, unchanged since the block was a dict):

* :class:`BoundedEstimate` — one estimator of one value (expected, min, max, oblivious, bias),
  analytic or bootstrap, with its interval intersected with the value's range
  (:data:`INTERVAL_RULE`); ``estimate, (low, high)``-style access through ``estimate`` and
  ``confidence_interval``;
* :class:`StratifiedSummary` — the estimates (``pooled``, ``macro``, ``post_stratified`` of the
  expected value directly; any other through :meth:`~StratifiedSummary.estimate`), coverage
  (:class:`~mteb_stratified.core.coverage.Coverage` of clusters and cells), the chance tests
  (:class:`~mteb_stratified.core.chance.HeterogeneityResult` and
  :class:`~mteb_stratified.core.chance.SplitHalfResult`: ``statistic``, ``pvalue``, unpacking),
  the minimum detectable effect, the per-stratum and per-cluster tables (rows of plain values,
  as the JSON has them) and the settings.

Tables (``per_stratum``, ``clusters``, ``cells``) and the small JSON-ready records (``grain``,
``bounds``, ``power``, ``generated``, ``alignment_vs_lexical``) are tuples of read-only mappings
or read-only mappings: the result cannot be edited after it is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..core.chance import HeterogeneityResult, SplitHalfResult
from ..core.coverage import Coverage, Gap
from ..core.estimators import Estimate
from ..core.jsonsafe import frozen_json
from ..core.results import ConfidenceInterval
from ..core.strata import Bins

__all__ = ["StratifiedSummary", "BoundedEstimate", "INTERVAL_RULE", "DEFINITIONS"]

#: How every reported interval respects the metric's range.
INTERVAL_RULE = ("intervals are intersected with the range of the value: [0, 1] for expected, "
                 "min, max and oblivious (every measure here lies in [0, 1]), [-1, 1] for bias; "
                 "the true mean lies in that range, so the intersection never lowers coverage")
_RANGES = {"expected": (0.0, 1.0), "min": (0.0, 1.0), "max": (0.0, 1.0),
           "oblivious": (0.0, 1.0), "bias": (-1.0, 1.0)}

#: Where the definitions behind the block's figures are written.
DEFINITIONS = ("ours (see the docstrings of mteb_stratified.core.strata, .hierarchy, .cells, "
               ".estimators, .coverage, .chance and .power)")

#: The settings the block records that are rules, not arguments.
_RULES = {"cell_rule": "proportional (W_s · n_cell / n_s)",
          "bootstrap": "Rao–Wu rescaling, m_h = n_h − 1", "interval_range": INTERVAL_RULE}


def finite(x) -> float | None:
    """``float(x)``, or None when it is not finite (JSON has no NaN)."""
    x = float(x)
    return None if not math.isfinite(x) else x


def clip(low, high, key: str) -> tuple:
    """``(low, high)`` intersected with the range of value ``key`` (:data:`INTERVAL_RULE`);
    a bound that is not finite is None."""
    lo, hi = _RANGES.get(key, (-math.inf, math.inf))
    low, high = finite(low), finite(high)
    return (None if low is None else min(max(low, lo), hi),
            None if high is None else max(min(high, hi), lo))


def bounded(d: dict, key: str) -> dict:
    """An estimate's dict with its interval intersected with the value's range."""
    d = dict(d)
    d["ci_low"], d["ci_high"] = clip(d.get("ci_low"), d.get("ci_high"), key)
    return d


def _thawed(obj):
    """JSON-ready copy of frozen data (``__post_init__``: tuples back to lists)."""
    if isinstance(obj, Mapping):
        return {k: _thawed(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [_thawed(v) for v in obj]
    return obj


@dataclass(frozen=True)
class BoundedEstimate:
    """One estimator's value of one column with its interval inside the column's range.

    ``value``: expected, min, max, oblivious or bias; ``method``: analytic (t / normal
    interval) or bootstrap (Rao–Wu percentile interval); ``result``: the unbounded
    :class:`~mteb_stratified.core.estimators.Estimate`.  ``ci_low``/``ci_high`` are the
    interval intersected with the value's range (:data:`INTERVAL_RULE`), None when not finite.
    """

    value: str
    method: str
    result: Estimate = field(repr=False)
    confidence_level: float = 0.95

    @property
    def estimator(self) -> str:
        return self.result.estimator

    @property
    def estimate(self) -> float:
        return self.result.estimate

    @property
    def standard_error(self) -> float:
        return self.result.standard_error

    @property
    def n_queries(self) -> int:
        return self.result.n_queries

    @property
    def confidence_interval(self) -> ConfidenceInterval:
        """The bounded interval at ``confidence_level`` (``low, high = ...``)."""
        ci = self.result.confidence_interval(self.confidence_level)
        return ConfidenceInterval(*clip(ci.low, ci.high, self.value))

    @property
    def ci_low(self) -> float | None:
        return self.confidence_interval.low

    @property
    def ci_high(self) -> float | None:
        return self.confidence_interval.high

    def to_dict(self) -> dict:
        return bounded(self.result.to_dict(self.confidence_level), self.value)


@dataclass(frozen=True, eq=False)
class StratifiedSummary:
    """One system's stratified evaluation (see the module docstring and
    :func:`.block.stratified_summary`).

    Attributes
    ----------
    measure, scheme : the measure (``nDCG@10``) and the estimation scheme (cluster / cell).
    corpus_fingerprint, n_clusters, tree_levels : the structure evaluated against.
    grain : the evaluated grain (:meth:`.grain.EvaluatedStrata.describe`).
    bins : the corpus' Δ/J cut-points; ``levels``/``alignment_levels`` their bin names and
        ``bin_counts`` the queries per bin.
    warnings : what a reader must know (a bin holding every query, a short grain, generated
        queries); ``warning_kinds`` the kind of each, in order: ``"strata"`` (the strata's
        own) or ``"origin"`` (every query of the split is generated); not in the JSON block.
    origin, gate_verdict : original or generated queries, and the generator's gate verdict.
    generated : generated queries reported apart from the estimates (or None).
    n_queries, excluded, n_excluded_evaluated, not_evaluated : the stratified queries, the
        excluded ones with their reason (:class:`~mteb_stratified.core.strata.ExcludedQuery`), how many excluded ones were evaluated, and how many
        stratified ones were not.
    cluster_coverage, cell_coverage, top_gaps : coverage of the fine clusters (and cells)
        and how many gaps the JSON lists.
    estimates : ``{value: {method: {estimator: BoundedEstimate}}}``.
    uncovered_weight, evaluated_uncovered_weight, bounds : the corpus weight no query reaches
        (fine clusters; evaluated strata) and the corpus-weighted estimate's bounds.
    per_stratum : one row per evaluated stratum with queries (largest first).
    heterogeneity, split_half : the chance tests at the evaluated grain (None: one stratum).
    power : the minimum detectable effect of the heterogeneity test (None: not computed).
    alignment_vs_lexical : whether J adds to lexical containment (None: no alignment).
    spread, spread_min_n : best − worst stratum mean (all; among those with ≥ n_min queries).
    clusters, cells : the coverage map (one row per fine cluster) and the Δ×J tables.
    n_min, n_resamples, seed, confidence_level : the settings.
    """

    measure: str
    scheme: str
    corpus_fingerprint: str
    n_clusters: int
    tree_levels: int
    grain: Mapping
    bins: Bins
    levels: tuple
    alignment_levels: tuple
    bin_counts: Mapping
    warnings: tuple
    origin: str
    gate_verdict: str | None
    generated: Mapping | None
    n_queries: int
    excluded: tuple
    n_excluded_evaluated: int
    not_evaluated: int
    cluster_coverage: Coverage
    cell_coverage: Coverage | None
    top_gaps: int
    estimates: Mapping
    uncovered_weight: float
    evaluated_uncovered_weight: float
    bounds: Mapping | None
    per_stratum: tuple
    heterogeneity: HeterogeneityResult | None
    split_half: SplitHalfResult | None
    power: Mapping | None
    alignment_vs_lexical: Mapping | None
    spread: float | None
    spread_min_n: Mapping | None
    clusters: tuple
    cells: tuple
    n_min: int
    n_resamples: int
    seed: int
    confidence_level: float
    warning_kinds: tuple = ()

    def __post_init__(self) -> None:
        for name in ("grain", "bin_counts", "generated", "bounds", "per_stratum", "power",
                     "alignment_vs_lexical", "spread_min_n", "clusters", "cells"):
            # read-only copies: mappings → MappingProxyType, lists → tuples
            object.__setattr__(self, name, frozen_json(getattr(self, name),
                                                       mapping=MappingProxyType, sequence=tuple))
        for name in ("levels", "alignment_levels", "warnings", "excluded", "warning_kinds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "estimates", MappingProxyType(
            {k: MappingProxyType({m: MappingProxyType(dict(e)) for m, e in by.items()})
             for k, by in self.estimates.items()}))

    # -- the figures most code reads ---------------------------------------------------------
    def estimate(self, estimator: str = "pooled", *, value: str = "expected",
                 method: str = "analytic") -> BoundedEstimate | None:
        """One estimate: ``estimator`` pooled / macro / post_stratified of ``value``
        (expected, min, max, oblivious, bias) by ``method`` (analytic, bootstrap); None when
        it was not computed (e.g. no post-stratified estimate without corpus weights)."""
        return self.estimates.get(value, {}).get(method, {}).get(estimator)

    @property
    def pooled(self) -> BoundedEstimate:
        """The plain mean over the stratified queries (what a leaderboard reports)."""
        return self.estimate("pooled")

    @property
    def macro(self) -> BoundedEstimate | None:
        return self.estimate("macro")

    @property
    def post_stratified(self) -> BoundedEstimate | None:
        """The corpus-weighted estimate (None without corpus weights)."""
        return self.estimate("post_stratified")

    @property
    def n_strata(self) -> int:
        """Evaluated strata (the grain)."""
        return self.grain["n_strata"]

    @property
    def min_queries(self) -> int:
        return self.grain["min_queries"]

    @property
    def level(self) -> int:
        """The cluster-tree level the grain starts from."""
        return self.grain["start_level"]

    @property
    def n_excluded(self) -> int:
        return len(self.excluded)

    @property
    def gaps(self) -> tuple[Gap, ...]:
        """The largest fine clusters without queries (at most ``top_gaps``), largest first."""
        return self.cluster_coverage.gaps[:self.top_gaps]

    @property
    def coverage(self) -> Mapping[str, Coverage]:
        """``{"cluster": Coverage, "cell": Coverage}`` (cell only when J exists)."""
        out = {"cluster": self.cluster_coverage}
        if self.cell_coverage is not None:
            out["cell"] = self.cell_coverage
        return MappingProxyType(out)

    @property
    def settings(self) -> Mapping:
        """The settings as the JSON records them (arguments, then the fixed rules)."""
        return MappingProxyType({
            "n_min": self.n_min, "min_queries": self.min_queries, "level": self.level,
            "n_resamples": self.n_resamples, "seed": self.seed,
            "confidence_level": self.confidence_level, **_RULES})

    # -- the JSON block ----------------------------------------------------------------------
    def _coverage_dict(self) -> dict:
        return {k: c.to_dict(self.top_gaps) for k, c in self.coverage.items()}

    def _heterogeneity_dict(self) -> dict | None:
        if self.heterogeneity is None:
            return None
        out = self.heterogeneity.to_dict()
        out["split_half"] = self.split_half.to_dict()
        return out

    def to_dict(self) -> dict:
        """The JSON ``strata`` block (keys in the order the results files have always had)."""
        coverage = self._coverage_dict()
        return {
            "measure": self.measure, "scheme": self.scheme, "definitions": DEFINITIONS,
            "structure": {"corpus_fingerprint": self.corpus_fingerprint,
                          "n_clusters": self.n_clusters, "tree_levels": self.tree_levels},
            "grain": _thawed(self.grain),
            "bins": self.bins.to_dict(), "levels": list(self.levels),
            "alignment_levels": list(self.alignment_levels),
            "bin_counts": _thawed(self.bin_counts),
            "warnings": list(self.warnings),
            "origin": self.origin, "gate_verdict": self.gate_verdict,
            "generated": _thawed(self.generated),
            "n_queries": self.n_queries,
            "excluded": [{"qid": e.qid, "reason": e.reason} for e in self.excluded],
            "n_excluded": self.n_excluded,
            "n_excluded_evaluated": self.n_excluded_evaluated,
            "not_evaluated": self.not_evaluated,
            "coverage": coverage,
            "gaps": coverage["cluster"]["top_gaps"],
            "estimates": {k: {m: {e: r.to_dict() for e, r in by_e.items()}
                              for m, by_e in by_m.items()}
                          for k, by_m in self.estimates.items()},
            "uncovered_weight": self.uncovered_weight,
            "evaluated_uncovered_weight": self.evaluated_uncovered_weight,
            "bounds": _thawed(self.bounds),
            "per_stratum": _thawed(self.per_stratum),
            "heterogeneity": self._heterogeneity_dict(),
            "power": _thawed(self.power),
            "alignment_vs_lexical": _thawed(self.alignment_vs_lexical),
            "spread": self.spread,
            "spread_min_n": _thawed(self.spread_min_n),
            "clusters": _thawed(self.clusters), "cells": _thawed(self.cells),
            "settings": dict(self.settings),
        }

