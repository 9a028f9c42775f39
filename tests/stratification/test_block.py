"""strata_for_dataset / stratified_summary / stability_summary on a 40-query NFCorpus subset."""

import json
from dataclasses import replace

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.stratification.grain import evaluated_strata
from mteb_stratified.stratification import (corpus_bins, reference_bins,
                                            stability_summary, strata_for_dataset,
                                            stratified_summary)


def test_strata_for_dataset(strata, dataset, artifact):
    assert strata.n_queries + len(strata.excluded) == len(dataset.qrels)
    assert strata.n_clusters == artifact.n_clusters
    assert strata.has_alignment
    j, d = strata.alignment, strata.dispersion
    assert np.all(np.isnan(j) | ((j >= 0) & (j <= 1)))   # NaN: N/A (no query entity)
    assert np.all(np.isnan(d) | ((d >= 0) & (d <= 1)))   # NaN: N/A (one relevant document)
    rel = np.array([sum(g >= 1 for g in dataset.qrels[q].values()) for q in strata.queries])
    assert np.all(np.isnan(d[rel == 1]))


def test_bins_are_fixed_by_the_corpus(artifact, dataset, strata):
    """Bins never depend on the evaluated query set: a 10-query subset is binned identically."""
    small = replace(dataset, qrels=dict(list(dataset.qrels.items())[:10]))
    s10 = strata_for_dataset(artifact, small)
    assert s10.bins == strata.bins
    # the bundled artifact stores cut-points computed from the held-out dev split
    stored = artifact.bins
    assert stored["reference"]["splits"] == ["dev"] and stored["reference"]["n_queries"] > 300
    assert list(strata.bins.dispersion) == stored["dispersion"]
    assert list(strata.bins.alignment) == stored["alignment"]
    assert corpus_bins(artifact) == strata.bins
    # …and they separate the test queries (the fallback rule put every one in one bin)
    assert all(min(c) > 0 for c in
               stratified_summary({q: 0.5 for q in strata.queries}, strata, artifact,
                                  n_resamples=10).to_dict()["bin_counts"].values())


def test_fallback_bins_without_stored_ones(artifact, dataset):
    """No stored bins: the fixed, corpus-independent cut-points."""
    bare = artifact.with_bins(None)
    b = corpus_bins(bare)
    assert b.dispersion == (0.5, 0.75) and b.alignment == (0.25, 0.5)
    assert "fallback" in b.source
    # either J: nothing stored is nothing stored
    assert corpus_bins(bare, alignment="soft") == b
    # stored bins without the soft J's cut-points are not replaced by fixed ones
    no_soft = artifact.with_bins({k: v for k, v in artifact.bins.items()
                                  if k != "alignment_soft"})
    with pytest.raises(InputError, match="soft-J cut-points"):
        corpus_bins(no_soft, alignment="soft")
    with pytest.raises(InputError, match="unknown alignment"):
        corpus_bins(artifact, alignment="fuzzy")


def test_reference_bins_are_quantiles_of_the_reference_pool(artifact, dataset, strata):
    """reference_bins = the 1/3, 2/3 quantiles of Δ and J over the reference queries."""
    b = reference_bins(artifact, [dataset])
    # N/A values (NaN) are not part of the quantiles
    d, j = strata.dispersion, strata.alignment
    assert b["dispersion"] == pytest.approx(np.quantile(d[np.isfinite(d)], [1 / 3, 2 / 3]))
    assert b["alignment"] == pytest.approx(np.quantile(j[np.isfinite(j)], [1 / 3, 2 / 3]))
    assert b["reference"] == {"splits": ["test"], "n_queries": strata.n_queries,
                              "excluded": len(strata.excluded),
                              "quantiles": [1 / 3, 2 / 3], "level": 1}
    with pytest.raises(InputError, match="reference query pool"):
        reference_bins(artifact, [])


