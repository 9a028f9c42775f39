"""How much a gap varies across groups: the REML random-intercept fit, its profile-likelihood
bound on τ (checked against statsmodels' own profile and by coverage on real differences), the
shrunken gaps, and what it says when τ cannot be estimated."""

import math
import warnings

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.stratification.variation import (PROFILE_CUTOFF, gap_variation,
                                                      topic_level)

sm = pytest.importorskip("statsmodels.regression.mixed_linear_model")


def _normal_groups(rng, sizes, tau, sigma=0.2, mu=0.03):
    groups = np.repeat(np.arange(len(sizes)), sizes)
    return mu + rng.normal(0, tau, len(sizes))[groups] + rng.normal(0, sigma, groups.size), groups


def test_the_fit_is_statsmodels_reml_and_the_bound_sits_on_its_profile():
    rng = np.random.default_rng(0)
    d, g = _normal_groups(rng, [30, 25, 40, 20, 35, 30, 28, 22], tau=0.08)
    fit = gap_variation(d, g)
    assert fit.estimable and not fit.degenerate and fit.n_groups == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sm.MixedLM(d, np.ones((d.size, 1)), groups=g).fit(reml=True, method=["powell"])
    assert fit.tau == pytest.approx(math.sqrt(float(np.asarray(ref.cov_re)[0, 0])), rel=1e-4)
    assert fit.sigma == pytest.approx(math.sqrt(ref.scale), rel=1e-4)
    assert fit.mean == pytest.approx(float(ref.fe_params[0]), abs=1e-6)
    # statsmodels' profile_re at the bound: the likelihood has fallen by χ²₁(0.90) / 2
    tau2 = fit.tau ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof = ref.profile_re(0, vtype="re", num_low=1, dist_low=tau2 / 2, num_high=400,
                              dist_high=3 * fit.tau_upper ** 2)
    v, ll = prof[:, 0], prof[:, 1]
    above = v > tau2
    crossing = np.interp(ref.llf - PROFILE_CUTOFF / 2, ll[above][::-1], v[above][::-1])
    assert math.sqrt(crossing) == pytest.approx(fit.tau_upper, rel=0.01)
    assert fit.tau < fit.tau_upper


def test_shrunken_gaps_are_the_blups_with_their_weights():
    rng = np.random.default_rng(1)
    sizes = [5, 10, 40, 80, 15, 30]
    d, g = _normal_groups(rng, sizes, tau=0.1)
    fit = gap_variation(d, g)
    for row in fit.groups:
        mean = d[g == row["group"]].mean()
        w = fit.tau ** 2 / (fit.tau ** 2 + fit.sigma ** 2 / row["n"])
        assert row["weight"] == pytest.approx(w, rel=1e-6)
        # the empirical-Bayes prediction μ̂ + w (ȳ_g − μ̂), between μ̂ and the raw mean
        assert row["shrunken"] == pytest.approx(fit.mean + w * (mean - fit.mean), abs=1e-5)
        assert row["ci_low"] < row["shrunken"] < row["ci_high"]
    # a small group is pulled further toward μ̂ than a large one
    by_n = {r["n"]: r for r in fit.groups}
    assert by_n[5]["weight"] < by_n[80]["weight"]


def test_the_bound_covers_a_planted_spread_on_real_differences(real_differences):
    """The simulation of benchmarks/gap_variation.py, small: the real per-query differences
    of two BM25 runs on NFCorpus test, 8 random groups, u_g ~ N(0, 0.05²) planted.  A
    percentile or plug-in bound (τ̂ itself) would cover far less often than 95%."""
    d0 = real_differences
    groups = np.arange(d0.size) % 8
    rng = np.random.default_rng(2)
    covered, plug_in, bounds = 0, 0, []
    reps = 80
    for _ in range(reps):
        g = rng.permutation(groups)
        fit = gap_variation(d0 + rng.normal(0, 0.05, 8)[g], g)
        assert fit.estimable
        covered += fit.tau_upper >= 0.05
        plug_in += fit.tau >= 0.05
        bounds.append(fit.tau_upper)
    # 95% nominal; 80 draws: SE 0.024
    assert covered / reps >= 0.86, covered / reps
    assert plug_in / reps < 0.7
    assert np.mean(bounds) < 0.2   # a bound, not the whole range


