"""The power study: planted strata, Type I error, power curves and the MDE."""

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.power import (minimum_detectable_effect, plant_gap, planted_mask,
                                        power_study)


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


def _saturated(rng, n, at_one=0.47):
    """Scores like a saturated corpus: a share exactly 1, the rest spread over [0, 1)."""
    v = rng.beta(1.5, 1.2, n) * 0.999
    v[rng.random(n) < at_one] = 1.0
    return v


def test_headroom_planting_stays_in_range_and_plants_the_gap_asked_for():
    rng = np.random.default_rng(4)
    b = _saturated(rng, 400)
    mask = rng.random(400) < 0.2
    for upward in (True, False):
        for d in (0.05, 0.1, 0.2):
            out, realised = plant_gap(b, mask, d, upward=upward)
            assert np.all((out >= 0) & (out <= 1))
            room = (1 - b[mask] if upward else b[mask]).mean()
            # the gap asked for, or all the room there is when it asks for more
            assert abs(realised) == pytest.approx(min(d, room), abs=1e-12)
            assert np.sign(realised) == (1 if upward else -1)
            # only the planted queries move, and a query at the end of its range stays there
            assert np.array_equal(out[~mask], b[~mask])
            end = (b == 1.0) if upward else (b == 0.0)
            assert np.array_equal(out[mask & end], b[mask & end])
    # more than the room there is: every planted query goes to the end, realised < d
    out, realised = plant_gap(b, mask, 0.99)
    assert np.all(out[mask] == 1.0) and realised < 0.99


def test_clipping_halves_a_gap_on_a_saturated_corpus_and_headroom_does_not():
    """The measured fault of issue #45: with 47% of the scores at 1, clipping turns a nominal
    0.10 into about 0.05; the study reports the realised gap next to the nominal one."""
    rng = np.random.default_rng(5)
    labels = np.repeat(np.arange(8), 50).tolist()
    b = _saturated(rng, 400)
    a = np.clip(b - rng.normal(0, 0.3, b.size), 0, 1)
    kw = dict(tests=("paired_max_z",), effects=(0.1,), shares=(0.2,), grid=(0.2, 0.4),
              n_draws=100, n_resamples=99, seed=1, direction="up")
    clip = power_study(a, b, labels, planting="clip", **kw)
    head = power_study(a, b, labels, planting="headroom", **kw)
    got_clip = clip.realised["paired_max_z"][0.2][0.1]
    got_head = head.realised["paired_max_z"][0.2][0.1]
    assert 0.04 < got_clip < 0.07
    assert got_head == pytest.approx(0.1, abs=1e-9)
    # the same draws' power is higher when the whole gap lands
    assert head.power["paired_max_z"][0.2][0.1] > clip.power["paired_max_z"][0.2][0.1]
    d = clip.to_dict()["tests"]["paired_max_z"]
    assert d["realised"]["0.2"]["0.1"] == pytest.approx(got_clip)
    assert set(d) >= {"mde", "mde_realised"}
    assert clip.to_dict()["planting"] == "clip" and head.to_dict()["direction"] == "up"


def test_the_direction_follows_the_room():
    rng = np.random.default_rng(6)
    labels = np.repeat(np.arange(6), 40).tolist()
    high = _saturated(rng, 240, at_one=0.6)
    low = 1.0 - high
    kw = dict(tests=("paired_omnibus",), effects=(0.05,), shares=(0.2,), grid=(),
              n_draws=10, n_resamples=19, seed=0)
    assert power_study(high, high, labels, **kw).upward is False
    assert power_study(low, low, labels, **kw).upward is True
    with pytest.raises(InputError, match="planting"):
        power_study(low, low, labels, planting="shift", **kw)
    with pytest.raises(InputError, match="direction"):
        power_study(low, low, labels, direction="sideways", **kw)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        power_study(low + 1.0, low, labels, **kw)


def test_plant_gap_refuses_what_it_cannot_plant():
    b = np.array([0.2, 0.5, 0.9, 0.0])
    # an integer 0/1 mask is a mask, not positions
    out, realised = plant_gap(b, np.array([1, 0, 1, 0]), 0.1)
    assert realised == pytest.approx(0.1) and out[1] == b[1] and out[3] == b[3]
    with pytest.raises(InputError, match="≥ 0"):
        plant_gap(b, b > 0.3, -0.1)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        plant_gap(b * 2, b > 0.3, 0.1)
    with pytest.raises(InputError, match="shape"):
        plant_gap(b, [True, False], 0.1)
