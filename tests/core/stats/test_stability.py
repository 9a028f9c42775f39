"""Decision stability: winners per aggregation and stratum, significance, flips."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.estimators import StratifiedDesign, paired_comparison
from mteb_stratified.core.stats.stability import decision_stability

# stratum 0 is heavy in the corpus but has few queries; stratum 1 is light with many queries
LABELS = np.repeat([0, 1], [40, 200])
WEIGHTS = {0: 0.8, 1: 0.2}


def systems(seed=0):
    rng = np.random.default_rng(seed)
    noise = lambda: 0.02 * rng.standard_normal(240)        # noqa: E731
    base = np.where(LABELS == 0, 0.4, 0.6) + 0.05 * rng.standard_normal(240)
    a = base + np.where(LABELS == 0, -0.10, 0.05) + noise()   # good where queries are
    b = base + np.where(LABELS == 0, 0.10, -0.02) + noise()   # good where the corpus is
    c = base - 0.2 + noise()                                  # worst everywhere
    return {"A": a, "B": b, "C": c}


@pytest.fixture(scope="module")
def report():
    return decision_stability(systems(), StratifiedDesign.from_labels(LABELS, WEIGHTS))


def test_winners_and_flip(report):
    assert report.winners["pooled"] == "A"
    assert report.winners["post_stratified"] == "B"
    assert report.winner_significant["pooled"] and report.winner_significant["post_stratified"]
    assert report.stratum_winners == {0: "B", 1: "A"}
    assert all(report.stratum_significant.values())
    assert not report.stable
    assert [(f.a, f.b) for f in report.flips] == [("A", "B")]
    flip = report.flips[0]
    assert flip.ahead["pooled"] == "A" and flip.ahead["post_stratified"] == "B"
    assert flip.significant["pooled"] and flip.significant["post_stratified"]
    d = report.to_dict()
    assert d["flips"][0]["ahead"]["post_stratified"] == "B"


def test_pairs_agree_with_paired_comparison(report):
    s = systems()
    design = StratifiedDesign.from_labels(LABELS, WEIGHTS)
    assert len(report.pairs) == 3 * 3                         # 3 pairs × 3 aggregations
    for p in report.pairs:
        ref = paired_comparison(s[p.a], s[p.b], design).overall[p.aggregation]
        assert p.difference == pytest.approx(ref.estimate)
        assert p.ci == ref.confidence_interval(0.95)
        assert p.significant == (p.ci.low > 0 or p.ci.high < 0)
    ac = [p for p in report.pairs if (p.a, p.b) == ("A", "C")]
    assert all(p.order == 1 and p.significant for p in ac)


def test_lower_is_better_and_bootstrap_determinism():
    s = {k: -v for k, v in systems().items()}
    design = StratifiedDesign.from_labels(LABELS, WEIGHTS)
    r = decision_stability(s, design, higher_is_better=False)
    assert r.winners["pooled"] == "A" and r.winners["post_stratified"] == "B"
    b1 = decision_stability(systems(), design, bootstrap=True, n_resamples=500, seed=3)
    b2 = decision_stability(systems(), design, bootstrap=True, n_resamples=500, seed=3)
    assert b1.to_dict() == b2.to_dict()
    assert [(f.a, f.b) for f in b1.flips] == [("A", "B")]


def test_no_flip_and_no_weights():
    rng = np.random.default_rng(1)
    x = rng.random(240)
    design = StratifiedDesign.from_labels(LABELS, None)
    r = decision_stability({"X": x + 0.1, "Y": x}, design)
    assert r.stable and set(r.winners) == {"pooled", "macro"}
    assert all(v == "X" for v in r.winners.values())


def test_bad_input():
    design = StratifiedDesign.from_labels(LABELS, WEIGHTS)
    with pytest.raises(InputError, match="≥ 2 systems"):
        decision_stability({"A": np.zeros(240)}, design)
    with pytest.raises(InputError, match="one value per query"):
        decision_stability({"A": np.zeros(240), "B": np.zeros(10)}, design)
