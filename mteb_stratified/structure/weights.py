"""Document -> cluster weights and cluster corpus mass (our definitions, below).

* m_d(c), the **cluster mass of document d**: the share of d's clustered entities (distinct,
  normalised) that belong to cluster c.  It sums to 1 over c for every document with at least one
  clustered entity; a document with none has no weights and is reported in the artifact.
* **corpus mass of c**: Σ_d m_d(c) / |D|, with |D| all documents of the corpus, so the masses
  sum to the share of documents that have weights (at most 1).
"""

from __future__ import annotations

__all__ = ["doc_cluster_weights", "cluster_mass"]


def doc_cluster_weights(doc_entities: dict, entity_cluster: dict) -> dict:
    """``{doc_id: {cluster: m_d(c)}}`` for documents with at least one clustered entity."""
    out: dict = {}
    for doc_id in sorted(doc_entities):
        counts: dict = {}
        for name in sorted(doc_entities[doc_id]):
            c = entity_cluster.get(name, -1)
            if c >= 0:
                counts[c] = counts.get(c, 0) + 1
        total = sum(counts.values())
        if total:
            out[doc_id] = {c: counts[c] / total for c in sorted(counts)}
    return out


def cluster_mass(weights: dict, n_docs: int, n_clusters: int) -> dict:
    """``{cluster: Σ_d m_d(c) / n_docs}`` for clusters ``0..n_clusters-1`` (zeros included)."""
    mass = [0.0] * n_clusters
    for doc_id in sorted(weights):
        for c, w in weights[doc_id].items():
            mass[c] += w
    return {c: (mass[c] / n_docs if n_docs else 0.0) for c in range(n_clusters)}
