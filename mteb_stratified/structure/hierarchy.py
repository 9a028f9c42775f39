"""The cluster tree of a structure: Ward's dendrogram of the clusters, cut level by level.

Each fine cluster c is a point, its **centroid** μ_c (the unit-normalised mean of its members'
embeddings: entities "name: context" for the entity map, documents for the document map),
weighted by its size n_c (members).  **Ward's minimum-variance linkage** (Ward, *JASA* 58, 1963)
merges, at every step, the two clusters whose union adds least to the within-cluster sum of
squares::

    Δ(a, b) = n_a n_b / (n_a + n_b) · ‖μ_a − μ_b‖²,   μ_ab = (n_a μ_a + n_b μ_b) / (n_a + n_b)

computed here by the nearest-neighbour chain (Murtagh, *Comput. J.* 26, 1983; Ward's
criterion is reducible, so the chain finds the same merges as the greedy algorithm, ties
aside: they go to the smaller cluster id), in O(C²·d) time and O(C·d) memory.  The merges,
sorted by Δ, are cut at K_ℓ = ⌈C / 2^ℓ⌉ units (:func:`mteb_stratified.core.stats.hierarchy
.level_sizes`), which gives nested partitions: :class:`~mteb_stratified.core.stats.hierarchy
.ClusterTree`.  A level's units are numbered by the smallest fine cluster id they hold.

Why Ward on centroids: it is defined for any map (entity or document clusters), it always
yields a full tree (a graph-based merge stops at disconnected components, and most Leiden
clusters of a k-NN entity graph have no edge to another), its merges follow meaning (the
embedding space the clusters came from), and it prefers merging small clusters, which keeps a
level's units of comparable size.
"""

from __future__ import annotations

import numpy as np

from ..core.stats.hierarchy import ClusterTree, level_sizes

__all__ = ["cluster_centroids", "ward_merges", "tree_from_merges", "cluster_tree"]

CENTROID_BLOCK = 65_536  # rows per block of cluster_centroids' float64 sums


def cluster_centroids(labels, embeddings, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """``(centroids, sizes)``: the unit-normalised mean embedding and the member count of each
    cluster ``0..n_clusters-1`` (members labelled −1 belong to none)."""
    labels = np.asarray(labels, dtype=np.int64)
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or len(emb) != len(labels):
        raise ValueError(f"{len(labels)} labels for embeddings of shape {emb.shape}: one row "
                         "per label is needed")
    keep = labels >= 0
    sizes = np.bincount(labels[keep], minlength=n_clusters).astype(np.float64)
    sums = np.zeros((n_clusters, emb.shape[1]))
    # in float64, a block of rows at a time (a whole float64 copy is 3 GB at 1M documents);
    # add.at adds the rows in order, so the sums are those of one call over all rows
    for lo in range(0, len(labels), CENTROID_BLOCK):
        part = keep[lo:lo + CENTROID_BLOCK]
        np.add.at(sums, labels[lo:lo + CENTROID_BLOCK][part],
                  np.asarray(emb[lo:lo + CENTROID_BLOCK][part], dtype=np.float64))
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0), sizes


def ward_merges(centroids, sizes) -> np.ndarray:
    """The C − 1 merges of Ward's linkage on weighted centroids (module docstring), sorted by
    their cost: rows ``(a, b, cost, size)`` with scipy's numbering (new cluster C + i)."""
    mu = np.array(centroids, dtype=np.float64)
    n = np.array(sizes, dtype=np.float64)
    C = len(n)
    if C < 2:
        return np.zeros((0, 4))
    # active clusters live in slots 0..m-1 (views, no copies): a merge writes the new cluster
    # into one slot and moves the last active slot into the other
    slot_mu = mu.copy()
    slot_n = np.where(n > 0, n, 1.0)
    slot_sq = np.einsum("ij,ij->i", slot_mu, slot_mu)
    slot_id = np.arange(C)
    where = {c: c for c in range(C)}          # cluster id -> slot
    m = C
    merges = []
    chain: list[int] = []
    nxt = C
    while m > 1:
        if not chain:
            chain.append(int(slot_id[:m].min()))
        a = chain[-1]
        i = where[a]
        na = slot_n[i]
        d2 = slot_sq[:m] + slot_sq[i] - 2.0 * (slot_mu[:m] @ slot_mu[i])
        cost = na * slot_n[:m] / (na + slot_n[:m]) * np.maximum(d2, 0.0)
        cost[i] = np.inf
        best = float(cost.min())
        ties = slot_id[:m][cost <= best]
        prev = chain[-2] if len(chain) >= 2 else None
        b = prev if prev is not None and prev in ties else int(ties.min())
        if b != prev:
            chain.append(b)
            continue
        chain.pop()
        chain.pop()
        j = where[b]
        nb = slot_n[j]
        size = na + nb
        new_mu = (na * slot_mu[i] + nb * slot_mu[j]) / size
        lo, hi = min(i, j), max(i, j)
        last = m - 1
        if hi != last:  # the last active slot moves into the freed one
            slot_mu[hi], slot_n[hi], slot_sq[hi] = slot_mu[last], slot_n[last], slot_sq[last]
            slot_id[hi] = slot_id[last]
            where[int(slot_id[hi])] = hi
        slot_mu[lo], slot_n[lo] = new_mu, size
        slot_sq[lo] = float(new_mu @ new_mu)
        slot_id[lo] = nxt
        where[nxt] = lo
        del where[a], where[b]
        m -= 1
        merges.append((min(a, b), max(a, b), best, size, nxt))
        nxt += 1
    # sort by cost (stable: the order found breaks ties) and renumber the new clusters
    order = sorted(range(len(merges)), key=lambda k: merges[k][2])
    new_id = {merges[k][4]: C + rank for rank, k in enumerate(order)}
    out = np.zeros((C - 1, 4))
    for rank, k in enumerate(order):
        a, b, cost, size, _ = merges[k]
        a, b = new_id.get(a, a), new_id.get(b, b)
        out[rank] = (min(a, b), max(a, b), cost, size)
    return out


def tree_from_merges(merges: np.ndarray, n_clusters: int) -> ClusterTree:
    """The nested partitions of the sorted merges cut at K_ℓ = ⌈C / 2^ℓ⌉ units."""
    C = int(n_clusters)
    parent = np.arange(2 * C - 1)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    partitions = []
    done = 0
    for k in level_sizes(C):
        while done < C - k:
            a, b = int(merges[done, 0]), int(merges[done, 1])
            parent[find(a)] = C + done
            parent[find(b)] = C + done
            done += 1
        roots = np.array([find(c) for c in range(C)])
        # units numbered by the smallest fine cluster they hold
        first: dict = {}
        for c, r in enumerate(roots.tolist()):
            first.setdefault(r, len(first))
        partitions.append(np.array([first[r] for r in roots.tolist()], dtype=np.int64))
    parents = []
    for lo, hi in zip(partitions, partitions[1:]):
        p = np.zeros(int(lo.max()) + 1, dtype=np.int64)
        p[lo] = hi
        parents.append(p)
    return ClusterTree(C, tuple(parents))


def cluster_tree(labels, embeddings, n_clusters: int) -> ClusterTree:
    """The cluster tree of a labelling of embedded members (module docstring)."""
    if n_clusters < 1:
        return ClusterTree.flat(1)
    centroids, sizes = cluster_centroids(labels, embeddings, n_clusters)
    return tree_from_merges(ward_merges(centroids, sizes), n_clusters)
