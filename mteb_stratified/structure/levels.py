"""The document map's tree from its k-NN graph: leaves for coverage, topics, coarser levels.

Three steps, each a consensus Leiden (:mod:`.clustering`) of the same document graph G (k-NN,
exact cosine), so every level is nested in the one above by construction:

1. **Topics** (level 1): Leiden of G at ``document_resolution`` (γ = 1.0: 31 topics on
   NFCorpus).
2. **Leaves** (level 0, the artifact's clusters): each topic T is **split again** by Leiden of
   its induced subgraph G[T] at ``leaf_resolution`` (modularity within T); a part smaller
   than ``leaf_min_size`` documents joins the part of the same topic it has the most edge
   weight to (the smallest part first; one with no edge to another part joins the largest), so
   a leaf holds at least ``leaf_min_size`` documents unless its whole topic holds fewer.  A topic
   with fewer than 2 · ``leaf_min_size`` documents is one leaf.
3. **Coarser levels** (2, 3, …): the quotient graph of the level below (one vertex per unit,
   an edge of weight Σ w_uv between two units, a self-loop for the weight inside a unit, so
   modularity on it is the modularity of the merged partition of G) clustered by Leiden at
   γ_ℓ = ``document_resolution`` / 2^(ℓ−1); a γ that merges nothing is halved again; below
   γ = 2⁻¹⁰ (units with no edge between them: separate components) the next level is the root.

Why (measured on NFCorpus's corpus and dev qrels over 5 seeds, never on test queries;
docs/validity/topic-map.md, ``benchmarks/topic_map.py``):

* leaves by splitting each topic rather than Leiden of the whole graph at a higher γ: γ = 4
  and 6 give 76 and 94 clusters, with clusters of 1 document, and the levels above γ = 6's
  clusters agreed between seeds at ARI 0.68 (9 units) and 0.22 (3 units); splitting gives 97
  leaves of 10–138 documents, each inside one topic;
* coarser levels by Leiden of the quotient graph rather than Ward's linkage of the topics'
  centroids (:mod:`.hierarchy`, still the entity map's tree): between seeds, Ward's units at
  16, 8 and 4 agreed at ARI 0.82, 0.72 and 0.60, the quotient graph's at 16, 7 and 3 at 0.89,
  0.88 and 0.96.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core.stats.hierarchy import ClusterTree
from .leiden import renumber_by_size

__all__ = ["split_topics", "merge_small", "quotient_graph", "upper_levels", "document_tree",
           "MIN_GAMMA", "MAX_LEAF_RESOLUTION", "MAX_LEAF_SIZE"]

#: The largest leaf resolution and leaf size the config and the command line take.
MAX_LEAF_RESOLUTION = 100.0
MAX_LEAF_SIZE = 100_000

#: The smallest resolution tried for a coarser level before its units go under the root.
MIN_GAMMA = 2.0 ** -10


def merge_small(graph, labels, min_size: int) -> np.ndarray:
    """``labels`` of ``graph``'s vertices with every part under ``min_size`` vertices merged
    into the part it has the most edge weight to (module docstring), renumbered by size.

    One merge at a time, the smallest part first (ties: the one with the lowest vertex, i.e.
    the lowest id once renumbered by size); its target is the part with the most weight to it
    (ties: the larger, then the one with the lowest vertex), or with no edge out, the largest
    other part.  Each merge reads only the merged part's own edges (a heap of the small parts,
    each vertex's edges by id), so the cost is linear in the graph, not parts × edges."""
    import heapq

    labels = renumber_by_size(np.asarray(labels, dtype=np.int64)).copy()
    if min_size <= 1 or labels.size == 0:
        return labels
    pairs = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    w = np.asarray(graph.es["weight"] if "weight" in graph.es.attributes()
                   else np.ones(len(pairs)), dtype=np.float64)
    n = labels.size
    by_end = []                        # each vertex's edges as one end (ids ascending)
    for end in (0, 1):
        order = np.argsort(pairs[:, end], kind="stable")
        by_end.append((order, np.searchsorted(pairs[order, end], np.arange(n + 1))))
    sizes = np.bincount(labels).astype(np.int64)
    first = np.full(sizes.size, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    alive = np.ones(sizes.size, dtype=bool)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(sizes.size + 1))
    members = {int(p): order[bounds[p]:bounds[p + 1]] for p in np.flatnonzero(sizes < min_size)}
    heap = [(int(sizes[p]), int(first[p]), p) for p in members]
    heapq.heapify(heap)
    while heap and int(alive.sum()) > 1:
        size, low, part = heapq.heappop(heap)
        if not alive[part] or sizes[part] != size or first[part] != low:
            continue                   # merged, or grown since it was pushed
        vs = members.pop(part)
        outs, wts = [], []
        for end, (order, bounds) in enumerate(by_end):   # src in the part, then dst
            ids = np.sort(np.concatenate([order[bounds[v]:bounds[v + 1]] for v in vs.tolist()]))
            outs.append(labels[pairs[ids, 1 - end]])
            wts.append(w[ids])
        out, wt = np.concatenate(outs), np.concatenate(wts)
        keep = out != part
        if keep.any():
            cand, inv = np.unique(out[keep], return_inverse=True)
            link = np.bincount(inv, weights=wt[keep])        # summed in edge order
            best = cand[link == link.max()]
        else:  # no edge to another part: the largest other part
            others = np.flatnonzero(alive & (np.arange(sizes.size) != part))
            best = others[sizes[others] == sizes[others].max()]
        target = int(best[np.lexsort((first[best], -sizes[best]))[0]])
        labels[vs] = target
        sizes[target] += size
        first[target] = min(first[target], low)
        alive[part], sizes[part] = False, 0
        if target in members:
            members[target] = np.concatenate([members[target], vs])
        if sizes[target] < min_size:  # a small part grown, still small (in ``members``)
            heapq.heappush(heap, (int(sizes[target]), int(first[target]), target))
    return renumber_by_size(labels)


