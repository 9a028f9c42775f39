"""Estimators of a benchmark mean μ = Σ_k W_k μ_k over strata, with standard errors and CIs.

Notation: stratum h has n_h queries with values y_hi, mean ȳ_h and sample variance
s_h² = Σ_i (y_hi − ȳ_h)² / (n_h − 1); Q = Σ_h n_h; W_h is the stratum's population weight (the
cluster's corpus mass — its stratum weight, the share of documents whose own stratum it is —
normalised so that Σ W_h = 1 over *all* strata, those without queries included).  Side by side (:func:`stratified_estimates`):

* **pooled** (query-weighted): ȳ = Σ_hi y_hi / Q,  SE = s / √Q, s the sample SD of all values;
* **macro** (equal stratum weights over the H strata with queries; strata without queries
  have no say): Σ_h ȳ_h / H, SE² = Σ_h s_h² / n_h / H²;
* **post-stratified** (corpus-weighted): Σ_h W̃_h ȳ_h with W̃_h = W_h / Σ_{covered} W_h,
  SE² = Σ_h W̃_h² s_h² / n_h (the standard stratified variance).

Analytic intervals are Student t with Satterthwaite degrees of freedom
ν = (Σ_h v_h)² / Σ_h v_h² / ν_h, v_h = a_h² s_h² / n_h (ν = Q − 1 for one stratum and for the
pooled mean), or normal (``interval="normal"``).

**Strata with n_h = 1** (our rule, configurable with ``singleton=``): s_h² is undefined, so
``"pooled"`` (default) uses the pooled within-stratum variance s_w² = Σ_{n_h ≥ 2}(n_h − 1)s_h² /
Σ_{n_h ≥ 2}(n_h − 1) with ν_h = Σ(n_h − 1) (the overall sample variance, ν_h = Q − 1, when no
stratum has two queries); ``"zero"`` gives them variance 0 (optimistic); ``"error"`` raises.

**Uncovered strata** (W_h > 0, n_h = 0) are reported, never dropped: with U = Σ_{uncovered} W_h
and a metric in [0, 1], μ lies between the bounds (1 − U)·μ̂ (metric 0 there) and
(1 − U)·μ̂ + U (metric 1 there) — :attr:`Estimate.bounds`, :meth:`Estimate.bounds_interval`.

**Stratified bootstrap** (:func:`stratified_bootstrap`): Rao–Wu rescaling bootstrap (Rao, Wu &
Yue 1992, Survey Methodology 18:209–217) with m_h = n_h − 1 draws with replacement in each
stratum; with that choice the rescaled weights w*_hi = w_hi (n_h / m_h) r_hi (r_hi the draw
count) make the replicate stratum mean the plain mean of the m_h draws, and its bootstrap
variance is exactly s_h² / n_h.  Singleton strata cannot be resampled; under ``"pooled"`` their
replicate means get a N(0, s_w²) perturbation (a parametric patch, ours), under ``"zero"`` they
stay fixed.  Intervals are percentile intervals of the replicates.  :func:`pooled_bootstrap` is
the ordinary i.i.d. bootstrap of the pooled mean, which ignores the strata (for comparison).

Every function takes per-query values as one array, or as a mapping of arrays (e.g.
``tie_aware_values(measure_result)``: expected/min/max/oblivious/range/bias), and then returns a
dict with one result per key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..ranking.per_query import PerQuery, mismatch_error
from ..rng import as_generator
from ..ranking.results import ARRANGEMENT_KEYS, ConfidenceInterval
from .strata import QueryStrata, check_scheme, mass_array

__all__ = ["StratifiedDesign", "Estimate", "StratumTable", "PairedComparison", "ESTIMATORS",
           "SINGLETON_RULES", "CELL_RULES", "stratified_estimates", "per_stratum",
           "stratified_bootstrap", "pooled_bootstrap", "paired_comparison", "tie_aware_values"]

#: The estimators, in report order.
ESTIMATORS = ("pooled", "macro", "post_stratified")
SINGLETON_RULES = ("pooled", "zero", "error")
CELL_RULES = ("proportional", "equal")


# ---------------------------------------------------------------------------------------------
# design
# ---------------------------------------------------------------------------------------------

def _unique_labels(labels) -> tuple[list, np.ndarray]:
    arr = labels if isinstance(labels, np.ndarray) else None
    if arr is not None and arr.dtype.kind in "iub":
        uniq, inv = np.unique(arr, return_inverse=True)
        return [int(u) for u in uniq], inv.astype(np.int64)
    seen: dict = {}
    inv = np.fromiter((seen.setdefault(lab, len(seen)) for lab in labels), np.int64)
    order = list(seen)
    try:
        ranked = sorted(range(len(order)), key=lambda i: order[i])
    except TypeError:
        ranked = list(range(len(order)))
    remap = np.empty(len(order), dtype=np.int64)
    remap[ranked] = np.arange(len(order))
    return [order[i] for i in ranked], remap[inv] if len(inv) else inv


@dataclass(frozen=True, eq=False)
class StratifiedDesign:
    """Which stratum each query is in, and every stratum's population weight.

    ``labels[:n_covered]`` are the strata with queries (``index`` points into them), the rest
    have weight but no queries.  ``weights`` (sum 1 over all strata) is None when no population
    weights were given (then only pooled and macro estimates exist).  ``queries`` (optional)
    names the queries, for aligning ``{qid: value}`` mappings; ``excluded`` are ids known to be
    left out of stratification (ignored when aligning, they were reported by :func:`stratify`).
    """

    labels: tuple
    index: np.ndarray
    counts: np.ndarray
    weights: np.ndarray | None = None
    queries: tuple | None = None
    scheme: str | None = None
    excluded: frozenset = frozenset()
    _order: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_order", np.argsort(self.index, kind="stable"))

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_labels(cls, labels, weights: Mapping | None = None, *, queries: Sequence | None = None,
                    scheme: str | None = None, excluded=()) -> "StratifiedDesign":
        """From one stratum label per query and optional population weights ``{label: W}``.

        Labels in ``weights`` without queries become uncovered strata; a label with queries but
        no weight raises :class:`InputError`.  Weights are normalised to sum 1.
        """
        covered, index = _unique_labels(labels)
        Q = len(index)
        if queries is not None and len(queries) != Q:
            raise InputError(f"{len(queries)} query ids for {Q} stratum labels",
                             fix="give one label per query, in the order of the query ids")
        counts = np.bincount(index, minlength=len(covered)).astype(np.int64)
        all_labels = list(covered)
        w = None
        if weights is not None:
            missing = [lab for lab in covered if lab not in weights]
            if missing:
                raise InputError(f"{len(missing)} strata with queries have no weight "
                                 f"(e.g. {missing[:3]})",
                                 fix="give every stratum a population weight (its corpus mass); "
                                     "queries from a different structure?")
            have = set(covered)
            extra = [lab for lab, v in weights.items() if lab not in have and v > 0]
            try:
                extra.sort()
            except TypeError:
                pass
            all_labels += extra
            w = np.array([float(weights[lab]) for lab in all_labels], dtype=np.float64)
            if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise InputError("stratum weights must be finite, ≥ 0 and not all 0",
                                 fix="use the clusters' corpus mass")
            w = w / w.sum()
            counts = np.concatenate([counts, np.zeros(len(extra), dtype=np.int64)])
        return cls(tuple(all_labels), index, counts, w,
                   None if queries is None else tuple(queries), scheme, frozenset(excluded))

    @classmethod
    def from_strata(cls, strata: QueryStrata, cluster_mass=None, *, scheme: str = "cluster",
                    cell_rule: str | np.ndarray = "proportional") -> "StratifiedDesign":
        """The design of a :class:`QueryStrata` with clusters weighted by their corpus mass.

        ``cluster_mass``: (C,) array or ``{cluster: mass}``.
        ``scheme="cluster"``: strata are primary clusters, W_c = corpus mass of c.
        ``scheme="cell"``: strata are (cluster, Δ bin, J bin) cells; the cluster's mass W_c is
        split over its cells by ``cell_rule`` (ours):

        * ``"proportional"`` — W_c · n_cell / n_c (the query counts; post-stratified estimate
          equals the cluster-level one, the cells refine the variance and the report);
        * ``"equal"`` — W_c / (number of cells of c with queries);
        * a (C, n_Δ, n_J) array (3 × 3 by default) of within-cluster cell shares (rows summing to 1, e.g. from a
          reference distribution): W_c · share[c, Δbin, Jbin]; cells with a share but no
          queries are uncovered strata, cells with queries but no share get weight 0, and a
          cluster whose shares are all 0 falls back to the proportional rule.

        Clusters without queries are uncovered strata, labelled ``c`` (cluster scheme) or
        ``(c, None, None)`` (cell scheme, proportional/equal rules).
        """
        check_scheme(scheme)
        C = strata.n_clusters
        excluded = [e.qid for e in strata.excluded]
        if cluster_mass is None:
            if scheme == "cluster":
                return cls.from_labels(strata.primary, None, queries=strata.queries,
                                       scheme=scheme, excluded=excluded)
            return cls.from_labels(strata.labels("cell"), None, queries=strata.queries,
                                   scheme=scheme, excluded=excluded)
        mass = mass_array(cluster_mass, C)
        if mass.shape != (C,):
            raise InputError(f"cluster_mass has shape {mass.shape}, the strata have {C} clusters",
                             fix="use the corpus mass of the same structure the strata came from")
        if scheme == "cluster":
            weights = {c: float(mass[c]) for c in range(C)}
            return cls.from_labels(strata.primary, weights, queries=strata.queries,
                                   scheme=scheme, excluded=excluded)
        codes = strata.codes("cell")
        grid = strata.grid
        n_cluster = np.bincount(strata.primary, minlength=C)
        uniq, n_cell = np.unique(codes, return_counts=True)
        weights: dict = {}
        if isinstance(cell_rule, str):
            if cell_rule not in CELL_RULES:
                raise InputError(f"unknown cell rule {cell_rule!r}",
                                 fix=f"use one of {', '.join(CELL_RULES)} or a "
                                     f"(C, {grid.n_dispersion}, {grid.n_alignment}) array")
            cells_per = np.bincount(grid.cluster_of(uniq), minlength=C)
            for code, n in zip(uniq.tolist(), n_cell.tolist()):
                c = grid.cluster_of(code)
                share = n / n_cluster[c] if cell_rule == "proportional" else 1 / cells_per[c]
                weights[grid.label(code)] = mass[c] * share
            for c in np.flatnonzero(n_cluster == 0).tolist():
                weights[(c, None, None)] = float(mass[c])
        else:
            share = np.asarray(cell_rule, dtype=np.float64)
            k = grid.per_cluster
            if share.shape != (C, *grid.shape) or np.any(share < 0) or \
                    not np.all(np.isfinite(share)):
                raise InputError(f"cell shares must be a non-negative {(C, *grid.shape)} array, "
                                 f"got shape {share.shape}", fix="one share table per cluster")
            tot = share.reshape(C, k).sum(axis=1, keepdims=True)
            share = share.reshape(C, k) / np.where(tot > 0, tot, 1.0)
            for code in range(grid.n_cells(C)):
                c, cell = divmod(code, k)
                if share[c, cell] > 0:
                    weights[grid.label(code)] = mass[c] * share[c, cell]
            no_share = tot.ravel() == 0
            for code, n in zip(uniq.tolist(), n_cell.tolist()):
                c = grid.cluster_of(code)           # a cluster without shares: proportional
                weights.setdefault(grid.label(code),
                                   mass[c] * n / n_cluster[c] if no_share[c] else 0.0)
            for c in np.flatnonzero(no_share & (n_cluster == 0)).tolist():
                weights[(c, None, None)] = float(mass[c])
        labels = [grid.label(c) for c in codes.tolist()]
        return cls.from_labels(labels, weights, queries=strata.queries, scheme=scheme,
                               excluded=excluded)

    # -- properties ------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return len(self.index)

    @property
    def n_covered(self) -> int:
        return int(np.count_nonzero(self.counts)) if self.weights is not None else len(self.labels)

    @property
    def uncovered(self) -> list[tuple]:
        """``[(label, weight)]`` of strata with weight but no queries, heaviest first."""
        if self.weights is None:
            return []
        H = self.n_covered
        pairs = list(zip(self.labels[H:], self.weights[H:].tolist()))
        return sorted(pairs, key=lambda p: -p[1])

    @property
    def uncovered_weight(self) -> float:
        return 0.0 if self.weights is None else float(self.weights[self.n_covered:].sum())

    # -- values ----------------------------------------------------------------------------
    def align(self, values) -> np.ndarray:
        """Per-query values as a (Q,) float array in design order.

        An array must have one value per query.  A ``{qid: value}`` mapping must cover exactly
        the design's queries (ids in ``excluded`` are ignored); otherwise :class:`InputError`
        (results of a different query set or corpus).
        """
        if isinstance(values, Mapping):
            if self.queries is None:
                raise InputError("this design has no query ids to align a mapping with",
                                 fix="pass values as an array in design order, or build the "
                                     "design with queries=")
            extra = [q for q in values if q not in self._qindex and q not in self.excluded]
            missing = [q for q in self.queries if q not in values]
            if extra or missing:
                raise mismatch_error(extra, missing)
            x = np.fromiter((float(values[q]) for q in self.queries), np.float64, len(self.queries))
        else:
            x = np.asarray(values, dtype=np.float64)
            if x.ndim != 1 or len(x) != self.n_queries:
                raise InputError(f"{x.shape} values for {self.n_queries} queries",
                                 fix="pass one value per query, in the design's query order")
        if not np.all(np.isfinite(x)):
            raise InputError("per-query values must be finite", fix="check the per-query scores")
        return x

    @property
    def _qindex(self) -> dict:
        cache = self.__dict__.get("_qidx")
        if cache is None:
            cache = {q: i for i, q in enumerate(self.queries or ())}
            object.__setattr__(self, "_qidx", cache)
        return cache


# ---------------------------------------------------------------------------------------------
# result objects
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Estimate:
    """One estimate of μ with its standard error (scipy-style result object).

    ``df``: Student-t degrees of freedom of the analytic interval (``inf``: normal);
    ``replicates``: bootstrap replicates (then intervals are percentile intervals);
    ``uncovered_weight``: U, the population weight of strata without queries (post-stratified
    only; 0 for pooled and macro, whose targets are the queries / the covered strata).
    """

    estimator: str
    estimate: float
    standard_error: float
    df: float = np.inf
    n_queries: int = 0
    n_strata: int = 1
    uncovered_weight: float = 0.0
    singleton_strata: int = 0
    replicates: np.ndarray | None = field(default=None, repr=False)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Two-sided interval: percentile of the replicates, else t(df) / normal."""
        _check_level(confidence_level)
        alpha = 1 - confidence_level
        if self.replicates is not None:
            r = self.replicates
            if r.size == 0 or not np.all(np.isfinite(r)):
                return ConfidenceInterval(float("nan"), float("nan"))
            lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
            return ConfidenceInterval(float(lo), float(hi))
        se, est = self.standard_error, self.estimate
        if not np.isfinite(se):
            return ConfidenceInterval(float("nan"), float("nan"))
        if se == 0:
            return ConfidenceInterval(est, est)
        from scipy import stats  # lazy: scipy.stats alone takes longer to import than the core

        q = stats.norm.ppf(1 - alpha / 2) if not np.isfinite(self.df) else \
            stats.t.ppf(1 - alpha / 2, self.df)
        return ConfidenceInterval(float(est - q * se), float(est + q * se))

    @property
    def bounds(self) -> ConfidenceInterval:
        """μ if the metric were 0 / 1 on every uncovered stratum: ((1−U)μ̂, (1−U)μ̂ + U)."""
        u = self.uncovered_weight
        return ConfidenceInterval((1 - u) * self.estimate, (1 - u) * self.estimate + u)

    def bounds_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """An interval for μ whatever the metric on uncovered strata:
        ((1−U)·low, (1−U)·high + U)."""
        ci = self.confidence_interval(confidence_level)
        u = self.uncovered_weight
        return ConfidenceInterval((1 - u) * ci.low, (1 - u) * ci.high + u)

    def to_dict(self, confidence_level: float = 0.95) -> dict:
        ci = self.confidence_interval(confidence_level)
        out = {"estimate": self.estimate, "standard_error": self.standard_error,
               "ci_low": ci.low, "ci_high": ci.high, "confidence_level": confidence_level,
               "n_queries": self.n_queries, "n_strata": self.n_strata,
               "interval": "percentile" if self.replicates is not None
               else ("normal" if not np.isfinite(self.df) else "t")}
        if self.uncovered_weight:
            b = self.bounds
            out.update(uncovered_weight=self.uncovered_weight, bound_low=b.low, bound_high=b.high)
        if self.singleton_strata:
            out["singleton_strata"] = self.singleton_strata
        return out


