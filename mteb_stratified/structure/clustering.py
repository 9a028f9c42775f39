"""Step 4 of the structure pipeline: Leiden clusters of the entity graph.

Leiden (:class:`.leiden.LeidenClustering`: objective, resolution, seed, batches of whole
components above ``leiden_split_above`` vertices); clusters smaller than ``min_cluster_size``
entities are dissolved (their entities get cluster −1).  Cluster ids run by size, descending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EntityClusters", "cluster_entities"]


@dataclass(frozen=True)
class EntityClusters:
    """Each node's cluster (−1: dissolved) and the fitted Leiden estimator."""

    labels: np.ndarray
    n_clusters: int
    leiden: object


def cluster_entities(graph, cfg) -> EntityClusters:
    """Leiden on ``graph``, then small clusters dissolved (module docstring)."""
    from .leiden import LeidenClustering

    leiden = LeidenClustering(resolution=cfg.resolution, objective=cfg.objective, seed=cfg.seed,
                              n_iterations=cfg.n_iterations, split_above=cfg.leiden_split_above,
                              batch_size=cfg.leiden_batch_size).fit(graph)
    big = np.flatnonzero(leiden.sizes_ >= cfg.min_cluster_size)  # ids are by size descending
    remap = np.full(leiden.n_clusters_, -1, dtype=np.int64)
    remap[big] = np.arange(big.size)
    return EntityClusters(remap[leiden.labels_], int(big.size), leiden)
