"""How much a gap varies across topics: a bound for when no test says it varies (ours).

A permutation test that finds nothing says "no evidence", never "no difference".  A reader
choosing a system wants the bound: *the BM25 − MiniLM gap varies across these 30 topics by at
most X*.  :func:`gap_variation` fits the one-way random-effects model of the per-query paired
difference d_i = a_i − b_i with a random intercept per group g(i) (a topic, or an evaluated
stratum):

    d_i = μ + u_g(i) + e_i,   u_g ~ N(0, τ²),   e_i ~ N(0, σ²),

by REML with statsmodels' ``MixedLM`` (a well-kept implementation; nothing here optimises a
likelihood by hand).  τ is the between-group standard deviation of the gap: with τ = 0.02 the
typical topic's gap lies within ±0.04 of μ.

* **τ̂** and σ̂: the REML estimates (τ̂ = 0 when the estimate is on the boundary);
* **the 95% upper bound** τ_u: profile likelihood.  statsmodels' REML log-likelihood
  ``MixedLM.loglike`` with μ and σ² profiled out, as a function of the variance ratio γ =
  τ²/σ² (the parametrisation of ``MixedLMResults.profile_re``, whose values it equals);
  γ_u > γ̂ solves 2 (ℓ(γ̂) − ℓ(γ_u)) = χ²₁(0.90) = 2.706 (one-sided 95%: the bound is the
  upper end of the two-sided 90% profile interval) by Brent's method, and τ_u = √(γ_u ·
  σ̂²(γ_u)).  Its coverage was measured by simulation on NFCorpus test's real per-query
  differences, stratum labels permuted and a planted u_g ~ N(0, τ²) added
  (``benchmarks/gap_variation.py``; docs/validity/strata-power.md): 0.938 at τ = 0.05 and
  0.902 at τ = 0.10 across the 30 topics, 0.90–0.925 across 4 strata, so the 95% is nominal
  and the bound runs a little low when the spread is large or the groups few; a bound ≥ 0
  always covers τ = 0, so coverage there is 1 by construction and the bound's size is what
  the simulation shows;
* **shrunken gaps** per group: the empirical-Bayes predictions μ̂ + û_g (statsmodels'
  ``random_effects``), pulled toward μ̂ by w_g = τ̂² / (τ̂² + σ̂²/n_g), with 95% intervals from
  the prediction error variance Var(û_g | d) + (1 − w_g)² Var(μ̂) (τ̂ taken as known: the
  intervals are too narrow when τ is poorly estimated; at τ̂ = 0 every group gets μ̂'s own
  interval, although the bound allows a spread up to τ_u).

Not estimable (``estimable`` False, ``why`` says which): fewer than two groups; no group with
two or more queries, or no spread within any group (τ² and σ² cannot be told apart); REML
that does not converge or fails numerically.  Every
difference equal: σ̂ = τ̂ = τ_u = 0, marked ``degenerate``.  Warnings of the optimiser are
caught and never printed; a boundary estimate is said in ``note``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._optional import require
from ..core import InputError

__all__ = ["GapVariation", "gap_variation", "topic_level", "PROFILE_CUTOFF", "METHOD"]

#: χ²₁(0.90): the likelihood-ratio cut-off of a one-sided 95% profile bound.
PROFILE_CUTOFF = 2.705543454095404
METHOD = ("REML random intercept per group (statsmodels MixedLM); 95% upper bound on τ by "
          "profile likelihood (one-sided, χ²₁(0.90) = 2.706)")
#: A fitted γ whose likelihood beats γ = 0 by less than this is the boundary τ̂ = 0.
_FLAT = 1e-8
#: The smallest variance ratio τ²/σ² the profile is evaluated at (τ = 10⁻⁴ σ: nil).
_GAMMA_FLOOR = 1e-8
#: The largest variance ratio the bound is searched to; a fit beyond it is not estimable.
_GAMMA_MAX = 1e6
#: statsmodels' optimisers, tried in this order until one converges.
_OPTIMISERS = ("powell", "nm", "bfgs")


@dataclass(frozen=True)
class GapVariation:
    """The random-effects fit of a paired gap across groups (module docstring).

    ``tau``, ``tau_upper``, ``sigma``, ``mean`` (μ̂) with ``mean_se``; ``groups``: one row per
    group ``{"group", "n", "mean", "shrunken", "ci_low", "ci_high", "weight"}``; ``n_groups``,
    ``n_queries``; ``estimable`` False with ``why``; ``degenerate`` True when every difference
    is equal; ``note``: the boundary, when τ̂ = 0.
    """

    estimable: bool
    n_groups: int
    n_queries: int
    tau: float | None = None
    tau_upper: float | None = None
    sigma: float | None = None
    mean: float | None = None
    mean_se: float | None = None
    groups: tuple = ()
    degenerate: bool = False
    why: str | None = None
    note: str | None = None
    confidence_level: float = 0.95
    method: str = METHOD
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"estimable": self.estimable, "why": self.why, "note": self.note,
                "degenerate": self.degenerate, "n_groups": self.n_groups,
                "n_queries": self.n_queries, "tau": self.tau, "tau_upper": self.tau_upper,
                "sigma": self.sigma, "mean": self.mean, "mean_se": self.mean_se,
                "confidence_level": self.confidence_level, "method": self.method,
                "groups": [dict(g) for g in self.groups], **self.extra}


def topic_level(tree) -> int:
    """The tree level whose units are the map's topics: level 1 (the document map's Leiden
    topics; the entity map's first merge of its fine clusters), or 0 when the tree has no level
    between the fine clusters and the whole corpus."""
    return 1 if tree.n_levels >= 3 else 0


def _not_estimable(why: str, n_groups: int, n: int) -> GapVariation:
    return GapVariation(False, n_groups, n, why=why)


def _degenerate(d: np.ndarray, keys, counts) -> GapVariation:
    mu = float(d[0]) if d.size else 0.0
    rows = tuple({"group": k, "n": int(c), "mean": mu, "shrunken": mu, "ci_low": mu,
                  "ci_high": mu, "weight": 0.0} for k, c in zip(keys, counts))
    return GapVariation(True, len(keys), int(d.size), tau=0.0, tau_upper=0.0, sigma=0.0,
                        mean=mu, mean_se=0.0, groups=rows, degenerate=True,
                        note="every per-query difference is the same: the gap cannot vary "
                             "(a degenerate fit, the bound is 0)")


def gap_variation(d, groups, *, confidence_level: float = 0.95) -> GapVariation:
    """Fit the random-effects model of the differences ``d`` (one per query) with a random
    intercept per ``groups`` label (module docstring).  ``confidence_level`` sets the
    shrunken gaps' intervals; the bound on τ is one-sided at 95%."""
    d = np.asarray(d, dtype=np.float64)
    labels = list(groups)
    if d.ndim != 1 or len(labels) != d.size or not np.all(np.isfinite(d)):
        raise InputError("d and groups must be 1-D, finite and of the same length",
                         fix="pass one paired difference and one group label per query")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}",
                         fix="e.g. 0.95")
    keys = sorted(set(labels), key=str)
    index = {k: i for i, k in enumerate(keys)}
    codes = np.array([index[x] for x in labels], dtype=np.int64)
    counts = np.bincount(codes, minlength=len(keys))
    K, n = len(keys), int(d.size)
    if K < 2:
        return _not_estimable(f"{K} group{'s' if K != 1 else ''}: a spread across groups needs "
                              "two or more", K, n)
    if counts.max() < 2:
        return _not_estimable("every group holds one query: the variation between groups "
                              "cannot be told apart from the noise within them", K, n)
    if np.ptp(d) == 0:
        return _degenerate(d, keys, counts)
    means = np.bincount(codes, weights=d, minlength=K) / np.maximum(counts, 1)
    if np.allclose(d, means[codes], rtol=0.0, atol=1e-9 * max(1.0, float(np.abs(d).max()))):
        return _not_estimable("no group holds two queries whose differences differ: with no "
                              "noise within groups the model cannot tell how much of the "
                              "spread between them is real", K, n)
    sm = require("statsmodels.regression.mixed_linear_model", "stats")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = sm.MixedLM(d, np.ones((n, 1)), groups=codes)
            fit = _fit(model)
            if fit is None:
                return _not_estimable("the REML fit did not converge with any of statsmodels' "
                                      f"optimisers ({', '.join(_OPTIMISERS)})", K, n)
            gamma = max(float(np.asarray(fit.cov_re_unscaled)[0, 0]), 0.0)
            if gamma > _GAMMA_MAX:
                return _not_estimable(f"the REML fit puts nearly all the spread between groups "
                                      f"(τ²/σ² = {gamma:.3g}, σ̂ ≈ 0): the noise within "
                                      "groups is too small to bound the spread", K, n)
            ll_hat, scale = _profile(sm, model, gamma)
            if gamma > 0:
                ll_0, scale_0 = _profile(sm, model, 0.0)
                if ll_hat - ll_0 < _FLAT:   # the optimiser's tolerance above the boundary
                    gamma, ll_hat, scale = 0.0, ll_0, scale_0
            upper = _profile_upper(sm, model, gamma, ll_hat)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            return _not_estimable(f"the REML fit failed numerically ({exc})", K, n)
    return _result(fit, gamma, scale, upper, codes, keys, counts, d, confidence_level)


