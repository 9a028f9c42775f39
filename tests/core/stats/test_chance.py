"""The checks against chance: Holm's adjustment and the stratum-heterogeneity permutation test,
against brute force and in simulations with realistic stratum sizes (1-query strata included)."""

import itertools

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.chance import heterogeneity_test, holm

#: A realistic mix: a few large strata, several middling, many 1- and 2-query strata.
SIZES = [60, 25, 12, 8, 5, 5, 3, 2, 2] + [1] * 20


def _labels(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


def _ndcg_like(rng, n):
    """Skewed per-query values in [0, 1] with many zeros, as nDCG@10 is."""
    v = rng.beta(0.6, 1.6, n)
    v[rng.random(n) < 0.15] = 0.0
    return v


def test_holm_matches_its_definition():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(rng.integers(1, 9))
        order = np.argsort(p)
        m = p.size
        ref = np.empty(m)
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p[i]))
            ref[i] = running
        assert holm(p) == pytest.approx(ref)
    assert holm([]).size == 0
    with pytest.raises(InputError):
        holm([0.5, 1.5])


def test_permutation_p_value_equals_full_enumeration():
    """Tiny case: every distinct assignment of the labels enumerated; the Monte Carlo p-value
    converges to the exact permutation p-value."""
    y = np.array([0.9, 0.7, 0.8, 0.1, 0.3, 0.2])
    labels = np.array([0, 0, 0, 1, 1, 2])

    def ssb(lab):
        g = y.mean()
        return sum((lab == k).sum() * (y[lab == k].mean() - g) ** 2 for k in np.unique(lab))

    observed = ssb(labels)
    perms = [labels[list(p)] for p in itertools.permutations(range(6))]
    exact = np.mean([ssb(p) >= observed - 1e-12 for p in perms])
    res = heterogeneity_test(y, labels, n_resamples=40_000, min_size=1, seed=3)
    assert res.p_value == pytest.approx(exact, abs=0.006)
    assert res.eta_squared == pytest.approx(observed / np.sum((y - y.mean()) ** 2))


def test_null_calibration_with_realistic_sizes():
    """Values independent of the strata: the test rejects at about its level, and Holm keeps
    the family-wise rate of singled-out strata at or below it."""
    rng = np.random.default_rng(11)
    labels = _labels(SIZES)
    reps, rejected, any_flagged = 400, 0, 0
    for r in range(reps):
        res = heterogeneity_test(_ndcg_like(rng, labels.size), labels, n_resamples=199,
                                 min_size=5, seed=r)
        rejected += res.p_value <= 0.05
        any_flagged += bool(res.differing_strata(0.05))
        assert 0 < res.p_value <= 1
    assert 0.02 <= rejected / reps <= 0.085, rejected / reps  # binomial band around 0.05
    assert any_flagged / reps <= 0.075, any_flagged / reps
    # the null η² is what random strata of these sizes explain: far from 0 with 29 strata
    assert res.null_eta_squared > 0.1


def test_power_and_the_stratum_singled_out():
    rng = np.random.default_rng(5)
    labels = _labels(SIZES)
    y = _ndcg_like(rng, labels.size)
    y[labels == 1] = np.clip(y[labels == 1] + 0.4, 0, 1)  # the 25-query stratum is easier
    res = heterogeneity_test(y, labels, n_resamples=999, min_size=5, seed=0)
    assert res.p_value < 0.01 and res.eta_squared > res.null_eta_squared_95
    flagged = [s.stratum for s in res.differing_strata(0.05)]
    assert 1 in flagged
    assert {s.stratum for s in res.strata} == {0, 1, 2, 3, 4, 5}  # n >= 5 only


def test_deterministic_and_string_labels():
    rng = np.random.default_rng(1)
    y = rng.random(40)
    labels = np.array(["a", "b", "c", "d"] * 10, dtype=object)
    a = heterogeneity_test(y, labels, n_resamples=300, seed=7)
    b = heterogeneity_test(y, labels, n_resamples=300, seed=7)
    assert a == b and a.n_strata == 4


