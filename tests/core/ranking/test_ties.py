"""core.ranking.ties.top_k_membership against counting over every order of the tied scores."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mteb_stratified.core.ranking.ties import top_k_membership


def _brute(scores: list, k: int) -> list:
    """P(entry in top k) over every permutation, each sorted stably by descending score."""
    n = len(scores)
    hits = [0] * n
    total = 0
    for perm in itertools.permutations(range(n)):
        order = sorted(perm, key=lambda i: -scores[i])  # stable: ties keep perm's order
        for i in order[:k]:
            hits[i] += 1
        total += 1
    return [Fraction(h, total) for h in hits]


@pytest.mark.parametrize("seed", range(12))
def test_membership_equals_counting_over_tie_orders(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    scores = rng.integers(0, 3, size=n).astype(float).tolist()  # many ties
    for k in range(1, n + 2):
        got = top_k_membership(np.array(scores), k)
        assert got == pytest.approx([float(p) for p in _brute(scores, k)], abs=1e-12)
        assert got.sum() == pytest.approx(min(k, n))


def test_rows_nan_and_expected_overlap():
    a = np.array([[3.0, 2.0, 2.0, 2.0, np.nan], [1.0, 1.0, 1.0, 1.0, 1.0]])
    got = top_k_membership(a, 2)
    assert got[0] == pytest.approx([1, 1 / 3, 1 / 3, 1 / 3, 0])
    assert got[1] == pytest.approx([0.4] * 5)
    # E|top2(a) ∩ top2(b)| with independent tie breaks: sum of products
    b = np.array([0.0, 5.0, 4.0, 1.0, 1.0])
    overlap = float((top_k_membership(a[0], 2) * top_k_membership(b, 2)).sum())
    assert overlap == pytest.approx(1 / 3 + 1 / 3)
