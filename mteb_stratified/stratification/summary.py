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
  (:class:`~mteb_stratified.core.stats.coverage.Coverage` of clusters and cells), the chance tests
  (:class:`~mteb_stratified.core.stats.chance.HeterogeneityResult` and
  :class:`~mteb_stratified.core.stats.chance.SplitHalfResult`: ``statistic``, ``pvalue``,
  unpacking), the minimum detectable effect, the per-stratum and per-cluster tables and the
  settings.

The rows and records the report reads are frozen types, each with ``to_dict()`` (its part of
the JSON block, keys in their order) and ``from_dict()``: :class:`StratumRow` (``per_stratum``),
:class:`ClusterRow` (``clusters``), :class:`CellTable` (``cells``),
:class:`~.grain.Grain` (``grain``), :class:`BinCounts`, :class:`Bounds`, :class:`Spread` with
its :class:`SpreadEnd` best and worst (``spread_min_n``), :class:`GeneratedQueries` with its
:class:`PooledMean` (``generated``) and :class:`LexicalComparison` (``alignment_vs_lexical``).
``power`` is a :class:`~.power.DetectableEffect`.  Nothing of a summary can be edited after it
is built.  :meth:`StratifiedSummary.from_dict` rebuilds a summary from a results
file's block (what it restores: its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..core import InputError
from ..core.stats.chance import HeterogeneityResult, SplitHalfResult, StratumDeviation
from ..core.stats.coverage import Coverage, Gap, RecordedCoverage
from ..core.stats.estimators import Estimate
from ..core.jsonsafe import frozen_json
from ..core.ranking.results import ConfidenceInterval
from ..core.stats.strata import Bins, ExcludedQuery
from .grain import Grain
from .power import DetectableEffect

__all__ = ["StratifiedSummary", "BoundedEstimate", "StratumRow", "ClusterRow", "CellTable",
           "BinCounts", "Bounds", "Spread", "SpreadEnd", "PooledMean", "GeneratedQueries",
           "LexicalComparison", "INTERVAL_RULE", "DEFINITIONS"]

#: How every reported interval respects the metric's range.
INTERVAL_RULE = ("intervals are intersected with the range of the value: [0, 1] for expected, "
                 "min, max and oblivious (every measure here lies in [0, 1]), [-1, 1] for bias; "
                 "the true mean lies in that range, so the intersection never lowers coverage")
_RANGES = {"expected": (0.0, 1.0), "min": (0.0, 1.0), "max": (0.0, 1.0),
           "oblivious": (0.0, 1.0), "bias": (-1.0, 1.0)}