def _fit(model):
    """The first REML fit that converges among statsmodels' optimisers, in the order of
    :data:`_OPTIMISERS`; None when none converges.  Powell first: statsmodels' default
    gradient method (BFGS) can stop short near the boundary τ = 0 (on NFCorpus test's 30
    topics it reports no convergence at a likelihood 2.3 below Powell's and Nelder–Mead's,
    which agree to 1e-7), and where it converges Powell finds the same optimum."""
    for method in _OPTIMISERS:
        try:
            fit = model.fit(reml=True, method=[method])
        except (ValueError, np.linalg.LinAlgError):   # a singular fit: try the next one
            continue
        if fit.converged and np.isfinite(fit.llf):
            return fit
    return None


def _profile(sm, model, gamma: float) -> tuple[float, float]:
    """(REML log-likelihood, σ̂²) at variance ratio γ, μ and σ² profiled out; γ below
    :data:`_GAMMA_FLOOR` is evaluated there (statsmodels' likelihood is infinite at γ = 0 and
    unstable below 1e-10: it jumps by 0.09 between 1e-10 and 1e-12 on 100 normal draws)."""
    gamma = max(gamma, _GAMMA_FLOOR)
    p = sm.MixedLMParams.from_components(fe_params=np.zeros(1), cov_re=np.array([[gamma]]))
    ll = float(model.loglike(p, profile_fe=True))
    fe, _ = model.get_fe_params(p.cov_re, p.vcomp)
    return ll, float(model.get_scale(fe, p.cov_re, p.vcomp))


