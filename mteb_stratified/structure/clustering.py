"""Step 4 of the structure pipeline: Leiden clusters of the entity graph.

Leiden (:class:`.leiden.LeidenClustering`: objective, resolution, seed, batches of whole
components above ``leiden_split_above`` vertices); clusters smaller than ``min_cluster_size``
entities are dissolved (their entities get cluster −1).  Cluster ids run by size, descending.

**Consensus** (Lancichinetti & Fortunato, *Sci. Rep.* 2, 336, 2012), with ``consensus_runs``
R > 1: Leiden runs R times with the seeds ``seed·R, …, seed·R + R − 1``, each for
``consensus_iterations`` iterations; each edge (u, v) of the graph gets its co-membership share
f_uv (the share of runs with u and v in one cluster); edges with f_uv ≥ ``consensus_threshold``
are kept with weight w_uv·f_uv (cut from the graph in C: ``subgraph_edges``), and Leiden with
``seed`` and ``n_iterations`` clusters that consensus graph.  One run's partition moves with
the seed (NFCorpus: the ARI of the document strata between two seeds was 0.55–0.65); a
consensus is steadier (the artifact's ``quality.seed_ari`` reports it for every build).

The default is R = 10 runs of 2 iterations each (``benchmarks/bench_leiden.py`` measures what
that costs against one fit of igraph's Leiden, about ten fits with the split halves).  Fewer runs
lose the stability: over 5 seeds on NFCorpus the topics agreed at ARI 0.73 for one run, 0.78
for R = 2, 0.81 for R = 4, 0.84 for R = 6 and 0.87 for R = 10 (leidenalg's ten runs before
#48: 0.87); on the overlapping planted graph of the benchmark (100k vertices) at 0.74, 0.85,
0.87 and 0.91 for R = 1, 2, 4 and 10 (docs/validity/structure.md, "Leiden at the floor").

**Split halves** (``halves=True``, R ≥ 2): the runs already made give the build's stability
without a second build.  The first ⌊R/2⌋ runs and the other ⌈R/2⌉ make two consensus graphs,
each clustered by Leiden with ``seed`` as the build's last step is (a half of one run is that
run: no fit); the ARI between the two partitions is the quality figure ``seed_ari`` (method
``split-half``).  Each half is a consensus of half as many runs, so the figure is conservative
for the R-run consensus (with R = 2 it would be the seed ARI of single runs).  The other method,
``second-build``, clusters a second consensus with the seeds of ``seed + 1`` (R more Leiden
runs): the ARI between two whole builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..core.errors import InputError
from ..core.rng import MAX_SEED

__all__ = ["EntityClusters", "cluster_entities", "consensus_graph", "edge_arrays"]


@dataclass(frozen=True)
class EntityClusters:
    """Each node's cluster (−1: dissolved) and the fitted Leiden estimator."""

    labels: np.ndarray
    n_clusters: int
    leiden: object
    halves: tuple | None = None  # the split-half partitions (module docstring), or None


