"""What gap these queries could have seen: the minimum detectable effect of a strata test on
the evaluated strata, by simulation on the queries' own scores (:mod:`mteb_stratified.core
.power`).

The report states it next to every "no evidence": *with these 323 queries, a stratum gap
smaller than 0.09 in nDCG@10 cannot be seen 8 times in 10* (the paired test, NFCorpus test on
the topic map).  Here the simulation is small (``n_draws`` = 200 draws per point, 199
permutations per test: a standard error of about 0.03 on a power near 0.8, so the MDE is good
to about ±0.015; 0.096 from the full study); ``benchmarks/strata_power.py`` runs the full study
(1,000 draws).  The gap is planted by headroom (:func:`mteb_stratified.core.stats.power.plant_gap`),
so the MDE is in realised units.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..core.jsonsafe import frozen_json
from ..core.stats.power import EFFECT_GRID, SHARES, TARGET_POWER, power_study

__all__ = ["detectable_effect", "DetectableEffect", "MDE_DRAWS", "MDE_RESAMPLES"]

MDE_DRAWS = 200
MDE_RESAMPLES = 199


def _plain(d: Mapping) -> dict:
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in d.items()}


@dataclass(frozen=True)
class DetectableEffect:
    """The minimum detectable effect of one strata test on these queries (module docstring).

    Attributes
    ----------
    test : the test (a key of :data:`mteb_stratified.core.stats.power.TESTS`); what : it in words.
    type1_error : its rejection rate with no planted gap.
    mde : ``{share: gap or None}`` (read-only; shares as written, ``"0.2"``, ``"0.1"``): the
        gap the test finds with power ``target_power`` when planted in strata holding that
        share of the queries; None: not reached within ``grid``, or no strata hold that share.
    power : ``{share: {gap: power or None}}`` (read-only): the simulated power curve.
    target_power, n_draws, n_resamples : the simulation's settings.
    grid : the planted gaps (a tuple); mde_realised : ``mde`` in realised units.
    planting : how the gap was planted; rule : the rule in words.
    """

    test: str
    what: str
    type1_error: float | None
    mde: Mapping
    power: Mapping
    target_power: float
    n_draws: int
    n_resamples: int
    grid: tuple
    mde_realised: Mapping
    planting: str
    rule: str

    def __post_init__(self):
        for name in ("mde", "power", "mde_realised"):
            object.__setattr__(self, name, frozen_json(getattr(self, name),
                                                       mapping=MappingProxyType))
        object.__setattr__(self, "grid", tuple(self.grid))

    def to_dict(self) -> dict:
        """The JSON form (what :func:`detectable_effect` has always returned)."""
        return {"test": self.test, "what": self.what, "type1_error": self.type1_error,
                "mde": _plain(self.mde), "power": _plain(self.power),
                "target_power": self.target_power, "n_draws": self.n_draws,
                "n_resamples": self.n_resamples, "grid": list(self.grid),
                "mde_realised": _plain(self.mde_realised), "planting": self.planting,
                "rule": self.rule}

    @classmethod
    def from_dict(cls, d: Mapping) -> "DetectableEffect":
        """The result of its JSON form (:meth:`to_dict`)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})

    @classmethod
    def of(cls, value) -> "DetectableEffect | None":
        """``value`` as a :class:`DetectableEffect`: one already, its JSON form, or None."""
        if value is None or isinstance(value, cls):
            return value
        return cls.from_dict(value)


def detectable_effect(a, b, labels, *, test: str, n_draws: int = MDE_DRAWS,
                      n_resamples: int = MDE_RESAMPLES, seed: int = 0) -> dict | None:
    """``{"test", "type1_error", "mde": {share: d or None}, "power": {share: {d: power}}, ...}``
    (JSON-ready) for one test of :data:`mteb_stratified.core.stats.power.TESTS`; None with fewer
    than two strata or four queries (nothing to test)."""
    labels = list(labels)
    if len(labels) < 4 or len(set(labels)) < 2:
        return None
    study = power_study(np.asarray(a, float), np.asarray(b, float), labels, tests=(test,),
                        effects=EFFECT_GRID, shares=SHARES, grid=(), n_draws=n_draws,
                        n_resamples=n_resamples, seed=seed)
    d = study.to_dict()["tests"][test]
    return {"test": test, "what": d["what"], "type1_error": d["type1_error"],
            "mde": d["mde"], "power": d["power"], "target_power": TARGET_POWER, "n_draws": n_draws,
            "n_resamples": n_resamples, "grid": list(EFFECT_GRID),
            "mde_realised": d["mde_realised"], "planting": study.planting,
            "rule": "a gap planted in B's scores in random strata holding 20% (10%) ± a "
                    "quarter of the queries, every planted query moved the same share of the "
                    "way to the end of its range (the realised mean gap is the gap asked for, "
                    "no score leaves [0, 1]); MDE: the gap at which the test reaches power "
                    "0.8 (None: not within the grid, up to 0.4)"}
