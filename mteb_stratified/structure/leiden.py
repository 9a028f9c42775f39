"""Leiden community detection as a scikit-learn-style estimator.

Traag, Waltman & van Eck (2019), "From Louvain to Leiden: guaranteeing well-connected
communities", Sci. Rep. 9:5233; implementation: ``leidenalg``.

Objectives: ``"modularity"`` (``RBConfigurationVertexPartition``: modularity with a resolution
γ; γ = 1 is Newman-Girvan modularity) and ``"cpm"`` (``CPMVertexPartition``, the constant Potts
model, resolution = density threshold).  Cluster ids are renumbered deterministically: by size
descending, then by smallest member index.
"""

from __future__ import annotations

import numpy as np

from ..adapters import require
from ..core.errors import InputError

__all__ = ["LeidenClustering"]

OBJECTIVES = ("modularity", "cpm")


class LeidenClustering:
    """Leiden clustering of a weighted undirected graph.

    Parameters are only stored here; :meth:`fit` does the work and returns ``self``.

    Attributes after ``fit``: ``labels_`` (int array, one cluster id per vertex, ids 0..n-1 by
    size descending), ``n_clusters_``, ``sizes_``, ``modularity_`` (Newman-Girvan modularity of
    ``labels_`` with the edge weights, γ = 1, whatever the objective), ``quality_`` (the value of
    the optimised objective).
    """

    def __init__(self, resolution: float = 1.0, objective: str = "modularity", seed: int = 0,
                 n_iterations: int = -1) -> None:
        self.resolution = resolution
        self.objective = objective
        self.seed = seed
        self.n_iterations = n_iterations

    def get_params(self) -> dict:
        return {"resolution": self.resolution, "objective": self.objective, "seed": self.seed,
                "n_iterations": self.n_iterations}

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
        la = require("leidenalg", "structure")
        graph, w = self._as_graph(X, weights)
        n = graph.vcount()
        if n == 0:
            raise InputError("the graph has no vertices", fix="extract entities first")
        kind = (la.RBConfigurationVertexPartition if self.objective == "modularity"
                else la.CPMVertexPartition)
        part = la.find_partition(graph, kind, weights=w, resolution_parameter=self.resolution,
                                 seed=int(self.seed), n_iterations=int(self.n_iterations))
        raw = np.asarray(part.membership, dtype=np.int64)
        self.quality_ = float(part.quality())
        self.labels_ = _renumber(raw)
        self.sizes_ = np.bincount(self.labels_).astype(np.int64)
        self.n_clusters_ = int(self.sizes_.size)
        if graph.ecount():
            self.modularity_ = float(graph.modularity(self.labels_.tolist(), weights=w))
        else:
            self.modularity_ = 0.0
        return self

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


def _renumber(raw: np.ndarray) -> np.ndarray:
    """Cluster ids by size descending, ties by smallest member index."""
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
