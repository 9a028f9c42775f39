"""Checks against chance: do the strata differ more than random strata of the same sizes?

A stratification is worth reporting only if its strata carry signal.  The reference is a
*random stratification with exactly the observed stratum sizes*: the same queries, the same
count of strata of each size (1-query strata and all), labels shuffled uniformly.  That is a
permutation of the stratum labels, so every figure here is a permutation test.

Kernels
-------
For per-query values y_i (i = 1..Q) with stratum labels g_i, stratum sizes n_k and means ȳ_k,
grand mean ȳ:

* between-strata sum of squares  SSB = Σ_k n_k (ȳ_k − ȳ)²;  total SST = Σ_i (y_i − ȳ)²;
* η² = SSB / SST, the share of the per-query variance the strata explain (SST is the same
  under every permutation, so SSB, η² and the one-way ANOVA F order permutations identically);
* heterogeneity p-value  p = (1 + #{b : SSB*_b ≥ SSB}) / (1 + B)  over B label permutations
  (never 0; Phipson & Smyth, *Stat. Appl. Genet. Mol. Biol.* 9(1), 2010);
* per stratum k (n_k ≥ ``min_size``): the deviation |ȳ_k − ȳ| against the same permutations,
  p_k = (1 + #{b : |ȳ*_{k,b} − ȳ| ≥ |ȳ_k − ȳ|}) / (1 + B), then Holm's step-down adjustment
  over the tested strata (family-wise error ≤ α; Holm, *Scand. J. Statist.* 6, 1979).

Small strata are part of the permutation (they keep their sizes), so the test stays exact for
any size mix; only the per-stratum tests skip strata below ``min_size``, whose means are
too noisy to single out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .rng import as_generator

__all__ = ["HeterogeneityResult", "heterogeneity_test", "holm", "SplitHalfResult",
           "split_half_reliability", "FlipResult", "flip_test"]

_CHUNK_ENTRIES = 4_000_000  # permutations are drawn in chunks of about this many labels


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as given).

    With p sorted ascending, p_(1) ≤ … ≤ p_(m):  p̃_(j) = max_{i ≤ j} min(1, (m − i + 1) p_(i)).
    Rejecting every p̃ ≤ α keeps the family-wise error rate ≤ α under any dependence.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("p-values must be a 1-D array of numbers in [0, 1]",
                         fix="pass the raw p-values of the tests to correct")
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(stepped)
    out = np.empty(m)
    out[order] = adjusted
    return out


@dataclass(frozen=True)
class HeterogeneityResult:
    """A permutation test of stratum heterogeneity (see the module docstring).

    ``eta_squared`` is the observed η²; ``null_eta_squared`` its mean over the random
    stratifications, with the 95% point ``null_eta_squared_95``; ``p_value`` the heterogeneity
    p-value.  ``strata`` lists, for every stratum with n ≥ ``min_size``: label, n, mean,
    deviation from the grand mean, raw and Holm-adjusted p-values.
    """

    statistic: float
    eta_squared: float
    null_eta_squared: float
    null_eta_squared_95: float
    p_value: float
    n_resamples: int
    n_queries: int
    n_strata: int
    min_size: int
    strata: tuple

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value <= alpha

    def differing_strata(self, alpha: float = 0.05) -> list:
        """Strata whose mean differs from the rest beyond chance (Holm-adjusted p ≤ α)."""
        return [s for s in self.strata if s["p_holm"] <= alpha]

    def to_dict(self) -> dict:
        return {"statistic": "between-strata sum of squares SSB (eta^2 = SSB / SST)",
                "ssb": self.statistic, "eta_squared": self.eta_squared, "null_eta_squared": self.null_eta_squared,
                "null_eta_squared_95": self.null_eta_squared_95, "p_value": self.p_value,
                "n_resamples": self.n_resamples, "n_queries": self.n_queries,
                "n_strata": self.n_strata, "min_size": self.min_size,
                "null": "random strata of the same sizes (label permutations)",
                "correction": "Holm", "strata": [dict(s) for s in self.strata]}


def _codes(labels) -> tuple[np.ndarray, list]:
    """Integer codes of any hashable labels, and the labels in order of first appearance."""
    index: dict = {}
    codes = np.fromiter((index.setdefault(lab, len(index)) for lab in labels), np.int64,
                        len(labels))
    return codes, list(index)


def heterogeneity_test(values, labels, *, n_resamples: int = 2000, min_size: int = 5,
                       rng=None, seed: int | None = None) -> HeterogeneityResult:
    """Permutation test: do strata ``labels`` explain more of ``values`` than random strata of
    the same sizes?  ``rng`` (a ``numpy.random.Generator``) or ``seed`` makes it reproducible.
    """
    y = np.asarray(values, dtype=np.float64)
    labels = list(labels)  # any hashable labels: ints, strings, (cluster, Δ, J) tuples
    if y.ndim != 1 or len(labels) != y.size:
        raise InputError("values and labels must be 1-D arrays of the same length",
                         fix="pass one value and one stratum label per query")
    if y.size < 2 or not np.all(np.isfinite(y)):
        raise InputError("the test needs at least 2 finite per-query values",
                         fix="pass the per-query values of the stratified queries")
    if int(n_resamples) < 1:
        raise InputError(f"n_resamples must be ≥ 1, got {n_resamples}", fix="e.g. 2000")
    rng = as_generator(rng, seed)
    codes, keys = _codes(labels)
    k = len(keys)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    grand = y.mean()
    sst = float(np.sum((y - grand) ** 2))
    means = np.bincount(codes, weights=y, minlength=k) / n
    ssb = float(np.sum(n * (means - grand) ** 2))
    tested = np.flatnonzero(n >= min_size)
    dev = np.abs(means - grand)

    q = y.size
    b_total = int(n_resamples)
    null_ssb = np.empty(b_total)
    exceed = np.zeros(k)
    per_chunk = max(1, _CHUNK_ENTRIES // q)
    done = 0
    while done < b_total:
        c = min(per_chunk, b_total - done)
        # c uniform permutations of the labels: random strata of the observed sizes
        shuffled = rng.permuted(np.broadcast_to(codes, (c, q)), axis=1)
        flat = shuffled + (np.arange(c) * k)[:, None]
        sums = np.bincount(flat.ravel(), weights=np.broadcast_to(y, (c, q)).ravel(),
                           minlength=c * k).reshape(c, k)
        m_star = sums / n
        null_ssb[done:done + c] = np.sum(n * (m_star - grand) ** 2, axis=1)
        exceed += np.sum(np.abs(m_star - grand) >= dev - 1e-12 * max(1.0, abs(grand)), axis=0)
        done += c
    tol = 1e-12 * max(1.0, sst)
    p = (1 + np.sum(null_ssb >= ssb - tol)) / (1 + b_total)
    p_strata = (1 + exceed[tested]) / (1 + b_total)
    adj = holm(p_strata)
    strata = tuple({"stratum": keys[i].item() if hasattr(keys[i], "item") else keys[i],
                    "n": int(n[i]), "mean": float(means[i]),
                    "deviation": float(means[i] - grand), "p": float(pi), "p_holm": float(ai)}
                   for i, pi, ai in zip(tested.tolist(), p_strata.tolist(), adj.tolist()))
    eta = ssb / sst if sst > 0 else 0.0
    null_eta = null_ssb / sst if sst > 0 else np.zeros_like(null_ssb)
    return HeterogeneityResult(statistic=ssb, eta_squared=float(eta),
                               null_eta_squared=float(null_eta.mean()),
                               null_eta_squared_95=float(np.quantile(null_eta, 0.95)),
                               p_value=float(p), n_resamples=b_total, n_queries=int(q),
                               n_strata=int(k), min_size=int(min_size), strata=strata)


def _split_half_r(y: np.ndarray, codes: np.ndarray, k: int, n_splits: int, rng) -> float:
    """Mean over random within-stratum halvings of Pearson r between the halves' stratum means."""
    rs = []
    n = np.bincount(codes, minlength=k)
    usable = n >= 2
    if usable.sum() < 3:
        return float("nan")
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    for _ in range(n_splits):
        # within each stratum, a random half (the odd one out to a random side) goes to A
        u = rng.random(y.size)
        order = np.lexsort((u, codes))
        rank = np.empty(y.size, dtype=np.int64)
        rank[order] = np.arange(y.size) - np.repeat(starts, n)
        half = np.floor(n / 2 + rng.random(k) * (n % 2)).astype(np.int64)
        in_a = rank < half[codes]
        na = np.bincount(codes[in_a], minlength=k)
        nb = n - na
        ok = usable & (na > 0) & (nb > 0)
        ma = np.bincount(codes[in_a], weights=y[in_a], minlength=k)[ok] / na[ok]
        mb = np.bincount(codes[~in_a], weights=y[~in_a], minlength=k)[ok] / nb[ok]
        if ma.size < 3 or ma.std() == 0 or mb.std() == 0:
            continue
        rs.append(float(np.corrcoef(ma, mb)[0, 1]))
    return float(np.mean(rs)) if rs else float("nan")


