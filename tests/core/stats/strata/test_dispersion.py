"""The Δ and J kernels: the soft J, and Δ to the last bit whatever the order of a
document's clusters."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core.stats.strata.dispersion import flat_positions, soft_containment
from mteb_stratified.core.stats.strata.query_strata import stratify
from mteb_stratified.core.stats.strata.weights import ClusterWeights

from ._cases import WEIGHTS


def test_soft_containment():
    vec = {"a": np.array([1.0, 0.0]), "c": np.array([0.95, 0.1]), "b": np.array([0.0, 1.0])}
    # a ↔ c match by cosine, b = b by string: both query entities found in the document
    assert soft_containment({"a", "b"}, [{"b", "c"}], vec, tau=0.9) == pytest.approx(1.0)
    # a high τ leaves the exact containment
    assert soft_containment({"a", "b"}, [{"b", "c"}], vec, tau=0.999) == pytest.approx(0.5)
    assert soft_containment({"a", "b"}, [{"b", "c"}], None, tau=0.5) == pytest.approx(0.5)
    # a callable works like a mapping; entities without vectors match by string only
    assert soft_containment({"a", "q"}, [{"c"}], vec.get, tau=0.9) == pytest.approx(1 / 2)
    assert np.isnan(soft_containment(set(), [{"a"}], vec, 0.9))
    # the mean over relevant documents
    assert soft_containment({"a", "b"}, [{"c"}, {"zz"}], vec, 0.9) == pytest.approx(0.25)
    s = stratify({"q": {"d1": 1}}, WEIGHTS, query_entities={"q": {"a", "zz"}},
                 doc_entities={"d1": {"a", "b"}}, entity_vectors={"zz": [0, 1], "b": [0, 1]},
                 tau=0.9)
    assert s.alignment[0] == pytest.approx(1.0)


def test_dispersion_does_not_depend_on_the_order_of_a_documents_clusters():
    # the same weights, each document's {cluster: weight} in another key order (a freshly built
    # artifact and the same one loaded from disk list them differently): Δ to the last bit
    rng = np.random.default_rng(5)
    weights, shuffled = {}, {}
    for d in range(300):
        clusters = rng.choice(40, size=int(rng.integers(2, 9)), replace=False).tolist()
        w = rng.random(len(clusters))
        weights[f"d{d}"] = dict(zip(clusters, (w / w.sum()).tolist()))
        order = rng.permutation(len(clusters)).tolist()
        shuffled[f"d{d}"] = {clusters[i]: weights[f"d{d}"][clusters[i]] for i in order}
    qrels = {f"q{q}": {f"d{d}": 1 for d in rng.choice(300, size=30, replace=False).tolist()}
             for q in range(50)}
    a = stratify(qrels, ClusterWeights.from_dict(weights, 40)).dispersion
    b = stratify(qrels, ClusterWeights.from_dict(shuffled, 40)).dispersion
    assert a.tobytes() == b.tobytes()


def test_flat_positions_expand_each_row_in_order():
    starts, lens = np.array([5, 0, 9]), np.array([2, 3, 0])
    assert flat_positions(starts, lens).tolist() == [5, 6, 0, 1, 2]
    assert flat_positions(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).size == 0
