"""One system's stratified evaluation, its flat MTEB keys, and decision stability.

* :func:`stratified_summary` — a :class:`.summary.StratifiedSummary` (``to_dict()``: the JSON
  ``strata`` block): coverage at the fine clusters (MSC, SCC with ``n_min``, cell
  level), the gap list, the evaluated grain (the cluster tree cut at ``min_queries``,
  :mod:`.grain`), pooled / macro / post-stratified estimates at that grain with analytic and
  Rao–Wu bootstrap CIs (bounded to the value's range), the fine clusters' uncovered weight
  with bounds, a per-stratum table of expected / min / max / bias, the heterogeneity test
  against random strata of the same sizes with its minimum detectable effect (:mod:`.power`),
  J next to lexical containment (:mod:`.lexical`), and the per-stratum Δ×J tables (the
  report's heatmaps);
* :func:`flat_strata_scores` — the block's flat MTEB score keys (read by the leaderboard);
* :func:`stability_summary` — winners and flips of ≥ 2 systems (decision stability, a
  :class:`Stability`); the paired question itself is :mod:`.pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..core import (DEFAULT_N_MIN, InputError, QueryStrata, StratifiedDesign, decision_stability,
                    per_stratum, strata_coverage, stratified_bootstrap, stratified_estimates)
from ..core.stats.chance import SPLIT_HALF_RESAMPLES, heterogeneity_test, split_half_reliability
from ..core.stats.coverage import check_n_min
from ..core.ranking.per_query import PerQuery
from ..core.jsonsafe import frozen_json
from ..core.ranking.results import ConfidenceInterval
from ..core.stats.stability import Flip, PairOutcome
from ..core.stats.strata import check_scheme
from ..naming import mteb_key
from .dataset import GENERATED_APART
from .grain import DEFAULT_MIN_QUERIES, estimation_design, evaluated_strata
from .lexical import alignment_adds
from .power import DetectableEffect, detectable_effect
from .summary import (INTERVAL_RULE, BinCounts, BoundedEstimate, Bounds, CellTable, ClusterRow,
                      GeneratedQueries, LexicalComparison, PooledMean, Spread, SpreadEnd,
                      StratifiedSummary, StratumRow, bounded, clip, finite)

__all__ = ["INTERVAL_RULE", "stratified_summary", "flat_strata_scores",
           "align_strata", "stability_summary", "Stability", "StratumWinner", "STRATA", "ORIGIN"]

#: The kind (``StratifiedSummary.warning_kinds``) of a warning about the strata themselves (a
#: bin holding every query, a short grain, an empty bin).
STRATA = "strata"
#: The kind of the warning that every query of the split is generated (its figures do not
#: stand for the original split; the generator's gate verdict).
ORIGIN = "origin"


def flat_strata_scores(summary: StratifiedSummary, measure: str) -> dict:
    """The flat MTEB score keys of a :class:`.summary.StratifiedSummary` (read by the
    leaderboard).

    ``strata_<estimator>_<metric>_expected`` (pooled, macro, post_stratified) with their 95%
    analytic interval bounds (``..._ci_low``/``..._ci_high``), ``strata_msc``, ``strata_scc``
    and ``strata_uncovered_weight`` (the corpus weight of the fine clusters without queries).
    """
    key = mteb_key(measure)
    out: dict = {}
    for estimator, r in summary.estimators("expected", "analytic").items():
        out[f"strata_{estimator}_{key}_expected"] = r.estimate
        out[f"strata_{estimator}_{key}_expected_ci_low"] = r.ci_low
        out[f"strata_{estimator}_{key}_expected_ci_high"] = r.ci_high
    out.update(strata_msc=summary.cluster_coverage.msc, strata_scc=summary.cluster_coverage.scc,
               strata_uncovered_weight=summary.uncovered_weight)
    return out


def align_strata(strata: QueryStrata, qids) -> tuple[QueryStrata, list]:
    """The strata of the evaluated queries, and the stratified queries that were not evaluated.

    Evaluated queries unknown to the strata (and not excluded by them) raise
    :class:`InputError`: the results come from a different query set or corpus.
    """
    known = set(strata.queries)
    excluded = {e.qid for e in strata.excluded}
    unknown = [q for q in qids if q not in known and q not in excluded]
    if unknown:
        raise InputError(f"{len(unknown)} evaluated queries are not in the stratified dataset "
                         f"(e.g. {sorted(unknown)[:3]})",
                         fix="use the structure and dataset of the corpus the results were "
                             "computed on (same query ids)")
    evaluated = set(qids)
    keep = [q for q in strata.queries if q in evaluated]
    if not keep:
        raise InputError("none of the evaluated queries could be stratified",
                         fix="check that the results and the structure share a corpus")
    missing = [q for q in strata.queries if q not in evaluated]
    return (strata if not missing else strata.subset(keep)), missing


def _stratum_key(label):
    if isinstance(label, tuple):
        return [int(label[0]), label[1], label[2]]
    return int(label)


def _cluster_of(label) -> int:
    """The evaluated stratum of a label: ``s`` or a cell ``(s, Δ level, J level)``."""
    return int(label[0]) if isinstance(label, (tuple, list)) else int(label)


def _covered_design(ev) -> StratifiedDesign:
    """The evaluated strata weighted by the mass of their fine clusters that hold queries, and
    one uncovered stratum with the mass of the fine clusters that hold none (its weight U):
    (1 − U)·μ̂ = Σ_s W_s^covered · ȳ_s, the bounds' centre."""
    mass = ev.fine_weights
    holds = np.bincount(ev.fine.primary, minlength=mass.size) > 0
    covered = np.bincount(ev.cut.stratum, weights=np.where(holds, mass, 0.0),
                          minlength=ev.n_strata)
    weights = {s: float(w) for s, w in enumerate(covered)}
    weights["uncovered"] = float(mass[~holds].sum())
    return StratifiedDesign.from_labels(ev.strata.primary, weights, queries=ev.strata.queries,
                                        scheme="cluster")


