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


def _edge_keys(e):
    return set((e.src * e.n + e.dst).tolist())


@pytest.mark.parametrize("method,prefix", [("ivf", "ivf-join"), ("hnsw", "hnsw32,efC40,self-efS")])
def test_approximate_index_recovers_planted_communities(method, prefix):
    emb, truth = bench.make_entities(6000, seed=3)
    e = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, nprobe=8, seed=0, method=method)
    assert e.index.startswith(prefix)
    labels = LeidenClustering(seed=0).fit(to_igraph(e.n, e.src, e.dst, e.weight)).labels_
    assert bench.adjusted_rand_index(truth, labels) > 0.95


@pytest.mark.parametrize("method", ["ivf", "hnsw"])
def test_approximate_knn_has_high_recall_and_exact_weights(method):
    emb, _ = bench.make_entities(8000, seed=4)
    exact = knn_edges(emb, k=10, threshold=0.5)
    approx = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method=method)
    assert exact.index == "flat" and approx.index != "flat"
    recall = len(_edge_keys(exact) & _edge_keys(approx)) / len(exact)
    assert recall > 0.98
    assert bench.edge_recall(emb, approx, 10, 0.5) > 0.98
    key = approx.src * approx.n + approx.dst
    assert np.all(approx.src < approx.dst) and np.all(np.diff(key) > 0)
    sims = np.round((emb[approx.src].astype(np.float64) * emb[approx.dst]).sum(1), 6)
    np.testing.assert_allclose(sims, approx.weight, atol=2e-6)


@pytest.mark.parametrize("method", ["ivf", "hnsw"])
def test_approximate_knn_is_deterministic_across_runs_and_threads(method):
    faiss = pytest.importorskip("faiss")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    emb, _ = bench.make_entities(5000, seed=5)
    runs = [knn_edges(emb, k=10, threshold=0.5, exact_max=500, method=method) for _ in range(2)]
    if method == "ivf" or hasattr(faiss, "hnsw_add_vertices_deterministic"):
        threads = faiss.omp_get_max_threads()  # one thread for faiss and for numpy's BLAS
        faiss.omp_set_num_threads(1)
        try:
            with threadpoolctl.threadpool_limits(1):
                runs.append(knn_edges(emb, k=10, threshold=0.5, exact_max=500, method=method))
        finally:
            faiss.omp_set_num_threads(threads)
    assert runs[0].index.startswith("ivf-join" if method == "ivf" else "hnsw")
    for r in runs[1:]:
        assert r.index == runs[0].index
        for a in ("src", "dst", "weight"):
            assert np.array_equal(getattr(r, a), getattr(runs[0], a))


def test_hnsw_fallback_for_older_faiss_builds_on_one_thread():
    faiss = pytest.importorskip("faiss")
    from mteb_stratified.structure.graph import _hnsw
    emb, _ = bench.make_entities(4000, seed=6)
    threads = faiss.omp_get_max_threads()
    s1, i1, kind = _hnsw(faiss, emb, 11, deterministic_build=False)
    s2, i2, _ = _hnsw(faiss, emb, 11, deterministic_build=False)
    assert faiss.omp_get_max_threads() == threads  # restored
    assert kind == "hnsw32,efC40,efS64"
    assert np.array_equal(i1, i2) and np.array_equal(s1, s2)
    flat = faiss.IndexFlatIP(emb.shape[1])
    flat.add(emb)
    _, ie = flat.search(emb, 11)
    recall = np.mean([len(set(a) & set(b)) / 11 for a, b in zip(i1.tolist(), ie.tolist())])
    assert recall > 0.98


def test_keep_best_merges_candidates_without_duplicates():
    from mteb_stratified.structure.graph import _keep_best
    sims = np.array([[1.0, 0.5, 0.4], [1.0, 0.2, -np.inf]], dtype=np.float32)
    ids = np.array([[0, 3, 7], [1, 4, -1]])
    new_s = np.array([[1.0, 0.45, 0.5], [0.3, -np.inf, 0.2]], dtype=np.float32)
    new_i = np.array([[0, 5, 3], [6, -1, 4]])
    _keep_best(sims, ids, np.array([0, 1]), new_s, new_i, 3)
    got = [sorted(zip(i.tolist(), s.tolist())) for i, s in zip(ids, sims)]
    assert got == [[(0, 1.0), (3, 0.5), (5, pytest.approx(0.45))],
                   [(1, 1.0), (4, pytest.approx(0.2)), (6, pytest.approx(0.3))]]


def test_knn_rejects_unknown_method():
    emb, _ = bench.make_entities(100, seed=0)
    with pytest.raises(InputError, match="method"):
        knn_edges(emb, method="annoy")


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