@pytest.mark.slow
def test_soft_alignment_bounds_exact_and_uses_soft_cut_points(artifact, dataset):
    """Soft J ≥ exact J for every query (matching can only add), binned with alignment_soft."""
    pytest.importorskip("sentence_transformers")
    sizes = {q: sum(g >= 1 for g in j.values()) for q, j in dataset.qrels.items()}
    few = sorted(sizes, key=lambda q: (sizes[q], q))[:4]
    small = replace(dataset, qrels={q: dataset.qrels[q] for q in few})
    exact = strata_for_dataset(artifact, small)
    soft = strata_for_dataset(artifact, small, alignment="soft")
    assert list(soft.bins.alignment) == artifact.bins["alignment_soft"]
    both = np.isfinite(exact.alignment)
    assert np.array_equal(both, np.isfinite(soft.alignment))   # N/A (no entity) in both
    assert np.all(soft.alignment[both] >= exact.alignment[both] - 1e-12)
    assert np.array_equal(soft.dispersion, exact.dispersion, equal_nan=True)
    # τ above every cosine: only identical strings match, so soft J = exact J
    strict = strata_for_dataset(artifact, small, alignment="soft", tau=1.01)
    assert strict.alignment == pytest.approx(exact.alignment, abs=1e-12, nan_ok=True)


def test_summary_block(strata, artifact, two_systems):
    vals = two_systems["A"]
    b = stratified_summary(vals, strata, artifact, n_resamples=200, seed=3).to_dict()
    json.dumps(b)  # JSON-ready
    assert b["n_queries"] == strata.n_queries
    cov = b["coverage"]["cluster"]
    counts = np.bincount(strata.primary, minlength=strata.n_clusters)
    assert cov["msc"] == pytest.approx(np.count_nonzero(counts) / strata.n_clusters)
    mass = np.array([artifact.cluster_mass[c] for c in range(strata.n_clusters)])
    mass = mass / mass.sum()
    assert cov["scc"] == pytest.approx(mass[counts >= 5].sum())
    assert "cell" in b["coverage"]
    assert all(sum(c) == strata.n_queries for c in b["bin_counts"].values())
    assert isinstance(b["warnings"], list)
    # the gap list: zero-query clusters, heaviest first, with labels
    gm = [g["mass"] for g in b["gaps"]]
    assert gm == sorted(gm, reverse=True) and all(g["label"] for g in b["gaps"])
    assert all(counts[g["stratum"]] == 0 for g in b["gaps"])
    e = b["estimates"]["expected"]
    x = np.array([vals["expected"][q] for q in strata.queries])
    assert e["analytic"]["pooled"]["estimate"] == pytest.approx(x.mean())
    assert set(e["analytic"]) == set(e["bootstrap"]) == {"pooled", "macro", "post_stratified"}
    assert e["bootstrap"]["pooled"]["interval"] == "percentile"
    # the evaluated strata take in every fine cluster: nothing is uncovered at that grain;
    # the uncovered weight reported (and the flat MTEB key) is the fine clusters'
    assert b["evaluated_uncovered_weight"] == pytest.approx(0.0)
    assert b["uncovered_weight"] == pytest.approx(mass[counts == 0].sum())
    # bounds: the metric 0 / 1 on the fine clusters without queries, the covered clusters of
    # each evaluated stratum s at its mean: low = Σ_s W_s^covered · ȳ_s, high = low + U; the
    # evaluated corpus-weighted estimate lies between them
    u = mass[counts == 0].sum()
    ev = evaluated_strata(strata, artifact)
    s_of = ev.strata.primary
    held = np.where(counts > 0, mass, 0.0)
    low = sum(held[ev.cut.stratum == s].sum() * x[s_of == s].mean()
              for s in range(ev.n_strata))
    assert b["bounds"]["uncovered_weight"] == pytest.approx(u)
    assert b["bounds"]["low"] == pytest.approx(low)
    assert b["bounds"]["high"] == pytest.approx(low + u)
    post = e["analytic"]["post_stratified"]["estimate"]
    assert b["bounds"]["low"] - 1e-12 <= post <= b["bounds"]["high"] + 1e-12
    assert b["bounds"]["ci_low"] <= b["bounds"]["low"]
    assert b["bounds"]["ci_high"] >= b["bounds"]["high"]
    # per-stratum table: expected/min/max/bias and the counts add up
    rows = b["per_stratum"]
    assert sum(r["n"] for r in rows) == strata.n_queries
    for r in rows:
        assert r["min"] <= r["expected"] + 1e-12 <= r["max"] + 2e-12
        assert r["bias"] == pytest.approx(r["oblivious"] - r["expected"])
    assert b["spread"] == pytest.approx(max(r["expected"] for r in rows)
                                        - min(r["expected"] for r in rows))
    # seeded bootstrap is reproducible
    b2 = stratified_summary(vals, strata, artifact, n_resamples=200, seed=3).to_dict()
    assert b2["estimates"] == b["estimates"]


