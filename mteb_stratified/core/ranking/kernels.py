r"""Vectorised kernels: tie-aware and deterministic measure values on padded 2-D arrays.

Every measure here is a sum of per-position *contributions* over the first k positions
(:func:`at_cutoffs`), so one contribution array serves all cutoffs of a measure.  A measure
family names its contribution (``MeasureFamily.kernel`` of
:mod:`mteb_stratified.core.ranking.measures`: ``dcg``, ``hits``, ``ap``, ``rr`` or ``first``) and
the parameter of its variant (the gain of
``dcg``, the relevance level ℓ of the others); the functions below take the set of
``(kernel, variant)`` pairs a call needs, resolved once per call from the measures' families.
Positions ``p`` are 1-based in the formulas, ranks follow the sorted row,
``d(p) = 1 / log2(p + 1)`` is the DCG discount, ``rel(p) = [grade(p) >= ℓ]`` for the relevance
level ℓ, and ``R`` is the number of judged relevant documents of the query (from the qrels, as
trec_eval).

Deterministic values of one arrangement (trec_eval's definitions)::

    DCG@k     = Σ_{p≤k} gain(p) d(p)              nDCG@k = DCG@k / IDCG@k
    P@k       = Σ_{p≤k} rel(p) / k                R@k    = Σ_{p≤k} rel(p) / R
    AP@k      = (1/R) Σ_{p≤k} rel(p) · hits(p)/p  with hits(p) = Σ_{p'≤p} rel(p')
    RR@k      = 1/p₁ if p₁ ≤ k else 0             (p₁ = rank of the first relevant document)
    Success@k = [p₁ ≤ k]

Expected values over all orders of each tie group (each order of a group equally likely,
groups independent; McSherry & Najork, ECIR 2008).  Position ``p`` lies in group ``g`` of size
``n`` with ``r`` relevant documents, total gain ``G``, offset ``i`` (0-based) inside the group,
and ``B`` relevant documents in the groups ranked above ``g``::

    E[gain(p)]        = G / n                           (each document equally likely at p)
    E[rel(p)]         = r / n
    E[rel(p)·hits(p)] = (r/n)(1 + B) + i · r(r-1) / (n(n-1))
    P(p₁ = p)         = [B = 0] · C(n-i-1, r-1) / C(n, r)   for i ≤ n - r, else 0
                      = [B = 0] · (r / (n - i)) · Π_{j<i} (n - r - j)/(n - j)

so, by linearity, ``E[DCG@k] = Σ_{p≤k} d(p) G/n``, ``E[AP@k] = (1/R) Σ_{p≤k}
E[rel(p)·hits(p)]/p``, ``E[RR@k] = Σ_{p≤k} P(p₁ = p)/p`` and ``E[Success@k] = Σ_{p≤k}
P(p₁ = p)``.  The minimum (maximum) of every measure is reached by the arrangement that puts the
lowest (highest) grades first inside each group; :func:`arrange_within_groups` builds both.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .ties import TieGroups, group_sum, prefix_sum

__all__ = ["discount", "gain", "deterministic_contributions", "expected_contributions",
           "arrange_within_groups", "at_cutoffs", "trec_eval_sort_key", "top_window", "GAIN_KERNEL"]

#: The one kernel whose variant is a gain (``dcg='log2'`` or ``'exp-log2'``); every other
#: kernel's variant is a relevance level.
GAIN_KERNEL = "dcg"


def discount(n: int) -> np.ndarray:
    """``d(p) = 1 / log2(p + 1)`` for p = 1..n (trec_eval's discount)."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def gain(grades: np.ndarray, dcg: str) -> np.ndarray:
    """Gain of a grade: ``g`` (``dcg='log2'``, trec_eval) or ``2^g - 1`` (``'exp-log2'``); 0 if g ≤ 0."""
    positive = grades > 0
    if dcg == "log2":
        return np.where(positive, grades, 0.0)
    return np.where(positive, np.exp2(np.where(positive, grades, 0.0)) - 1.0, 0.0)


def _inv_rank(n: int) -> np.ndarray:
    return 1.0 / np.arange(1, n + 1, dtype=np.float64)


def _split(families: set) -> tuple[list, dict]:
    """The gains of the ``dcg`` kernel, and the other kernels of ``families`` per level."""
    gains = [param for kind, param in families if kind == GAIN_KERNEL]
    levels: dict = {}
    for kind, param in families:
        if kind != GAIN_KERNEL:
            levels.setdefault(param, set()).add(kind)
    return gains, levels


def deterministic_contributions(grades: np.ndarray, families: set, disc: np.ndarray) -> dict:
    """Per-position contributions of one fixed arrangement (rows already in ranked order).

    ``families`` holds ``("dcg", dcg)`` and ``("hits"|"ap"|"rr"|"first", level)`` keys.
    """
    inv = _inv_rank(grades.shape[1])
    gains, levels = _split(families)
    out: dict = {(GAIN_KERNEL, dcg): gain(grades, dcg) * disc for dcg in gains}
    for level, kinds in levels.items():
        rel = (grades >= level).astype(np.float64)
        hits = np.cumsum(rel, axis=1)
        first = rel * (hits == 1)  # the first relevant document only
        terms = {"hits": lambda: rel, "ap": lambda: rel * hits * inv, "first": lambda: first,
                 "rr": lambda: first * inv}
        out.update({(kind, level): terms[kind]() for kind in kinds})
    return out


def expected_contributions(grades: np.ndarray, groups: TieGroups, families: set,
                           disc: np.ndarray) -> dict:
    """Per-position expected contributions over all orders of each tie group (formulas above)."""
    inv = _inv_rank(grades.shape[1])
    size = groups.size.astype(np.float64)
    gains, levels = _split(families)
    out: dict = {(GAIN_KERNEL, dcg): group_sum(gain(grades, dcg), groups) / size * disc
                 for dcg in gains}
    for level, kinds in levels.items():
        rel = (grades >= level).astype(np.float64)
        prefix = prefix_sum(rel)
        r = group_sum(rel, groups, prefix)  # relevant documents in p's group
        before = np.take_along_axis(prefix, groups.start, axis=1)  # relevant above p's group
        p_first = (_first_relevant(r, size, before, groups) if kinds & {"rr", "first"}
                   else None)

        def ap() -> np.ndarray:  # called in this iteration, as the lambdas
            pair = np.divide(r * (r - 1.0), size * (size - 1.0), out=np.zeros_like(r),
                             where=size > 1)
            return ((r / size) * (1.0 + before) + groups.offset * pair) * inv

        terms = {"hits": lambda: r / size, "ap": ap, "first": lambda: p_first,
                 "rr": lambda: p_first * inv}
        out.update({(kind, level): terms[kind]() for kind in kinds})
    return out


def _first_relevant(r: np.ndarray, size: np.ndarray, before: np.ndarray,
                    groups: TieGroups) -> np.ndarray:
    """``P(p₁ = p)`` of every position: nonzero only in the first group holding a relevant
    document, where it is ``r/(n-i) · Π_{j<i} (n-r-j)/(n-j)``, the product taken left to
    right (one ``np.cumprod`` per row over that group: the compiled walk's operations)."""
    out = np.zeros(r.shape)
    live = (before == 0) & (r > 0) & (groups.offset <= groups.size - r)
    rows, cols = np.nonzero(live)  # row-major: in each row, offsets 0, 1, ... of one group
    if not rows.size:
        return out
    i = groups.offset[rows, cols].astype(np.float64)
    n_, r_ = size[rows, cols], r[rows, cols]
    run = np.cumsum(np.r_[True, rows[1:] != rows[:-1]]) - 1  # which row's group
    offset = groups.offset[rows, cols]
    prod = np.ones((run[-1] + 1, int(offset.max()) + 2))
    prod[run, offset + 1] = (n_ - r_ - i) / (n_ - i)
    prod = np.cumprod(prod, axis=1)  # prod[., i] = Π_{j<i} (n-r-j)/(n-j)
    out[rows, cols] = prod[run, offset] * r_ / (n_ - i)
    return out


def arrange_within_groups(grades: np.ndarray, groups: TieGroups) -> tuple[np.ndarray, np.ndarray]:
    """Grades reordered inside each tie group: ascending (worst case) and descending (best case).

    One ``np.sort`` per arrangement of the integer key ``start(p) · L + level(p)``, with L the
    number of distinct grades: groups stay in place because ``start`` is non-decreasing along a
    row, and the level is read back from the sorted key.
    """
    levels = np.unique(grades)
    n_levels = len(levels)
    idx = np.searchsorted(levels, grades)
    base = groups.start * n_levels
    worst = levels[np.sort(base + idx, axis=1) % n_levels]
    best = levels[n_levels - 1 - np.sort(base + (n_levels - 1 - idx), axis=1) % n_levels]
    return worst, best


def at_cutoffs(contributions: np.ndarray, cutoffs: Sequence) -> np.ndarray:
    """Sums of the first k contributions of each row, for every k of ``cutoffs``.

    ``Σ_{p≤k} c(p)`` per row, summed left to right (``np.cumsum``, as the compiled walk and
    trec_eval sum), so a sum depends on the first k contributions alone, never on the array's
    width or the batch; ``k=None`` or ``k`` beyond the width means the whole row.
    """
    q, n = contributions.shape
    out = np.zeros((q, len(cutoffs)))
    if n:
        running = np.cumsum(contributions, axis=1)
        for j, k in enumerate(cutoffs):
            out[:, j] = running[:, n - 1 if k is None else min(k, n) - 1]
    return out


def trec_eval_sort_key(scores: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """Ascending uint64 sort key of trec_eval's order: float32 score descending, doc id descending.

    trec_eval (and so pytrec_eval, ir_measures' default and MTEB) keeps scores as 32-bit floats,
    so doubles that round to one float32 tie there; this key reproduces that exactly.  It packs
    the order-preserving bits of the float32 score (inverted for descending) above the inverted
    doc-id rank, so one sort orders by both.
    """
    # "+ 0" maps -0.0 to +0.0 (tiny negatives round to -0.0 in float32, and trec_eval's float
    # comparison ties -0.0 with 0.0); one pass that also casts to a fresh contiguous float32 array
    bits = np.add(scores, np.float32(0), dtype=np.float32).view(np.uint32)
    # order-preserving map of float32 bits: flip all bits of negatives, the sign bit of others;
    # its complement sorts scores descending
    flip = np.where(bits >> np.uint32(31), np.uint32(0xFFFFFFFF), np.uint32(0x80000000))
    descending = ~(bits ^ flip)
    low32 = np.uint64(0xFFFFFFFF)
    return (descending.astype(np.uint64) << np.uint64(32)) | (low32 - tiebreak.astype(np.uint64))


def top_window(s32: np.ndarray, n_cand: np.ndarray, k: int) -> tuple:
    """Each row's window: its ``k`` best columns by float32 score and every column tied with
    the k-th, so the window holds the first k positions of both the exact and the trec_eval
    order and every tie group that reaches them (float32 rounding is monotone, so an exact tie
    group lies inside one float32 group).

    One selection (``np.partition`` of the values finds the k-th best score ``v``), one
    comparison ``s ≥ v`` and one ``np.nonzero``: O(N) per row, no sort.  Returns the flat
    ``rows`` and ``cols`` of the window's entries (row-major, so columns ascend inside a row),
    their position ``pos`` in the row's window, and the window size of each row.  Rows with
    fewer than k candidates keep them all.
    """
    q, n = s32.shape
    v = np.partition(s32, n - k, axis=1)[:, n - k]
    keep = s32 >= v[:, None]
    found = np.count_nonzero(keep, axis=1)
    count = np.minimum(found, n_cand)
    rows, cols = np.nonzero(keep)
    first = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(found, out=first[1:])
    pos = np.arange(rows.size) - first[rows]
    if int(count.sum()) != rows.size:  # padding ties with a real score only when v = -inf
        real = pos < count[rows]
        rows, cols, pos = rows[real], cols[real], pos[real]
    return rows, cols, pos, count
