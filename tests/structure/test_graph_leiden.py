"""k-NN graph (faiss), near-duplicate merging and the Leiden estimator (no models needed)."""

import json

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


@pytest.mark.parametrize("method,prefix", [("ivf-flat", "ivf-join"), ("ivf-tree", "ivf-tree"),
                                           ("hnsw", "hnsw32,efC40,self-efS")])
def test_approximate_index_recovers_planted_communities(method, prefix):
    emb, truth = bench.make_entities(6000, seed=3)
    e = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, nprobe=8, seed=0, method=method)
    assert e.index.startswith(prefix)
    labels = LeidenClustering(seed=0).fit(to_igraph(e.n, e.src, e.dst, e.weight)).labels_
    assert bench.adjusted_rand_index(truth, labels) > 0.95


@pytest.mark.parametrize("method,topics", [("ivf-flat", None), ("hnsw", None), ("ivf", 50),
                                           ("ivf-tree", 50)])
def test_approximate_knn_has_high_recall_and_exact_weights(method, topics):
    emb, _ = bench.make_entities(8000, seed=4, topics=topics)
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


@pytest.mark.parametrize("method,topics", [("ivf-flat", None), ("ivf", 50), ("hnsw", None)])
def test_approximate_knn_is_deterministic_across_runs_and_threads(method, topics):
    faiss = pytest.importorskip("faiss")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    emb, _ = bench.make_entities(5000, seed=5, topics=topics)
    runs = [knn_edges(emb, k=10, threshold=0.5, exact_max=500, method=method) for _ in range(2)]
    if method != "hnsw" or hasattr(faiss, "hnsw_add_vertices_deterministic"):
        threads = faiss.omp_get_max_threads()  # one thread for faiss and for numpy's BLAS
        faiss.omp_set_num_threads(1)
        try:
            with threadpoolctl.threadpool_limits(1):
                runs.append(knn_edges(emb, k=10, threshold=0.5, exact_max=500, method=method))
        finally:
            faiss.omp_set_num_threads(threads)
    assert runs[0].index.startswith({"ivf-flat": "ivf-join", "ivf": "ivf-tree",
                                     "hnsw": "hnsw"}[method])
    for r in runs[1:]:
        assert r.index == runs[0].index
        for a in ("src", "dst", "weight"):
            assert np.array_equal(getattr(r, a), getattr(runs[0], a))


def test_ivf_takes_the_two_level_lists_only_when_their_sample_recall_check_passes():
    from mteb_stratified.structure import graph
    # flat data (independent community centres): coarse lists cannot route, the sample check
    # sees it and the default falls back to the one-level self-join
    emb, _ = bench.make_entities(8000, seed=4)
    exact = knn_edges(emb, k=10, threshold=0.5)
    auto = knn_edges(emb, k=10, threshold=0.5, exact_max=1000)
    assert auto.index.startswith("ivf-join") and "two-level check" in auto.index
    check = float(auto.index.rsplit("check ", 1)[1].rstrip(")"))
    assert check < graph.TREE_MIN_RECALL
    # the estimate is what the forced two-level lists really find (all points, exact k-NN)
    tree = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method="ivf-tree")
    assert tree.index.startswith("ivf-tree") and f"check{check:.3f}" in tree.index
    recall = len(_edge_keys(exact) & _edge_keys(tree)) / len(exact)
    assert abs(recall - check) < 0.01
    assert len(_edge_keys(exact) & _edge_keys(auto)) / len(exact) > 0.99
    # with topics above the communities the two-level lists pass and are used
    emb, _ = bench.make_entities(8000, seed=4, topics=50)
    auto = knn_edges(emb, k=10, threshold=0.5, exact_max=1000)
    assert auto.index.startswith("ivf-tree") and "check1.000" in auto.index