@dataclass(frozen=True)
class SplitHalfResult:
    """Split-half reliability of stratum means, against random strata of the same sizes.

    ``r``: the mean Pearson correlation, across strata with n ≥ 2, between the stratum means of
    two random halves of each stratum's queries; ``spearman_brown`` = 2r / (1 + r), the
    reliability of means over whole strata; ``null_r``: the same r for random strata (label
    permutations), mean and 95% point; ``p_value`` = (1 + #{null r ≥ r}) / (1 + B).
    """

    r: float
    spearman_brown: float
    null_r: float
    null_r_95: float
    p_value: float
    n_splits: int
    n_resamples: int
    n_strata: int

    def to_dict(self) -> dict:
        """JSON-ready; a figure that could not be computed (fewer than 3 strata with 2 or
        more queries) is None."""
        def f(x):
            return float(x) if np.isfinite(x) else None

        return {"r": f(self.r), "spearman_brown": f(self.spearman_brown),
                "null_r": f(self.null_r), "null_r_95": f(self.null_r_95),
                "p_value": f(self.p_value),
                "n_splits": self.n_splits, "n_resamples": self.n_resamples,
                "n_strata_used": self.n_strata,
                "null": "random strata of the same sizes (label permutations)"}


def split_half_reliability(values, labels, *, n_splits: int = 100, n_resamples: int = 200,
                           rng=None, seed: int | None = None) -> SplitHalfResult:
    """Do stratum means replicate across halves of the queries beyond chance?

    Kernel: split each stratum's queries at random into halves A and B (sizes ⌊n/2⌋ and ⌈n/2⌉,
    the odd one to a random side); r = corr_k(ȳ_k^A, ȳ_k^B) over strata with n_k ≥ 2, averaged
    over ``n_splits`` splits; Spearman–Brown ρ = 2r / (1 + r).  The null repeats it (with
    ``max(10, n_splits // 10)`` splits) on ``n_resamples`` random strata of the observed sizes.
    """
    y = np.asarray(values, dtype=np.float64)
    labels = list(labels)
    if y.ndim != 1 or len(labels) != y.size or not np.all(np.isfinite(y)):
        raise InputError("values and labels must be 1-D, finite and of the same length",
                         fix="pass one value and one stratum label per query")
    if int(n_splits) < 1 or int(n_resamples) < 1:
        raise InputError("n_splits and n_resamples must be ≥ 1", fix="e.g. 100 and 200")
    rng = as_generator(rng, seed)
    codes, keys = _codes(labels)
    k = len(keys)
    r = _split_half_r(y, codes, k, int(n_splits), rng)
    null_splits = max(10, int(n_splits) // 10)
    null = np.array([_split_half_r(y, rng.permutation(codes), k, null_splits, rng)
                     for _ in range(int(n_resamples))])
    null = null[np.isfinite(null)]
    sb = 2 * r / (1 + r) if np.isfinite(r) and r > -1 else float("nan")
    p = ((1 + np.sum(null >= r - 1e-12)) / (1 + null.size)) if np.isfinite(r) and null.size \
        else float("nan")
    n_used = int(np.sum(np.bincount(codes, minlength=k) >= 2))
    return SplitHalfResult(float(r), float(sb),
                           float(null.mean()) if null.size else float("nan"),
                           float(np.quantile(null, 0.95)) if null.size else float("nan"),
                           float(p), int(n_splits), int(null.size), n_used)


def _flips(d: np.ndarray, codes: np.ndarray, k: int, min_size: int, alpha: float,
           overall: float) -> tuple[int, int, int]:
    """(tested strata, strata whose mean difference has the opposite sign, significant ones)."""
    from scipy import stats

    n = np.bincount(codes, minlength=k)
    tested = np.flatnonzero(n >= min_size)
    if tested.size == 0 or overall == 0:
        return int(tested.size), 0, 0
    sums = np.bincount(codes, weights=d, minlength=k)
    sq = np.bincount(codes, weights=d * d, minlength=k)
    m = sums[tested] / n[tested]
    var = (sq[tested] - n[tested] * m * m) / np.maximum(n[tested] - 1, 1)
    se = np.sqrt(np.maximum(var, 0) / n[tested])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, m / se, 0.0)
    p = 2 * stats.t.sf(np.abs(t), np.maximum(n[tested] - 1, 1))
    p = np.where(se > 0, p, 1.0)
    opposite = np.sign(m) == -np.sign(overall)
    sig = holm(p) <= alpha
    return int(tested.size), int(opposite.sum()), int((opposite & sig).sum())


