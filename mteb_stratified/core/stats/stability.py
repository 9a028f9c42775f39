"""Decision stability: does the ranking of systems depend on how queries are aggregated?

For two or more systems evaluated on the same queries, and each aggregation a ∈ {pooled, macro,
post_stratified} (see :mod:`.estimators`): the winner argmax_s μ̂_a(s); for every pair (s, t) the
paired difference μ̂_a(s − t) with its CI, *significant* when the CI excludes 0; the winner of
every stratum (by its mean), significant when its paired per-stratum CI against the runner-up
excludes 0; and the **flips**: pairs whose order (sign of the difference) differs between two
aggregations.  Higher values are better unless ``higher_is_better=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Mapping

import numpy as np

from ..errors import InputError
from .estimators import (ESTIMATORS, StratifiedDesign, paired_comparison, per_stratum,
                          stratified_estimates)
from ..ranking.results import ConfidenceInterval

__all__ = ["PairOutcome", "Flip", "StabilityReport", "decision_stability"]


@dataclass(frozen=True)
class PairOutcome:
    """System ``a`` − system ``b`` under one aggregation."""

    a: str
    b: str
    aggregation: str
    difference: float
    ci: ConfidenceInterval
    significant: bool

    @property
    def order(self) -> int:
        """+1: a ahead, −1: b ahead, 0: tied."""
        return int(np.sign(self.difference))


@dataclass(frozen=True)
class Flip:
    """A pair whose order differs between aggregations.

    ``ahead[aggregation]`` is the system ahead (None when tied); ``significant[aggregation]``
    whether that difference is significant.
    """

    a: str
    b: str
    ahead: Mapping[str, str | None]
    significant: Mapping[str, bool]


@dataclass(frozen=True, eq=False)
class StabilityReport:
    """Winners, pairwise significance and flips (module docstring)."""

    systems: tuple
    scores: Mapping[str, Mapping[str, float]]
    winners: Mapping[str, str]
    winner_significant: Mapping[str, bool]
    stratum_winners: Mapping[object, str]
    stratum_significant: Mapping[object, bool]
    pairs: tuple
    flips: tuple
    confidence_level: float = 0.95

    @property
    def stable(self) -> bool:
        """True when no pair flips between aggregations."""
        return not self.flips

    def to_dict(self) -> dict:
        return {"systems": list(self.systems), "confidence_level": self.confidence_level,
                "scores": {a: dict(s) for a, s in self.scores.items()},
                "winners": dict(self.winners), "winner_significant": dict(self.winner_significant),
                "stratum_winners": [{"stratum": k, "winner": v,
                                     "significant": self.stratum_significant[k]}
                                    for k, v in self.stratum_winners.items()],
                "pairs": [{"a": p.a, "b": p.b, "aggregation": p.aggregation,
                           "difference": p.difference, "ci_low": p.ci.low, "ci_high": p.ci.high,
                           "significant": p.significant} for p in self.pairs],
                "flips": [{"a": f.a, "b": f.b, "ahead": dict(f.ahead),
                           "significant": dict(f.significant)} for f in self.flips]}


def decision_stability(systems: Mapping[str, object], design: StratifiedDesign, *,
                       confidence_level: float = 0.95, higher_is_better: bool = True,
                       bootstrap: bool = False, n_resamples: int = 2000, rng=None,
                       seed: int | None = None, singleton: str = "pooled") -> StabilityReport:
    """Winners per aggregation and per stratum, pairwise significance, and flips.

    ``systems`` maps a system name to its per-query values (an array in design order or a
    ``{qid: value}`` mapping).  Paired CIs are analytic (t) unless ``bootstrap=True`` (stratified
    Rao–Wu; all pairs draw from one generator seeded by ``rng``/``seed``).
    """
    names = list(systems)
    if len(names) < 2:
        raise InputError(f"decision stability needs ≥ 2 systems, got {len(names)}",
                         fix="pass per-query values of two or more systems")
    sign = 1.0 if higher_is_better else -1.0
    vals = {s: design.align(systems[s]) for s in names}
    gen = None
    if bootstrap:
        from ..rng import as_generator
        gen = as_generator(rng, seed)
    aggs = [a for a in ESTIMATORS if a != "post_stratified" or design.weights is not None]
    est = {s: stratified_estimates(vals[s], design, singleton=singleton) for s in names}
    scores = {a: {s: est[s][a].estimate for s in names} for a in aggs}
    order = {a: sorted(names, key=lambda s: -sign * scores[a][s]) for a in aggs}
    winners = {a: order[a][0] for a in aggs}

    comps = {}
    pairs = []
    for s, t in combinations(names, 2):
        comp = paired_comparison(vals[s], vals[t], design, bootstrap=bootstrap,
                                 n_resamples=n_resamples, rng=gen, singleton=singleton)
        comps[(s, t)] = comp
        for a in aggs:
            e = comp.overall[a]
            ci = e.confidence_interval(confidence_level)
            pairs.append(PairOutcome(s, t, a, e.estimate, ci, bool(ci.low > 0 or ci.high < 0)))

    def paired(s, t):
        return (comps[(s, t)], 1.0) if (s, t) in comps else (comps[(t, s)], -1.0)

    winner_sig = {}
    for a in aggs:
        comp, _ = paired(order[a][0], order[a][1])
        ci = comp.overall[a].confidence_interval(confidence_level)
        winner_sig[a] = bool(ci.low > 0 or ci.high < 0)

    # per stratum: winner by stratum mean, significance against the runner-up
    H = design.n_covered
    means = np.stack([per_stratum(vals[s], design, singleton=singleton).mean[:H] for s in names])
    ranked = np.argsort(-sign * means, axis=0, kind="stable")
    stratum_winners, stratum_sig = {}, {}
    tables = {}
    for h in range(H):
        w, r = names[ranked[0, h]], names[ranked[1, h]]
        comp, _ = paired(w, r)
        if id(comp) not in tables:
            tables[id(comp)] = comp.per_stratum.confidence_interval(confidence_level)
        low, high = tables[id(comp)]
        label = design.labels[h]
        stratum_winners[label] = w
        stratum_sig[label] = bool(low[h] > 0 or high[h] < 0)

    flips = []
    for s, t in combinations(names, 2):
        outs = [p for p in pairs if p.a == s and p.b == t]
        signs = {int(np.sign(sign * p.difference)) for p in outs} - {0}
        if len(signs) > 1:
            ahead = {p.aggregation: (s if sign * p.difference > 0 else t if sign * p.difference < 0
                                     else None) for p in outs}
            flips.append(Flip(s, t, ahead, {p.aggregation: p.significant for p in outs}))
    return StabilityReport(tuple(names), scores, winners, winner_sig, stratum_winners,
                           stratum_sig, tuple(pairs), tuple(flips), confidence_level)