def test_auto_tries_hnsw_when_the_lists_miss_too_much_and_keeps_the_better(monkeypatch):
    from mteb_stratified.structure import graph
    emb, _ = bench.make_entities(6000, seed=8)
    exact = knn_edges(emb, k=10, threshold=0.5)
    monkeypatch.setattr(graph, "TREE_MIN_RECALL", 1.01)        # never the two-level lists
    plain = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method="auto")
    assert plain.index.startswith("ivf-join")                  # one-level check passes 0.95
    assert "hnsw" not in plain.index
    monkeypatch.setattr(graph, "HNSW_TRY_BELOW", 1.01)         # always try HNSW as well
    auto = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method="auto")
    flat = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method="ivf-flat")
    hnsw = knn_edges(emb, k=10, threshold=0.5, exact_max=1000, method="hnsw")
    r_flat = float(auto.index.split("check")[1].split()[0].rstrip(","))
    assert "hnsw" in auto.index
    kept = hnsw if auto.index.startswith("hnsw") else flat
    assert np.array_equal(auto.src, kept.src) and np.array_equal(auto.dst, kept.dst)
    recall = {name: len(_edge_keys(exact) & _edge_keys(e)) / len(exact)
              for name, e in (("flat", flat), ("hnsw", hnsw))}
    assert recall["hnsw" if auto.index.startswith("hnsw") else "flat"] >= min(recall.values())
    assert 0 < r_flat <= 1


def test_the_one_level_check_before_the_join_is_the_joins_own():
    """auto scores the one-level lists from the sample's own candidates before joining them
    (it skips the join when HNSW does better): that estimate is the check of the join made."""
    faiss = pytest.importorskip("faiss")
    from mteb_stratified.structure.graph import _ivf_join, _ivf_plan, _RecallCheck
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 384))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    stray = centres[rng.integers(0, 40, 600)] + 0.05 * rng.standard_normal((600, 384))
    stray /= np.linalg.norm(stray, axis=1, keepdims=True)   # small groups no list takes
    for seed, topics, extra in ((4, None, False), (8, 20, False), (4, None, True)):
        emb, _ = bench.make_entities(6000, seed=seed, topics=topics)
        if extra:
            emb = np.ascontiguousarray(np.vstack([emb, stray]), dtype=np.float32)
        check = _RecallCheck(faiss, emb, 11, 0.5, seed=0)
        plan = _ivf_plan(faiss, emb, 4, 0)                  # few probes: recall under 1
        assert plan.orphans.size > 1 or not extra           # the orphans' repair too
        _, ids, _ = _ivf_join(faiss, emb, 11, 4, 0, plan=plan)
        found = check.score(ids[check.rows])
        assert found < 1 and check.of_ivf(emb, 11, plan) == pytest.approx(found, abs=0.002)


def test_recall_check_scores_the_sampled_points_exact_edges():
    faiss = pytest.importorskip("faiss")
    from mteb_stratified.structure.graph import _RecallCheck, _flat
    emb, _ = bench.make_entities(3000, seed=9)
    check = _RecallCheck(faiss, emb, 11, 0.5, seed=0)
    assert check.rows.size == 500 and check.total > 0
    _, ids, _ = _flat(faiss, emb, 11)
    assert check.score(ids[check.rows]) == 1.0
    half = ids[check.rows].copy()
    half[:, 6:] = -1                                  # drop the 5 weakest of 10 neighbours
    assert 0.3 < check.score(half) < 0.8
    assert check.score(np.full((500, 11), -1)) == 0.0


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
    # distinct=True (new ids known to be new) skips the duplicate check, same best kk
    sims = np.array([[0.9, 0.5, -np.inf]], dtype=np.float32)
    ids = np.array([[2, 3, -1]])
    _keep_best(sims, ids, np.array([0]), np.array([[0.7, 0.1, -np.inf]], dtype=np.float32),
               np.array([[8, 9, -1]]), 3, distinct=True)
    assert sorted(zip(ids[0].tolist(), sims[0].tolist())) == [
        (2, pytest.approx(0.9)), (3, 0.5), (8, pytest.approx(0.7))]


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


