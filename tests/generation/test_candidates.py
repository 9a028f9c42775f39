"""A candidate is a frozen record built step by step: only the steps reached are in its JSON
form, that form reads back to the same candidate, and nothing in it can be changed in place."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.generation import Candidate
from mteb_stratified.generation.candidates import UNSET, normalize_query


def _drafted() -> Candidate:
    """A candidate as the loop builds one: seeded, written, pooled, judged, verified."""
    cand = Candidate(target=[3, "Low", "High"], target_label="diet", priority=0.25, attempt=0,
                     seed_docs=["d1", "d2"], seed=7, terms=["fiber", "diet"])
    cand = dataclasses.replace(cand, raw='{"query": "fiber in diets"}', query="fiber in diets")
    cand = dataclasses.replace(cand, pool={"pool": ["d1", "d2", "d9"], "bm25": ["d9"],
                                           "dense": []})
    cand = dataclasses.replace(cand, judgements={"d1": 2, "d2": 1, "d9": None},
                               judged_by={"d1": "seed", "d2": "seed", "d9": "failed"},
                               qrels={"d1": 2, "d2": 1}, qrel_rules={"d1": "seed", "d2": "seed"})
    cand = dataclasses.replace(cand, query_entities=["diet", "fiber"], landed=[3, "Low", "High"],
                               dispersion=0.1, alignment=0.9,
                               verifier={"well_formed": True, "answerable": True})
    return dataclasses.replace(cand, status="accepted", reason=None, query_id="gen-7-0001")


def test_a_candidate_reads_back_from_its_json_form():
    cand = _drafted()
    line = json.dumps(cand.to_dict(), sort_keys=True)
    back = Candidate.from_dict(json.loads(line))
    assert back == cand
    assert back.to_dict() == cand.to_dict()
    # a rejected one early on: only the steps it reached have keys
    early = Candidate(target=[1, "High", "Low"], seed_docs=["d3"]).rejected(
        "no_query", raw="no json here")
    assert early.to_dict() == {"target": [1, "High", "Low"], "seed_docs": ["d3"],
                               "raw": "no json here", "status": "rejected",
                               "reason": "no_query"}
    assert Candidate.from_dict(early.to_dict()) == early


def test_reached_none_differs_from_not_reached():
    """An accepted candidate's reason is None (a key with null), a drafted one's is unset."""
    cand = _drafted()
    assert cand.reason is None and "reason" in cand.to_dict()
    assert Candidate(query="q").reason is UNSET and "reason" not in Candidate(query="q").to_dict()
    assert not UNSET and repr(UNSET) == "UNSET"
    assert pickle.loads(pickle.dumps(Candidate(query="q"))).reason is UNSET
    assert copy.deepcopy(Candidate(query="q")).detail is UNSET


def test_a_candidate_cannot_be_changed_in_place():
    cand = _drafted()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cand.status = "rejected"
    with pytest.raises(TypeError):
        cand.qrels["d9"] = 1
    with pytest.raises(TypeError):
        cand.seed_docs.append("d4")
    with pytest.raises(TypeError):
        cand.pool["pool"].append("d4")
    # the value given is copied: changing it afterwards changes nothing
    qrels = {"d1": 1}
    held = Candidate(qrels=qrels)
    qrels["d2"] = 2
    assert held.qrels == {"d1": 1}


def test_rejected_sets_the_status_reason_and_more():
    cand = _drafted().rejected("duplicate_query", detail="the same text")
    assert (cand.status, cand.reason, cand.detail) == ("rejected", "duplicate_query",
                                                       "the same text")
    assert _drafted().status == "accepted"  # the original is unchanged


def test_an_unknown_key_is_an_input_error():
    with pytest.raises(InputError, match="not fields of a candidate: colour"):
        Candidate.from_dict({"query": "q", "colour": "red"})


def test_normalize_query_ignores_case_and_spacing():
    assert normalize_query("  Fiber   IN diets ") == "fiber in diets"
    assert normalize_query("fiber in diet") != normalize_query("fiber in diets")