def _profile_upper(sm, model, gamma: float, ll_hat: float) -> float | None:
    """τ_u: the profile bound of the module docstring, from the fitted γ̂ and its profile
    log-likelihood ``ll_hat`` (None: not found below γ = 1e6)."""
    from scipy.optimize import brentq

    target = ll_hat - PROFILE_CUTOFF / 2

    def f(g):
        return _profile(sm, model, g)[0] - target

    lo, hi = max(gamma, _GAMMA_FLOOR), max(4 * gamma, 0.01)
    while f(hi) > 0:
        lo, hi = hi, hi * 4
        if hi > _GAMMA_MAX:
            return None
    g_u = brentq(f, lo, hi, xtol=1e-10, rtol=1e-8)
    return math.sqrt(max(g_u * _profile(sm, model, g_u)[1], 0.0))


def _result(fit, gamma, scale, upper, codes, keys, counts, d,
            confidence_level) -> GapVariation:
    from scipy import stats

    tau2 = gamma * scale
    mu = float(np.asarray(fit.fe_params)[0])
    # Var(μ̂) = 1 / Σ_g n_g / (σ² + n_g τ²), the GLS variance of the mean at the fitted
    # components (statsmodels' cov_params() can turn negative at the boundary)
    mu_var = 1.0 / float(np.sum(counts / (scale + counts * tau2)))
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    re = fit.random_effects
    rows = []
    for i, k in enumerate(keys):
        n_g = int(counts[i])
        u = float(np.asarray(re[i]).ravel()[0]) if tau2 > 0 else 0.0
        w = tau2 / (tau2 + scale / n_g) if tau2 > 0 else 0.0
        # prediction error variance of μ̂ + û_g: Var(û_g | d) = τ² (1 − w_g), plus μ̂'s share
        half = z * math.sqrt(tau2 * (1 - w) + (1 - w) ** 2 * mu_var)
        rows.append({"group": k, "n": n_g, "mean": float(d[codes == i].mean()),
                     "shrunken": mu + u, "ci_low": mu + u - half, "ci_high": mu + u + half,
                     "weight": w})
    note = ("the REML estimate is on the boundary (τ̂ = 0): the data show no spread beyond "
            "the noise, and the bound says how much they could hide") if tau2 == 0 else None
    return GapVariation(True, len(keys), int(d.size), tau=math.sqrt(tau2), tau_upper=upper,
                        sigma=math.sqrt(scale), mean=mu, mean_se=math.sqrt(mu_var),
                        groups=tuple(rows), note=note, confidence_level=confidence_level,
                        why=None if upper is not None else
                        "the profile likelihood does not fall by 2.706 below τ²/σ² = 10⁶: no "
                        "finite bound", extra={"gamma": gamma})
