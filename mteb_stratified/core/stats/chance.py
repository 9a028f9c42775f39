"""Checks against chance: do the strata differ more than random strata of the same sizes?

A stratification is worth reporting only if its strata carry signal.  The reference is a
*random stratification with exactly the observed stratum sizes*: the same queries, the same
count of strata of each size, labels shuffled uniformly.  That is a permutation of the stratum
labels, so every figure here is a permutation test, exact in level for any size mix.
Type I error and power of each test on real per-query scores: :mod:`.power` and
``benchmarks/strata_power.py``.

Kernels
-------
For per-query values y_i (i = 1..Q) with stratum labels g_i, stratum sizes n_k, sums S_k and
means ȳ_k, grand mean ȳ, total sum of squares SST = Σ_i (y_i − ȳ)², s² = SST / (Q − 1):

* **omnibus** (one-way, between strata): SSB = Σ_k n_k (ȳ_k − ȳ)², η² = SSB / SST (SST is the
  same under every permutation, so SSB, η² and the ANOVA F order permutations identically);
* **max-|z|** (one stratum apart from the rest): z_k = (S_k − n_k ȳ) / (s √(n_k (Q − n_k)
  / Q)), the deviation of stratum k's sum standardised by its exact permutation standard
  deviation (a stratum's sum is that of n_k draws without replacement from the Q values);
  T = max_k |z_k| over the tested strata (n_k ≥ ``min_size``).  Per stratum, the
  Westfall–Young single-step adjusted p-value p̃_k = (1 + #{b : T*_b ≥ |z_k|}) / (1 + B)
  (Westfall & Young 1993, *Resampling-Based Multiple Testing*, algorithm 2.5) keeps the
  family-wise error ≤ α exactly under the complete null (random strata); strong control when
  only some strata differ would need subset pivotality, which relabelling does not guarantee;
* **flip strength** of a paired difference d = a − b: F = Σ_{k tested, ȳ_k ȳ < 0} n_k ȳ_k² / s²,
  the (uncentred) size of the strata whose mean difference has the opposite sign to the
  overall one (a continuous statistic, so the test is exact in level; the counts of
  flips and of per-stratum significant flips are reported next to it);
* **split-half**: split each stratum's queries at random into halves A and B; r = the Pearson
  correlation, across strata with n_k ≥ 2, of the halves' stratum means, averaged over
  ``n_splits`` splits.  The null applies the same ``n_splits`` splits to each random
  stratification, so observed and null r average the same number of splits;
* every p-value  p = (1 + #{b : T*_b ≥ T}) / (1 + B)  over B label permutations (never 0;
  Phipson & Smyth, *Stat. Appl. Genet. Mol. Biol.* 9(1), 2010);
* per stratum, the paired difference against 0 (:func:`stratum_differences`): under the null
  that a and b are exchangeable on every query the signs of d_i are random, so S_k has
  standard deviation √(Σ_{i∈k} d_i²) exactly; z_k = S_k / √(Σ_{i∈k} d_i²), with Westfall–Young
  adjusted p-values from random sign flips (strata are disjoint, so the sign-flip version has
  subset pivotality and strong family-wise control; Holm's step-down adjustment over per-stratum
  t-tests was conservative on nDCG differences, which are 0 for many queries: a measured
  family-wise error of 0.000–0.035 at α = 0.05 on NFCorpus dev).

The batched kernel :func:`permutation_pvalues` gives one p-value per row of a matrix of values
with one set of B relabellings; the single-call tests use the same kernel with one row, so the
power harness measures exactly what the report computes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np

from ..errors import InputError
from ..options import ALPHA
from ..rng import as_generator

__all__ = ["StratumDeviation", "SignFlipStratum", "HeterogeneityResult", "heterogeneity_test",
           "holm", "SplitHalfResult", "split_half_reliability", "FlipResult", "flip_test",
           "PairedHeterogeneityResult", "paired_heterogeneity_test", "StratumDifferences",
           "stratum_differences", "permutation_pvalues", "split_half_pvalues",
           "stratum_difference_rejections", "label_codes", "STATISTICS", "SPLIT_HALF_SPLITS",
           "SPLIT_HALF_RESAMPLES"]

#: The permutation statistics of :func:`permutation_pvalues`.
STATISTICS = ("omnibus", "max_z", "flip")
#: The split-half settings the strata block uses (and the power harness measures).
SPLIT_HALF_SPLITS = 200
SPLIT_HALF_RESAMPLES = 199
_BLOCK = 4_000_000   # entries of one (rows × relabellings × strata) block
_DENSE_MAX_K = 160   # up to this many strata, sums are one-hot matrix products (BLAS)
_PARTITION_MAX_K = 16   # up to this many strata, halves by partial sorts (then one argsort)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as given).

    With p sorted ascending, p_(1) ≤ … ≤ p_(m):  p̃_(j) = max_{i ≤ j} min(1, (m − i + 1) p_(i)).
    Rejecting every p̃ ≤ α keeps the family-wise error rate ≤ α under any dependence.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("p-values must be a 1-D array of numbers in [0, 1]",
                         fix="pass the raw p-values of the tests to correct")
    return _holm_rows(p[None, :])[0] if p.size else p.copy()


def _holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm's adjustment of every row of a 2-D array of p-values."""
    m = p.shape[1]
    order = np.argsort(p, axis=1, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * np.take_along_axis(p, order, axis=1))
    adjusted = np.maximum.accumulate(stepped, axis=1)
    out = np.empty_like(p)
    np.put_along_axis(out, order, adjusted, axis=1)
    return out


# ---------------------------------------------------------------------------------------------
# the kernel: stratum sums of many value rows under many labellings
# ---------------------------------------------------------------------------------------------