def _coverage(sub, artifact, n_min: int) -> tuple:
    """Coverage of the fine clusters, and of their Δ×J cells when J exists (else None)."""
    mass, labels = artifact.cluster_mass, artifact.cluster_labels
    cluster = strata_coverage(sub, mass, scheme="cluster", n_min=n_min, labels=labels)
    cell = (strata_coverage(sub, mass, scheme="cell", n_min=n_min, labels=labels)
            if sub.has_alignment else None)
    return cluster, cell


def _estimates(columns, design, ev, n_resamples, seed, confidence_level):
    """Analytic and Rao–Wu estimates at the evaluated grain, and the fine grain's bounds."""
    analytic = stratified_estimates(columns, design)
    boot = stratified_bootstrap(columns, design, n_resamples=n_resamples, seed=seed,
                                analytic=analytic)
    estimates = {k: {"analytic": {e: BoundedEstimate(k, "analytic", r, confidence_level)
                                  for e, r in analytic[k].items()},
                     "bootstrap": {e: BoundedEstimate(k, "bootstrap", r, confidence_level)
                                   for e, r in boot[k].items() if e != "strata"}}
                 for k in columns}
    # the fine clusters no query reaches: μ with the metric 0 / 1 there, each evaluated
    # stratum's covered clusters at its mean (the design below), so the bounds hold the
    # evaluated corpus-weighted estimate
    bounds = None
    covered = _covered_design(ev)
    post = stratified_estimates(columns.column("expected"), covered).get("post_stratified")
    if post is not None:
        b, bi = post.bounds, post.bounds_interval(confidence_level)
        ci_low, ci_high = clip(bi.low, bi.high, "expected")
        bounds = Bounds(b.low, b.high, ci_low, ci_high, post.uncovered_weight,
                        "μ with the metric 0 / 1 on every fine cluster without queries, the "
                        "rest of each evaluated stratum at its mean")
    return analytic, boot, estimates, bounds


