"""k-NN graph (faiss), near-duplicate merging and the Leiden estimator (no models needed)."""

import numpy as np
import pytest

igraph = pytest.importorskip("igraph")
pytest.importorskip("faiss")
pytest.importorskip("leidenalg")

from mteb_stratified.core.errors import InputError  # noqa: E402
from mteb_stratified.structure.graph import knn_edges, merge_near_duplicates, to_igraph  # noqa
from mteb_stratified.structure.leiden import LeidenClustering  # noqa: E402

import importlib.util, pathlib  # noqa: E401,E402

_spec = importlib.util.spec_from_file_location(
    "bench_structure", pathlib.Path(__file__).parents[2] / "benchmarks" / "bench_structure.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_knn_edges_are_undirected_thresholded_and_sorted():
    emb, _ = bench.make_entities(500, seed=1)
    e = knn_edges(emb, k=5, threshold=0.5)
    assert e.index == "flat" and len(e) > 0
    assert np.all(e.src < e.dst) and np.all(e.weight >= 0.5)
    key = e.src * e.n + e.dst
    assert np.all(np.diff(key) > 0)  # sorted, no duplicate pair
    sims = np.round((emb[e.src] * emb[e.dst]).sum(1), 6)
    np.testing.assert_allclose(sims, e.weight, atol=2e-6)


def test_knn_threshold_above_every_similarity_gives_no_edges():
    emb, _ = bench.make_entities(200, seed=2)
    assert len(knn_edges(emb, k=5, threshold=0.999)) == 0
    assert len(knn_edges(emb[:1], k=5)) == 0


def test_approximate_index_recovers_planted_communities():
    emb, truth = bench.make_entities(6000, seed=3)
    e = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, nprobe=8, seed=0)
    assert e.index.startswith("ivf")
    labels = LeidenClustering(seed=0).fit(to_igraph(e.n, e.src, e.dst, e.weight)).labels_
    assert bench.adjusted_rand_index(truth, labels) > 0.95


def test_merge_near_duplicates_keeps_best_ranked_representative():
    emb = np.array([[1, 0], [0.999, 0.0447], [0, 1], [0.6, 0.8]], dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    e = knn_edges(emb, k=3, threshold=0.5)
    canon = merge_near_duplicates(e, 0.99, rank=np.array([1, 0, 2, 3]))
    assert canon.tolist() == [1, 1, 2, 3]


def _two_cliques():
    g = igraph.Graph.Full(5)
    g.add_vertices(6)
    g.add_edges([(5 + i, 5 + j) for i in range(6) for j in range(i + 1, 6)] + [(0, 5)])
    g.es["weight"] = [1.0] * g.ecount()
    return g


def test_leiden_is_a_fitted_estimator():
    model = LeidenClustering(resolution=1.0, objective="modularity", seed=7)
    assert "seed=7" in repr(model)
    with pytest.raises(RuntimeError, match="not fitted"):
        _ = model.n_clusters
    g = _two_cliques()
    assert model.fit(g) is model
    assert model.n_clusters_ == 2
    assert model.labels_.tolist() == [1] * 5 + [0] * 6  # id 0 = largest cluster
    assert model.sizes_.tolist() == [6, 5]
    expected = g.modularity(model.labels_.tolist(), weights="weight")
    assert model.modularity_ == pytest.approx(expected)
    again = LeidenClustering(seed=7).fit(g)
    assert again.labels_.tolist() == model.labels_.tolist()


def test_leiden_accepts_sparse_matrices_and_cpm():
    import scipy.sparse as sp
    g = _two_cliques()
    A = sp.csr_matrix(g.get_adjacency_sparse(attribute="weight"))
    lab = LeidenClustering(objective="cpm", resolution=0.5, seed=0).fit(A).labels_
    assert len(set(lab.tolist())) == 2


@pytest.mark.parametrize("kw,match", [({"objective": "louvain"}, "objective"),
                                      ({"resolution": 0}, "resolution")])
def test_leiden_rejects_bad_parameters(kw, match):
    with pytest.raises(InputError, match=match):
        LeidenClustering(**kw).fit(_two_cliques())


def test_bench_ari():
    assert bench.adjusted_rand_index([0, 0, 1, 1], [5, 5, 3, 3]) == pytest.approx(1.0)
    assert bench.adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1]) < 0.1