def label_codes(labels) -> tuple[np.ndarray, list]:
    """``(codes, keys)``: an int64 code per label (0, 1, ... in order of first appearance) for
    any hashable labels (ints, strings, ``(cluster, Δ, J)`` tuples), and the labels of the
    codes in that order (``keys[codes[i]] == labels[i]``)."""
    index: dict = {}
    codes = np.fromiter((index.setdefault(lab, len(index)) for lab in labels), np.int64,
                        len(labels))
    return codes, list(index)


def _check_values(y, labels, what: str = "values") -> tuple[np.ndarray, np.ndarray, list]:
    y = np.asarray(y, dtype=np.float64)
    labels = list(labels)  # any hashable labels: ints, strings, (cluster, Δ, J) tuples
    if y.ndim != 1 or len(labels) != y.size:
        raise InputError(f"{what} and labels must be 1-D arrays of the same length",
                         fix="pass one value and one stratum label per query")
    if y.size < 2 or not np.all(np.isfinite(y)):
        raise InputError("the test needs at least 2 finite per-query values",
                         fix="pass the per-query values of the stratified queries")
    codes, keys = label_codes(labels)
    return y, codes, keys


def _check_resamples(n_resamples) -> int:
    if isinstance(n_resamples, bool) or int(n_resamples) < 1:
        raise InputError(f"n_resamples must be ≥ 1, got {n_resamples}", fix="e.g. 2000")
    return int(n_resamples)


