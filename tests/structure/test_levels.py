"""The document map's tree (structure/levels.py): leaves nested in topics nested in coarser
levels, on the k-NN graph of 800 real NFCorpus documents (the static embedding: a lookup)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

N_DOCS = 800


@pytest.fixture(scope="module")
def doc_graph(nfcorpus_texts):
    from mteb_stratified.structure.embed import embed_with
    from mteb_stratified.structure.graph import knn_edges, to_igraph

    texts = list(nfcorpus_texts)[:N_DOCS]
    emb = embed_with(texts, None, "static")
    e = knn_edges(np.ascontiguousarray(emb, dtype=np.float32), k=10, threshold=0.0)
    return to_igraph(len(texts), e.src, e.dst, e.weight)


@pytest.fixture(scope="module")
def cfg():
    from mteb_stratified.structure.pipeline import StructureConfig
    return StructureConfig(consensus_runs=3)


@pytest.fixture(scope="module")
def built_tree(doc_graph, cfg):
    from mteb_stratified.structure.clustering import cluster_entities
    from mteb_stratified.structure.levels import document_tree

    run = dataclasses.replace(cfg, resolution=cfg.document_resolution, min_cluster_size=1)
    topics = cluster_entities(doc_graph, run)
    leaves, n_leaves, tree = document_tree(doc_graph, topics.labels, topics.n_clusters, run)
    return topics, leaves, n_leaves, tree


def test_leaves_split_the_topics_and_every_level_nests(built_tree, cfg):
    topics, leaves, n_leaves, tree = built_tree
    assert n_leaves > topics.n_clusters >= 3 and leaves.min() == 0
    assert tree.n_clusters == n_leaves and tree.n_units(1) == topics.n_clusters
    assert tree.n_units(tree.n_levels - 1) == 1
    # level 1 is the topic partition itself (renumbered): each leaf in one topic
    unit1 = tree.ancestors(1)[leaves]
    pairs = set(zip(unit1.tolist(), topics.labels.tolist()))
    assert len(pairs) == topics.n_clusters == len({t for _, t in pairs})
    sizes = np.bincount(leaves)
    topic_size = np.bincount(topics.labels)
    for leaf in range(n_leaves):  # at least leaf_min_size, unless the whole topic is smaller
        topic = topics.labels[leaves == leaf][0]
        assert sizes[leaf] >= min(cfg.leaf_min_size, topic_size[topic])
    assert list(sizes) == sorted(sizes, reverse=True)          # ids by size
    for level in range(1, tree.n_levels):                      # numbered by smallest leaf
        first = [int(np.flatnonzero(tree.ancestors(level) == u)[0])
                 for u in range(tree.n_units(level))]
        assert first == sorted(first)


def test_a_quotient_graph_keeps_the_modularity_of_the_merged_partition(doc_graph, built_tree):
    from mteb_stratified.structure.levels import quotient_graph

    topics, leaves, n_leaves, tree = built_tree
    q = quotient_graph(doc_graph, leaves, n_leaves)
    assert sum(q.es["weight"]) == pytest.approx(sum(doc_graph.es["weight"]))
    up = tree.ancestors(2)   # each leaf's level-2 unit
    direct = doc_graph.modularity(up[leaves].tolist(), weights="weight")
    via = q.modularity(up.tolist(), weights="weight")
    assert via == pytest.approx(direct, abs=1e-9)


def test_small_parts_join_the_part_they_are_most_linked_to():
    import igraph as ig

    from mteb_stratified.structure.levels import merge_small

    # parts 0 (4 vertices), 1 (3), 2 (1 vertex: 7, linked to 1 by weight 5, to 0 by 1)
    g = ig.Graph(n=8, edges=[(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (7, 4), (7, 0)])
    g.es["weight"] = [1, 1, 1, 1, 1, 5, 1]
    out = merge_small(g, [0, 0, 0, 0, 1, 1, 1, 2], 2)
    assert out[7] == out[4] and out[0] != out[4]
    # two small parts linked to each other merge; an isolated small part joins the largest
    g2 = ig.Graph(n=5, edges=[(0, 1), (1, 2), (3, 4)])
    g2.es["weight"] = [1, 1, 1]
    assert merge_small(g2, [0, 0, 0, 1, 2], 2).tolist() == [0, 0, 0, 1, 1]
    g3 = ig.Graph(n=5, edges=[(0, 1), (1, 2)])
    g3.es["weight"] = [1, 1]
    assert merge_small(g3, [0, 0, 0, 1, 2], 2).tolist() == [0, 0, 0, 0, 0]
    assert merge_small(g3, [0, 0, 0, 1, 2], 1).tolist() == [0, 0, 0, 1, 2]


def _merge_small_one_pass_at_a_time(graph, labels, min_size):
    """The rule of merge_small written out: each merge re-reads every edge and renumbers."""
    from mteb_stratified.structure.leiden import renumber_by_size

    labels = renumber_by_size(np.asarray(labels, dtype=np.int64))
    pairs = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    w = np.asarray(graph.es["weight"], dtype=np.float64)
    while min_size > 1:
        sizes = np.bincount(labels)
        small = np.flatnonzero(sizes < min_size)
        if small.size == 0 or sizes.size == 1:
            break
        part = int(small[np.lexsort((small, sizes[small]))[0]])
        a, b = labels[pairs[:, 0]], labels[pairs[:, 1]]
        out = np.concatenate([b[a == part], a[b == part]])
        wt = np.concatenate([w[a == part], w[b == part]])
        keep = out != part
        if keep.any():
            target = int(np.argmax(np.bincount(out[keep], weights=wt[keep],
                                               minlength=sizes.size)))
        else:
            others = np.flatnonzero(np.arange(sizes.size) != part)
            target = int(others[np.argmax(sizes[others])])
        labels = renumber_by_size(np.where(labels == part, target, labels))
    return labels


def test_merge_small_equals_the_rule_written_out_on_random_graphs():
    import igraph as ig

    from mteb_stratified.structure.levels import merge_small

    rng = np.random.default_rng(1)
    for trial in range(150):
        n = int(rng.integers(2, 120))
        e = rng.integers(0, n, (int(rng.integers(0, 3 * n)), 2))
        e = np.unique(np.sort(e[e[:, 0] != e[:, 1]], axis=1), axis=0)
        rng.shuffle(e)
        g = ig.Graph(n=n, edges=e.tolist())
        g.es["weight"] = (rng.integers(1, 4, len(e)) if trial % 2     # ties, or none
                          else np.round(rng.random(len(e)), 6)).tolist()
        lab = np.unique(rng.integers(0, int(rng.integers(1, n + 1)), n), return_inverse=True)[1]
        size = int(rng.integers(1, 8))
        assert merge_small(g, lab, size).tolist() == \
            _merge_small_one_pass_at_a_time(g, lab, size).tolist()


def test_the_same_seed_gives_the_same_tree(doc_graph, cfg, built_tree):
    from mteb_stratified.structure.clustering import cluster_entities
    from mteb_stratified.structure.levels import document_tree

    topics, leaves, _, tree = built_tree
    run = dataclasses.replace(cfg, resolution=cfg.document_resolution, min_cluster_size=1)
    again = document_tree(doc_graph, cluster_entities(doc_graph, run).labels,
                          topics.n_clusters, run)
    assert np.array_equal(again[0], leaves)
    assert again[2].to_dict() == tree.to_dict()


@pytest.mark.parametrize("field,value", [("leaf_resolution", 0), ("leaf_resolution", 101),
                                         ("leaf_min_size", 0), ("leaf_min_size", 2.5)])
def test_a_leaf_setting_out_of_range_is_a_clear_error(field, value):
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.structure.pipeline import StructureConfig

    with pytest.raises(InputError, match=field):
        StructureConfig(**{field: value})