def split_topics(graph, topics, n_topics: int, cfg) -> tuple[np.ndarray, np.ndarray]:
    """``(leaves, parent)``: each vertex's leaf (ids by size descending) and each leaf's topic,
    from each topic split again (module docstring, step 2)."""
    from .clustering import cluster_entities

    topics = np.asarray(topics, dtype=np.int64)
    run = dataclasses.replace(cfg, resolution=cfg.leaf_resolution, min_cluster_size=1)
    raw = np.full(topics.size, -1, dtype=np.int64)
    nxt = 0
    # each topic's vertices, ascending, from one sort (not one pass over all per topic)
    order = np.argsort(topics, kind="stable")
    bounds = np.searchsorted(topics[order], np.arange(n_topics + 1))
    for t in range(n_topics):
        members = order[bounds[t]:bounds[t + 1]]
        if members.size < 2 * cfg.leaf_min_size:
            parts = np.zeros(members.size, dtype=np.int64)
        else:
            sub = graph.induced_subgraph(members.tolist())
            parts = cluster_entities(sub, run).labels
            parts = merge_small(sub, parts, cfg.leaf_min_size)
        raw[members] = parts + nxt
        nxt += int(parts.max()) + 1 if parts.size else 0
    keep = raw >= 0
    leaves = np.full(topics.size, -1, dtype=np.int64)
    leaves[keep] = renumber_by_size(raw[keep])
    parent = np.zeros(int(leaves.max()) + 1 if keep.any() else 0, dtype=np.int64)
    parent[leaves[keep]] = topics[keep]
    return leaves, parent


def quotient_graph(graph, labels, n_units: int, edges=None):
    """The graph of ``labels``' units (module docstring, step 3): an igraph Graph with
    ``n_units`` vertices, summed edge weights and self-loops."""
    import igraph as ig
    from scipy import sparse

    from .clustering import edge_arrays

    pairs, w = edge_arrays(graph) if edges is None else edges
    labels = np.asarray(labels, dtype=np.int64)
    a, b = labels[pairs[:, 0]], labels[pairs[:, 1]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    m = sparse.coo_matrix((w, (lo, hi)), shape=(n_units, n_units)).tocsr()
    m.sum_duplicates()
    coo = m.tocoo()
    out = ig.Graph(n=n_units, directed=False)
    out.add_edges(np.column_stack([coo.row, coo.col]).astype(np.int64))
    out.es["weight"] = coo.data.astype(np.float64).tolist()
    return out


def upper_levels(graph, topics, n_topics: int, cfg, edges=None) -> list:
    """The parent arrays of the levels above the topics, up to the root (module docstring,
    step 3): ``parents[i][u]`` is the level-(i + 2) unit of level-(i + 1) unit u."""
    from .clustering import cluster_entities

    parents: list = []
    labels = np.asarray(topics, dtype=np.int64)
    n = int(n_topics)
    gamma = cfg.document_resolution / 2.0
    while n > 1:
        q = quotient_graph(graph, labels, n, edges)
        merged = None
        while gamma >= MIN_GAMMA:
            run = dataclasses.replace(cfg, resolution=gamma, min_cluster_size=1)
            p = cluster_entities(q, run).labels
            gamma /= 2.0
            if int(p.max()) + 1 < n:
                merged = p
                break
        if merged is None:  # nothing merges any more: separate components under the root
            merged = np.zeros(n, dtype=np.int64)
        parents.append(merged)
        labels = merged[labels]
        n = int(merged.max()) + 1
    return parents


def _by_first_leaf(chain: list, n_leaves: int) -> tuple:
    """The parents of a tree given as ``chain`` (``chain[0]``: each leaf's unit one level up,
    ``chain[i]``: each level-i unit's unit one level up), with each level's units numbered by
    the smallest leaf they hold."""
    def renumber(units):
        first: dict = {}
        return np.array([first.setdefault(u, len(first)) for u in units.tolist()],
                        dtype=np.int64)

    below = np.arange(n_leaves, dtype=np.int64)     # each leaf's (renumbered) unit per level
    at = np.arange(n_leaves, dtype=np.int64)        # ... in the chain's own numbering
    parents = []
    for p in chain:
        at = np.asarray(p, dtype=np.int64)[at]
        above = renumber(at)
        par = np.zeros(int(below.max()) + 1, dtype=np.int64)
        par[below] = above
        parents.append(par)
        below = above
    return tuple(parents)


def document_tree(graph, topics, n_topics: int, cfg, edges=None) -> tuple:
    """``(leaves, n_leaves, tree)``: the leaves of the document map and its
    :class:`~mteb_stratified.core.stats.hierarchy.ClusterTree` (leaves, topics, coarser levels; each
    level's units numbered by the smallest leaf they hold)."""
    leaves, parent = split_topics(graph, topics, n_topics, cfg)
    n_leaves = int(parent.size)
    if n_leaves <= 1:
        return leaves, max(n_leaves, 1), ClusterTree.flat(1)
    chain = [parent] + upper_levels(graph, topics, n_topics, cfg, edges)
    # leaf -> unit maps per level, then parents numbered by the smallest leaf
    return leaves, n_leaves, ClusterTree(n_leaves, _by_first_leaf(chain, n_leaves))
