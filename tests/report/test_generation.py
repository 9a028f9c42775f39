"""``coverage.md`` from the typed ``coverage.json`` (:class:`CoverageReport`): the typed form
reads back to the same JSON (absent keys stay absent, null stays null, unknown keys are kept),
and the Markdown of the typed form and of the plain JSON are the same text."""

from __future__ import annotations

import copy
import json

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io.coverage_report import CoverageReport, ValidityGate
from mteb_stratified.report.generation import coverage_markdown, gate_markdown


def _summary(n, msc, scc):
    return {"n_queries": n, "cluster": {"msc": msc, "scc": scc, "covered": 7,
                                        "weighted_units": 9, "weightless": 0,
                                        "uncovered_mass": 0.1875},
            "cell": {"msc": msc / 10, "scc": 0.0, "covered": 11, "weighted_units": 144}}


def _gate(system_order=True):
    pair = {"a": "BM25", "b": "MiniLM", "real": {"difference": 0.0312, "p_value": 0.04},
            "added": {"difference": -0.0201, "p_value": None},
            "strata": {"same_sign": 2, "shared_clusters": 5}}
    return {"added_queries": 6, "original_queries": 12, "panel": ["BM25", "MiniLM"],
            "judge": {"measured": True, "pairs": 40, "per_query": 4, "queries": 10,
                      "precision": 0.5, "recall": None, "kappa": 0.31, "stopped": "budget"},
            "pool_bias": "the qrels were pooled by BM25",
            "system_order": ({"systems": ["BM25", "MiniLM"], "measure": "ndcg_at_10",
                              "kendall_tau": -1.0, "pairs": [pair]} if system_order else None),
            "lexical_bias": {"added": {"queries": 6, "rank1_relevant": 0.5},
                             "original": {"queries": 12, "rank1_relevant": 0.25}},
            "trivial_baseline": {"documents": 6, "msc": 1.0, "scc": 0.25, "rule": "one each"},
            "thresholds": {"kappa_min": 0.2}, "passed": False, "verdict": "FAILS the gate"}


def _report(**changes):
    report = {"split": "test", "before": _summary(12, 0.778, 0.0),
              "after": _summary(18, 1.0, 0.55),
              "counts": {"generated": 9, "accepted": 6, "rejected": 3,
                         "rejected_by_reason": {"no_query": 1, "wrong_cell": 2},
                         "accepted_in_target_cell": 5},
              "stop_reason": "coverage targets met",
              "usage": {"calls": 30, "budget_calls": 50, "paid_calls": 20, "cached_calls": 10,
                        "tokens": 1234, "cost_usd": 0.01},
              "targets": {"msc": 0.9, "scc": 0.5, "ceiling_msc": 1.0,
                          "ceiling_scc_documents": 1.0, "rule": "given",
                          "writer_alignment_ranks": ["high", "low"]},
              "infeasible_cells": [[3, "High", "High"]], "provenance": {"config": {"seed": 0}},
              "splits": {"evaluated": "test", "added": "generated", "kind": "generated",
                         "copied_byte_for_byte": ["test", "dev"], "merged_into": None,
                         "merge_changes": None},
              "gate": _gate(), "label": "smoke test"}
    report.update(changes)
    return report


def _selection():
    return _report(pool={"splits": ["dev"], "queries": 28, "excluded_by_strata": {"dev": 0},
                         "selected": 16, "ceiling": {"msc": 0.889, "scc": 0.719,
                                                     "n_queries": 40}},
                   unfilled=[{"cluster": 4, "label": "milk | men", "mass": 0.1, "queries": 1,
                              "pool_queries_left": 0},
                             {"cluster": 5, "label": None, "mass": 0.05, "queries": 2,
                              "pool_queries_left": 3}], usage={})


@pytest.mark.parametrize("report", [_report(), _selection(),
                                    _report(gate=_gate(system_order=False))])
def test_the_typed_report_reads_back_to_the_same_json(report):
    typed = CoverageReport.from_dict(report)
    assert typed.to_dict() == report
    assert json.dumps(typed.to_dict(), sort_keys=True) == json.dumps(report, sort_keys=True)
    assert CoverageReport.from_dict(typed.to_dict()) == typed
    assert coverage_markdown(typed) == coverage_markdown(report)


def test_the_typed_report_holds_attributes_absent_keys_and_the_rest():
    typed = CoverageReport.from_dict(_selection())
    assert typed.after.cluster.scc == 0.55 and typed.counts.accepted == 6
    assert typed.pool.ceiling.n_queries == 40 and typed.unfilled[1].label is None
    assert typed.gate.system_order.pairs[0].added.p_value is None
    assert list(typed.gate.panel) == ["BM25", "MiniLM"] and typed.gate.thresholds == {
        "kappa_min": 0.2}
    assert typed.gate.other == {} and typed.other == {}
    odd = CoverageReport.from_dict(_report(note="kept", gate={**_gate(), "extra": [1]}))
    assert odd.other == {"note": "kept"} and odd.gate.other == {"extra": [1]}
    assert odd.to_dict() == _report(note="kept", gate={**_gate(), "extra": [1]})
    assert list(odd.to_dict()) == list(_report(note="kept"))   # the keys in the order read
    assert not typed.usage                       # {} in the file: empty, as the dict was
    assert "usage" in typed.to_dict() and typed.to_dict()["usage"] == {}
    plain = _report()
    del plain["gate"]
    assert CoverageReport.from_dict(plain).gate is None and "gate" not in \
        CoverageReport.from_dict(plain).to_dict()
    with pytest.raises(TypeError):
        typed.counts.rejected_by_reason["x"] = 1
    with pytest.raises(InputError, match="expected a JSON object"):
        CoverageReport.from_dict(_report(before=[1, 2]))


def test_the_markdown_says_what_the_report_holds():
    md = coverage_markdown(_report(), {"wrong_cell": "the cell differs"})
    assert md.startswith("**smoke test**\n\n# Coverage-aware generation (test)\n\n"
                         "**Validity gate: FAILS the gate**")
    assert "| after | 18 | 1.000 | 0.550 | 0.100 | 0.000 |" in md
    assert "| wrong_cell | 2 | the cell differs |" in md and "| no_query | 1 |  |" in md
    assert "LLM calls: 30 (20 sent, 10 from the cache), tokens 1234, cost $0.01." in md
    assert "recall –, Cohen's κ 0.31 (budget)" in md
    assert "BM25 − MiniLM: +0.031 on the original (p = 0.04), -0.020 on the added (p = –)" in md
    sel = coverage_markdown(_selection())
    assert "| 4 | 0.100 | 1 | milk \\| men |" in sel and "| 5 |" not in sel  # one left there
    assert "LLM calls" not in sel


def test_the_gate_lines_need_no_system_order():
    gate = _gate(system_order=False)
    lines = gate_markdown(gate)
    assert lines == gate_markdown(ValidityGate.from_dict(copy.deepcopy(gate)))
    assert not any("system order" in line for line in lines)
    assert any(line.startswith("- system order") for line in gate_markdown(_gate()))
    gate["judge"] = {"measured": False, "why": "no judge"}
    assert "- judge: not measured (no judge)" in gate_markdown(gate)
