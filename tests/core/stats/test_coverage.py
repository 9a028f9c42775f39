"""Coverage: MSC, SCC (n_min), the gap list with labels, cell level, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.coverage import (DEFAULT_N_MIN, cell_coverage, cluster_coverage,
                                           strata_coverage)
from mteb_stratified.core.stats.strata import ClusterWeights, stratify

MASS = np.array([0.4, 0.1, 0.2, 0.05, 0.25])


def test_msc_scc_and_gaps_by_hand():
    primary = [0, 0, 0, 1, 1, 2, 0]          # counts: 4, 2, 1, 0, 0
    cov = cluster_coverage(primary, MASS, n_min=2, labels={3: "rare", 4: "big"})
    assert cov.msc == pytest.approx(3 / 5)
    assert cov.scc == pytest.approx(0.5)     # clusters 0 and 1 hold ≥ 2 queries
    assert cov.query_counts.tolist() == [4, 2, 1, 0, 0]
    assert [(g.stratum, g.label) for g in cov.gaps] == [(4, "big"), (3, "rare")]
    assert [g.mass for g in cov.gaps] == pytest.approx([0.25, 0.05])
    assert cov.covered == 3 and cov.sufficient == 2
    assert cov.uncovered_mass == pytest.approx(0.3)
    assert cluster_coverage(primary, MASS, n_min=1).scc == pytest.approx(0.7)
    assert cluster_coverage(primary, MASS, n_min=5).scc == 0.0
    # masses are normalised; labels may be a sequence
    cov2 = cluster_coverage(primary, MASS * 7, n_min=2, labels=list("abcde"))
    assert cov2.scc == pytest.approx(0.5) and cov2.gaps[0].label == "e"
    cov3 = cluster_coverage(primary, dict(enumerate(MASS)), n_min=2)   # {cluster: mass}
    assert cov3.scc == pytest.approx(0.5) and cov3.msc == pytest.approx(3 / 5)
    d = cov.to_dict(top_gaps=1)
    assert d["msc"] == cov.msc and d["gaps"] == 2 and len(d["top_gaps"]) == 1


def test_msc_counts_only_the_strata_that_carry_weight():
    """A weightless cluster (no document's own stratum) is not in MSC's denominator, nor a gap;
    it is listed apart, with the queries that land there anyway."""
    mass = np.array([0.5, 0.0, 0.3, 0.0, 0.2])
    primary = [0, 0, 1, 2]                     # counts: 2, 1, 1, 0, 0
    cov = cluster_coverage(primary, mass, n_min=2)
    assert cov.msc == pytest.approx(2 / 3)    # clusters 0 and 2 of the weighted 0, 2, 4
    assert cov.weighted_units == 3 and cov.weightless == 2 and cov.weightless_queries == 1
    assert cov.covered == 2 and [g.stratum for g in cov.gaps] == [4]
    d = cov.to_dict()
    assert (d["weighted_units"], d["weightless"], d["weightless_queries"]) == (3, 2, 1)
    assert d["covered"] / d["weighted_units"] == pytest.approx(d["msc"])
    # a query in every weighted cluster: MSC 1, whatever the weightless clusters hold
    assert cluster_coverage([0, 2, 4], mass).msc == 1.0


def test_default_n_min_and_validation():
    assert DEFAULT_N_MIN == 5
    assert cluster_coverage([0] * 5, [1.0, 1.0]).scc == pytest.approx(0.5)
    assert cluster_coverage([0] * 4, [1.0, 1.0]).scc == 0.0
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="n_min"):
            cluster_coverage([0], [1.0], n_min=bad)
    with pytest.raises(InputError, match="different structure"):
        cluster_coverage([7], MASS)
    with pytest.raises(InputError, match="cluster_mass"):
        cluster_coverage([0], [-1.0, 2.0])


def test_cell_level():
    primary = np.array([0, 0, 0, 1])
    dbin = np.array([0, 0, 2, 1])
    jbin = np.array([1, 1, 0, 2])
    cov = cell_coverage(primary, dbin, jbin, [0.75, 0.25], n_min=2)
    assert len(cov.units) == 32                               # 2 clusters × 4 × 4 (N/A too)
    assert cov.msc == pytest.approx(3 / 32)
    assert cov.scc == pytest.approx(0.75 / 16)                # only (0, Low, Med) holds 2
    assert cov.gaps[0].mass == pytest.approx(0.75 / 16) and cov.gaps[0].stratum[0] == 0
    assert cov.gaps[-1].stratum[0] == 1
    shares = np.zeros((2, 4, 4))
    shares[0, 0, 1] = shares[0, 2, 0] = 1.0                   # cluster 0: two possible cells
    shares[1, 1, 2] = 1.0                                     # cluster 1: one
    ref = cell_coverage(primary, dbin, jbin, [0.75, 0.25], n_min=1, cell_shares=shares)
    assert ref.msc == 1.0 and ref.scc == pytest.approx(1.0) and ref.gaps == ()
    with pytest.raises(InputError, match="one entry per query"):
        cell_coverage(primary, dbin[:2], jbin, [1.0, 1.0])
    with pytest.raises(InputError, match="0/1/2"):
        cell_coverage(primary, dbin, np.array([1, 1, -1, 0]), [1.0, 1.0])


def test_coverage_of_query_strata():
    weights = {"d1": {0: 1.0}, "d2": {1: 1.0}, "d3": {2: 1.0}}
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}, "q3": {"d2": 1}}
    cw = ClusterWeights.from_dict(weights, 3)
    s = stratify(qrels, cw)
    cov = strata_coverage(s, cw.corpus_mass(), n_min=2, labels=["x", "y", "z"])
    assert cov.msc == pytest.approx(2 / 3) and cov.scc == pytest.approx(1 / 3)
    assert [(g.stratum, g.label) for g in cov.gaps] == [(2, "z")]
    with pytest.raises(InputError, match="alignment"):
        strata_coverage(s, cw.corpus_mass(), scheme="cell")
    with pytest.raises(InputError, match="unknown stratum scheme"):
        strata_coverage(s, cw.corpus_mass(), scheme="clusters")
    with pytest.raises(InputError, match="n_min"):
        strata_coverage(s, cw.corpus_mass(), n_min=0)
    with pytest.raises(InputError, match="clusters"):
        strata_coverage(s, [1.0, 1.0])
    assert strata_coverage(s, {0: 1.0, 2: 1.0}, n_min=1).scc == pytest.approx(0.5)
    s2 = stratify(qrels, cw, query_entities={q: set() for q in qrels},
                  doc_entities={d: set() for d in weights})
    cell = strata_coverage(s2, cw.corpus_mass(), scheme="cell", n_min=1)
    assert cell.level == "cell" and cell.covered == 2


def test_one_coverage_schema_and_its_summaries():
    """``to_dict`` writes exactly the schema's keys, in its order; a summary takes the same keys
    with the same values: ``units`` counts every unit, ``weighted_units`` only those of positive
    mass (MSC's denominator), whatever part of the schema a report gives."""
    from mteb_stratified.core.stats.coverage import COVERAGE_KEYS, SUMMARY_KEYS

    mass = np.array([0.5, 0.0, 0.3, 0.0, 0.2])
    cluster = cluster_coverage([0, 0, 1, 2], mass, n_min=2)
    cell = cell_coverage([0, 2], [0, 1], [1, 0], mass, n_min=1)
    for cov in (cluster, cell):
        full = cov.to_dict()
        assert list(full) == list(COVERAGE_KEYS)
        summary = cov.summary()
        assert list(summary) == list(SUMMARY_KEYS[cov.level])
        assert summary == {k: full[k] for k in SUMMARY_KEYS[cov.level]}
        assert summary["covered"] / summary["weighted_units"] == pytest.approx(summary["msc"])
        assert "units" not in summary  # the weighted count is never called units
    assert cluster.summary(["units", "weighted_units"]) == {"units": 5, "weighted_units": 3}
    assert cell.summary(["units", "weighted_units"]) == {"units": 80, "weighted_units": 48}
    with pytest.raises(InputError, match="not keys of the coverage schema: clusters"):
        cluster.summary(["msc", "clusters"])