def test_bad_input():
    with pytest.raises(InputError, match="same length"):
        heterogeneity_test([0.1, 0.2], [0])
    with pytest.raises(InputError, match="at least 2 finite"):
        heterogeneity_test([0.1, np.nan], [0, 1])
    with pytest.raises(InputError, match="n_resamples"):
        heterogeneity_test([0.1, 0.2], [0, 1], n_resamples=0)


def test_tuple_labels_are_strata():
    y = np.array([0.9, 0.8, 0.85, 0.1, 0.2, 0.15])
    labels = [(0, "Low", "High")] * 3 + [(1, "Low", "Low")] * 3
    res = heterogeneity_test(y, labels, n_resamples=500, min_size=1, seed=0)
    assert res.n_strata == 2 and {s.stratum for s in res.strata} == set(labels)


def _realistic_sizes(rng, n_queries=320):
    """Stratum labels with NFCorpus-like sizes: a few large strata, many of 1–3 queries."""
    sizes = [60, 45, 30, 25, 20, 15, 12, 10, 8, 6, 5, 5, 4, 4, 3, 3, 2, 2, 2] + [1] * 20
    labels = np.repeat(np.arange(len(sizes)), sizes)
    labels = np.concatenate([labels, rng.integers(0, len(sizes), n_queries - labels.size)])
    return rng.permutation(labels)


def test_split_half_finds_planted_strata_and_not_random_ones():
    from mteb_stratified.core.stats.chance import split_half_reliability

    rng = np.random.default_rng(11)
    labels = _realistic_sizes(rng)
    effect = rng.normal(0, 0.25, labels.max() + 1)
    y = np.clip(0.3 + effect[labels] + rng.normal(0, 0.2, labels.size), 0, 1)
    planted = split_half_reliability(y, labels, n_splits=50, n_resamples=100, seed=1)
    assert planted.p_value <= 0.05 and planted.r > planted.null_r_95
    assert planted.spearman_brown == pytest.approx(2 * planted.r / (1 + planted.r))
    # no signal: false positives near the nominal rate over independent draws
    hits = 0
    for s in range(20):
        noise = rng.random(labels.size)
        hits += split_half_reliability(noise, labels, n_splits=20, n_resamples=60,
                                       seed=s).p_value <= 0.05
    assert hits <= 4


def test_flip_test_against_random_strata():
    from mteb_stratified.core.stats.chance import flip_test

    rng = np.random.default_rng(5)
    labels = _realistic_sizes(rng)
    a = rng.random(labels.size)
    # b is better overall, but worse by a wide margin in the two largest strata
    b = a + 0.1 + rng.normal(0, 0.02, labels.size)
    big = np.isin(labels, [0, 1])
    b[big] = a[big] - 0.2
    r = flip_test(a, b, labels, n_resamples=100, seed=0)
    assert r.flips >= 2 and r.significant_flips >= 2
    assert r.significant_rate > r.null_significant_rate and r.p_value <= 0.05
    # the same differences under random strata: no more flips than chance
    shuffled = flip_test(a, b, rng.permutation(labels), n_resamples=100, seed=0)
    assert shuffled.p_value > 0.05
    with pytest.raises(InputError):
        flip_test(a, b[:-1], labels)


def test_split_half_without_enough_strata_is_none_not_nan():
    import json

    from mteb_stratified.core.stats.chance import split_half_reliability
    from mteb_stratified.report.prose import split_half_cell

    r = split_half_reliability(np.array([0.1, 0.2, 0.3, 0.4, 0.9]), [0, 0, 1, 1, 2],
                               n_resamples=5, seed=0)
    d = r.to_dict()
    assert d["r"] is None and d["p_value"] is None and d["n_strata_used"] == 2
    json.loads(json.dumps(d, allow_nan=False))   # strict JSON
    assert split_half_cell(r) == "–"


# -- the batched kernel, the paired tests and their calibration ------------------------------

