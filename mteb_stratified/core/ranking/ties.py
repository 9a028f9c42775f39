"""Tie groups on score-sorted, padded 2-D arrays (one row per query).

A *tie group* is a maximal run of equal scores in a row sorted by score (float equality on the
values as given).  For every position ``p`` (0-based) of a sorted row, :func:`tie_groups` gives

* ``start[p]``: the first position of p's group,
* ``end[p]``: the last position of p's group (inclusive),
* ``size[p] = end[p] - start[p] + 1``,
* ``offset[p] = p - start[p]`` (0-based position inside the group),

and :func:`group_sum` sums any per-position quantity over each group, all vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TieGroups", "tie_groups", "group_sum", "prefix_sum", "top_k_membership"]


@dataclass(frozen=True, eq=False)
class TieGroups:
    """Group structure of a batch of sorted rows; every array has the batch's (Q, N) shape."""

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    offset: np.ndarray
    is_start: np.ndarray


def tie_groups(sorted_scores: np.ndarray) -> TieGroups:
    """Find tie groups of rows already sorted by score (descending or ascending)."""
    q, n = sorted_scores.shape
    idx = np.broadcast_to(np.arange(n, dtype=np.int64), (q, n))
    is_start = np.ones((q, n), dtype=bool)
    if n > 1:
        np.not_equal(sorted_scores[:, 1:], sorted_scores[:, :-1], out=is_start[:, 1:])
    start = np.maximum.accumulate(np.where(is_start, idx, 0), axis=1)
    is_end = np.ones((q, n), dtype=bool)
    if n > 1:
        is_end[:, :-1] = is_start[:, 1:]
    end = np.minimum.accumulate(np.where(is_end, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    size = end - start + 1
    return TieGroups(start=start, end=end, size=size, offset=idx - start, is_start=is_start)


def prefix_sum(values: np.ndarray) -> np.ndarray:
    """Row-wise exclusive prefix sums with a leading zero column: ``C[:, j] = sum(values[:, :j])``."""
    q, n = values.shape
    out = np.zeros((q, n + 1), dtype=np.float64)
    np.cumsum(values, axis=1, out=out[:, 1:])
    return out


def group_sum(values: np.ndarray, groups: TieGroups, prefix: np.ndarray | None = None) -> np.ndarray:
    """Sum of ``values`` over the tie group of each position: ``C[end + 1] - C[start]``."""
    if prefix is None:
        prefix = prefix_sum(values)
    return (np.take_along_axis(prefix, groups.end + 1, axis=1)
            - np.take_along_axis(prefix, groups.start, axis=1))


def top_k_membership(scores: np.ndarray, k: int) -> np.ndarray:
    """P(document in the top ``k``) under a uniformly random order of tied scores, per entry.

    For a row with k-th largest score ``s_k``, ``g = #{s > s_k}`` and ``e = #{s = s_k}``:
    ``P = 1`` when ``s > s_k``, ``P = (k − g) / e`` when ``s = s_k``, ``P = 0`` otherwise (every
    entry is 1 when the row has ≤ k entries).  A row sums to ``min(k, N)``, and
    ``Σ_d P_a(d) · P_b(d)`` is the expected overlap of two top-k sets whose ties are broken
    independently.  ``scores``: (N,) or (Q, N); NaN counts as −inf; ``k`` ≥ 1.
    """
    if int(k) < 1:
        raise ValueError(f"k must be ≥ 1, got {k}")
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    s = np.where(np.isnan(s), -np.inf, s)
    q, n = s.shape
    if k >= n:
        out = np.ones((q, n))
    else:
        kth = -np.partition(-s, k - 1, axis=1)[:, k - 1:k]
        greater = (s > kth).sum(axis=1, keepdims=True)
        equal = s == kth
        share = (k - greater) / equal.sum(axis=1, keepdims=True)
        out = np.where(s > kth, 1.0, np.where(equal, share, 0.0))
    return out if np.ndim(scores) == 2 else out[0]