def test_plain_mapping_and_cell_scheme(strata, artifact, two_systems):
    vals = two_systems["A"]["expected"]
    b = stratified_summary(vals, strata, artifact, scheme="cell", n_resamples=50).to_dict()
    assert b["scheme"] == "cell"
    assert all(isinstance(r["stratum"], list) and len(r["stratum"]) == 3
               for r in b["per_stratum"])
    assert list(b["estimates"]) == ["expected"]


def test_subset_of_queries_is_reported(strata, artifact, two_systems):
    vals = {k: dict(list(v.items())[:30]) for k, v in two_systems["A"].items()}
    b = stratified_summary(vals, strata, artifact, n_resamples=50).to_dict()
    assert b["n_queries"] == 30 and b["not_evaluated"] == strata.n_queries - 30


def test_query_without_relevant_documents_is_reported(artifact, dataset):
    q0 = next(iter(dataset.qrels))
    qrels = dict(dataset.qrels)
    qrels[q0] = {d: 0 for d in qrels[q0]}
    s = strata_for_dataset(artifact, replace(dataset, qrels=qrels))
    assert [e.qid for e in s.excluded] == [q0]
    vals = {q: 0.5 for q in qrels}
    b = stratified_summary(vals, s, artifact, n_resamples=50).to_dict()
    assert b["n_excluded"] == 1 and b["excluded"][0]["qid"] == q0
    assert "relevant" in b["excluded"][0]["reason"]
    assert b["n_queries"] == len(qrels) - 1


def test_errors(strata, artifact, two_systems, dataset):
    vals = two_systems["A"]
    with pytest.raises(InputError, match="scheme"):
        stratified_summary(vals, strata, artifact, scheme="topic")
    with pytest.raises(InputError, match="n_min"):
        stratified_summary(vals, strata, artifact, n_min=0)
    bad = {k: {**v, "NOT-A-QUERY": 0.1} for k, v in vals.items()}
    with pytest.raises(InputError, match="not in the stratified dataset"):
        stratified_summary(bad, strata, artifact)
    other = dict(dataset.corpus)
    other.pop(next(iter(other)))
    with pytest.raises(InputError, match="fingerprint"):
        strata_for_dataset(artifact, replace(dataset, corpus=other))


def test_stability(strata, artifact, two_systems):
    st = stability_summary(two_systems, strata, artifact)
    json.dumps(st.to_dict())
    assert set(st.winners) == {"pooled", "macro", "post_stratified"}
    assert st.n_queries == strata.n_queries
    with pytest.raises(InputError, match="≥ 2 systems"):
        stability_summary({"A": two_systems["A"]}, strata, artifact)


def test_another_number_of_bins_flows_through_block_and_report(artifact, dataset, two_systems):
    """Four Δ bins and two J bins: cells, coverage, the block and the report follow the grid
    that the cut-points imply (core/stats/cells.py), with nothing else to change."""
    from mteb_stratified.core import Bins
    from mteb_stratified.report import build_report, render_html, to_markdown

    bins = Bins(dispersion=(0.8, 0.87, 0.9), alignment=(0.0,), source="test")
    st = strata_for_dataset(artifact, dataset, bins=bins)
    vals = {k: {q: v for q, v in col.items() if q in set(st.queries)}
            for k, col in two_systems["A"].items()}
    summary = stratified_summary(vals, st, artifact, scheme="cell", n_resamples=50, n_min=2)
    block = summary.to_dict()
    assert block["levels"] == ["Q1", "Q2", "Q3", "Q4", "N/A"]
    assert block["alignment_levels"] == ["Low", "High", "N/A"]
    assert all(np.array(c["counts"]).shape == (5, 3) for c in block["cells"])
    assert len(block["bin_counts"]["dispersion"]) == 5
    assert block["coverage"]["cell"]["units"] == 15 * artifact.n_clusters
    html = render_html(build_report({"A": summary}))
    assert "Q1 ≤ 0.8 &lt; Q2 ≤ 0.87 &lt; Q3 ≤ 0.9 &lt; Q4" in html  # escaped in the HTML
    assert "Low ≤ 0 &lt; High" in html and "Q4" in to_markdown(build_report({"A": summary}))