def _per_stratum_rows(columns, design, ev, boot, confidence_level) -> list:
    tables = per_stratum(columns, design)
    b_low, b_high = boot["expected"]["strata"].confidence_interval(confidence_level)
    a_low, a_high = tables["expected"].confidence_interval(confidence_level)
    rows = []
    for i, lab in enumerate(design.labels):
        if design.counts[i] == 0:
            continue
        s = _cluster_of(lab)
        lo_hi = clip(a_low[i], a_high[i], "expected")
        boot_lo_hi = clip(b_low[i], b_high[i], "expected")
        rows.append(StratumRow(
            _stratum_key(lab), ev.names[s], ev.labels[s], ev.cut.nodes[s][0],
            int(design.counts[i]), finite(design.weights[i]), finite(ev.weights[s]),
            lo_hi[0], lo_hi[1], boot_lo_hi[0], boot_lo_hi[1],
            finite(tables["expected"].standard_error[i]),
            {k: finite(tables[k].mean[i]) for k in columns}))
    rows.sort(key=lambda r: (-r.n, r.key))
    return rows


def _cluster_tables(sub, ev, expected, artifact) -> tuple[list, list]:
    """Per fine cluster: mass, queries and evaluated stratum (the coverage map); per evaluated
    stratum: the Δ×J cell counts and means (the heatmaps)."""
    C = sub.n_clusters
    counts = np.bincount(sub.primary, minlength=C)
    clusters = [ClusterRow(c, artifact.cluster_labels.get(c),
                           finite(artifact.cluster_mass.get(c, 0.0)), int(counts[c]),
                           int(ev.cut.stratum[c])) for c in range(C)]
    cells = []
    if sub.has_alignment:
        grid = sub.grid
        db, ab = sub.dispersion_bin, sub.alignment_bin
        primary = ev.strata.primary
        for s in range(ev.n_strata):
            sel = primary == s
            if not sel.any():
                continue
            n = np.zeros(grid.shape, dtype=int)
            tot = np.zeros(grid.shape)
            np.add.at(n, (db[sel], ab[sel]), 1)
            np.add.at(tot, (db[sel], ab[sel]), expected[sel])
            mean = np.divide(tot, n, out=np.full(grid.shape, np.nan), where=n > 0)
            cells.append(CellTable(s, ev.names[s], ev.labels[s], int(sel.sum()), n.tolist(),
                                   [[finite(v) for v in row] for row in mean.tolist()]))
        cells.sort(key=lambda r: -r.n_queries)
    return clusters, cells


def _heterogeneity(expected, design, ev, n_resamples, n_min, seed) -> tuple:
    """The chance tests of one system at the evaluated grain, its tested strata named:
    ``(heterogeneity, split_half)``, both None with one stratum."""
    if len(expected) < 2 or design.n_covered < 2:
        return None, None
    het = heterogeneity_test(expected, design.index, n_resamples=n_resamples,
                             min_size=n_min, seed=seed)
    split_half = split_half_reliability(
        expected, design.index, n_resamples=min(n_resamples, SPLIT_HALF_RESAMPLES), seed=seed)
    rows = []
    for row in het.strata:
        lab = design.labels[int(row.stratum)]
        rows.append(replace(row, stratum=_stratum_key(lab), name=ev.names[_cluster_of(lab)],
                            label=ev.labels[_cluster_of(lab)]))
    return replace(het, strata=tuple(rows)), split_half