def test_no_spread_is_on_the_boundary_and_still_bounded():
    rng = np.random.default_rng(3)
    d, g = _normal_groups(rng, [40] * 6, tau=0.0)
    d = d - np.array([d[g == k].mean() for k in range(6)])[g]   # every group mean equal
    fit = gap_variation(d, g)
    assert fit.tau == 0.0 and fit.note and "boundary" in fit.note
    assert 0 < fit.tau_upper < 0.2
    assert all(r["shrunken"] == pytest.approx(fit.mean) for r in fit.groups)


@pytest.mark.parametrize("d,groups,why", [
    ([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], "1 group"),
    ([0.1, 0.2, 0.3, 0.4], [0, 1, 2, 3], "one query"),
    ([0.1, 0.1, 0.3, 0.3, 0.2], [0, 0, 1, 1, 2], "no group holds two queries whose"),
    # the same, where floating-point rounding leaves the group means a hair off their values
    ([0.1] * 3 + [0.7] * 3 + [0.3] * 3, [0] * 3 + [1] * 3 + [2] * 3,
     "no group holds two queries whose"),
])
def test_not_estimable_says_why(d, groups, why):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # nothing from the optimiser leaks out
        fit = gap_variation(d, groups)
    assert not fit.estimable and why in fit.why
    assert fit.tau is None and fit.tau_upper is None
    assert fit.to_dict()["why"] == fit.why


def test_every_difference_equal_is_degenerate_bound_zero_no_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = gap_variation([0.0] * 12, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    assert fit.estimable and fit.degenerate
    assert fit.tau == 0.0 and fit.tau_upper == 0.0 and fit.sigma == 0.0
    d = fit.to_dict()
    assert "degenerate" in d["note"]
    assert all(not (isinstance(v, float) and math.isnan(v)) for v in d.values())


def test_no_optimiser_warning_leaks_near_the_boundary(real_differences):
    """Real differences in 30 random groups: statsmodels' default optimiser warns and stops
    short here; the fit is still a converged REML optimum, and nothing is printed."""
    g = np.random.default_rng(4).permutation(np.arange(real_differences.size) % 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = gap_variation(real_differences, g)
    assert fit.estimable and fit.tau_upper is not None and fit.tau_upper >= fit.tau
    # the fit's γ is the maximum of statsmodels' REML profile over a grid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sm.MixedLM(real_differences, np.ones((g.size, 1)), groups=g)
        model.fit(reml=True, method=["powell"])   # sets the model's fitting state

    def ll(gamma):
        p = sm.MixedLMParams.from_components(fe_params=np.zeros(1), cov_re=np.array([[gamma]]))
        return model.loglike(p, profile_fe=True)

    best = ll(fit.extra["gamma"])
    assert all(ll(x) <= best + 1e-6 for x in np.linspace(0, 4 * fit.extra["gamma"] + 0.05, 60))


def test_bad_input_is_an_input_error():
    with pytest.raises(InputError, match="same length"):
        gap_variation([0.1, 0.2], [0])
    with pytest.raises(InputError, match="same length"):
        gap_variation([0.1, float("nan")], [0, 1])
    with pytest.raises(InputError, match="confidence_level"):
        gap_variation([0.1, 0.2], [0, 1], confidence_level=1.5)


def test_topic_level_is_level_one_when_the_tree_has_one(artifact):
    from mteb_stratified.core.stats.hierarchy import ClusterTree

    assert topic_level(artifact.cluster_tree) == 1
    assert topic_level(ClusterTree.flat(5)) == 0