def test_generated_queries_in_an_original_split_are_reported_apart(artifact, dataset, strata):
    """A merged split (``generate --merge-into-split``): the generated queries never reach the
    estimates, the block and the report give them apart; a split of generated queries only is
    stratified as it is, marked."""
    from mteb_stratified.report import build_report
    from mteb_stratified.report.prose import what_this_says
    from mteb_stratified.stratification import (GENERATED_APART, split_origin,
                                                strata_for_dataset)
    from .conftest import synthetic_values

    qids = sorted(dataset.qrels)
    gen = qids[:10]
    merged = replace(dataset, origins={q: "generated" for q in gen})
    assert merged.generated() == gen and split_origin(merged) == "original"
    st = strata_for_dataset(artifact, merged)
    assert set(st.queries) == set(strata.queries) - set(gen)
    assert {e.qid for e in st.excluded if e.reason == GENERATED_APART} == set(gen)
    vals = synthetic_values(qids, 5)
    summary = stratified_summary(vals, st, artifact, n_resamples=50, seed=1)
    b = summary.to_dict()
    only = {k: {q: v[q] for q in qids if q not in gen} for k, v in vals.items()}
    ref = stratified_summary(only, strata.subset([q for q in strata.queries if q not in gen]),
                             artifact, n_resamples=50, seed=1).to_dict()
    assert b["estimates"] == ref["estimates"] and b["n_queries"] == ref["n_queries"]
    g = b["generated"]
    assert g["generated"]["n_queries"] == 10
    assert g["generated"]["estimate"] == pytest.approx(np.mean([vals["expected"][q]
                                                                for q in gen]))
    assert g["original"]["estimate"] == pytest.approx(
        b["estimates"]["expected"]["analytic"]["pooled"]["estimate"])
    typed = summary.generated  # the same record, typed
    assert (typed.generated.n_queries, typed.original.estimate) == (
        10, summary.pooled.estimate) and typed.to_dict() == g
    text = " ".join(what_this_says(build_report({"A": summary})))
    assert "Generated queries: 10 of this split's queries are generated" in text
    # one generated query: no interval, and the report says its mean all the same
    one = replace(dataset, origins={qids[0]: "generated"})
    s1 = stratified_summary(vals, strata_for_dataset(artifact, one), artifact, n_resamples=50,
                            seed=1)
    b1 = s1.to_dict()
    assert b1["generated"]["generated"]["ci_low"] is None
    assert "1 of this split's queries are generated" in " ".join(
        what_this_says(build_report({"A": s1})))
    # every query generated: stratified as it is, and the block says so
    all_gen = replace(dataset, origins={q: "generated" for q in qids})
    assert split_origin(all_gen) == "generated"
    st2 = strata_for_dataset(artifact, all_gen)
    assert set(st2.queries) == set(strata.queries)
    s2 = stratified_summary(vals, st2, artifact, n_resamples=50, seed=1, origin="generated")
    b2 = s2.to_dict()
    assert b2["origin"] == "generated" and b2["generated"] is None
    assert any(w.startswith("every query of this split is generated") for w in b2["warnings"])
    assert "every query of this split is generated" in " ".join(
        what_this_says(build_report({"A": s2})))


def test_repeated_cut_points_are_a_warning_of_the_block(artifact, dataset, two_systems):
    from mteb_stratified.core import Bins

    st = strata_for_dataset(artifact, dataset, bins=Bins(dispersion=(0.0, 0.0)))
    vals = {k: {q: v for q, v in col.items() if q in set(st.queries)}
            for k, col in two_systems["A"].items()}
    warnings = stratified_summary(vals, st, artifact, n_resamples=20, power=False).warnings
    assert any("(0.0, 0.0) repeat a value" in w and "Med dispersion" in w for w in warnings)