def _planted_graph(sizes, seed=0, p_in=0.6, bridges=0):
    """Dense random communities of the given sizes, joined by ``bridges`` random edges.

    Returns the graph (vertices shuffled) and each vertex's planted community."""
    rng = np.random.default_rng(seed)
    edges, start = [], 0
    for size in sizes:
        for i in range(size):
            for j in range(i + 1, size):
                if rng.random() < p_in:
                    edges.append((start + i, start + j))
        start += size
    for _ in range(bridges):
        a, b = rng.integers(0, start, 2)
        if a != b:
            edges.append((int(min(a, b)), int(max(a, b))))
    perm = rng.permutation(start)                    # components not contiguous in vertex ids
    g = igraph.Graph(n=start, edges=[(int(perm[a]), int(perm[b])) for a, b in edges])
    g.simplify()
    g.es["weight"] = rng.uniform(0.5, 1.0, g.ecount()).tolist()
    planted = np.empty(start, dtype=np.int64)
    planted[perm] = np.repeat(np.arange(len(sizes)), sizes)
    return g, planted


@pytest.mark.parametrize("objective,resolution", [("modularity", 1.0), ("modularity", 0.3),
                                                  ("cpm", 0.2)])
def test_leiden_split_into_component_batches_optimises_the_whole_graph_objective(objective,
                                                                                  resolution):
    import leidenalg as la
    g, _ = _planted_graph([12, 7, 30, 9, 15, 4, 22, 1, 1, 18], bridges=3)
    g.add_vertices(2)                                # isolated vertices as well
    g.es["weight"] = [w if w is not None else 1.0 for w in g.es["weight"]]
    whole = LeidenClustering(objective=objective, resolution=resolution, seed=3,
                             split_above=None).fit(g)
    split = LeidenClustering(objective=objective, resolution=resolution, seed=3,
                             split_above=0, batch_size=25).fit(g)
    assert whole.n_batches_ == 1 and split.n_batches_ > 2
    kind = la.RBConfigurationVertexPartition if objective == "modularity" else \
        la.CPMVertexPartition
    for model in (whole, split):
        # quality_ is the whole-graph objective of labels_, recomputed here by leidenalg
        part = kind(g, initial_membership=model.labels_.tolist(), weights="weight",
                    resolution_parameter=resolution)
        assert model.quality_ == pytest.approx(part.quality(), rel=1e-9)
        assert model.modularity_ == pytest.approx(
            g.modularity(model.labels_.tolist(), weights="weight"))
    # no community spans two components, and the optimum is reached either way here
    comp = np.asarray(g.connected_components().membership)
    for c in range(split.n_clusters_):
        assert np.unique(comp[split.labels_ == c]).size == 1
    assert split.quality_ == pytest.approx(whole.quality_, rel=1e-6)
    again = LeidenClustering(objective=objective, resolution=resolution, seed=3,
                             split_above=0, batch_size=25).fit(g)
    assert again.labels_.tolist() == split.labels_.tolist()


def test_leiden_split_recovers_planted_components_and_respects_split_above():
    sizes = [int(s) for s in np.random.default_rng(1).integers(5, 40, 60)]
    g, planted = _planted_graph(sizes, seed=1, p_in=0.8)
    split = LeidenClustering(seed=0, split_above=100, batch_size=200).fit(g)
    assert split.n_batches_ >= sum(sizes) // 200
    assert bench.adjusted_rand_index(planted, split.labels_) == pytest.approx(1.0)
    whole = LeidenClustering(seed=0, split_above=g.vcount()).fit(g)
    assert whole.n_batches_ == 1
    assert bench.adjusted_rand_index(planted, whole.labels_) == pytest.approx(1.0)


@pytest.mark.parametrize("kw,match", [({"split_above": -1}, "split_above"),
                                      ({"batch_size": 0}, "batch_size")])
def test_leiden_rejects_bad_split_parameters(kw, match):
    with pytest.raises(InputError, match=match):
        LeidenClustering(**kw).fit(_two_cliques())