def test_the_batched_kernel_gives_the_single_call_p_values():
    """permutation_pvalues (the power harness's path) equals heterogeneity_test (the
    report's path) with the same seed, row by row."""
    from mteb_stratified.core.stats.chance import permutation_pvalues

    rng = np.random.default_rng(2)
    labels = _labels([40, 30, 20, 10, 5, 3, 1])
    Y = np.stack([_ndcg_like(rng, labels.size) for _ in range(4)])
    batch = permutation_pvalues(Y, labels, "omnibus", n_resamples=300, seed=9)
    single = [heterogeneity_test(y, labels, n_resamples=300, seed=9).p_value for y in Y]
    assert batch.tolist() == pytest.approx(single)


def test_max_z_equals_its_definition_by_brute_force():
    """z_k standardised by its exact permutation SD: the mean of z over all distinct
    relabellings is 0 and its variance 1 (full enumeration of a tiny case)."""
    from mteb_stratified.core.stats.chance import paired_heterogeneity_test

    a = np.array([0.9, 0.7, 0.8, 0.1, 0.3, 0.2, 0.5])
    b = np.zeros(7)
    labels = np.array([0, 0, 0, 1, 1, 1, 1])
    res = paired_heterogeneity_test(a, b, labels, n_resamples=50_000, min_size=1, seed=0)
    y, Q = a, 7
    zs = []
    for combo in itertools.combinations(range(Q), 3):
        S = y[list(combo)].sum()
        zs.append((S - 3 * y.mean()) / (y.std(ddof=1) * np.sqrt(3 * 4 / 7)))
    zs = np.array(zs)
    assert zs.mean() == pytest.approx(0, abs=1e-12) and zs.var() == pytest.approx(1)
    row = next(r for r in res.strata if r.stratum == 0)
    observed = (y[:3].sum() - 3 * y.mean()) / (y.std(ddof=1) * np.sqrt(12 / 7))
    assert row.z == pytest.approx(observed)
    # two strata: |z| is the same for both, so max-|z| p = P(|z*| ≥ |z|) over the 35 splits
    exact = np.mean(np.abs(zs) >= abs(observed) - 1e-12)
    assert res.p_value == pytest.approx(exact, abs=0.006)


@pytest.mark.parametrize("statistic", ["omnibus", "max_z", "flip"])
def test_null_calibration_of_the_paired_statistics(statistic):
    """Random strata of realistic sizes, paired differences with many exact zeros: each
    statistic rejects at about α (binomial band of 1,500 draws)."""
    from mteb_stratified.core.stats.chance import permutation_pvalues

    rng = np.random.default_rng(7)
    labels = _labels([92, 69, 58, 55, 50])
    a = _ndcg_like(rng, labels.size)
    b = np.clip(a + rng.normal(0.01, 0.2, labels.size), 0, 1)
    tie = rng.random(labels.size) < 0.25   # both systems score the same: d = 0
    b[tie] = a[tie]
    d = a - b
    Y = np.stack([d[rng.permutation(d.size)] for _ in range(1500)])
    rej = np.concatenate([permutation_pvalues(Y[i:i + 100], labels, statistic, n_resamples=199,
                                              seed=i) for i in range(0, 1500, 100)]) <= 0.05
    assert 0.035 <= rej.mean() <= 0.065, rej.mean()


def test_stratum_differences_sign_flip_calibration_and_power():
    from mteb_stratified.core.stats.chance import stratum_difference_rejections, stratum_differences

    rng = np.random.default_rng(3)
    labels = _labels([80, 60, 60, 60, 60])
    a = _ndcg_like(rng, labels.size)
    b = np.clip(a + rng.normal(0, 0.2, labels.size), 0, 1)
    tie = rng.random(labels.size) < 0.3
    b[tie] = a[tie]
    d = a - b
    # null: a and b exchangeable per query -> random signs
    D = np.stack([d * np.where(rng.random(d.size) < 0.5, -1, 1) for _ in range(1200)])
    rej = np.concatenate([stratum_difference_rejections(D[i:i + 200], labels, n_resamples=199,
                                                        seed=i) for i in range(0, 1200, 200)])
    assert 0.035 <= rej.mean() <= 0.065, rej.mean()
    # a planted stratum where b wins by 0.2: found, and named as b's
    b2 = b.copy()
    b2[labels == 2] = np.clip(b2[labels == 2] + 0.25, 0, 1)
    res = stratum_differences(a - a.mean() + b.mean(), b2, labels, n_resamples=999, seed=0)
    winners = {r.stratum: r.winner for r in res.strata}
    assert winners[2] == "b"
    assert stratum_difference_rejections((a - b2)[None], labels, n_resamples=999, seed=0)[0]


