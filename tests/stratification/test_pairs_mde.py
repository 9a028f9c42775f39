"""The paired t test's stated MDE (``paired_t(...)["mde"]``, the headline's "smallest gap these
queries would detect 8 times in 10"): its power measured on real per-query differences."""

import numpy as np
import pytest

from mteb_stratified.io import bundled_path, load_beir
from mteb_stratified.stratification.pairs import MDE_POWER, paired_t

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def real_differences():
    """Per-query nDCG@10 (expected) of two real BM25 systems on the NFCorpus test split:
    bm25s's defaults (k1 1.5, b 0.75) against Anserini's (k1 0.9, b 0.4); their differences
    are the skewed, zero-heavy shape real paired differences have."""
    from mteb_stratified import evaluate
    from mteb_stratified.adapters.bm25 import bm25_run

    data = load_beir(bundled_path("nfcorpus"), "test")
    values = []
    for k1, b in ((1.5, 0.75), (0.9, 0.4)):
        run, _ = bm25_run(data.corpus, data.queries, depth=100, k1=k1, b=b)
        res = evaluate(data.qrels, run, ["nDCG@10"], missing="zero")
        values.append(res["nDCG@10"].values["expected"])
    return values[0] - values[1]


def test_the_stated_mde_is_detected_8_times_in_10_and_no_gap_1_in_20(real_differences):
    d = real_differences - real_differences.mean()  # no gap: the null, with the real shape
    assert (d == d[0]).mean() < 0.9 and d.std() > 0.01  # a real spread, not a constant
    n, sims = 150, 1000
    rng = np.random.default_rng(0)
    mde = paired_t(rng.choice(d, n))["mde"]  # what one sample of 150 queries states
    rates = {}
    for shift in (0.0, mde):
        hits = sum(paired_t(rng.choice(d, n) + shift)["p_value"] <= 0.05 for _ in range(sims))
        rates[shift] = hits / sims
    # Monte-Carlo SE at 1000 draws: 0.007 at 0.05, 0.013 at 0.8; the stated MDE is itself a
    # sample estimate (its SD over samples of 150 widens the band)
    print(f"stated MDE {mde:.4f}; rejection rate at 0: {rates[0.0]:.3f}, at the MDE: {rates[mde]:.3f}")
    assert 0.03 <= rates[0.0] <= 0.075, rates
    assert MDE_POWER - 0.1 <= rates[mde] <= MDE_POWER + 0.1, rates
