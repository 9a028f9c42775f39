"""The typed result of stratified_summary: frozen, read by attribute, and its ``to_dict()`` is
the JSON strata block (the same figures, in the documented key order)."""

import dataclasses
import json
import math

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io.outputs import dumps_json
from mteb_stratified.stratification import (BoundedEstimate, StratifiedSummary,
                                            flat_strata_scores, stratified_summary)
from mteb_stratified.stratification.grain import Grain
from mteb_stratified.stratification.power import DetectableEffect
from mteb_stratified.stratification.summary import (BinCounts, Bounds, CellTable, ClusterRow,
                                                    GeneratedQueries, LexicalComparison,
                                                    PooledMean, RecordedCoverage, Spread,
                                                    StratumRow)

#: The JSON block's keys, in the order the results files have always had.
BLOCK_KEYS = ["measure", "scheme", "definitions", "structure", "grain", "bins", "levels",
              "alignment_levels", "bin_counts", "warnings", "origin", "gate_verdict",
              "generated", "n_queries", "excluded", "n_excluded", "n_excluded_evaluated",
              "not_evaluated", "coverage", "gaps", "estimates", "uncovered_weight",
              "evaluated_uncovered_weight", "bounds", "per_stratum", "heterogeneity", "power",
              "alignment_vs_lexical", "spread", "spread_min_n", "clusters", "cells", "settings"]

