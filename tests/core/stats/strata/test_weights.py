"""Document → cluster weights and the argmax rule of primary clusters (ties by the hash,
no preference for large clusters)."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.strata.query_strata import stratify
from mteb_stratified.core.stats.strata.weights import ClusterWeights

from ._cases import WEIGHTS, hashed_argmax


def test_tie_break_has_no_size_preference():
    # two clusters tie in every query; cluster 0 is the corpus' big one.  A smallest-id rule
    # sends every query to 0; the hash splits them about evenly.
    weights = {"big": {0: 1.0}, **{f"d{i}": {0: 0.5, 1: 0.5} for i in range(400)}}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(400)}
    s = stratify(qrels, weights)
    share = float(np.mean(s.primary == 0))
    assert 0.4 < share < 0.6
    # and a document's own stratum follows the same rule
    cw = ClusterWeights.from_dict(weights, 2)
    p = cw.primary()
    assert p[cw.doc_index("big")] == 0
    doc_rows = [cw.doc_index(f"d{i}") for i in range(400)]
    assert p[doc_rows].tolist() == [hashed_argmax(weights[f"d{i}"], f"d{i}") for i in range(400)]
    assert s.primary.tolist() == [hashed_argmax(weights[f"d{i}"], f"q{i}") for i in range(400)]
    np.testing.assert_allclose(cw.primary_share(), np.bincount(p, minlength=2) / 401)


def test_cluster_weights_forms_and_corpus_mass():
    cw = ClusterWeights.from_dict(WEIGHTS, 3)
    mass = cw.corpus_mass()
    np.testing.assert_allclose(mass, np.array([1.55, 1.55, 0.5]) / 7)
    cw2 = ClusterWeights.from_csr(cw.doc_ids, cw.to_csr())
    np.testing.assert_array_equal(cw2.to_csr().toarray(), cw.to_csr().toarray())
    # weights of documents with entities only, plus the corpus' full id list
    full = ClusterWeights.from_dict({"d1": {0: 1.0}}, 2, doc_ids=["d0", "d1", "d2"])
    assert full.n_docs == 3 and full.corpus_mass() == pytest.approx([1 / 3, 0.0])
    assert full.doc_rows(["d2", "dX", "d0"]) == [2, None, 0] and full.doc_index("dX") is None
    s = stratify({"q": {"d0": 1, "d1": 1}, "r": {"d2": 1}}, full)
    assert s.queries == ("q",) and "no cluster mass" in s.excluded[0].reason
    with pytest.raises(InputError, match="not among doc_ids"):
        ClusterWeights.from_dict({"dX": {0: 1.0}}, 2, doc_ids=["d0"])
    with pytest.raises(InputError, match=r"\[0, 2\)"):
        ClusterWeights.from_dict({"d": {5: 1.0}}, 2)
    with pytest.raises(InputError, match="≥ 0"):
        ClusterWeights.from_dict({"d": {0: -1.0}})