#: Where the definitions behind the block's figures are written.
DEFINITIONS = ("ours (see the docstrings of mteb_stratified.core.stats.strata, .hierarchy, .cells, "
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
    :class:`~mteb_stratified.core.stats.estimators.Estimate`.  ``ci_low``/``ci_high`` are the
    interval intersected with the value's range (:data:`INTERVAL_RULE`), None when not finite.
    ``recorded``: the interval as a results file has it (``ci_low``, ``ci_high``, ``interval``),
    set by :meth:`from_dict` only (the JSON lacks the degrees of freedom and the replicates
    that computed it); None: computed from ``result``.
    """

    value: str
    method: str
    result: Estimate = field(repr=False)
    confidence_level: float = 0.95
    recorded: Mapping | None = field(default=None, repr=False)

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
        if self.recorded is not None:
            return ConfidenceInterval(self.recorded["ci_low"], self.recorded["ci_high"])
        ci = self.result.confidence_interval(self.confidence_level)
        return ConfidenceInterval(*clip(ci.low, ci.high, self.value))

    @property
    def ci_low(self) -> float | None:
        return self.confidence_interval.low

    @property
    def ci_high(self) -> float | None:
        return self.confidence_interval.high

    def to_dict(self) -> dict:
        """The JSON form (:meth:`Estimate.to_dict` with the bounded interval)."""
        d = self.result.to_dict(self.confidence_level)
        if self.recorded is not None:
            d.update(self.recorded)
        return bounded(d, self.value)

    @classmethod
    def from_dict(cls, d: Mapping, value: str, method: str,
                  estimator: str) -> "BoundedEstimate":
        """The estimate :meth:`to_dict` wrote, of ``estimator`` of ``value`` by ``method``:
        its figures restored; its interval as recorded (``recorded``), the replicates and
        degrees of freedom behind it are not in the JSON."""
        # a figure that was not finite is written as null: read back as NaN, as computed
        result = Estimate(estimator, _nan(d["estimate"]), _nan(d["standard_error"]),
                          n_queries=d["n_queries"], n_strata=d["n_strata"],
                          uncovered_weight=_nan(d.get("uncovered_weight", 0.0)),
                          singleton_strata=d.get("singleton_strata", 0))
        recorded = MappingProxyType({k: d[k] for k in ("ci_low", "ci_high", "interval")})
        return cls(value, method, result, d["confidence_level"], recorded)


def _json_stratum(stratum):
    """A stratum key as the JSON has it: an index, or a cell ``[s, Δ level, J level]``."""
    return list(stratum) if isinstance(stratum, tuple) else stratum


def _stratum_of(key):
    """A stratum key as a record holds it: an index, or a cell ``(s, Δ level, J level)``."""
    return tuple(key) if isinstance(key, (list, tuple)) else key


def _grid(rows) -> tuple:
    """A table (a list of lists) as a tuple of tuples."""
    return tuple(tuple(r) for r in rows)


def _optional(kind, d):
    """``kind.from_dict(d)``, or None when ``d`` is None."""
    return None if d is None else kind.from_dict(d)


#: The fixed columns of a per-stratum row; the value columns (expected, min, ...) follow.
_ROW_KEYS = ("stratum", "name", "label", "level", "n", "weight", "corpus_mass", "ci_low",
             "ci_high", "boot_ci_low", "boot_ci_high", "standard_error")


@dataclass(frozen=True)
class StratumRow:
    """One evaluated stratum with queries (``StratifiedSummary.per_stratum``).

    Attributes
    ----------
    stratum : its index, or a cell ``(s, Δ level, J level)`` (scheme ``cell``).
    name, label : the evaluated stratum's name (``L5.0 (rest)``) and its unit's label.
    level : the tree level of its unit; n : its queries.
    weight : its weight in the design; corpus_mass : its evaluated stratum's corpus weight.
    ci_low, ci_high : the expected mean's t interval; boot_ci_low, boot_ci_high : its Rao–Wu
        interval (both within [0, 1]); standard_error : the expected mean's.
    values : ``{value: mean}`` (expected, min, max, oblivious, bias: those computed), in order.
    """

    stratum: object
    name: str
    label: str
    level: int
    n: int
    weight: float | None
    corpus_mass: float | None
    ci_low: float | None
    ci_high: float | None
    boot_ci_low: float | None
    boot_ci_high: float | None
    standard_error: float | None
    values: Mapping

    def __post_init__(self) -> None:
        object.__setattr__(self, "stratum", _stratum_of(self.stratum))
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @property
    def expected(self) -> float | None:
        """The stratum's mean of the expected value."""
        return self.values.get("expected")

    def value(self, key: str) -> float | None:
        """The stratum's mean of ``key`` (expected, min, max, oblivious, bias), or None."""
        return self.values.get(key)

    @property
    def key(self) -> str:
        """The stratum as text (its JSON form), to match one stratum across systems."""
        return str(_json_stratum(self.stratum))

    def to_dict(self) -> dict:
        """The JSON row (the fixed columns, then the value columns)."""
        return {"stratum": _json_stratum(self.stratum), "name": self.name, "label": self.label,
                "level": self.level, "n": self.n, "weight": self.weight,
                "corpus_mass": self.corpus_mass, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "boot_ci_low": self.boot_ci_low, "boot_ci_high": self.boot_ci_high,
                "standard_error": self.standard_error, **self.values}

    @classmethod
    def from_dict(cls, d: Mapping) -> "StratumRow":
        """The row :meth:`to_dict` wrote."""
        return cls(*(d[k] for k in _ROW_KEYS),
                   values={k: v for k, v in d.items() if k not in _ROW_KEYS})


@dataclass(frozen=True)
class ClusterRow:
    """One fine cluster of the coverage map (``StratifiedSummary.clusters``): ``cluster``,
    its ``label`` (None: none), corpus ``mass``, ``n_queries`` (primary cluster) and the
    evaluated ``stratum`` that holds it."""

    cluster: int
    label: str | None
    mass: float | None
    n_queries: int
    stratum: int

    def to_dict(self) -> dict:
        """The JSON row."""
        return {"cluster": self.cluster, "label": self.label, "mass": self.mass,
                "n_queries": self.n_queries, "stratum": self.stratum}

    @classmethod
    def from_dict(cls, d: Mapping) -> "ClusterRow":
        """The row :meth:`to_dict` wrote."""
        return cls(d["cluster"], d["label"], d["mass"], d["n_queries"], d["stratum"])


@dataclass(frozen=True)
class CellTable:
    """The Δ×J table of one evaluated stratum (``StratifiedSummary.cells``, a heatmap).

    Attributes
    ----------
    stratum, name, label : the evaluated stratum (index, name, its unit's label).
    n_queries : its queries.
    counts : queries per cell, ``counts[Δ bin][J bin]``; mean : their mean of the expected
        value per cell (None: no query).  Both tuples of tuples.
    """

    stratum: int
    name: str
    label: str
    n_queries: int
    counts: tuple
    mean: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _grid(self.counts))
        object.__setattr__(self, "mean", _grid(self.mean))

    def to_dict(self) -> dict:
        """The JSON table."""
        return {"stratum": self.stratum, "name": self.name, "label": self.label,
                "n_queries": self.n_queries, "counts": [list(r) for r in self.counts],
                "mean": [list(r) for r in self.mean]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "CellTable":
        """The table :meth:`to_dict` wrote."""
        return cls(d["stratum"], d["name"], d["label"], d["n_queries"], d["counts"],
                   d["mean"])


@dataclass(frozen=True)
class BinCounts:
    """Queries per Δ bin (``dispersion``) and per J bin (``alignment``), N/A last (tuples)."""

    dispersion: tuple
    alignment: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "dispersion", tuple(self.dispersion))
        object.__setattr__(self, "alignment", tuple(self.alignment))

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"dispersion": list(self.dispersion), "alignment": list(self.alignment)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "BinCounts":
        """The counts :meth:`to_dict` wrote."""
        return cls(d["dispersion"], d["alignment"])