#: A per-stratum row's fixed keys; its value columns follow.
ROW_KEYS = ["stratum", "name", "label", "level", "n", "weight", "corpus_mass", "ci_low",
            "ci_high", "boot_ci_low", "boot_ci_high", "standard_error"]


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
    assert all(row.name is not None and row.label is not None
               for row in summary.heterogeneity.strata)
    assert all(list(row) == ["stratum", "n", "mean", "deviation", "z", "p", "p_adjusted",
                             "name", "label"] for row in d["strata"])


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
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.per_stratum[0].n = 0
    with pytest.raises(TypeError):
        summary.per_stratum[0].values["expected"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.grain.strata[0].name = "x"
    with pytest.raises(TypeError):
        summary.cells[0].counts[0][0] = 7
    with pytest.raises(TypeError):
        summary.estimates["expected"] = {}
    with pytest.raises(AttributeError):
        summary.per_stratum.append(None)
    # to_dict hands out copies: editing one leaves the summary as it was
    d = summary.to_dict()
    d["per_stratum"][0]["expected"] = -1.0
    d["cells"][0]["counts"][0][0] = -1
    assert summary.to_dict()["per_stratum"][0]["expected"] != -1.0
    assert summary.to_dict()["cells"][0]["counts"][0][0] != -1


def test_rows_and_records_are_typed_and_read_as_the_json_has_them(summary):
    d = summary.to_dict()
    assert all(isinstance(r, StratumRow) for r in summary.per_stratum)
    assert [r.to_dict() for r in summary.per_stratum] == d["per_stratum"]
    row, first = summary.per_stratum[0], d["per_stratum"][0]
    assert (row.n, row.expected, row.ci_low, row.name) == (first["n"], first["expected"],
                                                           first["ci_low"], first["name"])
    assert row.value("bias") == first["bias"] and row.value("nonsense") is None
    assert isinstance(summary.grain, Grain) and summary.grain.to_dict() == d["grain"]
    assert summary.grain.strata[0].clusters == tuple(d["grain"]["strata"][0]["clusters"])
    assert all(isinstance(c, ClusterRow) for c in summary.clusters)
    assert sum(c.n_queries for c in summary.clusters) == summary.n_queries
    assert all(isinstance(c, CellTable) for c in summary.cells)
    assert [list(map(list, c.counts)) for c in summary.cells] == [c["counts"] for c in d["cells"]]
    assert isinstance(summary.bin_counts, BinCounts)
    assert sum(summary.bin_counts.dispersion) == summary.n_queries
    assert isinstance(summary.bounds, Bounds) and summary.bounds.low <= summary.bounds.high
    sp = summary.spread_min_n
    assert isinstance(sp, Spread) and sp.spread == pytest.approx(sp.best.expected
                                                                 - sp.worst.expected)
    assert isinstance(summary.alignment_vs_lexical, LexicalComparison)
    assert summary.alignment_vs_lexical.verdict == d["alignment_vs_lexical"]["verdict"]
    assert list(summary.estimators()) == list(d["estimates"]["expected"]["analytic"])
    assert summary.estimators("nonsense") == {}
    # the rows' keys, in the order the results files have always had
    assert list(first) == ROW_KEYS + ["expected", "min", "max", "oblivious", "bias"]
    assert list(d["clusters"][0]) == ["cluster", "label", "mass", "n_queries", "stratum"]
    assert list(d["cells"][0]) == ["stratum", "name", "label", "n_queries", "counts", "mean"]
    assert list(d["grain"]) == ["min_queries", "start_level", "cut", "n_strata", "levels",
                                "short", "n_queries", "why", "strata"]
    assert list(d["spread_min_n"]["best"]) == ["stratum", "name", "label", "n", "expected",
                                               "ci_low", "ci_high"]


def _records(summary):
    """Every typed row and record of a summary (one of each kind at least)."""
    out = [summary.grain, *summary.grain.strata, summary.bin_counts, summary.bounds,
           summary.spread_min_n, summary.spread_min_n.best, summary.alignment_vs_lexical,
           *summary.per_stratum, *summary.clusters, *summary.cells]
    assert all(r is not None for r in out)
    return out


def test_each_record_round_trips(summary):
    for record in _records(summary):
        again = type(record).from_dict(record.to_dict())
        assert again == record and again.to_dict() == record.to_dict()
    mean = PooledMean(0.5, 0.1, 0.3, 0.7, 12)
    gen = GeneratedQueries("apart", mean, PooledMean(0.4, None, None, None, 1))
    assert GeneratedQueries.from_dict(gen.to_dict()) == gen
    assert list(gen.to_dict()) == ["why", "generated", "original"]
    for value, by_method in summary.estimates.items():
        for method, by_estimator in by_method.items():
            for name, est in by_estimator.items():
                again = BoundedEstimate.from_dict(est.to_dict(), value, method, name)
                assert again.to_dict() == est.to_dict()
                assert again.confidence_interval == est.confidence_interval
    cov = summary.cluster_coverage
    again = RecordedCoverage.from_dict(cov.to_dict(summary.top_gaps))
    assert again.to_dict(summary.top_gaps) == cov.to_dict(summary.top_gaps)
    assert (again.msc, again.covered, again.uncovered_mass) == (cov.msc, cov.covered,
                                                                cov.uncovered_mass)


def _round_trip(s):
    """``s`` written as a results file writes it, read back by ``from_dict``."""
    text = dumps_json(s.to_dict(), indent=2, default=str)
    again = StratifiedSummary.from_dict(json.loads(text))
    assert dumps_json(again.to_dict(), indent=2, default=str) == text  # the file's bytes
    return again


def test_from_dict_rebuilds_a_summary(summary):
    again = StratifiedSummary.from_dict(summary.to_dict())
    assert again.to_dict() == summary.to_dict()
    again = _round_trip(summary)
    assert isinstance(again.cluster_coverage, RecordedCoverage)
    assert again.per_stratum == summary.per_stratum and again.grain == summary.grain
    assert again.pooled.estimate == summary.pooled.estimate
    assert again.pooled.confidence_interval == summary.pooled.confidence_interval
    assert tuple(again.heterogeneity) == tuple(summary.heterogeneity)
    assert [g.stratum for g in again.gaps] == [g.stratum for g in summary.gaps]
    assert again.warning_kinds == ()  # not in the JSON (documented)


def test_from_dict_rebuilds_a_real_summary(strata, artifact, dataset, tmp_path):
    """BM25 on the bundled NFCorpus queries, its per-query file written and read back, at the
    cell scheme with power: the block round-trips to the same bytes."""
    pytest.importorskip("bm25s")
    import csv

    from mteb_stratified import evaluate
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io.mteb_results import read_per_query_csv

    run, _ = bm25_run(dataset.corpus, dataset.queries, depth=100)
    result = evaluate(dataset.qrels, run, ["nDCG@10"], missing="zero")["nDCG@10"]
    values = {k: dict(zip(result.queries, result.values[k].tolist()))
              for k in ("expected", "min", "max", "oblivious")}
    path = tmp_path / "NFCorpus_per_query.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hf_subset", "hf_split", "qid", "measure", "expected", "min", "max",
                    "oblivious"])
        w.writerows(["default", "test", q, "nDCG@10", *(values[k][q] for k in
                                                       ("expected", "min", "max", "oblivious"))]
                    for q in values["expected"])
    per_query = read_per_query_csv(path, "nDCG@10", split="test")
    for scheme in ("cluster", "cell"):
        real = stratified_summary(per_query, strata, artifact, scheme=scheme, n_resamples=50,
                                  seed=0, n_min=2, min_queries=10, power=scheme == "cluster")
        again = _round_trip(real)
        assert again.scheme == scheme and again.per_stratum == real.per_stratum
    assert real.power is None
    powered = stratified_summary(per_query, strata, artifact, n_resamples=50, seed=0, n_min=2,
                                 min_queries=10)
    assert isinstance(powered.power, DetectableEffect)
    assert _round_trip(powered).power == powered.power


def test_from_dict_reads_a_figure_written_as_null(summary):
    """A figure that was not finite (one query: no standard error) is written as null; it is
    read back as NaN and written as null again, not refused or crashed on."""
    block = json.loads(dumps_json(summary.to_dict()))
    pooled = block["estimates"]["expected"]["analytic"]["pooled"]
    pooled["standard_error"] = None
    again = StratifiedSummary.from_dict(block)
    assert math.isnan(again.pooled.standard_error)
    assert json.loads(dumps_json(again.to_dict())) == block


def test_from_dict_refuses_what_is_not_a_block(summary):
    block = summary.to_dict()
    del block["per_stratum"]
    with pytest.raises(InputError, match="not a strata block"):
        StratifiedSummary.from_dict(block)
    with pytest.raises(InputError, match="not a strata block"):
        StratifiedSummary.from_dict({"measure": "nDCG@10"})


def test_flat_scores_read_the_summary(summary):
    flat = flat_strata_scores(summary, "nDCG@10")
    a = summary.to_dict()["estimates"]["expected"]["analytic"]
    assert flat["strata_pooled_ndcg_at_10_expected"] == a["pooled"]["estimate"]
    assert flat["strata_macro_ndcg_at_10_expected_ci_high"] == a["macro"]["ci_high"]
    assert flat["strata_msc"] == summary.cluster_coverage.msc