def stratified_summary(per_query_values, strata: QueryStrata, artifact, *,
                       measure: str = "nDCG@10", scheme: str = "cluster",
                       n_min: int = DEFAULT_N_MIN, min_queries: int = DEFAULT_MIN_QUERIES,
                       level: int = 0, n_resamples: int = 2000, seed: int = 0,
                       confidence_level: float = 0.95, top_gaps: int = 20,
                       power: bool = True, origin: str = "original",
                       gate: str | None = None) -> StratifiedSummary:
    """One system's stratified evaluation, a :class:`.summary.StratifiedSummary` (see the module
    docstring; its ``to_dict()`` is the JSON ``strata`` block).

    ``per_query_values``: a :class:`~mteb_stratified.core.ranking.per_query.PerQuery`, or
    ``{key: {qid: value}}`` with keys expected/min/max/oblivious (bias is derived), or a plain
    ``{qid: value}`` taken as expected.  Estimates and tests use the evaluated strata: the
    artifact's cluster tree cut at ``min_queries`` from ``level`` (:mod:`.grain`); coverage and
    gaps the fine clusters.  ``power``: also the minimum detectable effect (:mod:`.power`).
    Generated queries in a split of original ones (excluded by :func:`.strata_for_dataset`
    with :data:`.dataset.GENERATED_APART`) are summarised apart under ``"generated"``, next
    to the original queries' pooled mean, never in the estimates; ``origin="generated"``: every
    query of the split is generated (a warning says so, with ``gate``, the generator's
    validity-gate verdict, when there is one).
    """
    check_scheme(scheme)
    n_min = check_n_min(n_min)
    pq = PerQuery.from_mapping(per_query_values)
    sub, not_evaluated = align_strata(strata, pq.queries)
    evaluated = set(pq.queries)
    ev = evaluated_strata(sub, artifact, min_queries=min_queries, level=level)
    design = estimation_design(ev, scheme)
    columns = pq.subset(sub.queries)   # in design order: every estimator below reuses it
    expected = columns.column("expected")
    cluster_cov, cell_cov = _coverage(sub, artifact, n_min)
    analytic, boot, estimates, bounds = _estimates(columns, design, ev, n_resamples, seed,
                                                   confidence_level)
    rows = _per_stratum_rows(columns, design, ev, boot, confidence_level)
    means = [r.expected for r in rows]
    clusters, cells = _cluster_tables(sub, ev, expected, artifact)
    het, split_half = _heterogeneity(expected, design, ev, n_resamples, n_min, seed)
    mde = DetectableEffect.of(detectable_effect(expected, expected, design.index,
                                                test="heterogeneity", seed=seed)
                              if power and het is not None else None)
    grid = sub.grid
    bin_counts = BinCounts(np.bincount(sub.dispersion_bin[sub.dispersion_bin >= 0],
                                       minlength=grid.n_dispersion).tolist(),
                           np.bincount(sub.alignment_bin[sub.alignment_bin >= 0],
                                       minlength=grid.n_alignment).tolist())
    strata_warnings, origin_warning = _warnings(sub, bin_counts, ev), _origin_warning(origin, gate)
    return StratifiedSummary(
        measure=measure, scheme=scheme, corpus_fingerprint=artifact.corpus_fingerprint,
        n_clusters=artifact.n_clusters, tree_levels=artifact.cluster_tree.n_levels,
        grain=ev.grain(), bins=sub.bins, levels=grid.dispersion_levels,
        alignment_levels=grid.alignment_levels, bin_counts=bin_counts,
        warnings=strata_warnings + origin_warning,
        warning_kinds=(STRATA,) * len(strata_warnings) + (ORIGIN,) * len(origin_warning),
        origin=origin, gate_verdict=gate if origin != "original" else None,
        generated=_generated_apart(pq, strata, columns, confidence_level),
        n_queries=sub.n_queries, excluded=strata.excluded,
        n_excluded_evaluated=sum(1 for e in strata.excluded if e.qid in evaluated),
        not_evaluated=len(not_evaluated),
        cluster_coverage=cluster_cov, cell_coverage=cell_cov, top_gaps=top_gaps,
        estimates=estimates,
        # the corpus weight of fine clusters no query reaches (the evaluated strata hold them
        # all, so at that grain nothing is uncovered unless a stratum has no query)
        uncovered_weight=bounds.uncovered_weight if bounds else design.uncovered_weight,
        evaluated_uncovered_weight=design.uncovered_weight, bounds=bounds,
        per_stratum=rows, heterogeneity=het, split_half=split_half, power=mde,
        alignment_vs_lexical=_alignment_vs_lexical(sub, expected),
        spread=(max(means) - min(means)) if means else None,
        spread_min_n=_spread(rows, n_min), clusters=clusters, cells=cells,
        n_min=n_min, n_resamples=n_resamples, seed=seed, confidence_level=confidence_level)


def _warnings(sub, bin_counts: BinCounts, ev) -> list:
    grid = sub.grid
    by_bin = (("dispersion", bin_counts.dispersion), ("alignment", bin_counts.alignment))
    out = [f"every stratified query falls in the {grid.level(name, int(np.argmax(c)))} "
           f"{name} bin: the corpus cut-points {getattr(sub.bins, name)} do not separate these "
           "queries"
           for name, c in by_bin if sub.n_queries > 1 and max(c) == sub.n_queries]
    out += sub.bins.empty_bins_warnings()
    if ev.cut.short:
        out.append(ev.grain().why)
    return out