@dataclass(frozen=True)
class Bounds:
    """The corpus-weighted estimate's bounds: ``low``/``high``, μ with the metric 0 / 1 on
    every fine cluster without queries, with the interval ``ci_low``/``ci_high`` around them,
    the ``uncovered_weight`` of those clusters and the ``rule`` in words."""

    low: float
    high: float
    ci_low: float | None
    ci_high: float | None
    uncovered_weight: float
    rule: str

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"low": self.low, "high": self.high, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "uncovered_weight": self.uncovered_weight,
                "rule": self.rule}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Bounds":
        """The bounds :meth:`to_dict` wrote."""
        return cls(d["low"], d["high"], d["ci_low"], d["ci_high"], d["uncovered_weight"],
                   d["rule"])


@dataclass(frozen=True)
class SpreadEnd:
    """The best or worst stratum of a :class:`Spread`: its ``stratum`` key, ``name``,
    ``label``, ``n`` queries, ``expected`` mean and its t interval ``ci_low``/``ci_high``."""

    stratum: object
    name: str
    label: str
    n: int
    expected: float | None
    ci_low: float | None
    ci_high: float | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stratum", _stratum_of(self.stratum))

    @classmethod
    def of(cls, row: StratumRow) -> "SpreadEnd":
        """The end of a per-stratum row."""
        return cls(row.stratum, row.name, row.label, row.n, row.expected, row.ci_low,
                   row.ci_high)

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"stratum": _json_stratum(self.stratum), "name": self.name, "label": self.label,
                "n": self.n, "expected": self.expected, "ci_low": self.ci_low,
                "ci_high": self.ci_high}

    @classmethod
    def from_dict(cls, d: Mapping) -> "SpreadEnd":
        """The end :meth:`to_dict` wrote."""
        return cls(d["stratum"], d["name"], d["label"], d["n"], d["expected"], d["ci_low"],
                   d["ci_high"])


