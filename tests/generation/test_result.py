"""A generation result is frozen, built once: changing it means a new one
(``dataclasses.replace``); its dict form reads back to the same result; its counts are typed."""

from __future__ import annotations

import dataclasses

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io.coverage_report import CandidateCounts, CoverageSummary, ValidityGate
from mteb_stratified.generation import Candidate, GenerationResult


def _result() -> GenerationResult:
    ok = Candidate(query="a", target=[0, "Low", "High"], landed=[0, "Low", "High"],
                   qrels={"d1": 1}, status="accepted", reason=None, query_id="gen-0-0001")
    off = Candidate(query="b", target=[1, "Low", "Low"], landed=[1, "High", "Low"],
                    qrels={"d2": 1}, status="accepted", reason=None, query_id="gen-0-0002")
    bad = Candidate(query="c", target=[2, "Low", "High"]).rejected("wrong_cell")
    none = Candidate(target=[2, "Low", "High"]).rejected("no_query")
    dup = Candidate(target=[2, "Mid", "High"]).rejected("no_query")
    cov = {"n_queries": 2, "cluster": {"msc": 0.5, "scc": 0.0}, "cell": {"msc": 0.1, "scc": 0.0}}
    return GenerationResult(accepted=[ok, off], candidates=[ok, bad, none, off, dup],
                            coverage_before=cov, coverage_after=cov, stop_reason="no target left",
                            infeasible=[[3, "High", "High"]], targets={"msc": 0.9, "scc": 0.5},
                            original_clusters={"q1": 0})


def test_counts_are_typed_and_count_the_candidates():
    counts = _result().counts()
    assert isinstance(counts, CandidateCounts)
    assert (counts.generated, counts.accepted, counts.rejected) == (5, 2, 3)
    assert counts.accepted_in_target_cell == 1   # the second one landed elsewhere
    assert dict(counts.rejected_by_reason) == {"no_query": 2, "wrong_cell": 1}
    assert list(counts.to_dict()) == ["generated", "accepted", "rejected", "rejected_by_reason",
                                      "accepted_in_target_cell"]
    assert CandidateCounts.from_dict(counts.to_dict()) == counts


def test_a_result_reads_back_from_its_dict_form():
    res = _result()
    back = GenerationResult.from_dict(res.to_dict())
    assert back == res
    assert back.accepted[1] is back.candidates[3]   # an accepted one is one of the candidates
    assert GenerationResult.from_dict(GenerationResult().to_dict()) == GenerationResult()


def test_a_result_is_changed_only_into_a_new_one():
    res = _result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.stop_reason = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.targets.msc = 1.0
    with pytest.raises(TypeError):
        res.original_clusters["q2"] = 1
    with pytest.raises(TypeError):
        res.infeasible[0].append("x")
    gated = dataclasses.replace(res, gate={"verdict": "passes"}, usage={"calls": 3})
    assert gated.gate.verdict == "passes" and gated.usage.calls == 3
    assert not res.gate and not res.usage and res.gate.to_dict() == {}
    assert gated.gate.to_dict() == {"verdict": "passes"}
    assert isinstance(gated.gate, ValidityGate)


def test_the_typed_parts_keep_their_json_and_its_order():
    res = _result()
    assert isinstance(res.coverage_after, CoverageSummary)
    assert res.coverage_after.cluster.msc == 0.5 and res.targets.scc == 0.5
    usage = {"tokens": 5, "calls": 3, "reasks": 0}   # another order, and a key not typed
    back = dataclasses.replace(res, usage=usage).usage.to_dict()
    assert back == usage and list(back) == list(usage)


def test_records_must_be_candidates():
    res = GenerationResult(candidates=[{"query": "a", "status": "rejected",
                                        "reason": "no_query"}])
    assert res.candidates == (Candidate(query="a", status="rejected", reason="no_query"),)
    with pytest.raises(InputError, match="not a candidate"):
        GenerationResult(accepted=["a"])
    with pytest.raises(InputError, match="not fields of a generation result: extra"):
        GenerationResult.from_dict({"extra": 1})