def _origin_warning(origin: str, gate: str | None = None) -> list:
    if origin == "original":
        return []
    return [f"every query of this split is {origin} (not written by people for a real need): "
            "its figures describe the generated queries, and do not stand for the original "
            "split; the generator's validity gate: "
            + (gate or "none found (no coverage.json next to the dataset)")]


def _generated_apart(pq, strata, columns, confidence_level) -> GeneratedQueries | None:
    """The evaluated generated queries left out of the estimates: their pooled mean with its t
    interval, next to the original queries' pooled mean (the same estimator)."""
    apart = [e.qid for e in strata.excluded if e.reason == GENERATED_APART]
    known = set(pq.queries)
    apart = [q for q in apart if q in known]
    if not apart:
        return None
    means = []
    for vals in (pq.subset(apart), columns):
        x = vals.column("expected")
        est = stratified_estimates(x, StratifiedDesign.from_labels([0] * x.size))["pooled"]
        means.append(PooledMean.from_dict(bounded(est.to_dict(confidence_level), "expected")))
    return GeneratedQueries(GENERATED_APART, *means)


def _alignment_vs_lexical(sub, expected) -> LexicalComparison | None:
    if sub.lexical is None or sub.n_relevant is None or not sub.has_alignment:
        return None
    return LexicalComparison.from_dict(alignment_adds(sub.alignment, sub.lexical,
                                                      sub.n_relevant, expected))


def _spread(rows, n_min) -> Spread | None:
    """Best and worst stratum among those with ≥ n_min queries."""
    big = [r for r in rows if r.n >= n_min]
    if not big:
        return None
    best = max(big, key=lambda r: r.expected)
    worst = min(big, key=lambda r: r.expected)
    return Spread(n_min, best.expected - worst.expected, SpreadEnd.of(best), SpreadEnd.of(worst))


@dataclass(frozen=True)
class StratumWinner:
    """The system ahead in one evaluated stratum (decision stability).

    Attributes
    ----------
    stratum : the evaluated stratum (an int; a cell: ``(stratum, Δ level, J level)``).
    winner : the system with the highest stratum mean; significant : whether its lead over
        the runner-up is significant there; name : the stratum's name (its unit of the tree).
    """

    stratum: object
    winner: str
    significant: bool
    name: str

    def to_dict(self) -> dict:
        """The JSON form (a cell's stratum as a list)."""
        st = list(self.stratum) if isinstance(self.stratum, tuple) else self.stratum
        return {"stratum": st, "winner": self.winner, "significant": self.significant,
                "name": self.name}

    @classmethod
    def from_dict(cls, d: Mapping) -> "StratumWinner":
        """The row :meth:`to_dict` wrote."""
        st = d["stratum"]
        return cls(tuple(st) if isinstance(st, list) else st, d["winner"], d["significant"],
                   d["name"])


