"""Decision stability as a typed result: Stability, its rows, its JSON form and back."""

import json
from dataclasses import FrozenInstanceError, replace

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.stability import Flip
from mteb_stratified.stratification import Stability, StratumWinner, stability_summary


@pytest.fixture(scope="module", params=["cluster", "cell"])
def stability(request, strata, artifact, two_systems):
    systems = dict(two_systems)
    # a third system that leads under one aggregation only: flips between aggregations
    systems["C"] = {"expected": {q: 1.0 - v for q, v in two_systems["A"]["expected"].items()}}
    return stability_summary(systems, strata, artifact, min_queries=10,
                             scheme=request.param)


def test_it_is_typed_and_read_only(stability, strata):
    assert isinstance(stability, Stability) and stability.systems == ("A", "B", "C")
    assert set(stability.winners) == {"pooled", "macro", "post_stratified"}
    assert stability.n_queries == strata.n_queries
    assert stability.stratum_winners and all(isinstance(r, StratumWinner) and r.name
                                             and r.winner in stability.systems
                                             for r in stability.stratum_winners)
    assert len(stability.pairs) == 3 * len(stability.winners)
    with pytest.raises(FrozenInstanceError):
        stability.n_queries = 0
    with pytest.raises(TypeError):
        stability.winners["pooled"] = "X"
    with pytest.raises(TypeError):
        stability.scores["pooled"]["A"] = 0.0


def test_to_dict_and_back(stability):
    d = stability.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert list(d) == ["systems", "confidence_level", "scores", "winners",
                       "winner_significant", "stratum_winners", "pairs", "flips", "stable",
                       "n_queries", "significant_flips"]
    back = Stability.from_dict(d)
    assert back == stability and back.to_dict() == d
    for r in stability.stratum_winners:
        assert StratumWinner.from_dict(r.to_dict()) == r
        assert isinstance(r.to_dict()["stratum"], (int, list))


def test_only_flips_with_a_significant_order_count(stability):
    a, b = stability.systems[:2]
    loud = Flip(a, b, {"pooled": a, "macro": b}, {"pooled": True, "macro": False})
    quiet = Flip(a, b, {"pooled": a, "macro": b}, {"pooled": False, "macro": False})
    st = replace(stability, flips=(loud, quiet))
    assert not st.stable and st.significant_flips == (st.flips[0],)
    assert st.to_dict()["significant_flips"] == [st.to_dict()["flips"][0]]
    assert replace(stability, flips=()).stable
    assert Stability.from_dict(st.to_dict()) == st


def test_it_needs_two_systems(strata, artifact, two_systems):
    with pytest.raises(InputError, match="≥ 2 systems"):
        stability_summary({"A": two_systems["A"]}, strata, artifact)