def test_leiden_on_an_empty_graph_is_a_fitted_empty_partition():
    """fit() on a graph with no vertices returns a fitted estimator with no clusters (the
    pipeline used to fake this state from outside)."""
    from mteb_stratified.structure.leiden import LeidenClustering

    est = LeidenClustering(seed=0).fit(igraph.Graph(0))
    assert est.n_clusters == 0 and est.labels_.shape == (0,) and est.modularity_ == 0.0


def test_split_half_partitions_are_the_consensus_of_each_half_of_the_runs():
    """clustering.cluster_entities(halves=True): the runs already made, split in two, each half's
    consensus clustered as the build's last step is; the whole consensus is unchanged."""
    import igraph as ig

    from mteb_stratified.structure.clustering import cluster_entities, consensus_graph
    from mteb_stratified.structure.leiden import LeidenClustering
    from mteb_stratified.structure.pipeline import StructureConfig

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 6, 240)
    pairs = rng.integers(0, 240, (2400, 2))
    keep = (pairs[:, 0] != pairs[:, 1]) & ((truth[pairs[:, 0]] == truth[pairs[:, 1]])
                                          | (rng.random(2400) < 0.01))
    g = ig.Graph(n=240, edges=pairs[keep].tolist())
    g.simplify()
    g.es["weight"] = rng.uniform(0.6, 1.0, g.ecount()).tolist()
    cfg = StructureConfig(consensus_runs=5, seed=2, min_cluster_size=3, resolution=1.0)
    with_halves = cluster_entities(g, cfg, halves=True)
    plain = cluster_entities(g, cfg)
    assert plain.halves is None and np.array_equal(with_halves.labels, plain.labels)

    def fit(graph, seed, iterations=cfg.n_iterations):
        return LeidenClustering(resolution=cfg.resolution, objective=cfg.objective, seed=seed,
                                n_iterations=iterations).fit(graph)

    runs = [fit(g, cfg.seed * 5 + i, cfg.consensus_iterations).labels_ for i in range(5)]
    for part, got in zip((runs[:2], runs[2:]), with_halves.halves):
        leiden = fit(consensus_graph(g, part, cfg.consensus_threshold), cfg.seed)
        big = leiden.sizes_ >= cfg.min_cluster_size
        want = np.where(big[leiden.labels_], np.cumsum(big)[leiden.labels_] - 1, -1)
        assert np.array_equal(got, want)
    # planted communities: both halves agree closely with each other
    from mteb_stratified.structure.quality import adjusted_rand
    assert adjusted_rand(*with_halves.halves) > 0.8


def test_consensus_graph_from_the_callers_edge_arrays_is_the_same_graph():
    """consensus_graph(edges=...) (the document map passes its k-NN arrays, so no Python list
    of the edges is built) gives the graph it builds from igraph's own edge list, and the
    co-membership share is the mean over the runs; arrays of the wrong shape are refused."""
    import igraph as ig

    from mteb_stratified.structure.clustering import consensus_graph, edge_arrays
    from mteb_stratified.structure.graph import to_igraph

    rng = np.random.default_rng(11)
    src = rng.integers(0, 300, 2000)
    dst = rng.integers(0, 300, 2000)
    ok = src < dst
    src, dst = src[ok], dst[ok]
    w = np.round(rng.uniform(0.0, 1.0, src.size), 6)
    g = to_igraph(300, src, dst, w)
    pairs, weight = edge_arrays(g)
    assert np.array_equal(pairs, np.column_stack([src, dst])) and np.array_equal(weight, w)
    labelings = [rng.integers(0, 4, 300) for _ in range(3)]
    a = consensus_graph(g, labelings, 0.5)
    b = consensus_graph(g, labelings, 0.5, edges=(np.column_stack([src, dst]), w))
    assert a.get_edgelist() == b.get_edgelist() and a.es["weight"] == b.es["weight"]
    share = np.mean([lab[src] == lab[dst] for lab in labelings], axis=0)
    keep = share >= 0.5
    assert a.get_edgelist() == list(zip(src[keep].tolist(), dst[keep].tolist()))
    assert a.es["weight"] == (w[keep] * share[keep]).tolist() and a.vcount() == 300
    unweighted = ig.Graph(n=3, edges=[(0, 1), (1, 2)])
    assert edge_arrays(unweighted)[1].tolist() == [1.0, 1.0]
    for bad in ((pairs[:-1], weight[:-1]), (pairs, weight[:-1]), (pairs.reshape(-1), weight)):
        with pytest.raises(ValueError, match="edges"):
            consensus_graph(g, labelings, 0.5, edges=bad)