def test_split_half_batched_equals_single_and_uses_the_same_splits():
    from mteb_stratified.core.stats.chance import split_half_pvalues, split_half_reliability

    rng = np.random.default_rng(4)
    labels = _labels([30, 25, 20, 15, 10])
    y = _ndcg_like(rng, labels.size)
    single = split_half_reliability(y, labels, n_splits=8, n_resamples=60, seed=5)
    batch = split_half_pvalues(y[None], labels, n_splits=8, n_resamples=60, seed=5)
    assert batch[0] == pytest.approx(single.p_value)
    assert single.to_dict()["n_splits"] == 8


@pytest.mark.parametrize("block, dense", [(40, 2), (300, 160), (4_000_000, 160)])
def test_blocks_and_chunks_change_nothing(monkeypatch, block, dense):
    """Whatever the block sizes (relabellings, rows, the dense/bincount switch), the reduced
    statistics equal a brute-force computation over the same relabellings."""
    from mteb_stratified.core.stats import chance

    monkeypatch.setattr(chance, "_BLOCK", block)
    monkeypatch.setattr(chance, "_DENSE_MAX_K", dense)
    rng = np.random.default_rng(8)
    labels = _labels([9, 7, 5, 3, 1])
    k = 5
    Y = rng.random((7, labels.size))
    rel = chance._Relabellings(labels, 23, np.random.default_rng(1))
    L = np.concatenate([blk for _, blk in rel.blocks()])
    assert L.shape == (24, labels.size) and (L[0] == labels).all()
    n = np.bincount(labels).astype(float)
    got = chance._reduce(Y, rel, k, chance._omnibus(n, chance._Moments.of(Y)))
    ref = np.array([[sum(y[lab == j].sum() ** 2 / n[j] for j in range(k)) - y.sum() ** 2 / y.size
                     for lab in L] for y in Y])
    assert got == pytest.approx(ref)
    sums = chance._all_sums(Y[0], rel, k)
    assert sums == pytest.approx(np.array([np.bincount(lab, Y[0], k) for lab in L]))
    # the sign-flip maxima do not depend on the blocks either (same seeds: same signs)
    obs, tmax = chance._sign_flip_max(Y - 0.5, labels, np.arange(k), k, 30,
                                      np.random.default_rng(2))
    assert tmax.shape == (30, 7) and (tmax >= 0).all() and obs.shape == (7, k)


def test_results_read_and_unpack_as_scipys_and_keep_their_json_keys():
    """``statistic`` and ``pvalue`` as scipy's results name them, ``statistic, pvalue = res``
    unpacks; ``p_value`` stays the older name of the same figure, and the JSON keys do not
    change (the files written before read the same)."""
    from scipy import stats

    from mteb_stratified.core.stats.chance import (flip_test, paired_heterogeneity_test,
                                             split_half_reliability)
    rng = np.random.default_rng(4)
    labels = _labels([30, 25, 20, 15])
    a, b = _ndcg_like(rng, len(labels)), _ndcg_like(rng, len(labels))
    scipy_style = stats.ttest_rel(a, b)
    t, p = scipy_style  # the convention followed
    assert (t, p) == (scipy_style.statistic, scipy_style.pvalue)
    results = {
        "heterogeneity": heterogeneity_test(a, labels, n_resamples=99, seed=0),
        "paired": paired_heterogeneity_test(a, b, labels, n_resamples=99, seed=0),
        "flip": flip_test(a, b, labels, n_resamples=99, seed=0),
        "split_half": split_half_reliability(a, labels, n_splits=4, n_resamples=19, seed=0)}
    for name, res in results.items():
        statistic, pvalue = res
        assert statistic == res.statistic and pvalue == res.pvalue == res.p_value, name
        assert 0 < pvalue <= 1
        d = res.to_dict()
        assert d["p_value"] == pytest.approx(pvalue) and "pvalue" not in d, name
    assert results["split_half"].statistic == results["split_half"].r
    paired = results["paired"].to_dict()
    assert paired["omnibus_p_value"] == results["paired"].omnibus_pvalue
    assert "omnibus_pvalue" not in paired
    with pytest.raises(AttributeError):  # frozen, as scipy's results are read-only
        results["flip"].pvalue = 0.5