@dataclass(frozen=True)
class FlipResult:
    """Per-stratum order flips of two systems, against random strata of the same sizes.

    A stratum (n ≥ ``min_size``) *flips* when its mean paired difference a − b has the opposite
    sign to the overall mean difference; the flip is *significant* when a paired t-test of that
    stratum's differences, Holm-corrected over the tested strata, has p ≤ α.  The rates are
    per tested stratum; ``null_*`` are their means over random strata (label permutations).
    """

    tested: int
    flips: int
    significant_flips: int
    flip_rate: float
    null_flip_rate: float
    significant_rate: float
    null_significant_rate: float
    p_value: float
    n_resamples: int
    alpha: float

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {
            "test": "paired t per stratum, Holm over tested strata",
            "null": "random strata of the same sizes (label permutations)"}


def flip_test(a, b, labels, *, min_size: int = 5, alpha: float = 0.05, n_resamples: int = 500,
              rng=None, seed: int | None = None) -> FlipResult:
    """Flips of system ``a`` against ``b`` across strata, next to the flip rate of random strata.

    ``p_value``: the share of random stratifications with at least as many flips as observed
    (the observed strata flip more than chance when it is small).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    labels = list(labels)
    if a.shape != b.shape or a.ndim != 1 or len(labels) != a.size \
            or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("a, b and labels must be 1-D, finite and of the same length",
                         fix="pass both systems' per-query values on the same queries")
    rng = as_generator(rng, seed)
    d = a - b
    overall = float(d.mean())
    codes, keys = _codes(labels)
    k = len(keys)
    tested, flips, sig = _flips(d, codes, k, min_size, alpha, overall)
    null = np.array([_flips(d, rng.permutation(codes), k, min_size, alpha, overall)
                     for _ in range(int(n_resamples))], dtype=np.float64).reshape(-1, 3)
    denom = max(tested, 1)
    p = (1 + np.sum(null[:, 1] >= flips)) / (1 + len(null))
    return FlipResult(tested, flips, sig, flips / denom, float(null[:, 1].mean() / denom),
                      sig / denom, float(null[:, 2].mean() / denom), float(p),
                      int(n_resamples), float(alpha))