class _Relabellings:
    """The observed labelling, then B uniform permutations of it, drawn block by block (at most
    ``_BLOCK`` labels a block) from one seed per block: memory stays bounded for any Q and B,
    and the same labellings come back each time the blocks are walked."""

    def __init__(self, codes: np.ndarray, n_resamples: int, rng) -> None:
        self.codes = codes
        self.n = n_resamples + 1
        self.size = max(1, _BLOCK // max(codes.size, 1))
        self.seeds = rng.integers(0, 2**63 - 1, size=-(-self.n // self.size))

    def blocks(self):
        """``(first index, labels (c, Q))`` per block; row 0 of the first is the observed."""
        Q = self.codes.size
        for i, seed in enumerate(self.seeds.tolist()):
            lo = i * self.size
            c = min(self.n, lo + self.size) - lo
            L = np.random.default_rng(seed).permuted(np.broadcast_to(self.codes, (c, Q)),
                                                     axis=1)
            if lo == 0:
                L[0] = self.codes
            yield lo, L


def _block_sums(Y: np.ndarray, L: np.ndarray, k: int) -> np.ndarray:
    """(R, c, k) stratum sums of the rows of Y (R, Q) under the labellings L (c, Q)."""
    R, Q = Y.shape
    c = L.shape[0]
    if k <= _DENSE_MAX_K:
        onehot = np.zeros((Q, c * k))
        onehot[np.arange(Q)[None, :], np.arange(c)[:, None] * k + L] = 1.0
        return (Y @ onehot).reshape(R, c, k)
    idx = (np.arange(R)[:, None, None] * (c * k) + (np.arange(c)[:, None] * k)[None]
           + L[None]).ravel()
    w = np.broadcast_to(Y[:, None, :], (R, c, Q)).ravel()
    return np.bincount(idx, weights=w, minlength=R * c * k).reshape(R, c, k)


def _all_sums(y: np.ndarray, rel: _Relabellings, k: int) -> np.ndarray:
    """(1 + B, k) stratum sums of one value row under every labelling."""
    return _reduce(y[None, :], rel, k, lambda S, S2, rows: S, width=k)[0]


def _reduce(Y: np.ndarray, rel: _Relabellings, k: int, stat, squares: bool = False,
            width: int | None = None) -> np.ndarray:
    """(R, 1 + B) = stat(S, S2, rows) over blocks of rows of Y and of the relabellings
    (bounded memory); ``width``: stat returns (r, c, width) instead of (r, c)."""
    R, Q = Y.shape
    per = Q if k > _DENSE_MAX_K else k
    n_lab = max(1, _BLOCK // max(1, Q * k if k <= _DENSE_MAX_K else Q))
    n_row = max(1, min(R, _BLOCK // max(1, n_lab * per)))
    out = np.empty((R, rel.n) if width is None else (R, rel.n, width))
    Y2 = Y * Y if squares else None
    for lo, L in rel.blocks():
        for c0 in range(0, L.shape[0], n_lab):
            Lc = L[c0:c0 + n_lab]
            cols = slice(lo + c0, lo + c0 + Lc.shape[0])
            for r0 in range(0, R, n_row):
                rows = slice(r0, min(R, r0 + n_row))
                S = _block_sums(Y[rows], Lc, k)
                S2 = _block_sums(Y2[rows], Lc, k) if squares else None
                out[rows, cols] = stat(S, S2, rows)
    return out


@dataclass(frozen=True)
class _Moments:
    """Per-row totals of a value matrix (permutation invariants)."""

    Q: int
    total: np.ndarray   # (R,)
    sst: np.ndarray     # (R,)

    @classmethod
    def of(cls, Y: np.ndarray) -> "_Moments":
        tot = Y.sum(axis=1)
        sst = np.maximum((Y * Y).sum(axis=1) - tot * tot / Y.shape[1], 0.0)
        return cls(Y.shape[1], tot, sst)


def _omnibus(n: np.ndarray, mo: _Moments):
    def stat(S, S2, rows):
        return (S * S / n).sum(axis=2) - (mo.total[rows] ** 2 / mo.Q)[:, None]
    return stat


def _z_scale(n: np.ndarray, Q: int, tested: np.ndarray) -> np.ndarray:
    """√(n_k (Q − n_k) / Q) for tested strata with 0 < n_k < Q, else inf (z = 0)."""
    v = n * (Q - n) / max(Q, 1)
    ok = tested & (v > 0)
    return np.where(ok, np.sqrt(np.where(ok, v, 1.0)), np.inf)


def _z(S, n, mo: _Moments, rows, scale) -> np.ndarray:
    mean = mo.total[rows] / mo.Q
    sd = np.sqrt(mo.sst[rows] / max(mo.Q - 1, 1))
    sd = np.where(sd > 0, sd, np.inf)
    return (S - n * mean[:, None, None]) / scale / sd[:, None, None]


def _max_z(n: np.ndarray, mo: _Moments, tested: np.ndarray):
    scale = _z_scale(n, mo.Q, tested)

    def stat(S, S2, rows):
        return np.abs(_z(S, n, mo, rows, scale)).max(axis=2)
    return stat


def _flip(n: np.ndarray, mo: _Moments, tested: np.ndarray):
    def stat(S, S2, rows):
        var = mo.sst[rows] / max(mo.Q - 1, 1)
        var = np.where(var > 0, var, np.inf)
        opposite = (S * mo.total[rows][:, None, None] < 0) & tested
        return np.where(opposite, S * S / n, 0.0).sum(axis=2) / var[:, None]
    return stat


def _statistic(name: str, n, mo, tested):
    if name == "omnibus":
        return _omnibus(n, mo)
    if name == "max_z":
        return _max_z(n, mo, tested)
    if name == "flip":
        return _flip(n, mo, tested)
    raise InputError(f"unknown permutation statistic {name!r}",
                     fix=f"use one of {', '.join(STATISTICS)}")


def _pvalues(T: np.ndarray) -> np.ndarray:
    """p per row of T (R, 1 + B): column 0 observed, the rest the permutations."""
    obs = T[:, :1]
    tol = 1e-12 * np.maximum(1.0, np.abs(obs))
    return (1 + np.sum(T[:, 1:] >= obs - tol, axis=1)) / T.shape[1]


def permutation_pvalues(Y, labels, statistic: str = "omnibus", *, n_resamples: int = 2000,
                        min_size: int = 5, rng=None, seed: int | None = None) -> np.ndarray:
    """One permutation p-value per row of ``Y`` (R, Q) for stratum ``labels`` (Q,).

    ``statistic``: ``"omnibus"`` (SSB), ``"max_z"`` or ``"flip"`` (module docstring); the same
    B relabellings serve every row (drawn from ``rng``/``seed`` as the single-call tests draw
    theirs, so a one-row call equals :func:`heterogeneity_test`'s p-value with the same seed).
    ``min_size``: strata below it are not tested by max-|z| and flip (they still move).
    """
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    labels = list(labels)
    if Y.ndim != 2 or Y.shape[1] != len(labels) or Y.shape[1] < 2 \
            or not np.all(np.isfinite(Y)):
        raise InputError("Y must be a finite (rows, queries) matrix with one label per query",
                         fix="pass one row of per-query values per draw")
    B = _check_resamples(n_resamples)
    codes, keys = label_codes(labels)
    k = len(keys)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    rel = _Relabellings(codes, B, as_generator(rng, seed))
    tested = n >= (max(2, min_size) if statistic == "flip" else min_size)
    stat = _statistic(statistic, n, _Moments.of(Y), tested)
    return _pvalues(_reduce(Y, rel, k, stat))


# ---------------------------------------------------------------------------------------------
# one system: heterogeneity
# ---------------------------------------------------------------------------------------------

class _TestResult:
    """scipy-style access to a test result: ``statistic`` and ``pvalue`` attributes, and
    ``statistic, pvalue = result`` unpacks as scipy's results do.  ``p_value`` is the same
    figure under its older name, the key the JSON files keep (:meth:`to_dict`)."""

    __slots__ = ()

    def __iter__(self):
        return iter((self.statistic, self.pvalue))

    @property
    def p_value(self) -> float:
        return self.pvalue


def _stratum_json(stratum):
    """A stratum key as JSON has it (a cell or tuple label: a list)."""
    return list(stratum) if isinstance(stratum, tuple) else stratum


def _stratum_key(stratum):
    """A stratum key as a row keeps it (a list read from JSON: a tuple)."""
    return tuple(stratum) if isinstance(stratum, list) else stratum


@dataclass(frozen=True)
class StratumDeviation:
    """One tested stratum (n ≥ ``min_size``) of :func:`heterogeneity_test` or
    :func:`paired_heterogeneity_test`: does its mean stand apart from the rest?

    Attributes
    ----------
    stratum : the stratum's label (a cell or any tuple label: a tuple).
    n : its queries.
    mean : its mean value (of a − b in the paired test).
    deviation : that mean minus the grand mean.
    z : its standardised deviation.
    p : the raw max-|z| permutation p-value.
    p_adjusted : the Westfall–Young adjusted p-value (family-wise over the tested strata).
    name, label : the stratum's unit of the cluster tree and its label, when the caller named
        it (a stratified summary does); None otherwise.
    """

    stratum: object
    n: int
    mean: float
    deviation: float
    z: float
    p: float
    p_adjusted: float
    name: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stratum", _stratum_key(self.stratum))

    def to_dict(self) -> dict:
        """The JSON row: stratum, n, mean, deviation, z, p, p_adjusted (then name and label
        when named)."""
        out = {"stratum": _stratum_json(self.stratum), "n": self.n, "mean": self.mean,
               "deviation": self.deviation, "z": self.z, "p": self.p,
               "p_adjusted": self.p_adjusted}
        if self.name is not None:
            out |= {"name": self.name, "label": self.label}
        return out

    @classmethod
    def from_dict(cls, d: Mapping) -> "StratumDeviation":
        """The row :meth:`to_dict` wrote."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass(frozen=True)
class SignFlipStratum:
    """One tested stratum (n ≥ ``min_size``) of :func:`stratum_differences`: is a − b ≠ 0
    there?

    Attributes
    ----------
    stratum : the stratum's label (a cell or any tuple label: a tuple).
    n : its queries.
    mean_difference : its mean a − b, with its descriptive 95% t interval ``ci_low``,
        ``ci_high``.
    z : the sign-flip z of its sum of a − b.
    p_adjusted : the Westfall–Young adjusted p-value (family-wise over the tested strata).
    winner : "a" or "b", the system ahead there when p_adjusted ≤ α; None otherwise.
    """

    stratum: object
    n: int
    mean_difference: float
    ci_low: float
    ci_high: float
    z: float
    p_adjusted: float
    winner: str | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stratum", _stratum_key(self.stratum))

    def to_dict(self) -> dict:
        """The JSON row, its keys in the order of the attributes."""
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "stratum": _stratum_json(self.stratum)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "SignFlipStratum":
        """The row :meth:`to_dict` wrote."""
        return cls(**{f.name: d[f.name] for f in fields(cls)})


def _json_keys(d: dict) -> dict:
    """A result's fields under the keys the JSON files have always used (``p_value``,
    ``omnibus_p_value``)."""
    return {{"pvalue": "p_value", "omnibus_pvalue": "omnibus_p_value"}.get(k, k): v
            for k, v in d.items()}


@dataclass(frozen=True)
class HeterogeneityResult(_TestResult):
    """A permutation test of stratum heterogeneity (see the module docstring).

    ``eta_squared`` is the observed η²; ``null_eta_squared`` its mean over the random
    stratifications, with the 95% point ``null_eta_squared_95``; ``statistic`` the SSB and
    ``pvalue`` its omnibus permutation p-value (``statistic, pvalue = result``).  ``strata``
    holds a :class:`StratumDeviation` for every stratum with n ≥ ``min_size``: label, n, mean,
    deviation from the grand mean, z, the raw max-|z| permutation p and the Westfall–Young
    adjusted ``p_adjusted`` (family-wise error ≤ α over the tested strata).
    """

    statistic: float
    eta_squared: float
    null_eta_squared: float
    null_eta_squared_95: float
    pvalue: float
    n_resamples: int
    n_queries: int
    n_strata: int
    min_size: int
    strata: tuple

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.pvalue <= alpha

    def differing_strata(self, alpha: float = ALPHA) -> list:
        """Strata whose mean differs from the rest beyond chance (adjusted p ≤ α)."""
        return [s for s in self.strata if s.p_adjusted <= alpha]

    def to_dict(self) -> dict:
        return {"statistic": "between-strata sum of squares SSB (eta^2 = SSB / SST)",
                "ssb": self.statistic, "eta_squared": self.eta_squared,
                "null_eta_squared": self.null_eta_squared,
                "null_eta_squared_95": self.null_eta_squared_95, "p_value": self.pvalue,
                "n_resamples": self.n_resamples, "n_queries": self.n_queries,
                "n_strata": self.n_strata, "min_size": self.min_size,
                "null": "random strata of the same sizes (label permutations)",
                "correction": "Westfall–Young max-|z| (single step)",
                "strata": [s.to_dict() for s in self.strata]}


def _stratum_rows(y, codes, keys, rel: _Relabellings, min_size) -> tuple:
    """Per tested stratum: n, mean, deviation, z, raw and Westfall–Young p (one value row)."""
    k = len(keys)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    tested = n >= min_size
    mo = _Moments.of(y[None, :])
    S = _all_sums(y, rel, k)
    z = _z(S[None], n, mo, slice(0, 1), _z_scale(n, mo.Q, tested))[0]   # (1 + B, k)
    az = np.abs(z)
    tmax = az.max(axis=1)
    idx = np.flatnonzero(tested & np.isfinite(_z_scale(n, mo.Q, tested)))
    B = rel.n - 1
    rows = []
    grand = y.mean()
    for i in idx.tolist():
        obs = az[0, i] - 1e-12 * max(1.0, az[0, i])
        mean = S[0, i] / n[i]
        rows.append(StratumDeviation(
            keys[i].item() if hasattr(keys[i], "item") else keys[i], n=int(n[i]),
            mean=float(mean), deviation=float(mean - grand), z=float(z[0, i]),
            p=float((1 + np.sum(az[1:, i] >= obs)) / (1 + B)),
            p_adjusted=float((1 + np.sum(tmax[1:] >= obs)) / (1 + B))))
    return tuple(rows), S


def heterogeneity_test(values, labels, *, n_resamples: int = 2000, min_size: int = 5,
                       rng=None, seed: int | None = None) -> HeterogeneityResult:
    """Permutation test: do strata ``labels`` explain more of ``values`` than random strata of
    the same sizes?  ``rng`` (a ``numpy.random.Generator``) or ``seed`` makes it reproducible.
    """
    y, codes, keys = _check_values(values, labels)
    B = _check_resamples(n_resamples)
    k = len(keys)
    rel = _Relabellings(codes, B, as_generator(rng, seed))
    n = np.bincount(codes, minlength=k).astype(np.float64)
    mo = _Moments.of(y[None, :])
    ssb_all = _reduce(y[None, :], rel, k, _omnibus(n, mo))[0]
    strata, _ = _stratum_rows(y, codes, keys, rel, min_size)
    sst = float(mo.sst[0])
    ssb = float(ssb_all[0])
    eta = ssb / sst if sst > 0 else 0.0
    null_eta = ssb_all[1:] / sst if sst > 0 else np.zeros(B)
    return HeterogeneityResult(statistic=ssb, eta_squared=float(eta),
                               null_eta_squared=float(null_eta.mean()),
                               null_eta_squared_95=float(np.quantile(null_eta, 0.95)),
                               pvalue=float(_pvalues(ssb_all[None, :])[0]), n_resamples=B,
                               n_queries=int(y.size), n_strata=int(k), min_size=int(min_size),
                               strata=strata)


# ---------------------------------------------------------------------------------------------
# two systems: the paired difference
# ---------------------------------------------------------------------------------------------

def _paired(a, b, labels) -> tuple[np.ndarray, np.ndarray, list]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    labels = list(labels)
    if a.shape != b.shape or a.ndim != 1 or len(labels) != a.size \
            or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("a, b and labels must be 1-D, finite and of the same length",
                         fix="pass both systems' per-query values on the same queries")
    return _check_values(a - b, labels, "a − b")


@dataclass(frozen=True)
class PairedHeterogeneityResult(_TestResult):
    """Does the difference a − b vary across strata more than across random strata?

    ``statistic, pvalue`` are the max-|z| test's (one stratum whose gap stands apart; the
    primary test, chosen on NFCorpus dev by power), ``omnibus_statistic, omnibus_pvalue`` the
    SSB test's of the differences;
    ``mean_difference`` the overall mean of a − b; ``strata`` a :class:`StratumDeviation` per
    tested stratum: n, mean difference, its deviation from the overall one, z, raw and
    Westfall–Young adjusted p.
    """

    mean_difference: float
    statistic: float
    pvalue: float
    omnibus_statistic: float
    omnibus_pvalue: float
    eta_squared: float
    null_eta_squared: float
    n_resamples: int
    n_queries: int
    n_strata: int
    min_size: int
    strata: tuple

    @property
    def omnibus_p_value(self) -> float:
        return self.omnibus_pvalue

    def significant(self, alpha: float = ALPHA) -> bool:
        """True when the max-|z| test finds the gap varying across strata (p ≤ α)."""
        return self.pvalue <= alpha

    def deviating_strata(self, alpha: float = ALPHA) -> list:
        """Strata whose mean a − b stands apart from the rest (adjusted p ≤ α)."""
        return [s for s in self.strata if s.p_adjusted <= alpha]

    def to_dict(self) -> dict:
        return _json_keys({k: getattr(self, k) for k in self.__dataclass_fields__
                           if k != "strata"}) | {
            "test": "max-|z| of the stratum sums of a − b (Westfall–Young per stratum); "
                    "omnibus: between-strata SS of a − b",
            "null": "random strata of the same sizes (label permutations)",
            "strata": [s.to_dict() for s in self.strata]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "PairedHeterogeneityResult":
        """The result :meth:`to_dict` wrote (its rows named or not)."""
        keys = {"p_value": "pvalue", "omnibus_p_value": "omnibus_pvalue"}
        kw = {keys.get(k, k): v for k, v in d.items() if k not in ("test", "null", "strata")}
        return cls(**kw, strata=tuple(StratumDeviation.from_dict(r) for r in d["strata"]))


def paired_heterogeneity_test(a, b, labels, *, n_resamples: int = 2000, min_size: int = 5,
                              rng=None, seed: int | None = None) -> PairedHeterogeneityResult:
    """Heterogeneity of the per-query difference ``a − b`` across strata (module docstring)."""
    d, codes, keys = _paired(a, b, labels)
    B = _check_resamples(n_resamples)
    k = len(keys)
    rel = _Relabellings(codes, B, as_generator(rng, seed))
    n = np.bincount(codes, minlength=k).astype(np.float64)
    mo = _Moments.of(d[None, :])
    strata, S = _stratum_rows(d, codes, keys, rel, min_size)
    tested = n >= min_size
    zmax = np.abs(_z(S[None], n, mo, slice(0, 1), _z_scale(n, mo.Q, tested))[0]).max(axis=1)
    ssb = (S * S / n).sum(axis=1) - mo.total[0] ** 2 / mo.Q
    sst = float(mo.sst[0])
    return PairedHeterogeneityResult(
        mean_difference=float(d.mean()), statistic=float(zmax[0]),
        pvalue=float(_pvalues(zmax[None, :])[0]), omnibus_statistic=float(ssb[0]),
        omnibus_pvalue=float(_pvalues(ssb[None, :])[0]),
        eta_squared=float(ssb[0] / sst) if sst > 0 else 0.0,
        null_eta_squared=float(ssb[1:].mean() / sst) if sst > 0 else 0.0,
        n_resamples=B, n_queries=int(d.size), n_strata=int(k), min_size=int(min_size),
        strata=strata)


@dataclass(frozen=True)
class StratumDifferences:
    """Per stratum (n ≥ ``min_size``), is a − b ≠ 0?  A sign-flip test, Westfall–Young.

    ``strata``: a :class:`SignFlipStratum` per tested stratum: stratum, n, mean difference with
    its 95% t interval (descriptive), the sign-flip z, ``p_adjusted`` (family-wise over the
    tested strata) and ``winner`` ("a", "b", or None when p_adjusted > α).
    """

    strata: tuple
    alpha: float
    min_size: int
    n_resamples: int

    def winners(self) -> list:
        """The strata where one system is ahead beyond chance."""
        return [s for s in self.strata if s.winner is not None]

    def to_dict(self) -> dict:
        return {"test": "sign-flip test of a − b against 0 per stratum (z_k = S_k / sqrt(sum "
                        "of d^2)), Westfall–Young max-|z| over the tested strata",
                "null": "a and b exchangeable on every query (random sign flips of a − b)",
                "alpha": self.alpha, "min_size": self.min_size,
                "n_resamples": self.n_resamples, "strata": [s.to_dict() for s in self.strata]}


def _sign_flip_max(D: np.ndarray, codes: np.ndarray, idx: np.ndarray, k: int,
                   n_resamples: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Observed |z| (R, m) of the tested strata ``idx`` and the sign-flip maxima (B, R).

    z_k = S_k / √(Σ_{i∈k} d_i²): under random signs S_k has exactly that standard deviation.
    """
    R, Q = D.shape
    onehot = np.zeros((Q, k))
    onehot[np.arange(Q), codes] = 1.0
    onehot = onehot[:, idx]
    S = D @ onehot
    S2 = (D * D) @ onehot
    scale = np.sqrt(np.where(S2 > 0, S2, np.inf))
    obs = np.abs(S) / scale
    m = idx.size
    tmax = np.empty((n_resamples, R))
    n_eps = max(1, _BLOCK // max(Q, 1))                 # sign vectors a block
    seeds = rng.integers(0, 2**63 - 1, size=-(-n_resamples // n_eps))
    step = max(1, _BLOCK // max(1, Q * m, n_eps * m))   # rows a block
    for j, seed in enumerate(seeds.tolist()):
        b0 = j * n_eps
        nb = min(n_resamples, b0 + n_eps) - b0
        eps = np.where(np.random.default_rng(seed).random((nb, Q)) < 0.5, -1.0, 1.0)
        for r0 in range(0, R, step):
            Dr = D[r0:r0 + step]
            M = (Dr.T[:, :, None] * onehot[:, None, :]).reshape(Q, -1)
            Sb = (eps @ M).reshape(nb, Dr.shape[0], m)
            z = np.abs(Sb) / scale[r0:r0 + step][None]
            tmax[b0:b0 + nb, r0:r0 + step] = z.max(axis=2)
    return obs, tmax


def stratum_differences(a, b, labels, *, min_size: int = 5, alpha: float = ALPHA,
                        n_resamples: int = 2000, rng=None,
                        seed: int | None = None) -> StratumDifferences:
    """Sign-flip test of a − b in every stratum with n ≥ ``min_size``, Westfall–Young."""
    from scipy import stats

    d, codes, keys = _paired(a, b, labels)
    B = _check_resamples(n_resamples)
    k = len(keys)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    idx = np.flatnonzero(n >= max(2, min_size))
    S = np.bincount(codes, weights=d, minlength=k)
    S2 = np.bincount(codes, weights=d * d, minlength=k)
    rows = []
    if idx.size:
        obs, tmax = _sign_flip_max(d[None, :], codes, idx, k, B, as_generator(rng, seed))
        mean = S[idx] / n[idx]
        sd = np.sqrt(np.maximum(S2[idx] - n[idx] * mean * mean, 0) / np.maximum(n[idx] - 1, 1))
        half = stats.t.ppf(0.975, np.maximum(n[idx] - 1, 1)) * sd / np.sqrt(n[idx])
        for j, i in enumerate(idx.tolist()):
            o = obs[0, j] - 1e-12 * max(1.0, obs[0, j])
            p_adj = float((1 + np.sum(tmax[:, 0] >= o)) / (1 + B))
            win = None if p_adj > alpha or mean[j] == 0 else ("a" if mean[j] > 0 else "b")
            rows.append(SignFlipStratum(
                keys[i].item() if hasattr(keys[i], "item") else keys[i], n=int(n[i]),
                mean_difference=float(mean[j]), ci_low=float(mean[j] - half[j]),
                ci_high=float(mean[j] + half[j]), z=float(np.sign(S[i]) * obs[0, j]),
                p_adjusted=p_adj, winner=win))
    return StratumDifferences(tuple(rows), float(alpha), int(min_size), B)


def stratum_difference_rejections(D, labels, *, min_size: int = 5, alpha: float = ALPHA,
                                  n_resamples: int = 999, rng=None,
                                  seed: int | None = None) -> np.ndarray:
    """Per row of differences ``D`` (R, Q): does any stratum reject (adjusted p ≤ α)?  The
    batched form of :func:`stratum_differences` (one set of sign flips for every row)."""
    D = np.atleast_2d(np.asarray(D, dtype=np.float64))
    codes, keys = label_codes(list(labels))
    k = len(keys)
    n = np.bincount(codes, minlength=k)
    idx = np.flatnonzero(n >= max(2, min_size))
    if idx.size == 0:
        return np.zeros(D.shape[0], dtype=bool)
    B = _check_resamples(n_resamples)
    obs, tmax = _sign_flip_max(D, codes, idx, k, B, as_generator(rng, seed))
    top = obs.max(axis=1)
    p = (1 + np.sum(tmax >= (top - 1e-12 * np.maximum(1.0, top))[None, :], axis=0)) / (1 + B)
    return p <= alpha


# ---------------------------------------------------------------------------------------------
# flips (descriptive counts by paired t and Holm; the test is the flip strength)
# ---------------------------------------------------------------------------------------------

def _t_tests(S, S2, n):
    """Mean, SE, t and two-sided p of stratum means against 0 (arrays over the last axis)."""
    from scipy import stats

    mean = S / n
    var = np.maximum(S2 - n * mean * mean, 0.0) / np.maximum(n - 1, 1)
    se = np.sqrt(var / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.inf * np.sign(mean)))
    p = 2 * stats.t.sf(np.abs(t), np.maximum(n - 1, 1))
    return mean, se, t, p


@dataclass(frozen=True)
class FlipResult(_TestResult):
    """Per-stratum order flips of two systems, against random strata of the same sizes.

    A stratum (n ≥ ``min_size``) *flips* when its mean paired difference a − b has the opposite
    sign to the overall mean difference; the flip is *significant* when a paired t-test of that
    stratum's differences, Holm-corrected over the tested strata, has p ≤ α.  The rates are
    per tested stratum; ``null_*`` are their means over random strata (label permutations).
    ``statistic, pvalue``: the flip strength F (module docstring) and its test against random
    strata.
    """

    tested: int
    flips: int
    significant_flips: int
    flip_rate: float
    null_flip_rate: float
    significant_rate: float
    null_significant_rate: float
    statistic: float
    pvalue: float
    n_resamples: int
    alpha: float

    def to_dict(self) -> dict:
        return _json_keys({k: getattr(self, k) for k in self.__dataclass_fields__}) | {
            "test": "flip strength F = sum of n_k mean_k^2 / s^2 over strata against the "
                    "overall sign; flips counted per stratum by paired t, Holm over tested "
                    "strata",
            "null": "random strata of the same sizes (label permutations)"}


def flip_test(a, b, labels, *, min_size: int = 5, alpha: float = ALPHA, n_resamples: int = 500,
              rng=None, seed: int | None = None) -> FlipResult:
    """Flips of system ``a`` against ``b`` across strata, next to random strata's."""
    d, codes, keys = _paired(a, b, labels)
    B = _check_resamples(n_resamples)
    k = len(keys)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    tested = n >= max(2, min_size)
    rel = _Relabellings(codes, B, as_generator(rng, seed))
    mo = _Moments.of(d[None, :])
    counts = []

    def stat(S, S2, rows):
        opposite = (S * mo.total[rows][:, None, None] < 0) & tested
        _, _, _, p = _t_tests(S[..., tested], S2[..., tested], n[tested])
        flat = p.reshape(-1, p.shape[-1])
        sig = (_holm_rows(flat).reshape(p.shape) <= alpha) & opposite[..., tested] \
            if flat.shape[1] else np.zeros(p.shape, dtype=bool)
        counts.append(np.stack([opposite.sum(axis=2), sig.sum(axis=2)], axis=-1)[0])
        return _flip(n, mo, tested)(S, S2, rows)

    F = _reduce(d[None, :], rel, k, stat, squares=True)
    c = np.concatenate(counts)              # (1 + B, 2)
    n_tested = int(tested.sum())
    denom = max(n_tested, 1)
    return FlipResult(n_tested, int(c[0, 0]), int(c[0, 1]), float(c[0, 0]) / denom,
                      float(c[1:, 0].mean()) / denom, float(c[0, 1]) / denom,
                      float(c[1:, 1].mean()) / denom, float(F[0, 0]),
                      float(_pvalues(F)[0]), B, float(alpha))


# ---------------------------------------------------------------------------------------------
# split-half reliability
# ---------------------------------------------------------------------------------------------

def _halvings(L: np.ndarray, n: np.ndarray, n_splits: int, rng) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """``(in_b, counts)``: each labelling of L (rows, Q) split ``n_splits`` times into random
    halves A and B within its strata (sizes ⌊n/2⌋ and ⌈n/2⌉, the odd one out to a random
    side): ``in_b`` (rows · n_splits, Q) is True for the queries of half B (row r · S + j is
    split j of labelling r), ``counts`` (rows · n_splits, 2k) the sizes of half A (column 2g)
    and half B (2g + 1) of each stratum g.

    Half A of stratum g holds the ⌊n_g/2⌋ (or ⌈n_g/2⌉) queries with the smallest uniform keys:
    one partial sort (``np.partition``) per stratum finds each split's threshold key, or, with
    more than :data:`_PARTITION_MAX_K` strata, one argsort of each row by (stratum, key); both
    draw the same keys and give the same halves."""
    rows, Q = L.shape
    k = n.size
    rep = np.repeat(L, n_splits, axis=0)                      # (rows · S, Q)
    m = rep.shape[0]
    u = rng.random(rep.shape)
    half_a = np.floor(n / 2 + rng.random((m, k)) * (n % 2)).astype(np.int64)
    counts = np.empty((m, 2 * k))
    counts[:, 0::2] = half_a
    counts[:, 1::2] = n[None, :] - half_a
    if k > _PARTITION_MAX_K:   # one argsort of every row beats k partial sorts
        order = np.argsort(rep + u, axis=1, kind="stable")    # by stratum, random within it
        starts = np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64)
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(Q)[None, :].repeat(m, 0), axis=1)
        return rank - starts[rep] >= np.take_along_axis(half_a, rep, axis=1), counts
    in_b = np.zeros(rep.shape, dtype=bool)
    for g in range(k):
        ng = int(n[g])
        if ng == 0:
            continue
        sel = rep == g                       # n_g positions in every row, in row order
        ug = u[sel].reshape(m, ng)
        h = half_a[:, g]
        if ng == 1:
            in_b[sel] = (h == 0)
            continue
        lo, hi = max(ng // 2 - 1, 0), min(ng // 2, ng - 1)
        part = np.partition(ug, sorted({lo, hi}), axis=1)
        # the largest key of half A: the (h − 1)-th smallest (h = ⌊n/2⌋ or ⌈n/2⌉)
        idx = np.clip(h - 1, 0, ng - 1)
        thr = np.take_along_axis(part, idx[:, None], axis=1)
        in_b[sel] = (np.where((h > 0)[:, None], ug > thr, True)).ravel()
    return in_b, counts


def _split_r(S, counts, usable):
    """Mean over splits of corr(half-A means, half-B means) across usable strata.

    S: (R, c, 2k) half sums; counts: (c, 2k) half sizes.  Returns (R, c) with NaN where fewer
    than 3 strata have both halves or a half has no spread."""
    na, nb = counts[:, 0::2], counts[:, 1::2]
    ok = usable[None, :] & (na > 0) & (nb > 0)                 # (c, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        ma = np.where(ok, S[:, :, 0::2] / na, 0.0)
        mb = np.where(ok, S[:, :, 1::2] / nb, 0.0)
    m = ok.sum(axis=1).astype(np.float64)                      # (c,)
    mm = np.where(m > 0, m, 1.0)
    ca = ma - (ma.sum(axis=2) / mm)[..., None]
    cb = mb - (mb.sum(axis=2) / mm)[..., None]
    ca, cb = np.where(ok, ca, 0.0), np.where(ok, cb, 0.0)
    sab = (ca * cb).sum(axis=2)
    saa, sbb = (ca * ca).sum(axis=2), (cb * cb).sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = sab / np.sqrt(saa * sbb)
    r = np.where((m >= 3) & (saa > 0) & (sbb > 0), r, np.nan)
    return r


def _split_half_matrix(Y, codes, k, n_splits, n_resamples, rng) -> np.ndarray:
    """(R, 1 + B): split-half r of each row under the observed labelling (column 0) and B
    random stratifications, each averaged over the same ``n_splits`` splits (relabellings and
    their halvings drawn block by block: bounded memory)."""
    n = np.bincount(codes, minlength=k).astype(np.float64)
    usable = n >= 2
    rel = _Relabellings(codes, n_resamples, rng)
    R, Q = Y.shape
    out = np.empty((R, rel.n))
    per = max(1, _BLOCK // max(1, Q * 2 * k * n_splits))   # labellings a block of halvings
    for lo, L in rel.blocks():
        for c0 in range(0, L.shape[0], per):
            Lc = L[c0:c0 + per]
            in_b, counts = _halvings(Lc, n, n_splits, rng)
            # half B's sums (the other queries to a dropped column k); half A = stratum − B
            Hb = np.where(in_b, np.repeat(Lc, n_splits, axis=0), k)
            rows = max(1, _BLOCK // max(1, Hb.shape[0] * (k + 1)))
            S = np.empty((R, Hb.shape[0], 2 * k))
            for r0 in range(0, R, rows):
                sb = _block_sums(Y[r0:r0 + rows], Hb, k + 1)[:, :, :k]
                whole = np.repeat(_block_sums(Y[r0:r0 + rows], Lc, k), n_splits, axis=1)
                S[r0:r0 + rows, :, 0::2] = whole - sb
                S[r0:r0 + rows, :, 1::2] = sb
            r = _split_r(S, counts, usable).reshape(R, -1, n_splits)
            good = np.isfinite(r)
            mean = np.where(good.any(axis=2),
                            np.where(good, r, 0.0).sum(axis=2)
                            / np.maximum(good.sum(axis=2), 1), np.nan)
            out[:, lo + c0:lo + c0 + mean.shape[1]] = mean
    return out


def split_half_pvalues(Y, labels, *, n_splits: int = SPLIT_HALF_SPLITS,
                       n_resamples: int = SPLIT_HALF_RESAMPLES, rng=None,
                       seed: int | None = None) -> np.ndarray:
    """One split-half p-value per row of ``Y`` (NaN where r cannot be computed): the batched
    form of :func:`split_half_reliability` (same splits and relabellings for every row)."""
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    codes, keys = label_codes(list(labels))
    T = _split_half_matrix(Y, codes, len(keys), int(n_splits), _check_resamples(n_resamples),
                           as_generator(rng, seed))
    obs = T[:, :1]
    null = T[:, 1:]
    ok = np.isfinite(null)
    p = (1 + np.sum(ok & (null >= obs - 1e-12), axis=1)) / (1 + ok.sum(axis=1))
    return np.where(np.isfinite(obs[:, 0]), p, np.nan)


@dataclass(frozen=True)
class SplitHalfResult(_TestResult):
    """Split-half reliability of stratum means, against random strata of the same sizes.

    ``r``: the mean Pearson correlation, across strata with n ≥ 2, between the stratum means of
    two random halves of each stratum's queries; ``spearman_brown`` = 2r / (1 + r), the
    reliability of means over whole strata; ``null_r``: the same r for random strata (label
    permutations, each averaged over as many splits), mean and 95% point; ``pvalue`` =
    (1 + #{null r ≥ r}) / (1 + B); ``statistic`` is ``r`` (``r, pvalue = result``).
    """

    r: float
    spearman_brown: float
    null_r: float
    null_r_95: float
    pvalue: float
    n_splits: int
    n_resamples: int
    n_strata: int

    @property
    def statistic(self) -> float:
        return self.r

    def to_dict(self) -> dict:
        """JSON-ready; a figure that could not be computed (fewer than 3 strata with 2 or
        more queries) is None."""
        def f(x):
            return float(x) if np.isfinite(x) else None

        return {"r": f(self.r), "spearman_brown": f(self.spearman_brown),
                "null_r": f(self.null_r), "null_r_95": f(self.null_r_95),
                "p_value": f(self.pvalue),
                "n_splits": self.n_splits, "n_resamples": self.n_resamples,
                "n_strata_used": self.n_strata,
                "null": "random strata of the same sizes (label permutations), the same "
                        "number of splits"}


def split_half_reliability(values, labels, *, n_splits: int = SPLIT_HALF_SPLITS,
                           n_resamples: int = SPLIT_HALF_RESAMPLES, rng=None,
                           seed: int | None = None) -> SplitHalfResult:
    """Do stratum means replicate across halves of the queries beyond chance?  (module
    docstring; observed and null r average the same ``n_splits`` splits)."""
    y = np.asarray(values, dtype=np.float64)
    labels = list(labels)
    if y.ndim != 1 or len(labels) != y.size or not np.all(np.isfinite(y)):
        raise InputError("values and labels must be 1-D, finite and of the same length",
                         fix="pass one value and one stratum label per query")
    if int(n_splits) < 1 or int(n_resamples) < 1:
        raise InputError("n_splits and n_resamples must be ≥ 1", fix="e.g. 20 and 200")
    codes, keys = label_codes(labels)
    k = len(keys)
    T = _split_half_matrix(y[None, :], codes, k, int(n_splits), int(n_resamples),
                           as_generator(rng, seed))[0]
    r = float(T[0])
    null = T[1:][np.isfinite(T[1:])]
    sb = 2 * r / (1 + r) if np.isfinite(r) and r > -1 else float("nan")
    p = ((1 + np.sum(null >= r - 1e-12)) / (1 + null.size)) if np.isfinite(r) and null.size \
        else float("nan")
    n_used = int(np.sum(np.bincount(codes, minlength=k) >= 2))
    return SplitHalfResult(r, float(sb),
                           float(null.mean()) if null.size else float("nan"),
                           float(np.quantile(null, 0.95)) if null.size else float("nan"),
                           float(p), int(n_splits), int(null.size), n_used)
