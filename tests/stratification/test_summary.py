"""The typed result of stratified_summary: frozen, read by attribute, and its ``to_dict()`` is
the JSON strata block (the same figures, in the documented key order)."""

import dataclasses
import json
import math

import pytest

from mteb_stratified.stratification import (BoundedEstimate, StratifiedSummary,
                                            flat_strata_scores, stratified_summary)

#: The JSON block's keys, in the order the results files have always had.
BLOCK_KEYS = ["measure", "scheme", "definitions", "structure", "grain", "bins", "levels",
              "alignment_levels", "bin_counts", "warnings", "origin", "gate_verdict",
              "generated", "n_queries", "excluded", "n_excluded", "n_excluded_evaluated",
              "not_evaluated", "coverage", "gaps", "estimates", "uncovered_weight",
              "evaluated_uncovered_weight", "bounds", "per_stratum", "heterogeneity", "power",
              "alignment_vs_lexical", "spread", "spread_min_n", "clusters", "cells", "settings"]


@pytest.fixture(scope="module")
def summary(strata, artifact, two_systems):
    return stratified_summary(two_systems["A"], strata, artifact, n_resamples=100, seed=2,
                              n_min=2, min_queries=10, power=False)


def test_attributes_are_the_json_figures(summary):
    assert isinstance(summary, StratifiedSummary)
    d = summary.to_dict()
    assert list(d) == BLOCK_KEYS
    json.dumps(d)  # JSON-ready
    a = d["estimates"]["expected"]["analytic"]
    assert isinstance(summary.pooled, BoundedEstimate)
    assert summary.pooled.estimate == a["pooled"]["estimate"]
    assert (summary.pooled.ci_low, summary.pooled.ci_high) == (a["pooled"]["ci_low"],
                                                              a["pooled"]["ci_high"])
    lo, hi = summary.post_stratified.confidence_interval  # unpacks
    assert (lo, hi) == (a["post_stratified"]["ci_low"], a["post_stratified"]["ci_high"])
    boot = summary.estimate("macro", method="bootstrap")
    assert boot.ci_low == d["estimates"]["expected"]["bootstrap"]["macro"]["ci_low"]
    assert summary.estimate("pooled", value="bias").value == "bias"
    assert summary.estimate("nonsense") is None
    cov = d["coverage"]["cluster"]
    assert (summary.cluster_coverage.msc, summary.cluster_coverage.scc) == (cov["msc"],
                                                                          cov["scc"])
    assert [g.stratum for g in summary.gaps] == [g["stratum"] for g in d["gaps"]]
    assert summary.n_strata == d["grain"]["n_strata"] and summary.n_queries == d["n_queries"]
    assert summary.n_excluded == d["n_excluded"]
    assert dict(summary.settings) == d["settings"]


def test_chance_tests_are_scipy_style(summary):
    d = summary.to_dict()["heterogeneity"]
    statistic, pvalue = summary.heterogeneity  # unpacks as scipy's results do
    assert (statistic, pvalue) == (d["ssb"], d["p_value"])
    r, p = summary.split_half
    assert p == d["split_half"]["p_value"] and (r == d["split_half"]["r"] or math.isnan(r))
    # the tested strata carry their evaluated names
    assert all("name" in row and "label" in row for row in summary.heterogeneity.strata)


def test_intervals_lie_in_the_value_range(summary):
    for value, by_method in summary.estimates.items():
        lo_range, hi_range = (-1, 1) if value == "bias" else (0, 1)
        for by_estimator in by_method.values():
            for e in by_estimator.values():
                for x in e.confidence_interval:
                    assert x is None or lo_range <= x <= hi_range


def test_frozen(summary):
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.measure = "P@10"
    with pytest.raises(TypeError):
        summary.per_stratum[0]["expected"] = 1.0
    with pytest.raises(TypeError):
        summary.estimates["expected"] = {}
    with pytest.raises(AttributeError):
        summary.per_stratum.append({})
    # to_dict hands out copies: editing one leaves the summary as it was
    d = summary.to_dict()
    d["per_stratum"][0]["expected"] = -1.0
    assert summary.to_dict()["per_stratum"][0]["expected"] != -1.0


def test_flat_scores_read_the_summary(summary):
    flat = flat_strata_scores(summary, "nDCG@10")
    a = summary.to_dict()["estimates"]["expected"]["analytic"]
    assert flat["strata_pooled_ndcg_at_10_expected"] == a["pooled"]["estimate"]
    assert flat["strata_macro_ndcg_at_10_expected_ci_high"] == a["macro"]["ci_high"]
    assert flat["strata_msc"] == summary.cluster_coverage.msc
