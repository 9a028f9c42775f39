"""The paired summary as typed results: PairedSummary of PairResult, their JSON form and back,
the methods the report reads (where the gap varies, where one system wins), and α in one place."""

import inspect
import json
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from mteb_stratified.core.stats.chance import PairedHeterogeneityResult, StratumDeviation
from mteb_stratified.core.options import ALPHA
from mteb_stratified.stratification import (DetectableEffect, PairedSummary, PairResult,
                                            paired_summary)
from mteb_stratified.stratification.pairs import (PairDifferences, PairedT,
                                                  StratumDifference, TopicGap,
                                                  TopicVariation)


@pytest.fixture(scope="module")
def paired(strata, artifact, two_systems):
    from mteb_stratified.stratification import evaluated_strata

    systems = dict(two_systems)
    # a third system: B better by 0.5 in the largest evaluated stratum (a gap that varies)
    ev = evaluated_strata(strata, artifact, min_queries=10)
    target = int(np.bincount(ev.strata.primary).argmax())
    there = {q for q, s in zip(strata.queries, ev.strata.primary.tolist()) if s == target}
    systems["C"] = {"expected": {q: min(1.0, v + 0.5) if q in there else v
                                 for q, v in two_systems["B"]["expected"].items()}}
    return paired_summary(systems, strata, artifact, n_min=2, min_queries=10, n_resamples=200)