@dataclass(frozen=True)
class Spread:
    """Best − worst stratum mean among the strata with ≥ ``n_min`` queries: ``spread``, and
    the ``best`` and ``worst`` strata (:class:`SpreadEnd`)."""

    n_min: int
    spread: float
    best: SpreadEnd
    worst: SpreadEnd

    def to_dict(self) -> dict:
        """The JSON form (``spread_min_n``)."""
        return {"n_min": self.n_min, "spread": self.spread, "best": self.best.to_dict(),
                "worst": self.worst.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Spread":
        """The spread :meth:`to_dict` wrote."""
        return cls(d["n_min"], d["spread"], SpreadEnd.from_dict(d["best"]),
                   SpreadEnd.from_dict(d["worst"]))


@dataclass(frozen=True)
class PooledMean:
    """A pooled mean of the expected value: ``estimate``, ``standard_error``, its t interval
    ``ci_low``/``ci_high`` (within [0, 1]; None when there is none) and ``n_queries``."""

    estimate: float
    standard_error: float | None
    ci_low: float | None
    ci_high: float | None
    n_queries: int

    def to_dict(self) -> dict:
        """The JSON form."""
        return {"estimate": self.estimate, "standard_error": self.standard_error,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "n_queries": self.n_queries}

    @classmethod
    def from_dict(cls, d: Mapping) -> "PooledMean":
        """The mean :meth:`to_dict` wrote."""
        return cls(d["estimate"], d["standard_error"], d["ci_low"], d["ci_high"],
                   d["n_queries"])


@dataclass(frozen=True)
class GeneratedQueries:
    """Generated queries of a split of original ones, left out of the estimates: ``why``,
    their pooled mean (``generated``) next to the original queries' (``original``)."""

    why: str
    generated: PooledMean
    original: PooledMean

    def to_dict(self) -> dict:
        """The JSON form (the block's ``generated``)."""
        return {"why": self.why, "generated": self.generated.to_dict(),
                "original": self.original.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping) -> "GeneratedQueries":
        """The record :meth:`to_dict` wrote."""
        return cls(d["why"], PooledMean.from_dict(d["generated"]),
                   PooledMean.from_dict(d["original"]))


@dataclass(frozen=True)
class LexicalComparison:
    """Whether J adds to lexical containment (:func:`.lexical.alignment_adds`).

    Attributes
    ----------
    partial_given_rel, partial_given_rel_and_lexical, lexical_partial_given_rel : the partial
        Spearman correlations (read-only mappings, as :mod:`.lexical` gives them).
    rho_alignment_lexical : J's Spearman correlation with lexical containment (None: too few).
    verdict : the answer in words; rule : how it is computed.
    """

    partial_given_rel: Mapping
    partial_given_rel_and_lexical: Mapping
    lexical_partial_given_rel: Mapping
    rho_alignment_lexical: float | None
    verdict: str
    rule: str

    def __post_init__(self) -> None:
        for name in ("partial_given_rel", "partial_given_rel_and_lexical",
                     "lexical_partial_given_rel"):
            object.__setattr__(self, name, frozen_json(getattr(self, name),
                                                       mapping=MappingProxyType, sequence=tuple))

    def to_dict(self) -> dict:
        """The JSON form (the block's ``alignment_vs_lexical``)."""
        return {"partial_given_rel": _thawed(self.partial_given_rel),
                "partial_given_rel_and_lexical": _thawed(self.partial_given_rel_and_lexical),
                "lexical_partial_given_rel": _thawed(self.lexical_partial_given_rel),
                "rho_alignment_lexical": self.rho_alignment_lexical, "verdict": self.verdict,
                "rule": self.rule}

    @classmethod
    def from_dict(cls, d: Mapping) -> "LexicalComparison":
        """The record :meth:`to_dict` wrote (or :func:`.lexical.alignment_adds` gave)."""
        return cls(d["partial_given_rel"], d["partial_given_rel_and_lexical"],
                   d["lexical_partial_given_rel"], d["rho_alignment_lexical"], d["verdict"],
                   d["rule"])


@dataclass(frozen=True, eq=False)
class StratifiedSummary:
    """One system's stratified evaluation (see the module docstring and
    :func:`.block.stratified_summary`).

    Attributes
    ----------
    measure, scheme : the measure (``nDCG@10``) and the estimation scheme (cluster / cell).
    corpus_fingerprint, n_clusters, tree_levels : the structure evaluated against.
    grain : the evaluated grain (a :class:`~.grain.Grain`).
    bins : the corpus' Δ/J cut-points; ``levels``/``alignment_levels`` their bin names and
        ``bin_counts`` the queries per bin (:class:`BinCounts`).
    warnings : what a reader must know (a bin holding every query, a short grain, generated
        queries); ``warning_kinds`` the kind of each, in order: ``"strata"`` (the strata's
        own) or ``"origin"`` (every query of the split is generated); not in the JSON block.
    origin, gate_verdict : original or generated queries, and the generator's gate verdict.
    generated : generated queries reported apart from the estimates
        (:class:`GeneratedQueries`, or None).
    n_queries, excluded, n_excluded_evaluated, not_evaluated : the stratified queries, the
        excluded ones with their reason
        (:class:`~mteb_stratified.core.stats.strata.ExcludedQuery`), how many excluded ones were
        evaluated, and how many stratified ones were not.
    cluster_coverage, cell_coverage, top_gaps : coverage of the fine clusters (and cells)
        and how many gaps the JSON lists.
    estimates : ``{value: {method: {estimator: BoundedEstimate}}}`` (read-only; one
        method's estimators: :meth:`estimators`).
    uncovered_weight, evaluated_uncovered_weight, bounds : the corpus weight no query reaches
        (fine clusters; evaluated strata) and the corpus-weighted estimate's bounds
        (:class:`Bounds`, or None).
    per_stratum : one :class:`StratumRow` per evaluated stratum with queries (largest first).
    heterogeneity, split_half : the chance tests at the evaluated grain (None: one stratum).
    power : the minimum detectable effect of the heterogeneity test
        (:class:`~.power.DetectableEffect`; None: not computed).
    alignment_vs_lexical : whether J adds to lexical containment (:class:`LexicalComparison`;
        None: no alignment).
    spread, spread_min_n : best − worst stratum mean (all; among those with ≥ n_min queries: a
        :class:`Spread`, or None).
    clusters, cells : the coverage map (one :class:`ClusterRow` per fine cluster) and the Δ×J
        tables (:class:`CellTable`).
    n_min, n_resamples, seed, confidence_level : the settings.
    """

    measure: str
    scheme: str
    corpus_fingerprint: str
    n_clusters: int
    tree_levels: int
    grain: Grain
    bins: Bins
    levels: tuple
    alignment_levels: tuple
    bin_counts: BinCounts
    warnings: tuple
    origin: str
    gate_verdict: str | None
    generated: GeneratedQueries | None
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
    bounds: Bounds | None
    per_stratum: tuple
    heterogeneity: HeterogeneityResult | None
    split_half: SplitHalfResult | None
    power: DetectableEffect | None
    alignment_vs_lexical: LexicalComparison | None
    spread: float | None
    spread_min_n: Spread | None
    clusters: tuple
    cells: tuple
    n_min: int
    n_resamples: int
    seed: int
    confidence_level: float
    warning_kinds: tuple = ()

    def __post_init__(self) -> None:
        for name in ("levels", "alignment_levels", "warnings", "excluded", "warning_kinds",
                     "per_stratum", "clusters", "cells"):
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

    def estimators(self, value: str = "expected",
                   method: str = "analytic") -> Mapping[str, BoundedEstimate]:
        """``{estimator: BoundedEstimate}`` of ``value`` by ``method``, in the block's order
        (empty when that value was not computed)."""
        return self.estimates.get(value, {}).get(method, MappingProxyType({}))

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
        return self.grain.n_strata

    @property
    def min_queries(self) -> int:
        return self.grain.min_queries

    @property
    def level(self) -> int:
        """The cluster-tree level the grain starts from."""
        return self.grain.start_level

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
            "grain": self.grain.to_dict(),
            "bins": self.bins.to_dict(), "levels": list(self.levels),
            "alignment_levels": list(self.alignment_levels),
            "bin_counts": self.bin_counts.to_dict(),
            "warnings": list(self.warnings),
            "origin": self.origin, "gate_verdict": self.gate_verdict,
            "generated": _to_dict(self.generated),
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
            "bounds": _to_dict(self.bounds),
            "per_stratum": [r.to_dict() for r in self.per_stratum],
            "heterogeneity": self._heterogeneity_dict(),
            "power": _to_dict(self.power),
            "alignment_vs_lexical": _to_dict(self.alignment_vs_lexical),
            "spread": self.spread,
            "spread_min_n": _to_dict(self.spread_min_n),
            "clusters": [c.to_dict() for c in self.clusters],
            "cells": [c.to_dict() for c in self.cells],
            "settings": dict(self.settings),
        }

    @classmethod
    def from_dict(cls, block: Mapping) -> "StratifiedSummary":
        """The summary whose :meth:`to_dict` is ``block`` (a results file's ``strata`` block
        of one split): ``from_dict(s.to_dict()).to_dict() == s.to_dict()``.

        Restored as written: every figure, row and record of the block.  Not in the JSON,
        so restored as far as the block allows: each estimate's interval is kept as recorded
        (:attr:`BoundedEstimate.recorded`: no replicates, no degrees of freedom); coverage is a
        :class:`RecordedCoverage` (its counts, no per-unit arrays; the listed gaps only, and
        ``top_gaps`` the longest list); ``warning_kinds`` is empty (the block does not record
        them: :func:`.results.stratify_results` then takes every warning for the strata's).
        A block that is not one: an :class:`InputError`.
        """
        try:
            return cls._from_block(block)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InputError(f"not a strata block (StratifiedSummary.to_dict): "
                             f"{type(exc).__name__} {exc}",
                             fix="pass one split's block of a results file's 'strata', as "
                                 "mteb-stratified stratify writes it") from None

    @classmethod
    def _from_block(cls, block: Mapping) -> "StratifiedSummary":
        structure, coverage, settings = block["structure"], block["coverage"], block["settings"]
        het = block["heterogeneity"]
        return cls(
            measure=block["measure"], scheme=block["scheme"],
            corpus_fingerprint=structure["corpus_fingerprint"],
            n_clusters=structure["n_clusters"], tree_levels=structure["tree_levels"],
            grain=Grain.from_dict(block["grain"]), bins=Bins.from_dict(block["bins"]),
            levels=block["levels"], alignment_levels=block["alignment_levels"],
            bin_counts=BinCounts.from_dict(block["bin_counts"]), warnings=block["warnings"],
            origin=block["origin"], gate_verdict=block["gate_verdict"],
            generated=_optional(GeneratedQueries, block["generated"]),
            n_queries=block["n_queries"],
            excluded=[ExcludedQuery(e["qid"], e["reason"]) for e in block["excluded"]],
            n_excluded_evaluated=block["n_excluded_evaluated"],
            not_evaluated=block["not_evaluated"],
            cluster_coverage=RecordedCoverage.from_dict(coverage["cluster"]),
            cell_coverage=_optional(RecordedCoverage, coverage.get("cell")),
            top_gaps=max(len(c["top_gaps"]) for c in coverage.values()),
            estimates={k: {m: {e: BoundedEstimate.from_dict(r, k, m, e) for e, r in by_e.items()}
                           for m, by_e in by_m.items()}
                       for k, by_m in block["estimates"].items()},
            uncovered_weight=block["uncovered_weight"],
            evaluated_uncovered_weight=block["evaluated_uncovered_weight"],
            bounds=_optional(Bounds, block["bounds"]),
            per_stratum=[StratumRow.from_dict(r) for r in block["per_stratum"]],
            heterogeneity=None if het is None else _heterogeneity_of(het),
            split_half=None if het is None else _split_half_of(het["split_half"]),
            power=DetectableEffect.of(block["power"]),
            alignment_vs_lexical=_optional(LexicalComparison, block["alignment_vs_lexical"]),
            spread=block["spread"], spread_min_n=_optional(Spread, block["spread_min_n"]),
            clusters=[ClusterRow.from_dict(c) for c in block["clusters"]],
            cells=[CellTable.from_dict(c) for c in block["cells"]],
            n_min=settings["n_min"], n_resamples=settings["n_resamples"], seed=settings["seed"],
            confidence_level=settings["confidence_level"])


