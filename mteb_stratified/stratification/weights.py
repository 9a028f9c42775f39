"""m_d(c): each corpus document's cluster mass, from a structure artifact."""

from __future__ import annotations

from ..core import ClusterWeights

__all__ = ["cluster_weights"]


def cluster_weights(artifact, doc_ids) -> ClusterWeights:
    """m_d(c) of every corpus document (documents without clustered entities get empty rows)."""
    return ClusterWeights.from_dict(artifact.doc_cluster_weights, artifact.n_clusters,
                                    doc_ids=list(doc_ids))