def test_the_summary_is_typed_and_read_only(paired, strata):
    assert isinstance(paired, PairedSummary) and paired.n_systems == 3
    assert [(p.a, p.b) for p in paired.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert paired.n_queries == strata.n_queries and paired.grain.n_strata >= 2
    pair = paired.pairs[0]
    assert isinstance(pair, PairResult) and pair.tested and pair.why is None
    assert isinstance(pair.overall, PairedT) and isinstance(pair.heterogeneity,
                                                            PairedHeterogeneityResult)
    assert isinstance(pair.stratum_differences, PairDifferences)
    assert isinstance(pair.power, DetectableEffect) and pair.power.test == "paired_max_z"
    assert all(isinstance(r, StratumDeviation) and r.name is not None
               for r in pair.heterogeneity.strata)
    assert all(isinstance(r, StratumDifference) for r in pair.stratum_differences.strata)
    topics = pair.variation["topics"]
    assert isinstance(topics, TopicVariation) and topics.n_groups == len(topics.groups)
    assert all(isinstance(g, TopicGap) and g.name for g in topics.groups)
    with pytest.raises(FrozenInstanceError):
        pair.a = "X"
    with pytest.raises(TypeError):
        pair.variation["topics"] = None
    with pytest.raises(TypeError):
        pair.power.mde["0.2"] = 0.0


@pytest.mark.parametrize("kind", ["paired", "one system", "not tested"])
def test_to_dict_and_back(kind, paired, strata, artifact, two_systems):
    """``from_dict(to_dict())`` gives the same JSON, and the JSON is what json writes."""
    if kind == "paired":
        summary = paired
    elif kind == "one system":
        summary = paired_summary({"A": two_systems["A"]}, strata, artifact)
        assert summary.pairs == () and "one system" in summary.note
        assert summary.to_dict() == {"pairs": [], "note": summary.note, "n_systems": 1}
    else:  # one stratum: nothing to compare across strata
        summary = paired_summary(two_systems, strata, artifact, min_queries=1000, power=False)
        assert not summary.pairs[0].tested and summary.pairs[0].why
    d = summary.to_dict()
    assert json.loads(json.dumps(d)) == d
    back = PairedSummary.from_dict(d)
    assert back.to_dict() == d and json.dumps(back.to_dict()) == json.dumps(d)
    assert [p.to_dict() for p in back.pairs] == [p.to_dict() for p in summary.pairs]
    for p in summary.pairs:
        assert PairResult.from_dict(p.to_dict()).to_dict() == p.to_dict()
        assert PairedT.from_dict(p.overall.to_dict()) == p.overall
        if p.tested:
            assert (PairedHeterogeneityResult.from_dict(p.heterogeneity.to_dict())
                    == p.heterogeneity)
            assert (PairDifferences.from_dict(p.stratum_differences.to_dict())
                    == p.stratum_differences)
            assert DetectableEffect.from_dict(p.power.to_dict()) == p.power


def test_the_json_keys_keep_their_order(paired):
    d = paired.pairs[0].to_dict()
    assert list(d) == ["a", "b", "n_queries", "overall", "variation", "tested", "heterogeneity",
                       "stratum_differences", "flips", "split_half", "power"]
    assert list(d["overall"]) == ["mean_difference", "ci_low", "ci_high", "p_value", "mde",
                                  "mde_power", "test"]
    assert list(d["heterogeneity"]["strata"][0]) == ["stratum", "n", "mean", "deviation", "z",
                                                     "p", "p_adjusted", "name", "label"]
    assert list(d["stratum_differences"]["strata"][0])[-3:] == ["winner", "name", "label"]
    assert list(d["variation"]["topics"])[-1] == "level"
    assert list(paired.to_dict()) == ["pairs", "n_systems", "n_queries", "grain", "note"]


def test_the_pairs_of_several_query_sets_together(paired):
    both = PairedSummary.combined([paired, paired], none="no pair")
    assert both.pairs == paired.pairs * 2 and both.note is None and both.grain is None
    assert list(both.to_dict()) == ["pairs"]
    empty = PairedSummary.combined([], none="no pair")
    assert empty.to_dict() == {"pairs": [], "note": "no pair"}
    for s in (both, empty):
        assert PairedSummary.from_dict(s.to_dict()).to_dict() == s.to_dict()


def test_what_the_report_reads_follows_the_rows(paired):
    """``deviating_strata``, ``significant``, ``winners`` and ``strata_vary`` answer from the
    p-values at α."""
    for pair in paired.pairs:
        h = pair.heterogeneity
        assert h.deviating_strata() == [r for r in h.strata if r.p_adjusted <= ALPHA]
        assert h.significant() == (h.p_value <= ALPHA)
        assert pair.stratum_differences.winners() == tuple(
            r for r in pair.stratum_differences.strata if r.winner is not None)
        p = [h.p_value, h.omnibus_p_value, pair.flips.pvalue, pair.split_half.pvalue]
        assert pair.strata_vary() == any(x <= ALPHA for x in p)
    # the gap planted in half the queries: C against B varies across strata
    bc = paired.pairs[2]
    assert bc.heterogeneity.significant() and bc.strata_vary()
    quiet = replace(bc, heterogeneity=replace(bc.heterogeneity, pvalue=1.0,
                                              omnibus_pvalue=1.0),
                    flips=replace(bc.flips, pvalue=1.0),
                    split_half=replace(bc.split_half, pvalue=1.0))
    assert not quiet.strata_vary() and quiet.strata_vary(alpha=1.0)
    untested = replace(bc, tested=False, why="one stratum")
    assert not untested.strata_vary()


def test_a_winner_is_named_by_system(strata, artifact, two_systems):
    a = two_systems["A"]["expected"]
    b = {q: min(1.0, v + 0.5) for q, v in a.items()}
    p = paired_summary({"A": a, "B": b}, strata, artifact, min_queries=10, n_resamples=300,
                       power=False)
    wins = p.pairs[0].stratum_differences.winners()
    assert wins and all(r.winner == "B" and r.mean_difference < 0 for r in wins)
    assert all(r.name and isinstance(r.stratum, int) for r in wins)


def test_alpha_comes_from_one_place():
    """Every chance test, the power study and the lexical verdict default to ALPHA."""
    from mteb_stratified.core.stats import chance, power

    assert ALPHA == 0.05
    for fn in (chance.stratum_differences, chance.stratum_difference_rejections,
               chance.flip_test, power.power_study, chance.HeterogeneityResult.significant,
               chance.HeterogeneityResult.differing_strata,
               chance.PairedHeterogeneityResult.deviating_strata,
               chance.PairedHeterogeneityResult.significant, PairResult.strata_vary):
        assert inspect.signature(fn).parameters["alpha"].default is ALPHA, fn


def test_the_mde_is_the_same_typed_or_not(paired):
    power = paired.pairs[0].power
    assert DetectableEffect.of(power) is power and DetectableEffect.of(None) is None
    assert DetectableEffect.of(power.to_dict()) == power
    assert list(power.to_dict()) == ["test", "what", "type1_error", "mde", "power",
                                     "target_power", "n_draws", "n_resamples", "grid",
                                     "mde_realised", "planting", "rule"]
    assert power.grid == tuple(sorted(power.grid)) and np.isfinite(power.target_power)
