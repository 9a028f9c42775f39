"""Leiden community detection as a scikit-learn-style estimator.

Traag, Waltman & van Eck (2019), "From Louvain to Leiden: guaranteeing well-connected
communities", Sci. Rep. 9:5233; implementation: ``leidenalg``.

Objectives: ``"modularity"`` (``RBConfigurationVertexPartition``: modularity with a resolution
γ; γ = 1 is Newman-Girvan modularity) and ``"cpm"`` (``CPMVertexPartition``, the constant Potts
model, resolution = density threshold).  Cluster ids are renumbered deterministically: by size
descending, then by smallest member index.

Large graphs are clustered by connected components.  With edge weights A, strengths k_i and
total weight m = Σ_{i<j} A_ij, the modularity objective is

    Q_γ(σ) = Σ_c [ w_c − γ K_c² / (4m) ],   w_c = Σ_{i<j, σ_i=σ_j=c} A_ij,  K_c = Σ_{σ_i=c} k_i,

and CPM is Σ_c [ w_c − γ n_c(n_c − 1)/2 ].  A community that spans two components gains by
being split (the cross term −γ·2K_aK_b/(4m) < 0 goes), and Leiden only ever returns connected
communities, so the graph can be cut into batches of *whole* components and each batch b
(total weight m_b) optimised alone: with the resolution γ_b = γ·m_b/m for modularity (γ for
CPM) the batch objectives sum to the objective of the whole graph.  Above ``split_above``
vertices, components are packed, in order of their smallest vertex, into batches of at most
``batch_size`` vertices (a larger component is a batch of its own) and Leiden runs once per
batch with the same ``seed``.  This is the same objective optimised by the same algorithm; only
the vertex visiting order differs from one run over the whole graph.  It keeps each run's
working set in cache: on the planted graphs of ``benchmarks/bench_structure.py`` (communities
of ~50, 20k components at 1M vertices), ``benchmarks/leiden_node_order.py`` measures 3.3 s /
34.7 s at 100k / 1M in batches of 10k vertices against 4.5 s / 83.9 s in one run: growth
n^1.02 instead of n^1.27.  A graph that is one giant component gains nothing: it is one batch.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..core.errors import InputError

__all__ = ["LeidenClustering", "renumber_by_size"]

OBJECTIVES = ("modularity", "cpm")


class LeidenClustering:
    """Leiden clustering of a weighted undirected graph.

    Parameters are only stored here; :meth:`fit` does the work and returns ``self``.

    ``split_above``: graphs with more vertices than this are clustered in batches of whole
    connected components of at most ``batch_size`` vertices (see the module docstring); None
    never splits.

    Attributes after ``fit``: ``labels_`` (int array, one cluster id per vertex, ids 0..n-1 by
    size descending), ``n_clusters_``, ``sizes_``, ``modularity_`` (Newman-Girvan modularity of
    ``labels_`` with the edge weights, γ = 1, whatever the objective), ``quality_`` (the value of
    the optimised objective over the whole graph), ``n_batches_`` (Leiden runs: 1 unless split).
    """

    def __init__(self, resolution: float = 1.0, objective: str = "modularity", seed: int = 0,
                 n_iterations: int = -1, split_above: int | None = 50_000,
                 batch_size: int = 10_000) -> None:
        self.resolution = resolution
        self.objective = objective
        self.seed = seed
        self.n_iterations = n_iterations
        self.split_above = split_above
        self.batch_size = batch_size

    def get_params(self) -> dict:
        return {"resolution": self.resolution, "objective": self.objective, "seed": self.seed,
                "n_iterations": self.n_iterations, "split_above": self.split_above,
                "batch_size": self.batch_size}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"LeidenClustering({args})"

    @staticmethod
    def _as_graph(X, weights):
        ig = require("igraph", "structure")
        if isinstance(X, ig.Graph):
            if X.is_directed():
                raise InputError("the graph is directed", fix="pass an undirected graph")
            w = None
            if isinstance(weights, str):
                w = X.es[weights] if weights in X.es.attributes() else None
            elif weights is not None:
                w = list(weights)
            return X, w
        import scipy.sparse as sp
        if sp.issparse(X) or isinstance(X, np.ndarray):
            A = sp.coo_matrix(sp.triu(sp.csr_matrix(X), k=1))
            if A.shape[0] != A.shape[1]:
                raise InputError(f"adjacency matrix must be square, got {A.shape}",
                                 fix="pass an n x n symmetric matrix or an igraph.Graph")
            order = np.lexsort((A.col, A.row))
            g = ig.Graph(n=A.shape[0], edges=np.column_stack([A.row[order], A.col[order]]).tolist())
            return g, A.data[order].astype(np.float64).tolist()
        raise InputError(f"cannot cluster a {type(X).__name__}",
                         fix="pass an igraph.Graph or a (sparse) adjacency matrix")

    def fit(self, X, y=None, *, weights="weight") -> "LeidenClustering":
        """Cluster ``X`` (an igraph Graph or a symmetric adjacency matrix); returns ``self``."""
        if self.objective not in OBJECTIVES:
            raise InputError(f"unknown Leiden objective {self.objective!r}",
                             fix=f"choose one of: {', '.join(OBJECTIVES)}")
        if not self.resolution > 0:
            raise InputError(f"resolution must be > 0, got {self.resolution!r}",
                             fix="e.g. resolution=1.0")
        if self.split_above is not None and not self.split_above >= 0:
            raise InputError(f"split_above must be >= 0 or None, got {self.split_above!r}",
                             fix="e.g. split_above=50000, or None to never split")
        if not (isinstance(self.batch_size, (int, np.integer)) and self.batch_size >= 1):
            raise InputError(f"batch_size must be a positive integer, got {self.batch_size!r}",
                             fix="e.g. batch_size=10000")
        la = require("leidenalg", "structure")
        graph, w = self._as_graph(X, weights)
        n = graph.vcount()
        if n == 0:  # nothing to cluster: a fitted, empty partition
            self.labels_ = self.sizes_ = np.zeros(0, dtype=np.int64)
            self.n_clusters_, self.n_batches_ = 0, 0
            self.quality_ = self.modularity_ = 0.0
            return self
        kind = (la.RBConfigurationVertexPartition if self.objective == "modularity"
                else la.CPMVertexPartition)
        split = self.split_above is not None and n > self.split_above and graph.ecount() > 0
        if split and w is not None and not float(np.sum(w)) > 0:
            split = False                                 # no positive weight to rescale by
        if split:
            raw, self.quality_, self.n_batches_ = self._fit_batches(la, kind, graph, w)
        else:
            part = la.find_partition(graph, kind, weights=w, resolution_parameter=self.resolution,
                                     seed=int(self.seed), n_iterations=int(self.n_iterations))
            raw = np.asarray(part.membership, dtype=np.int64)
            self.quality_, self.n_batches_ = float(part.quality()), 1
        self.labels_ = renumber_by_size(raw)
        self.sizes_ = np.bincount(self.labels_).astype(np.int64)
        self.n_clusters_ = int(self.sizes_.size)
        if graph.ecount():
            self.modularity_ = float(graph.modularity(self.labels_.tolist(), weights=w))
        else:
            self.modularity_ = 0.0
        return self

    def _fit_batches(self, la, kind, graph, w):
        """Leiden on batches of whole connected components (see the module docstring)."""
        ig = require("igraph", "structure")
        n = graph.vcount()
        edges = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
        weight = (np.ones(edges.shape[0]) if w is None
                  else np.asarray(w, dtype=np.float64).reshape(-1))
        comp = np.asarray(graph.connected_components().membership, dtype=np.int64)
        sizes = np.bincount(comp)
        # components are numbered by their smallest vertex; pack them in that order
        first = np.full(sizes.size, n, dtype=np.int64)
        np.minimum.at(first, comp, np.arange(n))
        comp_order = np.argsort(first, kind="stable")
        batch_of_comp = np.empty(sizes.size, dtype=np.int64)
        batch, filled = 0, 0
        for c, size in zip(comp_order.tolist(), sizes[comp_order].tolist()):
            if filled and filled + size > self.batch_size:
                batch, filled = batch + 1, 0
            batch_of_comp[c] = batch
            filled += size
        n_batches = batch + 1
        node_batch = batch_of_comp[comp]
        nodes = np.argsort(node_batch, kind="stable")          # ascending within a batch
        node_bounds = np.searchsorted(node_batch[nodes], np.arange(n_batches + 1))
        edge_batch = node_batch[edges[:, 0]]
        eorder = np.argsort(edge_batch, kind="stable")
        edge_bounds = np.searchsorted(edge_batch[eorder], np.arange(n_batches + 1))
        local = np.empty(n, dtype=np.int64)
        total = float(weight.sum())
        raw = np.empty(n, dtype=np.int64)
        offset, quality = 0, 0.0
        for b in range(n_batches):
            members = nodes[node_bounds[b]:node_bounds[b + 1]]
            local[members] = np.arange(members.size)
            sel = eorder[edge_bounds[b]:edge_bounds[b + 1]]
            sub = ig.Graph(n=int(members.size), directed=False)
            sub.add_edges(local[edges[sel]])
            wb = weight[sel]
            gamma = self.resolution
            if self.objective == "modularity":
                gamma = self.resolution * float(wb.sum()) / total
            if sel.size == 0:                                  # isolated vertices only
                membership = np.arange(members.size, dtype=np.int64)
            else:
                part = la.find_partition(sub, kind, weights=wb.tolist(),
                                         resolution_parameter=gamma, seed=int(self.seed),
                                         n_iterations=int(self.n_iterations))
                membership = np.asarray(part.membership, dtype=np.int64)
                quality += float(part.quality())
            raw[members] = membership + offset
            offset += int(membership.max()) + 1
        return raw, quality, n_batches

    def fit_predict(self, X, y=None, **kw) -> np.ndarray:
        return self.fit(X, **kw).labels_

    def _check_fitted(self) -> None:
        if not hasattr(self, "labels_"):
            raise RuntimeError("This LeidenClustering instance is not fitted yet; call "
                               "fit(graph) first.")

    @property
    def n_clusters(self) -> int:
        self._check_fitted()
        return self.n_clusters_


def renumber_by_size(raw: np.ndarray) -> np.ndarray:
    """Cluster ids 0..k-1 by size descending, ties by smallest member index (``raw``: ids
    0..n-1, some possibly empty)."""
    if raw.size == 0:
        return raw
    k = int(raw.max()) + 1
    sizes = np.bincount(raw, minlength=k)
    first = np.full(k, raw.size, dtype=np.int64)
    np.minimum.at(first, raw, np.arange(raw.size))
    order = np.lexsort((first, -sizes))
    new = np.empty(k, dtype=np.int64)
    new[order] = np.arange(k)
    return new[raw]