@dataclass(frozen=True, eq=False)
class StratumTable:
    """Per-stratum numbers, covered strata first then uncovered (n = 0, mean NaN).

    ``weight`` is the normalised population weight (NaN without weights); ``standard_error``
    is s_h / √n_h (singletons by the design's singleton rule); ``df`` the t degrees of freedom;
    ``replicates`` (B, S) bootstrap replicates of the covered strata's means when bootstrapped.
    """

    labels: tuple
    n: np.ndarray
    weight: np.ndarray
    mean: np.ndarray
    standard_error: np.ndarray
    df: np.ndarray
    replicates: np.ndarray | None = field(default=None, repr=False)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Per-stratum ``ConfidenceInterval(low, high)`` arrays: percentile of the replicates
        when present, else t(df)."""
        _check_level(confidence_level)
        alpha = 1 - confidence_level
        S = len(self.labels)
        low = np.full(S, np.nan)
        high = np.full(S, np.nan)
        if self.replicates is not None:
            H = self.replicates.shape[1]
            low[:H], high[:H] = np.quantile(self.replicates, [alpha / 2, 1 - alpha / 2], axis=0)
            return ConfidenceInterval(low, high)
        from scipy import stats  # lazy, as in Estimate.confidence_interval

        ok = np.isfinite(self.standard_error) & (self.n > 0)
        q = np.where(np.isfinite(self.df), stats.t.ppf(1 - alpha / 2, np.where(ok, self.df, 1)),
                     stats.norm.ppf(1 - alpha / 2))
        low[ok] = self.mean[ok] - q[ok] * self.standard_error[ok]
        high[ok] = self.mean[ok] + q[ok] * self.standard_error[ok]
        return ConfidenceInterval(low, high)

    def rows(self, confidence_level: float = 0.95) -> list[dict]:
        low, high = self.confidence_interval(confidence_level)
        return [{"stratum": lab, "n": int(n), "weight": float(w), "mean": float(m),
                 "standard_error": float(s), "ci_low": float(a), "ci_high": float(b)}
                for lab, n, w, m, s, a, b in zip(self.labels, self.n, self.weight, self.mean,
                                                  self.standard_error, low, high)]

    def spread(self) -> float:
        """Best minus worst mean over the covered strata."""
        m = self.mean[self.n > 0]
        return float(m.max() - m.min()) if m.size else float("nan")


@dataclass(frozen=True, eq=False)
class PairedComparison:
    """System A − system B on the same queries: overall (per estimator) and per stratum."""

    overall: Mapping[str, Estimate]
    per_stratum: StratumTable

    def significant(self, estimator: str = "post_stratified",
                    confidence_level: float = 0.95) -> bool:
        """Whether the paired CI of the difference excludes 0."""
        ci = self.overall[estimator].confidence_interval(confidence_level)
        return bool(ci.low > 0 or ci.high < 0)


def _check_level(level: float) -> None:
    if not (0 < level < 1):
        raise InputError(f"confidence_level must lie in (0, 1), got {level}", fix="e.g. 0.95")


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Stats:
    n: np.ndarray       # (H,) counts of covered strata
    mean: np.ndarray    # (H,)
    var: np.ndarray     # (H,) with the singleton rule applied
    dof: np.ndarray     # (H,) degrees of freedom of var
    singletons: int
    pooled_var: float   # s_w², the singleton variance


def _stats(x: np.ndarray, design: StratifiedDesign, singleton: str) -> _Stats:
    if singleton not in SINGLETON_RULES:
        raise InputError(f"unknown singleton rule {singleton!r}",
                         fix=f"use one of {', '.join(SINGLETON_RULES)}")
    H = design.n_covered
    idx = design.index
    n = design.counts[:H].astype(np.float64)
    mean = np.bincount(idx, x, minlength=H) / n
    dev = x - mean[idx]
    ss = np.bincount(idx, dev * dev, minlength=H)
    multi = n >= 2
    var = np.where(multi, ss / np.where(multi, n - 1, 1), np.nan)
    dof = np.where(multi, n - 1, np.nan)
    single = ~multi
    n_single = int(single.sum())
    within = float((n[multi] - 1).sum())
    if within > 0:
        pooled_var, pooled_dof = float(ss[multi].sum() / within), within
    elif len(x) >= 2:
        pooled_var, pooled_dof = float(np.var(x, ddof=1)), float(len(x) - 1)
    else:
        pooled_var, pooled_dof = float("nan"), float("nan")
    if n_single:
        if singleton == "error":
            raise InputError(f"{n_single} strata hold a single query; their variance is undefined",
                             fix="use singleton='pooled' (pooled within-stratum variance) or "
                                 "'zero', or a coarser scheme")
        if singleton == "pooled":
            var[single], dof[single] = pooled_var, pooled_dof
        else:
            var[single], dof[single] = 0.0, np.inf
    return _Stats(n, mean, var, dof, n_single, pooled_var)


def _combine(st: _Stats, a: np.ndarray) -> tuple[float, float, float]:
    """Σ a_h ȳ_h, its SE √Σ a_h² s_h²/n_h and the Satterthwaite df."""
    est = float(a @ st.mean)
    v = a * a * st.var / st.n
    total = float(v.sum())
    if not np.isfinite(total):
        return est, float("nan"), float("nan")
    keep = (v > 0) & np.isfinite(st.dof)
    den = float((v[keep] ** 2 / st.dof[keep]).sum())
    df = total * total / den if den > 0 else np.inf
    return est, float(np.sqrt(total)), df


def _estimates(x: np.ndarray, design: StratifiedDesign, singleton: str, interval: str) -> dict:
    if interval not in ("t", "normal"):
        raise InputError(f"unknown interval {interval!r}", fix="use 't' or 'normal'")
    Q = len(x)
    if Q == 0:
        raise InputError("no queries to estimate from", fix="stratify at least one query")
    st = _stats(x, design, singleton)
    H = len(st.n)
    out = {}
    sd = float(np.std(x, ddof=1)) if Q >= 2 else float("nan")
    out["pooled"] = Estimate("pooled", float(np.mean(x)), float(sd / np.sqrt(Q)),
                             Q - 1.0 if Q >= 2 else np.nan, Q, H)
    est, se, df = _combine(st, np.full(H, 1.0 / H))
    out["macro"] = Estimate("macro", est, se, df, Q, H, 0.0, st.singletons)
    if design.weights is not None:
        w = design.weights[:H]
        if w.sum() <= 0:
            raise InputError("the strata with queries all have weight 0",
                             fix="check the cluster corpus mass")
        est, se, df = _combine(st, w / w.sum())
        out["post_stratified"] = Estimate("post_stratified", est, se, df, Q, H,
                                          design.uncovered_weight, st.singletons)
    if interval == "normal":
        out = {k: _replace(e, df=np.inf) for k, e in out.items()}
    return out


def _replace(e: Estimate, **kw) -> Estimate:
    from dataclasses import replace
    return replace(e, **kw)


def _columns(values, design: StratifiedDesign) -> tuple[list | None, np.ndarray]:
    """(keys or None, (Q, K) array) from per-query values or a mapping ``{key: per-query values}``.

    A :class:`~..ranking.per_query.PerQuery` is aligned to the design once (no per-key work).
    A mapping whose values are scalars is ``{qid: value}``; one whose values are arrays or mappings is
    ``{key: per-query values}`` (e.g. expected/min/max/oblivious/bias).
    """
    if isinstance(values, PerQuery):
        pq = values.aligned(design)
        return list(pq.keys), np.ascontiguousarray(pq.values.T)
    if isinstance(values, Mapping) and values:
        first = next(iter(values.values()))
        if isinstance(first, Mapping) or np.ndim(first) > 0:
            keys = list(values)
            return keys, np.stack([design.align(values[k]) for k in keys], axis=1)
    return None, design.align(values)[:, None]


def _unpack(keys, results: list):
    return results[0] if keys is None else dict(zip(keys, results))


# ---------------------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------------------

def stratified_estimates(values, design: StratifiedDesign, *, singleton: str = "pooled",
             interval: str = "t") -> dict:
    """Pooled, macro and post-stratified estimates side by side (formulas: module docstring).

    Returns ``{"pooled": Estimate, "macro": Estimate, "post_stratified": Estimate}`` (the last
    only when the design has weights), or ``{key: {...}}`` for a mapping of value arrays.
    """
    keys, X = _columns(values, design)
    return _unpack(keys, [_estimates(X[:, k], design, singleton, interval)
                          for k in range(X.shape[1])])


def per_stratum(values, design: StratifiedDesign, *, singleton: str = "pooled") -> StratumTable:
    """Mean, SE (s_h/√n_h) and t interval of every stratum, uncovered strata included (n = 0).

    A mapping of value arrays gives ``{key: StratumTable}``.
    """
    keys, X = _columns(values, design)
    out = []
    S = len(design.labels)
    for k in range(X.shape[1]):
        st = _stats(X[:, k], design, singleton)
        H = len(st.n)
        mean = np.full(S, np.nan)
        se = np.full(S, np.nan)
        df = np.full(S, np.nan)
        mean[:H], se[:H], df[:H] = st.mean, np.sqrt(st.var / st.n), st.dof
        w = design.weights if design.weights is not None else np.full(S, np.nan)
        out.append(StratumTable(design.labels, design.counts.copy(), w, mean, se, df))
    return _unpack(keys, out)


def _rao_wu_means(X: np.ndarray, design: StratifiedDesign, n_resamples: int,
                  rng: np.random.Generator, singleton: str, chunk_elems: int) -> np.ndarray:
    """(B, H, K) replicate stratum means: mean of n_h − 1 draws with replacement per stratum."""
    H = design.n_covered
    n = design.counts[:H]
    Xs = X[design._order]                            # queries grouped by stratum
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    m = n - 1
    multi = np.flatnonzero(m >= 1)
    mm = m[multi]
    M = int(mm.sum())
    col_start = np.repeat(starts[multi], mm)
    col_n = np.repeat(n[multi], mm).astype(np.float64)
    col_max = np.repeat(starts[multi] + n[multi] - 1, mm)
    seg = np.concatenate([[0], np.cumsum(mm)[:-1]])
    B, K = n_resamples, X.shape[1]
    out = np.empty((B, H, K))
    # strata that cannot be resampled keep their value (+ N(0, s_w²) under "pooled")
    single = np.flatnonzero(m < 1)
    out[:, single, :] = Xs[starts[single]][None, :, :]
    if single.size and singleton == "pooled":
        for k in range(K):
            sw2 = _stats(X[:, k], design, "pooled").pooled_var
            if np.isfinite(sw2) and sw2 > 0:
                out[:, single, k] += rng.normal(0.0, np.sqrt(sw2), size=(B, single.size))
    if M == 0:
        return out
    step = max(1, min(B, chunk_elems // M))
    u = np.empty((step, M))                         # buffers reused by every chunk (cache-sized)
    idx = np.empty((step, M), dtype=np.int64)
    vals = np.empty((step, M))
    for lo in range(0, B, step):
        b = min(B, lo + step) - lo
        ub, ib, vb = u[:b], idx[:b], vals[:b]
        rng.random(out=ub)
        ub *= col_n
        np.copyto(ib, ub, casting="unsafe")         # floor(u · n_h): a uniform draw in 0..n_h−1
        ib += col_start
        np.minimum(ib, col_max, out=ib)             # guard the float rounding of u·n_h up to n_h
        for k in range(K):
            np.take(Xs[:, k], ib, out=vb)
            out[lo:lo + b, multi, k] = np.add.reduceat(vb, seg, axis=1) / mm
    return out


def stratified_bootstrap(values, design: StratifiedDesign, *, n_resamples: int = 2000,
                         rng=None, seed: int | None = None, singleton: str = "pooled",
                         chunk_elems: int = 1 << 20, analytic: dict | None = None) -> dict:
    """Rao–Wu rescaling bootstrap (m_h = n_h − 1) of every estimator (module docstring).

    Returns ``{"pooled", "macro", "post_stratified": Estimate}`` with ``replicates`` (percentile
    intervals; SE = SD of the replicates), plus ``"strata"``: a :class:`StratumTable` with the
    per-stratum replicates.  The pooled replicate is Σ_h (n_h / Q) ȳ*_h, the pooled mean under
    stratified resampling; :func:`pooled_bootstrap` is the i.i.d. bootstrap that ignores strata.
    A mapping of value arrays gives ``{key: {...}}``; all keys share the same resamples (paired).

    Vectorised: a (chunk × Σ(n_h − 1)) block of uniform draws at a time (``chunk_elems``
    elements, buffers reused), gathered with ``np.take`` and summed per stratum with
    ``np.add.reduceat``; no Python loop over strata or single resamples.  ``rng``: a
    ``numpy.random.Generator`` (or a seed for one); ``seed``: an int; not both.
    Deterministic for a given seed, whatever ``chunk_elems``.  ``analytic``: the
    :func:`stratified_estimates` of the same values and design, when already computed (the point
    estimates are not computed again).
    """
    if int(n_resamples) < 2:
        raise InputError("n_resamples must be ≥ 2", fix="e.g. n_resamples=2000")
    gen = as_generator(rng, seed)
    keys, X = _columns(values, design)
    if X.shape[0] == 0:
        raise InputError("no queries to bootstrap", fix="stratify at least one query")
    if analytic is not None:
        points = [analytic] if keys is None else [analytic[k] for k in keys]
    else:
        points = [_estimates(X[:, k], design, singleton, "t") for k in range(X.shape[1])]
    reps = _rao_wu_means(X, design, int(n_resamples), gen, singleton, chunk_elems)
    H = design.n_covered
    n = design.counts[:H].astype(np.float64)
    a_pool = n / n.sum()
    a_macro = np.full(H, 1.0 / H)
    w = None if design.weights is None else design.weights[:H] / design.weights[:H].sum()
    results = []
    for k in range(X.shape[1]):
        point = points[k]
        r = reps[:, :, k]
        res = {}
        for name, a in (("pooled", a_pool), ("macro", a_macro), ("post_stratified", w)):
            if a is None:
                continue
            rk = r @ a
            res[name] = _replace(point[name], standard_error=float(np.std(rk, ddof=1)),
                                 replicates=rk)
        st = per_stratum(X[:, k], design, singleton=singleton)
        res["strata"] = _replace(st, replicates=r)
        results.append(res)
    return _unpack(keys, results)


def pooled_bootstrap(values, *, n_resamples: int = 2000, rng=None, seed: int | None = None,
                     chunk_elems: int = 1 << 23) -> Estimate:
    """The ordinary i.i.d. bootstrap of the pooled mean (ignores strata; for comparison)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise InputError("pooled_bootstrap needs a non-empty 1-D array",
                         fix="pass per-query values")
    gen = as_generator(rng, seed)
    Q, B = len(x), int(n_resamples)
    reps = np.empty(B)
    step = max(1, chunk_elems // Q)
    for lo in range(0, B, step):
        hi = min(B, lo + step)
        reps[lo:hi] = x[gen.integers(0, Q, size=(hi - lo, Q))].mean(axis=1)
    se = float(np.std(reps, ddof=1))
    return Estimate("pooled", float(x.mean()), se, Q - 1.0, Q, 1, replicates=reps)


def paired_comparison(values_a, values_b, design: StratifiedDesign, *, bootstrap: bool = False,
            n_resamples: int = 2000, rng=None, seed: int | None = None,
            singleton: str = "pooled", interval: str = "t") -> PairedComparison:
    """Paired comparison A − B: d_q = a_q − b_q, estimated overall (each estimator) and per stratum.

    Analytic (t / normal) by default; ``bootstrap=True`` uses the stratified Rao–Wu bootstrap.
    """
    d = design.align(values_a) - design.align(values_b)
    if bootstrap:
        res = stratified_bootstrap(d, design, n_resamples=n_resamples, rng=rng, seed=seed,
                                   singleton=singleton)
        table = res.pop("strata")
        return PairedComparison(res, table)
    return PairedComparison(_estimates(d, design, singleton, interval),
                            per_stratum(d, design, singleton=singleton))


def tie_aware_values(result) -> dict:
    """Per-query expected/min/max/oblivious/range/bias of a tie-aware measure result.

    ``result`` is a :class:`~mteb_stratified.core.ranking.results.MeasureResult` or a mapping with
    at least expected/min/max/oblivious arrays.  When the result names its queries
    (``result.queries``), returns ``{key: {qid: value}}``, ready to align with a design by
    query id; otherwise ``{key: array}`` in the given order.
    """
    vals = getattr(result, "values", result)
    try:
        cols = {k: np.asarray(vals[k], dtype=np.float64) for k in ARRANGEMENT_KEYS}
    except KeyError as e:
        raise InputError(f"tie-aware values lack {e.args[0]!r}",
                         fix="pass a MeasureResult or a mapping with expected/min/max/oblivious"
                         ) from None
    cols["range"] = cols["max"] - cols["min"]
    queries = getattr(result, "queries", None)
    pq = PerQuery.from_columns(queries if queries is not None else range(len(cols["expected"])),
                               cols)
    if queries is not None:
        return {k: pq[k] for k in pq}
    return {k: np.array(pq.column(k)) for k in pq}
