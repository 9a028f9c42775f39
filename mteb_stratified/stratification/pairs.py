"""The paired question first: where does system A beat system B, beyond chance?

For every pair of systems on their shared stratified queries, at the evaluated grain
(:mod:`.grain`), on the per-query difference d = a − b of the measure's expected value:

* the **overall difference** with its paired 95% t interval;
* **where the gap differs** (:func:`~mteb_stratified.core.stats.chance.paired_heterogeneity_test`):
  the max-|z| permutation test of one stratum's gap against the rest (primary, chosen on
  NFCorpus dev by power) and the omnibus test, against random strata of the same sizes, with
  Westfall–Young adjusted p per stratum;
* **where A beats B** (:func:`~mteb_stratified.core.stats.chance.stratum_differences`): per stratum,
  d against 0 by random sign flips, Westfall–Young over the strata;
* the flip strength and split-half reliability of the differences, against random strata;
* the **minimum detectable effect** of the paired test for this query set (:mod:`.power`);
* **how much the gap varies** (:mod:`.variation`): τ, the between-topic SD of d in a REML
  random-intercept model, with its 95% upper bound and the shrunken gap of every topic
  (``variation["topics"]``: the units of the tree's level 1, :func:`.variation.topic_level`).
  When no test above finds a difference, the bound is what the report states: the gap varies
  across these topics by at most τ_u.  Without statsmodels (the ``stats`` extra) it says so
  and names the install command.

With one system there is no pair: :func:`paired_summary` says so instead of testing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from itertools import combinations
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..core import InputError, QueryStrata
from ..core.stats.chance import (SPLIT_HALF_RESAMPLES, FlipResult, PairedHeterogeneityResult,
                                 SplitHalfResult, StratumDeviation, flip_test,
                                 paired_heterogeneity_test, split_half_reliability,
                                 stratum_differences)
from ..core.stats.coverage import DEFAULT_N_MIN
from ..core.options import ALPHA
from ..core.ranking.per_query import PerQuery
from .block import align_strata
from .grain import (DEFAULT_MIN_QUERIES, Grain, estimation_design, evaluated_strata,
                    unit_name)
from .power import DetectableEffect, detectable_effect
from .variation import gap_variation, topic_level

__all__ = ["paired_summary", "paired_t", "gap_variations", "ONE_SYSTEM", "PairedT",
           "StratumDifference", "PairDifferences",
           "TopicGap", "TopicVariation", "PairResult", "PairedSummary"]

ONE_SYSTEM = ("one system only: the paired tests (where one system beats another) need two "
              "or more systems on the same queries")


#: The power at which :func:`paired_t` states its minimum detectable difference.
MDE_POWER = 0.8


def paired_t(d: np.ndarray, confidence_level: float = 0.95) -> dict:
    """The mean of the per-query differences ``d`` with its paired t interval and p (n ≥ 2),
    and ``mde``: the smallest true mean difference the test detects with probability
    :data:`MDE_POWER` at this level, (t(1 − α/2; n − 1) + t(0.8; n − 1)) · s_d / √n (the
    normal-shift approximation of the paired t test's power)."""
    from scipy import stats

    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    half = float(stats.t.ppf(0.5 + confidence_level / 2, max(n - 1, 1)) * se)
    t = mean / se if se > 0 else 0.0
    if se > 0:
        p = float(2 * stats.t.sf(abs(t), max(n - 1, 1)))
    else:   # every difference the same: 0 is no difference, anything else is certain
        p = 1.0 if mean == 0 else 0.0
    # the smallest true mean difference this test finds 80% of the time (two-sided, level
    # 1 - confidence_level): (t_{1-α/2, n-1} + t_{0.8, n-1}) · se, the usual paired-t MDE
    mde = float((stats.t.ppf(0.5 + confidence_level / 2, max(n - 1, 1))
                 + stats.t.ppf(MDE_POWER, max(n - 1, 1))) * se)
    return {"mean_difference": mean, "ci_low": mean - half, "ci_high": mean + half,
            "p_value": p, "mde": mde, "mde_power": MDE_POWER,
            "test": "paired t over the queries"}


# -- the typed results -------------------------------------------------------------------------
class _Record:
    """A frozen record whose JSON form is its fields in order: a ``stratum`` that is a cell
    (a tuple) is written as a list, and ``strata`` as the list of its rows' JSON forms."""

    #: The row type of a ``strata`` field.
    ROW = None

    def to_dict(self) -> dict:
        """The JSON form: the fields in order."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "stratum" and isinstance(v, tuple):
                v = list(v)
            elif f.name == "strata":
                v = [r.to_dict() for r in v]
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: Mapping):
        """The record of its JSON form (:meth:`to_dict`)."""
        kw = {f.name: d[f.name] for f in fields(cls)}
        if isinstance(kw.get("stratum"), list):
            kw["stratum"] = tuple(kw["stratum"])
        if "strata" in kw:
            kw["strata"] = tuple(cls.ROW.from_dict(r) for r in kw["strata"])
        return cls(**kw)


@dataclass(frozen=True)
class PairedT(_Record):
    """The paired t test over the queries (:func:`paired_t`).

    Attributes
    ----------
    mean_difference : the mean of a − b; ci_low, ci_high : its paired t interval.
    p_value : the two-sided p; mde : the smallest true mean difference the test detects with
        probability ``mde_power`` at this level; test : the test in words.
    """

    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float
    mde: float
    mde_power: float
    test: str


@dataclass(frozen=True)
class StratumDifference(_Record):
    """One evaluated stratum in the test of whether a − b ≠ 0 there.

    Attributes
    ----------
    stratum, n, name, label : as
        :class:`~mteb_stratified.core.stats.chance.StratumDeviation`.
    mean_difference : its mean a − b, with its 95% t interval ``ci_low``, ``ci_high``.
    z : the sign-flip z; p_adjusted : its Westfall–Young adjusted p.
    winner : the system ahead there beyond chance (its name), or None.
    """

    stratum: object
    n: int
    mean_difference: float
    ci_low: float
    ci_high: float
    z: float
    p_adjusted: float
    winner: str | None
    name: str
    label: str


@dataclass(frozen=True)
class PairDifferences(_Record):
    """Per evaluated stratum, is a − b ≠ 0?  (:func:`~mteb_stratified.core.stats.chance
    .stratum_differences`, its strata named and its winners by system name.)

    Attributes
    ----------
    test, null : the test and its null in words; alpha : the level of ``winner``.
    min_size, n_resamples : its settings; strata : a :class:`StratumDifference` per tested
        stratum (a tuple).
    """

    ROW = StratumDifference

    test: str
    null: str
    alpha: float
    min_size: int
    n_resamples: int
    strata: tuple

    def winners(self) -> tuple:
        """The strata where one system wins beyond chance."""
        return tuple(r for r in self.strata if r.winner is not None)


@dataclass(frozen=True)
class TopicGap(_Record):
    """One topic in the random-effects fit of the gap (:mod:`.variation`).

    Attributes
    ----------
    group : the topic (a unit of the tree's topic level); n : its queries; mean : its raw
        mean a − b; shrunken : its gap shrunken toward the mean, with its interval
        ``ci_low``, ``ci_high``; weight : the shrinkage weight; name, label : the unit's.
    """

    group: int
    n: int
    mean: float
    shrunken: float
    ci_low: float
    ci_high: float
    weight: float
    name: str
    label: str


#: The JSON keys of a fit, in order (:meth:`.variation.GapVariation.to_dict`).
_FIT_KEYS = ("estimable", "why", "note", "degenerate", "n_groups", "n_queries", "tau",
             "tau_upper", "sigma", "mean", "mean_se", "confidence_level", "method")


@dataclass(frozen=True)
class TopicVariation:
    """How much the gap varies across topics: :func:`.variation.gap_variation` with every
    topic named (:func:`gap_variations`).

    Attributes
    ----------
    estimable : whether τ could be estimated; why : why not (or why no finite bound).
    n_groups : the topics; level : the tree level whose units they are.
    installed : False when the ``stats`` extra is missing (nothing else is then known).
    note, degenerate, n_queries, tau, tau_upper, sigma, mean, mean_se, confidence_level,
    method : as :class:`.variation.GapVariation`; groups : a :class:`TopicGap` per topic (a
        tuple); extra : the fit's further figures (read-only).
    """

    estimable: bool
    why: str | None
    n_groups: int | None
    level: int
    installed: bool = True
    note: str | None = None
    degenerate: bool = False
    n_queries: int | None = None
    tau: float | None = None
    tau_upper: float | None = None
    sigma: float | None = None
    mean: float | None = None
    mean_se: float | None = None
    confidence_level: float | None = None
    method: str | None = None
    groups: tuple = ()
    extra: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def to_dict(self) -> dict:
        """The JSON form: the fit's (:meth:`.variation.GapVariation.to_dict`) with ``level``;
        without the stats extra ``{"estimable", "why", "n_groups", "level"}``."""
        if not self.installed:
            return {"estimable": self.estimable, "why": self.why, "n_groups": self.n_groups,
                    "level": self.level}
        return {**{k: getattr(self, k) for k in _FIT_KEYS},
                "groups": [g.to_dict() for g in self.groups], **self.extra,
                "level": self.level}

    @classmethod
    def from_dict(cls, d: Mapping) -> "TopicVariation":
        """The result of its JSON form (:meth:`to_dict`)."""
        if "method" not in d:
            return cls(d["estimable"], d["why"], d["n_groups"], d["level"], installed=False)
        known = set(_FIT_KEYS) | {"groups", "level"}
        return cls(**{k: d[k] for k in _FIT_KEYS}, level=d["level"],
                   groups=tuple(TopicGap.from_dict(g) for g in d["groups"]),
                   extra={k: v for k, v in d.items() if k not in known})


def _flips_from_dict(d: Mapping) -> FlipResult:
    return FlipResult(**{f: d["p_value" if f == "pvalue" else f]
                         for f in FlipResult.__dataclass_fields__})


def _split_half_from_dict(d: Mapping) -> SplitHalfResult:
    def f(x):
        return float("nan") if x is None else x

    return SplitHalfResult(f(d["r"]), f(d["spearman_brown"]), f(d["null_r"]),
                           f(d["null_r_95"]), f(d["p_value"]), d["n_splits"],
                           d["n_resamples"], d["n_strata_used"])


@dataclass(frozen=True)
class PairResult:
    """One pair of systems on their shared queries (module docstring).

    Attributes
    ----------
    a, b : the systems (differences are a − b); n_queries : their shared stratified queries.
    overall : the paired t test over the queries (:class:`PairedT`).
    variation : ``{"topics": TopicVariation}`` (read-only): how much the gap varies.
    tested : whether the strata were compared; why : why not (None when tested).
    heterogeneity : does the gap vary across strata (a
        :class:`~mteb_stratified.core.stats.chance.PairedHeterogeneityResult`, its rows named);
    stratum_differences : where a beats b (:class:`PairDifferences`); flips : per-stratum
    order flips (:class:`~mteb_stratified.core.stats.chance.FlipResult`); split_half : the
    split-half reliability of the stratum gaps
    (:class:`~mteb_stratified.core.stats.chance.SplitHalfResult`);
    power : the minimum detectable effect (:class:`.power.DetectableEffect`, None when not
    computed).  All None when not tested.
    """

    a: str
    b: str
    n_queries: int
    overall: PairedT
    variation: Mapping
    tested: bool
    why: str | None = None
    heterogeneity: PairedHeterogeneityResult | None = None
    stratum_differences: PairDifferences | None = None
    flips: FlipResult | None = None
    split_half: SplitHalfResult | None = None
    power: DetectableEffect | None = None

    def __post_init__(self):
        object.__setattr__(self, "variation", MappingProxyType(dict(self.variation)))

    def strata_vary(self, alpha: float = ALPHA) -> bool:
        """True when a test of whether the gap varies across strata is significant at
        ``alpha``: the max-|z| or omnibus test, the flips or the split-half.  (Whether a − b ≠ 0
        within a stratum is another question, not counted here.)"""
        if not self.tested:
            return False
        h = self.heterogeneity
        p = [h.p_value, h.omnibus_p_value, self.flips and self.flips.pvalue,
             self.split_half and self.split_half.pvalue]
        return any(x is not None and x <= alpha for x in p)

    def to_dict(self) -> dict:
        """The JSON form (keys in the order they have always had)."""
        out = {"a": self.a, "b": self.b, "n_queries": self.n_queries,
               "overall": self.overall.to_dict(),
               "variation": {k: v.to_dict() for k, v in self.variation.items()},
               "tested": self.tested}
        if not self.tested:
            return out | {"why": self.why}
        return out | {"heterogeneity": self.heterogeneity.to_dict(),
                      "stratum_differences": self.stratum_differences.to_dict(),
                      "flips": self.flips.to_dict(), "split_half": self.split_half.to_dict(),
                      "power": None if self.power is None else self.power.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping) -> "PairResult":
        """The result of its JSON form (:meth:`to_dict`)."""
        kw = dict(a=d["a"], b=d["b"], n_queries=d["n_queries"],
                  overall=PairedT.from_dict(d["overall"]),
                  variation={k: TopicVariation.from_dict(v) for k, v in d["variation"].items()},
                  tested=d["tested"])
        if not d["tested"]:
            return cls(**kw, why=d["why"])
        return cls(**kw, heterogeneity=PairedHeterogeneityResult.from_dict(d["heterogeneity"]),
                   stratum_differences=PairDifferences.from_dict(d["stratum_differences"]),
                   flips=_flips_from_dict(d["flips"]),
                   split_half=_split_half_from_dict(d["split_half"]),
                   power=DetectableEffect.of(d["power"]))


@dataclass(frozen=True)
class PairedSummary:
    """Every pair of systems (:func:`paired_summary`).

    Attributes
    ----------
    pairs : a :class:`PairResult` per pair (a tuple; empty with one system).
    n_systems : the systems; n_queries : their shared stratified queries; grain : the
        evaluated grain (a :class:`.grain.Grain`).  The three are
        None for the pairs of several query sets put together (:meth:`combined`).
    note : why nothing is compared, or None.
    """

    pairs: tuple
    n_systems: int | None = None
    n_queries: int | None = None
    grain: Grain | None = None
    note: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "pairs", tuple(self.pairs))

    @classmethod
    def combined(cls, summaries, none: str) -> "PairedSummary":
        """The pairs of several summaries (one per query set) together; ``note`` is ``none``
        when there is no pair."""
        pairs = tuple(p for s in summaries for p in s.pairs)
        return cls(pairs, note=None if pairs else none)

    def to_dict(self) -> dict:
        """The JSON form: ``{"pairs", "n_systems", "n_queries", "grain", "note"}``; with one
        system ``{"pairs": [], "note", "n_systems"}``; pairs put together ``{"pairs"}`` (and
        ``"note"`` when there is none)."""
        pairs = [p.to_dict() for p in self.pairs]
        if self.grain is None:
            out = {"pairs": pairs}
            if self.note is not None:
                out["note"] = self.note
            if self.n_systems is not None:
                out["n_systems"] = self.n_systems
            return out
        return {"pairs": pairs, "n_systems": self.n_systems, "n_queries": self.n_queries,
                "grain": self.grain.to_dict(), "note": self.note}

    @classmethod
    def from_dict(cls, d: Mapping) -> "PairedSummary":
        """The summary of its JSON form (:meth:`to_dict`)."""
        grain = d.get("grain")
        return cls(tuple(PairResult.from_dict(p) for p in d["pairs"]), d.get("n_systems"),
                   d.get("n_queries"), None if grain is None else Grain.from_dict(grain),
                   d.get("note"))


def _named(rows, ev, design, row_type, **changes) -> tuple:
    """The test's rows (keyed by the design's stratum index) as ``row_type`` records, each
    stratum by its label (a cell: a tuple) and named; ``changes``: ``{key: f(value)}``."""
    out = []
    for row in rows:
        r = row.to_dict()
        lab = design.labels[int(row.stratum)]
        s = int(lab[0]) if isinstance(lab, tuple) else int(lab)
        kw = {**r, **{k: f(r[k]) for k, f in changes.items()}}
        out.append(row_type(**kw | {"stratum": tuple(lab) if isinstance(lab, tuple) else s,
                                    "name": ev.names[s], "label": ev.labels[s]}))
    return tuple(out)


def gap_variations(d, ev, artifact, confidence_level: float = 0.95) -> dict:
    """``{"topics": TopicVariation}``: :func:`.variation.gap_variation` of the differences
    ``d`` (in ``ev``'s query order) across the map's topics, each group named (``name``,
    ``label``).  Without statsmodels: ``estimable`` False, and ``why`` names the install.

    Topics, not the evaluated strata: the random-effects model needs no minimum size per
    group, and its profile bound needs groups to count on (NFCorpus test, 500 draws per
    planted τ: coverage 0.938 and 0.902 at τ = 0.05 and 0.10 across the 30 topics, 0.902 and
    0.904 across the 4 evaluated strata; docs/validity/strata-power.md)."""
    tree = artifact.cluster_tree
    level = topic_level(tree)
    topics = tree.ancestors(level)[np.asarray(ev.fine.primary)]
    try:
        fit = gap_variation(d, topics.tolist(), confidence_level=confidence_level)
    except ImportError as exc:   # the stats extra is not installed
        return {"topics": TopicVariation(False, str(exc), None, level, installed=False)}
    groups = tuple(TopicGap(**{**g, "group": int(g["group"])},
                            name=unit_name(level, int(g["group"])),
                            label=artifact.unit_label(level, int(g["group"])) or "")
                   for g in fit.groups)
    return {"topics": TopicVariation(
        fit.estimable, fit.why, fit.n_groups, level, note=fit.note, degenerate=fit.degenerate,
        n_queries=fit.n_queries, tau=fit.tau, tau_upper=fit.tau_upper, sigma=fit.sigma,
        mean=fit.mean, mean_se=fit.mean_se, confidence_level=fit.confidence_level,
        method=fit.method, groups=groups, extra=fit.extra)}


def _pair(a_name, b_name, a, b, ev, design, *, n_min, n_resamples, seed, confidence_level,
          power, artifact) -> PairResult:
    labels = design.index
    d = a - b
    common = dict(a=a_name, b=b_name, n_queries=int(d.size),
                  overall=PairedT.from_dict(paired_t(d, confidence_level)),
                  variation=gap_variations(d, ev, artifact, confidence_level))
    if design.n_covered < 2:
        return PairResult(**common, tested=False,
                          why=ev.grain().why if ev.cut.short
                          else "one stratum: nothing to compare")
    het = paired_heterogeneity_test(a, b, labels, n_resamples=n_resamples, min_size=n_min,
                                    seed=seed)
    where = stratum_differences(a, b, labels, min_size=n_min, n_resamples=n_resamples,
                                seed=seed)
    flips = flip_test(a, b, labels, min_size=n_min, n_resamples=min(n_resamples, 500),
                      seed=seed)
    split = split_half_reliability(d, labels, seed=seed,
                                   n_resamples=min(n_resamples, SPLIT_HALF_RESAMPLES))
    w = where.to_dict()
    by_name = {"a": a_name, "b": b_name}
    mde = detectable_effect(a, b, labels, test="paired_max_z", seed=seed) if power else None
    return PairResult(
        **common, tested=True,
        heterogeneity=replace(het, strata=_named(het.strata, ev, design, StratumDeviation)),
        stratum_differences=PairDifferences(**w | {"strata": _named(
            where.strata, ev, design, StratumDifference, winner=by_name.get)}),
        flips=flips, split_half=split, power=DetectableEffect.of(mde))


def paired_summary(systems: Mapping[str, Mapping], strata: QueryStrata, artifact, *,
                   scheme: str = "cluster", n_min: int = DEFAULT_N_MIN,
                   min_queries: int = DEFAULT_MIN_QUERIES, level: int = 0,
                   n_resamples: int = 2000, seed: int = 0, confidence_level: float = 0.95,
                   power: bool = True) -> PairedSummary:
    """Every pair of ``systems`` (``{name: per-query values}``) on their shared queries
    (module docstring), a :class:`PairedSummary` (``to_dict()``: JSON-ready).  One system:
    no pair, and ``note`` :data:`ONE_SYSTEM`."""
    exp = {s: PerQuery.from_mapping(v)["expected"] for s, v in systems.items()}
    if not exp:
        raise InputError("no systems given", fix="pass the results of one or more systems")
    if len(exp) < 2:
        return PairedSummary((), n_systems=len(exp), note=ONE_SYSTEM)
    shared = set.intersection(*(set(v) for v in exp.values()))
    sub, _ = align_strata(strata, sorted(shared))
    ev = evaluated_strata(sub, artifact, min_queries=min_queries, level=level)
    design = estimation_design(ev, scheme)
    vals = {s: np.array([v[q] for q in sub.queries], dtype=np.float64) for s, v in exp.items()}
    pairs = tuple(_pair(a, b, vals[a], vals[b], ev, design, n_min=n_min, n_resamples=n_resamples,
                   seed=seed, confidence_level=confidence_level, power=power,
                   artifact=artifact)
             for a, b in combinations(exp, 2))
    return PairedSummary(pairs, len(exp), sub.n_queries, ev.grain())