@dataclass(frozen=True)
class Stability:
    """Decision stability of ≥ 2 systems on their shared stratified queries
    (:func:`stability_summary`).

    Attributes
    ----------
    systems : the systems (a tuple); confidence_level : the level of every interval.
    scores : ``{aggregation: {system: score}}`` (read-only); aggregations: pooled, macro and
        post_stratified (corpus-weighted).
    winners : ``{aggregation: system ahead}``; winner_significant : ``{aggregation: whether
        the lead over the runner-up is significant}`` (read-only).
    stratum_winners : a :class:`StratumWinner` per evaluated stratum (a tuple).
    pairs : a :class:`~mteb_stratified.core.stats.stability.PairOutcome` per pair and aggregation.
    flips : a :class:`~mteb_stratified.core.stats.stability.Flip` per pair whose order differs
        between aggregations (its mappings read-only).
    n_queries : the shared stratified queries.
    stable : no pair flips (a property); significant_flips : the flips where one of the
        disagreeing orders is significant (a property: the only flips that count).
    """

    systems: tuple
    confidence_level: float
    scores: Mapping
    winners: Mapping
    winner_significant: Mapping
    stratum_winners: tuple
    pairs: tuple
    flips: tuple
    n_queries: int

    def __post_init__(self):
        for name in ("scores", "winners", "winner_significant"):
            object.__setattr__(self, name, frozen_json(getattr(self, name),
                                                       mapping=MappingProxyType))
        for name in ("systems", "stratum_winners", "pairs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "flips", tuple(
            Flip(f.a, f.b, MappingProxyType(dict(f.ahead)), MappingProxyType(dict(f.significant)))
            for f in self.flips))

    @property
    def stable(self) -> bool:
        """True when no pair flips between aggregations."""
        return not self.flips

    @property
    def significant_flips(self) -> tuple:
        """The flips where one of the disagreeing orders is significant."""
        return tuple(f for f in self.flips if any(f.significant.values()))

    def to_dict(self) -> dict:
        """The JSON form (:meth:`~mteb_stratified.core.stats.stability.StabilityReport.to_dict` with
        ``stable``, ``n_queries`` and ``significant_flips``; keys in their order)."""
        def flip(f):
            return {"a": f.a, "b": f.b, "ahead": dict(f.ahead), "significant": dict(f.significant)}

        return {"systems": list(self.systems), "confidence_level": self.confidence_level,
                "scores": {a: dict(s) for a, s in self.scores.items()},
                "winners": dict(self.winners), "winner_significant": dict(self.winner_significant),
                "stratum_winners": [r.to_dict() for r in self.stratum_winners],
                "pairs": [{"a": p.a, "b": p.b, "aggregation": p.aggregation,
                           "difference": p.difference, "ci_low": p.ci.low, "ci_high": p.ci.high,
                           "significant": p.significant} for p in self.pairs],
                "flips": [flip(f) for f in self.flips], "stable": self.stable,
                "n_queries": self.n_queries,
                "significant_flips": [flip(f) for f in self.significant_flips]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Stability":
        """The result of its JSON form (:meth:`to_dict`)."""
        return cls(tuple(d["systems"]), d["confidence_level"], d["scores"], d["winners"],
                   d["winner_significant"],
                   tuple(StratumWinner.from_dict(r) for r in d["stratum_winners"]),
                   tuple(PairOutcome(p["a"], p["b"], p["aggregation"], p["difference"],
                                     ConfidenceInterval(p["ci_low"], p["ci_high"]),
                                     p["significant"]) for p in d["pairs"]),
                   tuple(Flip(f["a"], f["b"], f["ahead"], f["significant"]) for f in d["flips"]),
                   d["n_queries"])


def stability_summary(systems: Mapping[str, Mapping], strata: QueryStrata, artifact, *,
                      scheme: str = "cluster", confidence_level: float = 0.95,
                      min_queries: int = DEFAULT_MIN_QUERIES, level: int = 0) -> Stability:
    """Decision stability of ≥ 2 systems (expected values) on their shared stratified queries,
    at the evaluated grain: a :class:`Stability`."""
    exp = {s: PerQuery.from_mapping(v)["expected"] for s, v in systems.items()}
    if len(exp) < 2:
        raise InputError(f"decision stability needs ≥ 2 systems, got {len(exp)}",
                         fix="pass the results of two or more systems")
    shared = set.intersection(*(set(v) for v in exp.values()))
    sub, _ = align_strata(strata, sorted(shared))
    ev = evaluated_strata(sub, artifact, min_queries=min_queries, level=level)
    design = estimation_design(ev, scheme)
    rep = decision_stability({s: {q: v[q] for q in sub.queries} for s, v in exp.items()}, design,
                             confidence_level=confidence_level)
    rows = []
    for label, winner in rep.stratum_winners.items():
        key = _stratum_key(label)
        rows.append(StratumWinner(tuple(key) if isinstance(key, list) else key, winner,
                                  rep.stratum_significant[label], ev.names[_cluster_of(key)]))
    return Stability(rep.systems, rep.confidence_level, rep.scores, rep.winners,
                     rep.winner_significant, tuple(rows), rep.pairs, rep.flips, sub.n_queries)