def _to_dict(record):
    """``record.to_dict()``, or None when ``record`` is None."""
    return None if record is None else record.to_dict()


def _nan(x) -> float:
    """A JSON figure back as a float: None (not finite) is NaN."""
    return math.nan if x is None else float(x)


def _heterogeneity_of(d: Mapping) -> HeterogeneityResult:
    """The heterogeneity test :meth:`HeterogeneityResult.to_dict` wrote (its strata rows
    :class:`~mteb_stratified.core.stats.chance.StratumDeviation`)."""
    return HeterogeneityResult(
        statistic=d["ssb"], eta_squared=d["eta_squared"], null_eta_squared=d["null_eta_squared"],
        null_eta_squared_95=d["null_eta_squared_95"], pvalue=d["p_value"],
        n_resamples=d["n_resamples"], n_queries=d["n_queries"], n_strata=d["n_strata"],
        min_size=d["min_size"], strata=tuple(StratumDeviation.from_dict(r) for r in d["strata"]))


def _split_half_of(d: Mapping) -> SplitHalfResult:
    """The split-half result :meth:`SplitHalfResult.to_dict` wrote (None figures: NaN)."""
    return SplitHalfResult(r=_nan(d["r"]), spearman_brown=_nan(d["spearman_brown"]),
                           null_r=_nan(d["null_r"]), null_r_95=_nan(d["null_r_95"]),
                           pvalue=_nan(d["p_value"]), n_splits=d["n_splits"],
                           n_resamples=d["n_resamples"], n_strata=d["n_strata_used"])

