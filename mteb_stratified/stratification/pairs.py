"""The paired question first: where does system A beat system B, beyond chance?

For every pair of systems on their shared stratified queries, at the evaluated grain
(:mod:`.grain`), on the per-query difference d = a − b of the measure's expected value:

* the **overall difference** with its paired 95% t interval;
* **where the gap differs** (:func:`~mteb_stratified.core.chance.paired_heterogeneity_test`):
  the max-|z| permutation test of one stratum's gap against the rest (primary, chosen on
  NFCorpus dev by power) and the omnibus test, against random strata of the same sizes, with
  Westfall–Young adjusted p per stratum;
* **where A beats B** (:func:`~mteb_stratified.core.chance.stratum_differences`): per stratum,
  d against 0 by random sign flips, Westfall–Young over the strata;
* the flip strength and split-half reliability of the differences, against random strata;
* the **minimum detectable effect** of the paired test for this query set (:mod:`.power`);
* **how much the gap varies** (:mod:`.variation`): τ, the between-topic SD of d in a REML
  random-intercept model, with its 95% upper bound and the shrunken gap of every topic
  (``variation["topics"]``: the units of the tree's level 1, :func:`.variation.topic_level`).
  When no test above finds a difference, the bound is what the report states: the gap varies
  across these topics by at most τ_u.  Without statsmodels (the ``stats`` extra) it says so
  and names the install command.

With one system there is no pair: :func:`paired_summary` says so instead of testing.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Mapping

import numpy as np

from ..core import InputError, QueryStrata
from ..core.chance import (SPLIT_HALF_RESAMPLES, flip_test, paired_heterogeneity_test,
                           split_half_reliability, stratum_differences)
from ..core.coverage import DEFAULT_N_MIN
from ..core.per_query import PerQuery
from .block import align_strata
from .grain import DEFAULT_MIN_QUERIES, estimation_design, evaluated_strata, unit_name
from .power import detectable_effect
from .variation import gap_variation, topic_level

__all__ = ["paired_summary", "paired_t", "gap_variations", "ONE_SYSTEM"]

ONE_SYSTEM = ("one system only: the paired tests (where one system beats another) need two "
              "or more systems on the same queries")


#: The power at which :func:`paired_t` states its minimum detectable difference.
MDE_POWER = 0.8


def paired_t(d: np.ndarray, confidence_level: float = 0.95) -> dict:
    """The mean of the per-query differences ``d`` with its paired t interval and p (n ≥ 2),
    and ``mde``: the smallest true mean difference the test detects with probability
    :data:`MDE_POWER` at this level, (t(1 − α/2; n − 1) + t(0.8; n − 1)) · s_d / √n (the
    normal-shift approximation of the paired t test's power)."""
    from scipy import stats

    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    half = float(stats.t.ppf(0.5 + confidence_level / 2, max(n - 1, 1)) * se)
    t = mean / se if se > 0 else 0.0
    if se > 0:
        p = float(2 * stats.t.sf(abs(t), max(n - 1, 1)))
    else:   # every difference the same: 0 is no difference, anything else is certain
        p = 1.0 if mean == 0 else 0.0
    # the smallest true mean difference this test finds 80% of the time (two-sided, level
    # 1 - confidence_level): (t_{1-α/2, n-1} + t_{0.8, n-1}) · se, the usual paired-t MDE
    mde = float((stats.t.ppf(0.5 + confidence_level / 2, max(n - 1, 1))
                 + stats.t.ppf(MDE_POWER, max(n - 1, 1))) * se)
    return {"mean_difference": mean, "ci_low": mean - half, "ci_high": mean + half,
            "p_value": p, "mde": mde, "mde_power": MDE_POWER,
            "test": "paired t over the queries"}


def _named(rows, ev, design) -> list:
    out = []
    for r in rows:
        lab = design.labels[int(r["stratum"])]
        s = int(lab[0]) if isinstance(lab, tuple) else int(lab)
        out.append(dict(r, stratum=list(lab) if isinstance(lab, tuple) else s,
                        name=ev.names[s], label=ev.labels[s]))
    return out


def gap_variations(d, ev, artifact, confidence_level: float = 0.95) -> dict:
    """``{"topics": ...}``: :func:`.variation.gap_variation` of the differences ``d`` (in
    ``ev``'s query order) across the map's topics, each group named (``name``, ``label``);
    JSON-ready.  Without statsmodels: ``estimable`` False, and ``why`` names the install.

    Topics, not the evaluated strata: the random-effects model needs no minimum size per
    group, and its profile bound needs groups to count on (NFCorpus test, 500 draws per
    planted τ: coverage 0.938 and 0.902 at τ = 0.05 and 0.10 across the 30 topics, 0.902 and
    0.904 across the 4 evaluated strata; docs/validity/strata-power.md)."""
    tree = artifact.cluster_tree
    level = topic_level(tree)
    topics = tree.ancestors(level)[np.asarray(ev.fine.primary)]
    try:
        fit = gap_variation(d, topics.tolist(), confidence_level=confidence_level)
    except ImportError as exc:   # the stats extra is not installed
        return {"topics": {"estimable": False, "why": str(exc), "n_groups": None,
                           "level": level}}
    row = fit.to_dict()
    for g in row["groups"]:
        g["group"] = int(g["group"])
        g["name"] = unit_name(level, g["group"])
        g["label"] = artifact.unit_label(level, g["group"]) or ""
    row["level"] = level
    return {"topics": row}


def _pair(a_name, b_name, a, b, ev, design, *, n_min, n_resamples, seed, confidence_level,
          power, artifact) -> dict:
    labels = design.index
    d = a - b
    out = {"a": a_name, "b": b_name, "n_queries": int(d.size),
           "overall": paired_t(d, confidence_level),
           "variation": gap_variations(d, ev, artifact, confidence_level)}
    if design.n_covered < 2:
        out["tested"] = False
        out["why"] = ev.describe()["why"] if ev.cut.short else "one stratum: nothing to compare"
        return out
    het = paired_heterogeneity_test(a, b, labels, n_resamples=n_resamples, min_size=n_min,
                                    seed=seed)
    where = stratum_differences(a, b, labels, min_size=n_min, n_resamples=n_resamples,
                                seed=seed)
    flips = flip_test(a, b, labels, min_size=n_min, n_resamples=min(n_resamples, 500),
                      seed=seed)
    split = split_half_reliability(d, labels, seed=seed,
                                   n_resamples=min(n_resamples, SPLIT_HALF_RESAMPLES))
    h = het.to_dict()
    h["strata"] = _named(h["strata"], ev, design)
    w = where.to_dict()
    w["strata"] = _named(w["strata"], ev, design)
    for r in w["strata"]:
        r["winner"] = {"a": a_name, "b": b_name}.get(r["winner"])
    out.update(tested=True, heterogeneity=h, stratum_differences=w, flips=flips.to_dict(),
               split_half=split.to_dict(),
               power=detectable_effect(a, b, labels, test="paired_max_z", seed=seed)
               if power else None)
    return out


def paired_summary(systems: Mapping[str, Mapping], strata: QueryStrata, artifact, *,
                   scheme: str = "cluster", n_min: int = DEFAULT_N_MIN,
                   min_queries: int = DEFAULT_MIN_QUERIES, level: int = 0,
                   n_resamples: int = 2000, seed: int = 0, confidence_level: float = 0.95,
                   power: bool = True) -> dict:
    """Every pair of ``systems`` (``{name: per-query values}``) on their shared queries
    (module docstring); JSON-ready.  One system: ``{"pairs": [], "note": ONE_SYSTEM}``."""
    exp = {s: PerQuery.from_mapping(v)["expected"] for s, v in systems.items()}
    if not exp:
        raise InputError("no systems given", fix="pass the results of one or more systems")
    if len(exp) < 2:
        return {"pairs": [], "note": ONE_SYSTEM, "n_systems": len(exp)}
    shared = set.intersection(*(set(v) for v in exp.values()))
    sub, _ = align_strata(strata, sorted(shared))
    ev = evaluated_strata(sub, artifact, min_queries=min_queries, level=level)
    design = estimation_design(ev, scheme)
    vals = {s: np.array([v[q] for q in sub.queries], dtype=np.float64) for s, v in exp.items()}
    pairs = [_pair(a, b, vals[a], vals[b], ev, design, n_min=n_min, n_resamples=n_resamples,
                   seed=seed, confidence_level=confidence_level, power=power,
                   artifact=artifact)
             for a, b in combinations(exp, 2)]
    return {"pairs": pairs, "n_systems": len(exp), "n_queries": sub.n_queries,
            "grain": ev.describe(), "note": None}