def test_both_halving_paths_give_the_same_halves(monkeypatch):
    """#45: halves by one partial sort per stratum (few strata) or one argsort per row (many)
    are the same halves from the same keys; sizes ⌊n/2⌋ / ⌈n/2⌉, each query in B half the
    time."""
    from mteb_stratified.core.stats import chance

    n = np.array([5, 4, 1, 2, 7, 3], dtype=float)
    L = np.stack([np.random.default_rng(s).permutation(np.repeat(np.arange(6), n.astype(int)))
                  for s in range(3)])
    a, ca = chance._halvings(L, n, 400, np.random.default_rng(1))
    monkeypatch.setattr(chance, "_PARTITION_MAX_K", 0)
    b, cb = chance._halvings(L, n, 400, np.random.default_rng(1))
    assert np.array_equal(a, b) and np.array_equal(ca, cb)
    rep = np.repeat(L, 400, axis=0)
    for g in range(6):
        got = np.sum(a & (rep == g), axis=1)
        assert np.array_equal(got, cb[:, 2 * g + 1])
        assert set(got.tolist()) <= {int(n[g]) // 2, -(-int(n[g]) // 2)}
    assert abs(a.mean() - 0.5) < 0.03


def test_the_tested_strata_are_frozen_rows_that_keep_their_json_form():
    """#49: the tested-stratum rows of the tests are frozen records; ``to_dict`` is the JSON
    row (keys and order as the files have them, a tuple label a list) and ``from_dict`` reads
    it back, named or not."""
    import json
    from dataclasses import FrozenInstanceError, replace

    from mteb_stratified.core.stats.chance import (SignFlipStratum, StratumDeviation,
                                             paired_heterogeneity_test, stratum_differences)

    rng = np.random.default_rng(8)
    labels = [(0, "Low", "High")] * 12 + [(1, "Low", "Low")] * 10 + [(2, "High", "Low")] * 8
    a, b = _ndcg_like(rng, len(labels)), _ndcg_like(rng, len(labels))
    het = heterogeneity_test(a, labels, n_resamples=99, min_size=5, seed=0)
    paired = paired_heterogeneity_test(a, b, labels, n_resamples=99, min_size=5, seed=0)
    where = stratum_differences(a, b, labels, n_resamples=99, min_size=5, seed=0)
    keys = {StratumDeviation: ["stratum", "n", "mean", "deviation", "z", "p", "p_adjusted"],
            SignFlipStratum: ["stratum", "n", "mean_difference", "ci_low", "ci_high", "z",
                              "p_adjusted", "winner"]}
    for res in (het, paired, where):
        assert len(res.strata) == 3
        for row in res.strata:
            d = row.to_dict()
            assert list(d) == keys[type(row)] and d["stratum"] == list(row.stratum)
            back = type(row).from_dict(json.loads(json.dumps(d)))
            assert back == row and isinstance(back.stratum, tuple)
            with pytest.raises(FrozenInstanceError):
                row.n = 0
        assert res.to_dict()["strata"] == [r.to_dict() for r in res.strata]
    named = replace(het.strata[0], stratum=3, name="L1.3", label="cancer")
    d = named.to_dict()
    assert list(d) == keys[StratumDeviation] + ["name", "label"] and d["stratum"] == 3
    assert StratumDeviation.from_dict(d) == named
    assert het.differing_strata(1.0) == list(het.strata) and het.differing_strata(0.0) == []
    assert paired.deviating_strata(1.0) == list(paired.strata)
    assert where.winners() == [r for r in where.strata if r.winner in ("a", "b")]
