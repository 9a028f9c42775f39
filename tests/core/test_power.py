"""The power study: planted strata, Type I error, power curves and the MDE."""

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.power import minimum_detectable_effect, planted_mask, power_study


def _scores(rng, n):
    v = rng.beta(0.6, 1.6, n)
    v[rng.random(n) < 0.2] = 0.0
    return v


def test_planted_strata_hold_the_share_asked_for():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(12), [40, 35, 30, 30, 25, 25, 20, 20, 15, 15, 10, 5])
    n = np.bincount(codes)
    for share in (0.2, 0.1):
        for _ in range(50):
            mask = planted_mask(codes, n, share, rng)
            got = mask.mean()
            assert share * 0.75 - 1e-9 <= got <= share * 1.25 + 1e-9
            # whole strata only
            assert all(len(set(mask[codes == k])) == 1 for k in range(12))
    big = np.repeat(np.arange(3), [100, 100, 100])
    assert planted_mask(big, np.bincount(big), 0.1, rng) is None


def test_mde_interpolates_and_says_when_unreached():
    assert minimum_detectable_effect([0.05, 0.1, 0.2], [0.2, 0.6, 1.0]) == pytest.approx(0.15)
    assert minimum_detectable_effect([0.05, 0.1], [0.9, 1.0]) == pytest.approx(0.05)
    assert minimum_detectable_effect([0.05, 0.1], [0.1, 0.5]) is None
    assert minimum_detectable_effect([0.05, 0.1], [None, None]) is None


def test_type1_error_at_alpha_and_power_rising_with_the_gap():
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(6), [70, 60, 55, 50, 45, 40]).tolist()
    b = _scores(rng, len(labels))
    a = np.clip(b + rng.normal(0, 0.15, b.size), 0, 1)
    study = power_study(a, b, labels, tests=("paired_max_z", "heterogeneity", "stratum_max_z"),
                        effects=(0.05, 0.2), shares=(0.2,), grid=(0.1,), n_draws=400,
                        n_resamples=199, seed=2)
    for t in ("paired_max_z", "heterogeneity", "stratum_max_z"):
        assert 0.02 <= study.type1_error[t] <= 0.085, study.type1_error
        assert study.power[t][0.2][0.2] > study.power[t][0.2][0.05] > study.type1_error[t] - 0.03
    # the one-system tests are also checked on A's scores
    assert 0.02 <= study.type1_error_a["stratum_max_z"] <= 0.085
    assert study.power["paired_max_z"][0.2][0.2] > 0.95
    assert study.mde["paired_max_z"][0.2] is not None
    d = study.to_dict()
    assert set(d["tests"]["paired_max_z"]["power"]) == {"0.2"}
    assert d["strata_sizes"] == [70, 60, 55, 50, 45, 40]


def test_a_share_no_strata_can_hold_is_none():
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(3), [40, 40, 40]).tolist()
    b = _scores(rng, 120)
    study = power_study(b, b[::-1].copy(), labels, tests=("paired_omnibus",), effects=(0.1,),
                        shares=(0.1,), grid=(), n_draws=20, n_resamples=19, seed=0)
    assert study.power["paired_omnibus"][0.1][0.1] is None
    assert study.mde["paired_omnibus"][0.1] is None


def test_bad_input():
    with pytest.raises(InputError, match="unknown test"):
        power_study([0.1] * 5, [0.2] * 5, [0, 0, 1, 1, 1], tests=("bogus",))
    with pytest.raises(InputError, match="same length"):
        power_study([0.1] * 5, [0.2] * 4, [0, 0, 1, 1, 1])
