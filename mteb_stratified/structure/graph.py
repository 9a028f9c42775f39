"""The entity-similarity graph: faiss k-nearest neighbours, cosine threshold, igraph.

Each entity is joined to its ``k`` nearest neighbours whose cosine similarity is at least
``threshold`` (embeddings are L2-normalised, so inner product = cosine).  The search is exact
(``IndexFlatIP``) up to ``exact_max`` entities and approximate above (``IndexIVFFlat`` with
``nlist ~ 4 sqrt(n)`` lists, ``nprobe`` probed, k-means seeded).  Edges are undirected: the pair
``(i, j)`` keeps the larger of its two similarities, rounded to 6 decimals so that the graph, and
the Leiden run on it, do not depend on the last bits of a float sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..adapters import require

__all__ = ["KnnEdges", "knn_edges", "merge_near_duplicates", "to_igraph"]


@dataclass(frozen=True)
class KnnEdges:
    """Undirected edges ``src < dst`` with cosine ``weight``, sorted by (src, dst)."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    index: str  # "flat" or "ivf<nlist>,nprobe<p>"

    def __len__(self) -> int:
        return int(self.src.size)


def _search(emb: np.ndarray, k: int, *, exact_max: int, nprobe: int, seed: int):
    faiss = require("faiss", "structure")
    n, dim = emb.shape
    kk = min(k + 1, n)
    if n <= exact_max:
        index = faiss.IndexFlatIP(dim)
        index.add(emb)
        sims, ids = index.search(emb, kk)
        return sims, ids, "flat"
    nlist = int(max(16, min(65536, 4 * round(np.sqrt(n)))))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = int(seed)
    index.cp.niter = 10
    rng = np.random.default_rng(seed)
    n_train = min(n, 64 * nlist)
    train = emb[np.sort(rng.choice(n, size=n_train, replace=False))] if n_train < n else emb
    index.train(train)
    index.add(emb)
    index.nprobe = int(nprobe)
    sims, ids = index.search(emb, kk)
    return sims, ids, f"ivf{nlist},nprobe{nprobe}"


def knn_edges(emb: np.ndarray, *, k: int = 10, threshold: float = 0.6, exact_max: int = 50_000,
              nprobe: int = 16, seed: int = 0) -> KnnEdges:
    """The k-NN graph of the rows of ``emb`` (L2-normalised float32) above ``threshold``."""
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    n = emb.shape[0]
    if n < 2:
        e = np.zeros(0, dtype=np.int64)
        return KnnEdges(n, e, e.copy(), np.zeros(0, dtype=np.float64), "none")
    sims, ids, kind = _search(emb, k, exact_max=exact_max, nprobe=nprobe, seed=seed)
    rows = np.repeat(np.arange(n, dtype=np.int64), ids.shape[1])
    cols = ids.reshape(-1).astype(np.int64)
    w = np.round(sims.reshape(-1).astype(np.float64), 6)
    keep = (cols >= 0) & (cols != rows) & (w >= threshold)
    rows, cols, w = rows[keep], cols[keep], w[keep]
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    key = lo * n + hi
    # keep the largest weight per pair: sort by key, then weight descending
    order = np.lexsort((-w, key))
    key, lo, hi, w = key[order], lo[order], hi[order], w[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return KnnEdges(n, lo[first], hi[first], w[first], kind)


def merge_near_duplicates(edges: KnnEdges, threshold: float, rank: np.ndarray) -> np.ndarray:
    """Union entities joined by an edge of similarity >= ``threshold``.

    Returns ``canon`` with ``canon[i]`` the representative of ``i``'s group: the member with the
    smallest ``rank`` (e.g. by doc frequency descending, then name).
    """
    parent = np.arange(edges.n, dtype=np.int64)

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    strong = edges.weight >= threshold
    for a, b in zip(edges.src[strong].tolist(), edges.dst[strong].tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            if rank[ra] <= rank[rb]:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return np.array([find(i) for i in range(edges.n)], dtype=np.int64)


def to_igraph(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray):
    """An undirected weighted igraph Graph (edge attribute ``weight``)."""
    ig = require("igraph", "structure")
    g = ig.Graph(n=int(n), edges=np.column_stack([src, dst]).tolist(), directed=False)
    g.es["weight"] = np.asarray(weight, dtype=np.float64).tolist()
    return g
