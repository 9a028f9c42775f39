"""Type I error, power and the minimum detectable effect of the strata tests, by simulation on
real per-query scores (ours).

A test that cannot see a real gap says "no evidence" forever, so every test the strata block
reports (:mod:`.chance`) is run here on draws made from the evaluated queries' own scores:

* **null draw**: the stratum labels permuted among the queries (each query keeps its pair of
  scores a_i, b_i): the strata carry no signal, and a test at level α should call a share α of
  the draws significant — its **Type I error**;
* **planted draw**: a null draw, then a gap d planted in system B's scores in a random set P
  of strata that holds a share s ± s/4 of the queries (strata taken in random order while they
  fit; redrawn per draw; when 5,000 random orders find no such set, power at s is None: these
  strata cannot hold that share).  How the gap is planted (``planting``):

  - ``"headroom"`` (the default): every query of P moves the same share λ of the way to the
    end of the range it has room toward, b_i ← b_i + λ (1 − b_i) (gaps planted upwards) or
    b_i ← b_i − λ b_i (downwards), with λ = d / mean_P(room) solved per draw, so the **realised
    gap**, the mean of b'_i − b_i over P, is d exactly and no score leaves [0, 1].  A query at
    1 cannot improve, and does not: the gap lands on the queries with room, as a real
    improvement would.  The direction is the side where B's scores have more room over all
    queries (up when mean(b) ≤ ½), decided once per study.  When d exceeds P's mean room
    (λ > 1) the draw plants λ = 1 and its realised gap is smaller than d (the metric cannot
    hold more);
  - ``"clip"`` (the harness before issue #45): b_i ← min(1, max(0, b_i + d)).  The realised
    gap is smaller than d by the mass clipped at 1: on a corpus where half the queries score 1
    it is about half of d.

  Every setting records its mean realised gap next to the nominal d.  The share of planted
  draws called significant is the test's **power** at (d, s); at d = 0 it is the Type I error;
* the **minimum detectable effect** (MDE) at share s is the gap at which power reaches 0.8,
  interpolated linearly on a grid of d (None: not reached on the grid), in nominal units
  (``mde``) and in realised units (``mde_realised``: interpolated on the realised gaps);
* the per-stratum sign-flip tests against 0 (:func:`.chance.stratum_differences`) have another
  null, that a and b are exchangeable on every query: their null draws swap a_i and b_i with
  probability ½ each, and a draw counts as a rejection when any stratum is called (the
  family-wise error).

What this checks, and what not: the null draws are the tests' own randomisation (labels
permuted, or signs flipped), so a Type I error near α checks the implementation and the level
when queries are exchangeable; it is no check against dependence between queries (queries on
one topic that share relevant documents, say).  Draws in a chunk of 50 share each test's B
relabellings (every draw's p-value stays a valid permutation p-value), which adds to the
binomial error: with 1,000 draws and B = 499 the standard error of a Type I rate near 0.05 is
about 0.0075 (binomial 0.0069), of a power near 0.8 about 0.013.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .chance import (SPLIT_HALF_RESAMPLES, SPLIT_HALF_SPLITS, label_codes, permutation_pvalues,
                     split_half_pvalues, stratum_difference_rejections)
from ..errors import InputError
from ..options import ALPHA
from ..rng import as_generator

__all__ = ["TESTS", "EFFECTS", "SHARES", "EFFECT_GRID", "TARGET_POWER", "PLANTINGS",
           "planted_mask", "plant_gap", "PowerStudy", "power_study", "minimum_detectable_effect"]

#: The tests studied, in report order: (name, what it tests).
TESTS = {
    "heterogeneity": "one system (B): omnibus SSB of its scores across strata",
    "stratum_max_z": "one system (B): max-|z| of one stratum against the rest "
                     "(Westfall–Young per stratum)",
    "split_half": "one system (B): split-half reliability of its stratum means",
    "paired_max_z": "the difference A − B: max-|z| of one stratum against the rest",
    "paired_omnibus": "the difference A − B: omnibus SSB across strata",
    "flip": "the difference A − B: flip strength of strata against the overall sign",
    "split_half_difference": "the difference A − B: split-half reliability of stratum means",
    "stratum_differences": "A − B ≠ 0 in some stratum: sign-flip z per stratum, "
                           "Westfall–Young",
}
#: The tests of one system's scores (B; their Type I error is measured on A's too).
_ONE_SYSTEM = ("heterogeneity", "stratum_max_z", "split_half")
EFFECTS = (0.05, 0.10, 0.20)
SHARES = (0.20, 0.10)
EFFECT_GRID = (0.025, 0.05, 0.075, 0.10, 0.15, 0.20, 0.30, 0.40)
TARGET_POWER = 0.8
#: How a gap is planted (module docstring): the default first.
PLANTINGS = ("headroom", "clip")
#: How far outside [0, 1] a score may sit by rounding (an nDCG of 1 + 2e-16) before it is an
#: error.
_RANGE_SLACK = 1e-9
_CHUNK_DRAWS = 50


def planted_mask(codes: np.ndarray, n: np.ndarray, share: float, rng, *,
                 tries: int = 200) -> np.ndarray | None:
    """A random set of strata holding share ± share/4 of the queries, as a (Q,) mask; None when
    no such set turns up in ``tries`` random orders (e.g. every stratum is larger)."""
    Q = codes.size
    lo, hi = (share - share / 4) * Q, (share + share / 4) * Q
    for _ in range(tries):
        chosen, total = [], 0
        for s in rng.permutation(n.size).tolist():
            if total + n[s] <= hi:
                chosen.append(s)
                total += n[s]
            if total >= lo:
                return np.isin(codes, chosen)
    return None


def plant_gap(b: np.ndarray, mask: np.ndarray, effect: float, *, planting: str = "headroom",
              upward: bool = True) -> tuple[np.ndarray, float]:
    """``(b', realised)``: scores ``b`` (in [0, 1]) with a gap ``effect`` planted on the
    queries of ``mask``, and the realised gap mean(b' − b) over ``mask`` (module docstring).

    ``headroom``: b' = b + λ (1 − b) upwards, b' = b − λ b downwards, λ = min(1, effect /
    mean room over the mask); ``clip``: b' = clip(b ± effect, 0, 1).  The realised gap is
    signed like the planted one (positive upwards)."""
    b = np.asarray(b, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != b.shape:
        raise InputError(f"mask has shape {mask.shape}, the scores {b.shape}",
                         fix="pass one True/False per query")
    if not (np.isfinite(effect) and effect >= 0):
        raise InputError(f"the gap must be a number ≥ 0, got {effect!r}",
                         fix="give its size; upward= sets its direction")
    if b.size and (np.nanmin(b) < -_RANGE_SLACK or np.nanmax(b) > 1 + _RANGE_SLACK):
        raise InputError("scores must lie in [0, 1] to plant a gap the metric can hold",
                         fix="pass a measure's per-query values (nDCG, AP, RR, P, R are in "
                             "[0, 1])")
    if planting not in PLANTINGS:
        raise InputError(f"unknown planting {planting!r}", fix=f"use {' or '.join(PLANTINGS)}")
    return _plant(np.clip(b, 0.0, 1.0), mask, effect, planting, upward)


def _plant(b: np.ndarray, mask: np.ndarray, effect: float, planting: str,
           upward: bool) -> tuple[np.ndarray, float]:
    """:func:`plant_gap` on checked input (scores in [0, 1], a boolean mask, a known
    planting): the kernel each draw of :func:`power_study` calls."""
    sign = 1.0 if upward else -1.0
    k = int(np.count_nonzero(mask))
    if planting == "clip":
        out = np.clip(b + sign * effect * mask, 0.0, 1.0)
    else:
        room = np.where(mask, 1.0 - b if upward else b, 0.0)
        mean_room = room.sum() / max(k, 1)
        lam = 1.0 if mean_room <= effect else effect / mean_room
        out = b + sign * lam * room
    realised = float((out - b)[mask].sum() / k) if k else 0.0
    return out, realised


def minimum_detectable_effect(effects, power, target: float = TARGET_POWER) -> float | None:
    """The smallest d with power ≥ ``target``, interpolated linearly between grid points."""
    prev_d, prev_p = 0.0, None
    for d, p in zip(effects, power):
        if p is None or not np.isfinite(p):
            prev_p = None
            continue
        if p >= target:
            if prev_p is None or prev_p >= target:
                return float(d)
            return float(prev_d + (target - prev_p) * (d - prev_d) / (p - prev_p))
        prev_d, prev_p = d, p
    return None


@dataclass(frozen=True)
class PowerStudy:
    """Type I error, power and MDE of each test on one set of strata (module docstring).

    ``type1_error[test]``; ``power[test][share][effect]`` (None: no set of strata holds that
    share); ``realised[test][share][effect]``: the mean gap actually planted at that setting;
    ``mde[test][share]`` in nominal units and ``mde_realised[test][share]`` in realised units
    (None: power 0.8 not reached on the grid); ``type1_error_a``: the one-system tests on
    system A; ``planting`` and ``upward``: how the gaps were planted.
    """

    type1_error: dict
    type1_error_a: dict
    power: dict
    mde: dict
    n_queries: int
    n_strata: int
    strata_sizes: tuple
    n_draws: int
    n_resamples: int
    alpha: float
    settings: dict = field(default_factory=dict)
    realised: dict = field(default_factory=dict)
    mde_realised: dict = field(default_factory=dict)
    planting: str = "headroom"
    upward: bool = True

    def to_dict(self) -> dict:
        def keyed(d):
            return {f"{s:g}": {f"{e:g}": v for e, v in row.items()} for s, row in d.items()}

        def by_share(d):
            return {f"{s:g}": v for s, v in d.items()}

        return {"n_queries": self.n_queries, "n_strata": self.n_strata,
                "strata_sizes": list(self.strata_sizes), "n_draws": self.n_draws,
                "n_resamples": self.n_resamples, "alpha": self.alpha,
                "planting": self.planting, "direction": "up" if self.upward else "down",
                "tests": {t: {"what": TESTS[t], "type1_error": self.type1_error[t],
                              "type1_error_a": self.type1_error_a.get(t),
                              "power": keyed(self.power[t]),
                              "realised": keyed(self.realised.get(t, {})),
                              "mde": by_share(self.mde[t]),
                              "mde_realised": by_share(self.mde_realised.get(t, {}))}
                          for t in self.type1_error},
                "settings": dict(self.settings)}


def _draws(a, b, codes, n, effect, share, n_draws, rng, swap=False, planting="headroom",
           upward=True):
    """(A, B, realised) of ``n_draws`` draws (module docstring): the score matrices and the
    mean realised gap over the draws; None when no set of strata holds the share."""
    Q = a.size
    if effect and planted_mask(codes, n, share, rng, tries=5000) is None:
        return None   # no set of these strata holds that share (a random search: 5,000 orders)
    A = np.empty((n_draws, Q))
    Bm = np.empty((n_draws, Q))
    realised = 0.0
    for r in range(n_draws):
        if swap:
            flip = rng.random(Q) < 0.5
            ar, br = np.where(flip, b, a), np.where(flip, a, b)
        else:
            sigma = rng.permutation(Q)
            ar, br = a[sigma], b[sigma]
        if effect:
            mask = None
            while mask is None:   # a set exists (checked above): draw until one turns up
                mask = planted_mask(codes, n, share, rng)
            br, gap = _plant(br, mask, effect, planting, upward)
            realised += abs(gap)
        A[r], Bm[r] = ar, br
    return A, Bm, realised / max(n_draws, 1)


def _rates(test, A, Bm, labels, n_resamples, alpha, min_size, rng) -> float:
    """The share of draws (rows) the test calls significant at α, chunk by chunk."""
    hits, total = 0, 0
    for r0 in range(0, A.shape[0], _CHUNK_DRAWS):
        a, b = A[r0:r0 + _CHUNK_DRAWS], Bm[r0:r0 + _CHUNK_DRAWS]
        seed = int(rng.integers(2**63))
        if test == "stratum_differences":
            rej = stratum_difference_rejections(a - b, labels, min_size=min_size, alpha=alpha,
                                                n_resamples=n_resamples, seed=seed)
        elif test in ("split_half", "split_half_difference"):
            y = b if test == "split_half" else a - b
            p = split_half_pvalues(y, labels, n_splits=SPLIT_HALF_SPLITS,
                                   n_resamples=min(n_resamples, SPLIT_HALF_RESAMPLES), seed=seed)
            rej = np.nan_to_num(p, nan=1.0) <= alpha
        else:
            stat = {"heterogeneity": "omnibus", "stratum_max_z": "max_z",
                    "paired_max_z": "max_z", "paired_omnibus": "omnibus", "flip": "flip"}[test]
            y = b if test in _ONE_SYSTEM else a - b
            rej = permutation_pvalues(y, labels, stat, n_resamples=n_resamples,
                                      min_size=min_size, seed=seed) <= alpha
        hits += int(np.sum(rej))
        total += rej.size
    return hits / max(total, 1)


def power_study(a, b, labels, *, tests=tuple(TESTS), effects=EFFECTS, shares=SHARES,
                grid=EFFECT_GRID, n_draws: int = 1000, n_resamples: int = 999,
                grid_draws: int | None = None, alpha: float = ALPHA, min_size: int = 5,
                planting: str = PLANTINGS[0], direction: str = "auto",
                rng=None, seed: int | None = None) -> PowerStudy:
    """Type I error and power of ``tests`` for systems ``a`` and ``b`` (per-query scores in
    [0, 1], one per query) with stratum ``labels`` (module docstring).

    ``effects`` are measured with ``n_draws`` draws; the other points of ``grid`` (for the MDE)
    with ``grid_draws`` (default: ``n_draws``).  Each test runs as the strata block runs it
    (split-half: :data:`~.chance.SPLIT_HALF_SPLITS` splits, at most
    :data:`~.chance.SPLIT_HALF_RESAMPLES` relabellings).  ``planting``: ``"headroom"`` or
    ``"clip"``; ``direction``: ``"up"``, ``"down"`` or ``"auto"`` (up when mean(b) ≤ ½: the
    side with more room), both as in the module docstring.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    labels = list(labels)
    if a.shape != b.shape or a.ndim != 1 or len(labels) != a.size or a.size < 4 \
            or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("a, b and labels must be 1-D, finite, of the same length (≥ 4)",
                         fix="pass both systems' per-query scores on the stratified queries")
    if min(a.min(), b.min()) < -_RANGE_SLACK or max(a.max(), b.max()) > 1 + _RANGE_SLACK:
        raise InputError("per-query scores must lie in [0, 1]: gaps are planted within the "
                         "metric's range", fix="pass a measure's per-query values")
    a, b = np.clip(a, 0.0, 1.0), np.clip(b, 0.0, 1.0)   # rounding a hair outside the range
    unknown = [t for t in tests if t not in TESTS]
    if unknown:
        raise InputError(f"unknown test {unknown[0]!r}", fix=f"use {', '.join(TESTS)}")
    if planting not in PLANTINGS:
        raise InputError(f"unknown planting {planting!r}", fix=f"use {' or '.join(PLANTINGS)}")
    if direction not in ("auto", "up", "down"):
        raise InputError(f"unknown direction {direction!r}", fix="use auto, up or down")
    upward = bool(b.mean() <= 0.5) if direction == "auto" else direction == "up"
    rng = as_generator(rng, seed)
    codes, keys = label_codes(labels)
    n = np.bincount(codes, minlength=len(keys))
    grid_draws = n_draws if grid_draws is None else int(grid_draws)
    points = sorted(set(grid) | set(effects))
    type1, type1_a, power, mde, realised, mde_r = {}, {}, {}, {}, {}, {}
    null = _draws(a, b, codes, n, 0.0, 0.0, n_draws, rng)
    swapped = _draws(a, b, codes, n, 0.0, 0.0, n_draws, rng, swap=True)
    for t in tests:
        A, Bm, _ = swapped if t == "stratum_differences" else null
        type1[t] = _rates(t, A, Bm, labels, n_resamples, alpha, min_size, rng)
        if t in _ONE_SYSTEM:   # the same test on system A's scores
            type1_a[t] = _rates(t, Bm, A, labels, n_resamples, alpha, min_size, rng)
        power[t], mde[t], realised[t], mde_r[t] = {}, {}, {}, {}
        for s in shares:
            curve, gaps = {}, {}
            for d in points:
                draws = n_draws if d in effects else grid_draws
                ab = _draws(a, b, codes, n, d, s, draws, rng, swap=t == "stratum_differences",
                            planting=planting, upward=upward)
                curve[d] = None if ab is None else _rates(t, ab[0], ab[1], labels, n_resamples,
                                                          alpha, min_size, rng)
                gaps[d] = None if ab is None else ab[2]
            power[t][s] = {d: curve[d] for d in effects}
            realised[t][s] = {d: gaps[d] for d in effects}
            mde[t][s] = minimum_detectable_effect(points, [curve[d] for d in points])
            mde_r[t][s] = _realised_mde(points, curve, gaps)
    return PowerStudy(type1, type1_a, power, mde, int(a.size), int(len(keys)),
                      tuple(sorted(n.tolist(), reverse=True)), int(n_draws), int(n_resamples),
                      float(alpha), {"grid": points, "grid_draws": grid_draws,
                                     "min_size": min_size,
                                     "split_half": {"n_splits": SPLIT_HALF_SPLITS,
                                                    "n_resamples": min(n_resamples,
                                                                       SPLIT_HALF_RESAMPLES)},
                                     "shares": list(shares), "share_tolerance": "share / 4",
                                     "range": [0.0, 1.0]},
                      realised, mde_r, planting, upward)


def _realised_mde(points, curve: dict, gaps: dict) -> float | None:
    """The MDE interpolated on the realised gaps of the grid points (their power curve)."""
    pts = [(gaps[d], curve[d]) for d in points if gaps[d] is not None]
    pts.sort(key=lambda x: x[0])
    return minimum_detectable_effect([g for g, _ in pts], [p for _, p in pts])