def test_a_half_of_one_run_is_that_run_with_small_clusters_dissolved():
    """With two consensus runs (the default) each split half is one run: its own partition,
    not a Leiden fit of a one-run consensus graph (no extra fit)."""
    from mteb_stratified.structure.clustering import cluster_entities
    from mteb_stratified.structure.pipeline import StructureConfig
    from mteb_stratified.structure.quality import adjusted_rand

    g, planted = _planted_graph([30, 25, 20, 2, 18], seed=4, bridges=6)
    cfg = StructureConfig(consensus_runs=2, seed=1, min_cluster_size=3, resolution=1.0)
    got = cluster_entities(g, cfg, halves=True)
    for i, half in enumerate(got.halves):
        run = LeidenClustering(seed=cfg.seed * 2 + i, n_iterations=cfg.consensus_iterations,
                               resolution=1.0).fit(g)
        big = run.sizes_ >= 3
        want = np.where(big[run.labels_], np.cumsum(big)[run.labels_] - 1, -1)
        assert np.array_equal(half, want)
    assert adjusted_rand(planted[got.labels >= 0], got.labels[got.labels >= 0]) > 0.9


def test_igraph_backend_is_seeded_and_leaves_the_random_module_alone():
    """A fit is a function of its seed (igraph draws from a random.Random(seed) during the fit,
    then from its default generator again), and Python's global random state is untouched."""
    import random

    g, _ = _planted_graph([40, 35, 30, 25], seed=5, p_in=0.3, bridges=40)
    random.seed(123)
    state = random.getstate()
    a = LeidenClustering(seed=11).fit(g).labels_
    assert random.getstate() == state
    b = LeidenClustering(seed=11).fit(g).labels_
    assert np.array_equal(a, b)
    rng = np.random.default_rng(0)     # no planted structure: the seed decides the partition
    pairs = np.argwhere(np.triu(rng.random((200, 200)) < 0.04, k=1))
    noise = igraph.Graph(n=200, edges=pairs.tolist())
    outs = {tuple(LeidenClustering(seed=s, n_iterations=1).fit(noise, weights=None).labels_)
            for s in range(4)}
    assert len(outs) > 1  # the seed reaches igraph


@pytest.mark.parametrize("objective,resolution", [("modularity", 1.0), ("cpm", 0.2)])
def test_igraph_and_leidenalg_backends_find_the_planted_partition(objective, resolution):
    g, planted = _planted_graph([12, 30, 9, 22, 18], seed=2, p_in=0.7, bridges=4)
    fits = [LeidenClustering(objective=objective, resolution=resolution, seed=0,
                             backend=b).fit(g) for b in ("igraph", "leidenalg")]
    for fit in fits:
        assert bench.adjusted_rand_index(planted, fit.labels_) == pytest.approx(1.0)
    assert fits[0].quality_ == pytest.approx(fits[1].quality_, rel=1e-9)
    assert "backend='leidenalg'" in repr(fits[1])


@pytest.mark.parametrize("graph", ["isolated", "pair", "pair_and_isolated", "one"])
def test_graphs_with_isolated_vertices_or_one_tiny_component_cluster_without_error(graph):
    """Isolated vertices are clusters of their own; a single component of 2 vertices is one
    cluster; the consensus with its split halves runs on them too."""
    from mteb_stratified.structure.clustering import cluster_entities
    from mteb_stratified.structure.pipeline import StructureConfig

    g = {"isolated": igraph.Graph(4), "pair": igraph.Graph(2, [(0, 1)]),
         "pair_and_isolated": igraph.Graph(5, [(1, 3)]), "one": igraph.Graph(1)}[graph]
    if g.ecount():
        g.es["weight"] = [0.7] * g.ecount()
    fit = LeidenClustering(seed=0).fit(g)
    want = {"isolated": 4, "pair": 1, "pair_and_isolated": 4, "one": 1}[graph]
    assert fit.n_clusters_ == want and fit.labels_.shape == (g.vcount(),)
    if g.ecount():
        assert fit.labels_[1 if graph == "pair_and_isolated" else 0] == fit.labels_[
            3 if graph == "pair_and_isolated" else 1]
    for split_above in (None, 0):
        LeidenClustering(seed=0, split_above=split_above, batch_size=2).fit(g)
    got = cluster_entities(g, StructureConfig(consensus_runs=4, min_cluster_size=1),
                           halves=True)
    assert got.n_clusters == want