def cluster_entities(graph, cfg, *, halves: bool = False, edges=None) -> EntityClusters:
    """Leiden on ``graph``, then small clusters dissolved (module docstring); ``halves``: also
    the two split-half partitions, from the consensus runs already made.  ``edges``: the
    graph's ``(pairs, weight)`` arrays (:func:`edge_arrays`) when the caller holds them, so the
    consensus graphs are built without reading the edge list back from igraph."""
    from .leiden import LeidenClustering

    def run(g, seed, iterations):
        return LeidenClustering(resolution=cfg.resolution, objective=cfg.objective, seed=seed,
                                n_iterations=iterations,
                                split_above=cfg.leiden_split_above,
                                batch_size=cfg.leiden_batch_size,
                                backend=cfg.leiden_backend).fit(g)

    runs = int(getattr(cfg, "consensus_runs", 1))
    if cfg.seed < 0 or cfg.seed * runs + runs >= 2**63:  # leidenalg takes an int64
        raise InputError(f"seed={cfg.seed} with consensus_runs={runs}: the derived seeds "
                         "seed·R + i must fit in 64 bits",
                         fix=f"choose a seed in [0, {MAX_SEED}] (the command line's range)")
    split = None
    if runs > 1 and graph.ecount():
        labelings = [run(graph, cfg.seed * runs + i, cfg.consensus_iterations).labels_
                     for i in range(runs)]
        if edges is None:
            edges = edge_arrays(graph)

        def half(part):
            if len(part) == 1:  # a consensus of one run is that run
                return _kept_labels(part[0], cfg.min_cluster_size)[0]
            g = consensus_graph(graph, part, cfg.consensus_threshold, edges=edges)
            return _kept(run(g, cfg.seed, cfg.n_iterations), cfg.min_cluster_size)[0]

        if halves:
            split = (half(labelings[:runs // 2]), half(labelings[runs // 2:]))
        graph = consensus_graph(graph, labelings, cfg.consensus_threshold, edges=edges)
    leiden = run(graph, cfg.seed, cfg.n_iterations)
    labels, n_clusters = _kept(leiden, cfg.min_cluster_size)
    return EntityClusters(labels, n_clusters, leiden, split)


def _kept(leiden, min_size: int) -> tuple[np.ndarray, int]:
    """A fitted Leiden's labels with clusters under ``min_size`` dissolved (−1), and how many
    are left (ids by size, descending)."""
    big = np.flatnonzero(leiden.sizes_ >= min_size)  # ids are by size descending
    remap = np.full(leiden.n_clusters_, -1, dtype=np.int64)
    remap[big] = np.arange(big.size)
    return remap[leiden.labels_], int(big.size)


def _kept_labels(labels: np.ndarray, min_size: int) -> tuple[np.ndarray, int]:
    """:func:`_kept` of a partition given as labels (any ids ≥ 0)."""
    from .leiden import renumber_by_size

    labels = renumber_by_size(np.unique(labels, return_inverse=True)[1].astype(np.int64))
    sizes = np.bincount(labels)
    return _kept(SimpleNamespace(sizes_=sizes, n_clusters_=int(sizes.size), labels_=labels),
                 min_size)


def edge_arrays(graph) -> tuple[np.ndarray, np.ndarray]:
    """An igraph Graph's edges as ``(pairs, weight)``: an (m, 2) int64 array in edge-id order
    and the float64 ``weight`` attribute (1 where the graph has none)."""
    pairs = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    w = np.asarray(graph.es["weight"] if "weight" in graph.es.attributes()
                   else np.ones(len(pairs)), dtype=np.float64)
    return pairs, w


def consensus_graph(graph, labelings: list, threshold: float, *, edges=None):
    """The graph's edges with co-membership share f ≥ ``threshold`` over ``labelings``, weighted
    w·f (module docstring); an igraph Graph on the same vertices, cut from ``graph`` in C
    (``subgraph_edges``).  ``edges``: the graph's :func:`edge_arrays`, in edge-id order, when
    the caller has them (no Python list of the edges is built then)."""
    pairs, w = edge_arrays(graph) if edges is None else edges
    if not (pairs.ndim == 2 and pairs.shape[1] == 2 and len(pairs) == len(w)
            == graph.ecount()):
        raise ValueError(f"edges must be (m, 2) pairs and m weights for the graph's "
                         f"m = {graph.ecount()} edges, not {pairs.shape} and {len(w)}")
    share = np.zeros(len(pairs))
    for lab in labelings:
        share += lab[pairs[:, 0]] == lab[pairs[:, 1]]
    share /= len(labelings)
    keep = np.flatnonzero(share >= threshold)
    out = graph.subgraph_edges(keep.tolist(), delete_vertices=False)
    out.es["weight"] = (w[keep] * share[keep]).tolist()
    return out
