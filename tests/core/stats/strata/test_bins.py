"""The fixed cut-points: fixed per corpus, not per query set; bin edges, NaN, and the bins
that repeated cut-points leave empty."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.strata.bins import DEFAULT_BINS, Bins
from mteb_stratified.core.stats.strata.dispersion import document_dispersion
from mteb_stratified.core.stats.strata.query_strata import stratify
from mteb_stratified.core.stats.strata.weights import ClusterWeights


def test_bins_fixed_per_corpus_not_per_query_set():
    rng = np.random.default_rng(3)
    C, D = 5, 50
    weights = {f"d{j}": {int(c): float(rng.random()) for c in rng.choice(C, 2, replace=False)}
               for j in range(D)}
    cw = ClusterWeights.from_dict(weights, C)
    ref = document_dispersion(cw)
    assert np.all((ref >= 0) & (ref <= 1))
    bins = Bins.from_reference(dispersion=ref, alignment=rng.random(200), source="docs")
    assert bins.source == "docs"
    assert Bins.from_dict(bins.to_dict()) == bins
    qrels = {f"q{i}": {f"d{j}": 1 for j in rng.choice(D, int(rng.integers(1, 4)), replace=False)}
             for i in range(60)}
    qents = {q: {f"e{int(rng.integers(0, 6))}"} for q in qrels}
    dents = {d: {f"e{int(rng.integers(0, 6))}", f"e{int(rng.integers(0, 6))}"} for d in weights}
    full = stratify(qrels, cw, query_entities=qents, doc_entities=dents, bins=bins)
    # the same queries inside a small, skewed query set: identical cells
    low = [q for q, dl in zip(full.queries, full.dispersion)
           if dl < np.nanmedian(full.dispersion)]
    part = stratify({q: qrels[q] for q in low[:7]}, cw, query_entities=qents, doc_entities=dents,
                    bins=bins)
    for q in part.queries:
        assert part.stratum(q) == full.stratum(q)
    np.testing.assert_array_equal(full.subset(part.queries).codes("cell"), part.codes("cell"))


def test_bin_edges_and_nan():
    b = Bins(dispersion=(0.0, 0.5), alignment=(0.2, 0.5))
    assert b.bin_dispersion([0.0, 1e-9, 0.5, 0.51, np.nan]).tolist() == [0, 1, 1, 2, 3]
    assert b.bin_alignment([0.2, 0.3, 0.9]).tolist() == [0, 1, 2]
    with pytest.raises(InputError):
        Bins(dispersion=(0.6, 0.5))
    with pytest.raises(InputError):
        Bins.from_reference(dispersion=[np.nan])
    assert Bins.from_reference(dispersion=[0, 0, 0, 1, 1, 1]).alignment == DEFAULT_BINS.alignment


def test_repeated_cut_points_name_the_bins_they_leave_empty():
    assert Bins().empty_bins() == {} and Bins().empty_bins_warnings() == []
    b = Bins(dispersion=(0.0, 0.0), alignment=(0.1, 0.1, 0.1))
    assert b.empty_bins() == {"dispersion": ["Med"], "alignment": ["Q2", "Q3"]}
    w = b.empty_bins_warnings()
    assert len(w) == 2 and "Med dispersion bin can hold no query" in w[0]
    assert "Q2 and Q3 alignment bins" in w[1]
    assert b.bin_dispersion([0.0, 0.5]).tolist() == [0, 2]  # nothing lands in Med
