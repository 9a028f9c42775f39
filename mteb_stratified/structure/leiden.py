"""Leiden community detection as a scikit-learn-style estimator.

Traag, Waltman & van Eck (2019), "From Louvain to Leiden: guaranteeing well-connected
communities", Sci. Rep. 9:5233.  Implementation (``backend``): igraph's own C
``Graph.community_leiden`` (the default), or ``leidenalg`` (``find_partition``), the same
algorithm and objective in a C++ library about 10× slower per fit on the k-NN graphs measured
in ``benchmarks/bench_leiden.py``; it is kept only to rebuild an artifact made before igraph
was the default (``structure --leiden-backend leidenalg --n-iterations -1
--consensus-iterations -1``; such an artifact's parameters record no ``leiden_backend``).
igraph draws its random numbers from the generator set by ``igraph.set_random_number_generator``;
a fit sets a ``random.Random(seed)`` there and puts igraph's default (the ``random`` module)
back when it returns, so a fit is a function of its seed.  For modularity igraph is given the
strengths as node weights, a self-loop counted twice as ``Graph.modularity`` counts it (its own
default counts it once, which merged the units of a quotient graph, whose self-loops hold each
unit's inner weight, more than modularity does); then both backends optimise one objective.

Iterations (``n_iterations``): each Leiden iteration moves vertices, refines and aggregates
until the partition is stable for that pass; 2 (igraph's and leidenalg's default) is the
default here.  −1 iterates while any pass gains anything: on a graph of 100k documents with
exact duplicates, leidenalg made 29 iterations (59.5 s) to move modularity from 0.9665 to
0.9667, where two take 5.2 s (issue #48; ``bench_leiden.py`` measures both on a
duplicate-heavy graph).

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

import random
import threading

import numpy as np

from .._optional import require
from ..core.errors import InputError

__all__ = ["LeidenClustering", "renumber_by_size", "objective_value", "BACKENDS",
           "valid_iterations", "ITERATIONS_RULE"]

OBJECTIVES = ("modularity", "cpm")

#: What a Leiden iteration count may be (the one rule: the estimator, the config and the CLI).
ITERATIONS_RULE = "a positive integer, or -1 (until an iteration gains nothing)"


def valid_iterations(x) -> bool:
    """Whether ``x`` is a Leiden iteration count (:data:`ITERATIONS_RULE`): an integer >= 1 or
    exactly -1, not a bool."""
    return (isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
            and (x >= 1 or x == -1))

#: Who runs Leiden (module docstring): igraph's C ``community_leiden``, or ``leidenalg``.
BACKENDS = ("igraph", "leidenalg")

#: Held while a fit has igraph's process-wide random generator set to its seed.
_IGRAPH_RNG = threading.Lock()


class LeidenClustering:
    """Leiden clustering of a weighted undirected graph.

    Parameters are only stored here; :meth:`fit` does the work and returns ``self``.

    ``split_above``: graphs with more vertices than this are clustered in batches of whole
    connected components of at most ``batch_size`` vertices (see the module docstring); None
    never splits.  ``n_iterations``: Leiden iterations (−1: until one gains nothing);
    ``backend``: ``"igraph"`` or ``"leidenalg"`` (module docstring).

    Attributes after ``fit``: ``labels_`` (int array, one cluster id per vertex, ids 0..n-1 by
    size descending), ``n_clusters_``, ``sizes_``, ``modularity_`` (Newman-Girvan modularity of
    ``labels_`` with the edge weights, γ = 1, whatever the objective), ``quality_`` (the value of
    the optimised objective over the whole graph, :func:`objective_value`), ``n_batches_``
    (Leiden runs: 1 unless split).
    """

    def __init__(self, resolution: float = 1.0, objective: str = "modularity", seed: int = 0,
                 n_iterations: int = 2, split_above: int | None = 50_000,
                 batch_size: int = 10_000, backend: str = "igraph") -> None:
        self.resolution = resolution
        self.objective = objective
        self.seed = seed
        self.n_iterations = n_iterations
        self.split_above = split_above
        self.batch_size = batch_size
        self.backend = backend

    def get_params(self) -> dict:
        return {"resolution": self.resolution, "objective": self.objective, "seed": self.seed,
                "n_iterations": self.n_iterations, "split_above": self.split_above,
                "batch_size": self.batch_size, "backend": self.backend}

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

    def _check(self) -> None:
        checks = [
            (self.objective in OBJECTIVES, f"unknown Leiden objective {self.objective!r}",
             f"choose one of: {', '.join(OBJECTIVES)}"),
            (self.backend in BACKENDS, f"unknown Leiden backend {self.backend!r}",
             f"choose one of: {', '.join(BACKENDS)}"),
            (isinstance(self.resolution, (int, float, np.integer, np.floating))
             and not isinstance(self.resolution, bool) and self.resolution > 0
             and np.isfinite(self.resolution),
             f"resolution must be a number > 0, got {self.resolution!r}", "e.g. resolution=1.0"),
            (isinstance(self.seed, (int, np.integer)) and not isinstance(self.seed, bool)
             and self.seed >= 0, f"seed must be an integer >= 0, got {self.seed!r}",
             "e.g. seed=0"),
            (valid_iterations(self.n_iterations),
             f"n_iterations must be {ITERATIONS_RULE}, got {self.n_iterations!r}",
             "e.g. n_iterations=2"),
            (self.split_above is None or self.split_above >= 0,
             f"split_above must be >= 0 or None, got {self.split_above!r}",
             "e.g. split_above=50000, or None to never split"),
            (isinstance(self.batch_size, (int, np.integer)) and self.batch_size >= 1,
             f"batch_size must be a positive integer, got {self.batch_size!r}",
             "e.g. batch_size=10000"),
        ]
        for ok, message, fix in checks:
            if not ok:
                raise InputError(message, fix=fix)

    def fit(self, X, y=None, *, weights="weight") -> "LeidenClustering":
        """Cluster ``X`` (an igraph Graph or a symmetric adjacency matrix); ``weights``: an
        edge attribute's name or one weight per edge (None: unweighted); returns ``self``."""
        self._check()
        if self.backend == "leidenalg":
            require("leidenalg", "structure")
        graph, w = self._as_graph(X, weights)
        n = graph.vcount()
        if n == 0:  # nothing to cluster: a fitted, empty partition
            self.labels_ = self.sizes_ = np.zeros(0, dtype=np.int64)
            self.n_clusters_, self.n_batches_ = 0, 0
            self.quality_ = self.modularity_ = 0.0
            return self
        split = self.split_above is not None and n > self.split_above and graph.ecount() > 0
        if split and w is not None and not float(np.sum(w)) > 0:
            split = False                                 # no positive weight to rescale by
        if split:
            raw, self.n_batches_ = self._fit_batches(graph, w)
        elif graph.ecount() == 0:                         # isolated vertices only
            raw, self.n_batches_ = np.arange(n, dtype=np.int64), 1
        else:
            raw, self.n_batches_ = self._run(graph, w, float(self.resolution)), 1
        self.labels_ = renumber_by_size(raw)
        self.sizes_ = np.bincount(self.labels_).astype(np.int64)
        self.n_clusters_ = int(self.sizes_.size)
        self.modularity_ = self.quality_ = 0.0
        if graph.ecount() and (w is None or float(np.sum(w)) > 0):
            self.modularity_ = float(graph.modularity(self.labels_.tolist(), weights=w))
            self.quality_ = objective_value(graph, self.labels_, w, self.objective,
                                            float(self.resolution))
        return self

    def _run(self, graph, w, gamma: float) -> np.ndarray:
        """One Leiden run on ``graph`` (every vertex in ``labels``; ids 0..k−1)."""
        seed, iterations = int(self.seed), int(self.n_iterations)
        if self.backend == "leidenalg":
            la = require("leidenalg", "structure")
            kind = (la.RBConfigurationVertexPartition if self.objective == "modularity"
                    else la.CPMVertexPartition)
            part = la.find_partition(graph, kind, weights=w, resolution_parameter=gamma,
                                     seed=seed, n_iterations=iterations)
            return np.asarray(part.membership, dtype=np.int64)
        ig = require("igraph", "structure")
        # modularity's node weights are the strengths with a self-loop counted twice, as in
        # Graph.modularity; igraph's own default counts it once, which merges the units of a
        # quotient graph (self-loops: the weight inside each unit) too eagerly
        nodes = (graph.strength(weights=w, loops=True) if self.objective == "modularity"
                 else None)
        with _IGRAPH_RNG:  # igraph's generator is process-wide: one seeded fit at a time
            ig.set_random_number_generator(random.Random(seed))
            try:
                found = graph.community_leiden(
                    objective_function="modularity" if self.objective == "modularity"
                    else "CPM", weights=w, resolution=gamma, n_iterations=iterations,
                    node_weights=nodes)
            finally:
                ig.set_random_number_generator(random)   # igraph's default generator
        return np.asarray(found.membership, dtype=np.int64)

    def _fit_batches(self, graph, w):
        """Leiden on batches of whole connected components (see the module docstring)."""
        ig = require("igraph", "structure")
        n = graph.vcount()
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
        if n_batches == 1:  # one batch is the whole graph: no subgraph to build
            return self._run(graph, w, float(self.resolution)), 1
        edges = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
        weight = (np.ones(edges.shape[0]) if w is None
                  else np.asarray(w, dtype=np.float64).reshape(-1))
        node_batch = batch_of_comp[comp]
        nodes = np.argsort(node_batch, kind="stable")          # ascending within a batch
        node_bounds = np.searchsorted(node_batch[nodes], np.arange(n_batches + 1))
        edge_batch = node_batch[edges[:, 0]]
        eorder = np.argsort(edge_batch, kind="stable")
        edge_bounds = np.searchsorted(edge_batch[eorder], np.arange(n_batches + 1))
        local = np.empty(n, dtype=np.int64)
        total = float(weight.sum())
        raw = np.empty(n, dtype=np.int64)
        offset = 0
        for b in range(n_batches):
            members = nodes[node_bounds[b]:node_bounds[b + 1]]
            local[members] = np.arange(members.size)
            sel = eorder[edge_bounds[b]:edge_bounds[b + 1]]
            sub = ig.Graph(n=int(members.size), directed=False)
            sub.add_edges(local[edges[sel]])
            wb = weight[sel]
            gamma = float(self.resolution)
            if self.objective == "modularity":
                gamma = self.resolution * float(wb.sum()) / total
            if sel.size == 0:                                  # isolated vertices only
                membership = np.arange(members.size, dtype=np.int64)
            else:
                membership = self._run(sub, wb.tolist(), gamma)
            raw[members] = membership + offset
            offset += int(membership.max()) + 1
        return raw, n_batches

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


def objective_value(graph, labels: np.ndarray, weights, objective: str,
                    resolution: float) -> float:
    """The Leiden objective of ``labels`` over the whole graph, on leidenalg's scale (a sum over
    ordered pairs of vertices, so twice the module docstring's): ``Σ_c [2w_c − γ K_c²/(2m)]``
    for modularity, ``Σ_c [2w_c − γ n_c(n_c − 1)]`` for CPM (a graph without self-loops).

    From igraph's C modularity Q_γ = (1/m) Σ_c [w_c − γ K_c²/(4m)] (a self-loop counts
    once in w_c and twice in K_c): the modularity objective is 2m·Q_γ and Σ_c w_c = m·Q_0."""
    lab = np.asarray(labels, dtype=np.int64).tolist()
    m = float(np.sum(weights)) if weights is not None else float(graph.ecount())
    if objective == "modularity":
        return 2.0 * m * float(graph.modularity(lab, weights=weights, resolution=resolution))
    inside = m * float(graph.modularity(lab, weights=weights, resolution=0.0))
    sizes = np.bincount(np.asarray(labels, dtype=np.int64)).astype(np.float64)
    return 2.0 * inside - resolution * float(np.sum(sizes * (sizes - 1.0)))


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