@pytest.mark.parametrize("kw,match", [({"n_iterations": 0}, "n_iterations"),
                                      ({"n_iterations": 1.5}, "n_iterations"),
                                      ({"n_iterations": -2}, "n_iterations"),
                                      ({"n_iterations": True}, "n_iterations"),
                                      ({"backend": "networkx"}, "backend"),
                                      ({"resolution": -1.0}, "resolution"),
                                      ({"resolution": float("nan")}, "resolution"),
                                      ({"resolution": "1"}, "resolution")])
def test_leiden_rejects_bad_iterations_backends_and_resolutions(kw, match):
    with pytest.raises(InputError, match=match):
        LeidenClustering(**kw).fit(_two_cliques())


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2"])
def test_one_iteration_rule_for_the_estimator_the_config_and_the_cli(value):
    """The estimator, ``StructureConfig`` and ``--n-iterations`` refuse the same counts."""
    from mteb_stratified.structure.leiden import valid_iterations
    from mteb_stratified.structure.pipeline import StructureConfig
    assert not valid_iterations(value)
    with pytest.raises(InputError, match="n_iterations"):
        StructureConfig(n_iterations=value)
    assert valid_iterations(-1) and valid_iterations(3) and valid_iterations(np.int64(2))
    cfg = StructureConfig(n_iterations=np.int64(3), consensus_iterations=np.int64(-1))
    assert type(cfg.n_iterations) is int and type(cfg.consensus_iterations) is int
    json.dumps(cfg.to_dict())  # the build's settings hash reads it


def test_igraph_backend_counts_self_loops_as_modularity_does_on_a_quotient_graph():
    """A quotient graph (the document map's coarser levels) holds each unit's inner weight as a
    self-loop.  igraph's default node weights count a self-loop once, which merged units that
    modularity keeps apart (4 planted groups became 2 at γ = 1/8); with the strengths passed
    as node weights both backends reach the same objective and the same 4 groups."""
    from mteb_stratified.structure.levels import quotient_graph

    rng = np.random.default_rng(0)
    n = 400
    units = np.arange(n) // 20
    group = units // 5
    p = np.where(units[:, None] == units[None, :], 0.5,
                 np.where(group[:, None] == group[None, :], 0.05, 0.002))
    pairs = np.argwhere(np.triu(rng.random((n, n)) < p, k=1))
    g = igraph.Graph(n=n, edges=pairs.tolist())
    g.es["weight"] = [1.0] * g.ecount()
    q = quotient_graph(g, units, 20)
    assert any(e.source == e.target for e in q.es)
    for gamma in (0.5, 0.25, 0.125):
        fits = [LeidenClustering(resolution=gamma, seed=0, backend=b).fit(q)
                for b in ("igraph", "leidenalg")]
        assert fits[0].quality_ == pytest.approx(fits[1].quality_, rel=1e-9)
        assert bench.adjusted_rand_index(fits[0].labels_, np.arange(20) // 5) == 1.0


@pytest.mark.parametrize("seed", [-3, 1.5, True])
def test_leiden_refuses_a_seed_that_is_not_a_non_negative_integer(seed):
    """random.Random(-3) is random.Random(3): a negative seed would alias another one."""
    with pytest.raises(InputError, match="seed"):
        LeidenClustering(seed=seed).fit(_two_cliques())
