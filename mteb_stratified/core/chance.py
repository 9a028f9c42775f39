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

__all__ = ["HeterogeneityResult", "heterogeneity_test", "holm"]

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
    index: dict = {}
    codes = np.fromiter((index.setdefault(lab, len(index)) for lab in labels), np.int64,
                        len(labels))
    keys = list(index)  # in order of first appearance
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
