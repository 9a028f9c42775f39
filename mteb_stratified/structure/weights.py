"""Document -> cluster weights and the clusters' corpus weights (our definitions, below).

* m_d(c), the **cluster mass of document d**: the specificity-weighted share of d's clustered
  entities (distinct, normalised) that belong to cluster c::

      m_d(c) = Σ_{e ∈ E(d), cl(e) = c} idf(e) / Σ_{e ∈ E(d), cl(e) ≥ 0} idf(e),
      idf(e) = ln(N / df(e))                                   (:mod:`.specificity`)

  It sums to 1 over c for every document with at least one clustered entity; a document with
  none has no weights and is reported in the artifact.
* the **stratum weight of c** (the clusters table's ``mass``): the share of all N documents
  whose own stratum, argmax_c m_d(c) (ties by the hash rule of
  :func:`mteb_stratified.core.stats.strata.argmax_rows`), is c — counted the way queries are
  assigned;
* the **membership mass of c** (``membership_mass``): Σ_d m_d(c) / N, the fractional share.
"""

from __future__ import annotations


from .specificity import idf

__all__ = ["doc_cluster_weights", "cluster_mass", "stratum_weights"]


def doc_cluster_weights(doc_entities: dict, entity_cluster: dict, doc_freq: dict | None = None,
                        n_docs: int | None = None) -> dict:
    """``{doc_id: {cluster: m_d(c)}}`` for documents with at least one clustered entity.

    ``doc_freq``/``n_docs``: the idf weights; without them every entity weighs 1.
    """
    out: dict = {}
    for doc_id in sorted(doc_entities):
        acc: dict = {}
        for name in sorted(doc_entities[doc_id]):
            c = entity_cluster.get(name, -1)
            if c >= 0:
                w = 1.0 if doc_freq is None else idf(doc_freq[name], n_docs)
                acc[c] = acc.get(c, 0.0) + w
        total = sum(acc.values())
        if total > 0:
            out[doc_id] = {c: acc[c] / total for c in sorted(acc)}
        elif acc:  # every clustered entity is in every document (idf 0): equal shares
            out[doc_id] = {c: 1.0 / len(acc) for c in sorted(acc)}
    return out


def cluster_mass(weights: dict, n_docs: int, n_clusters: int) -> dict:
    """``{cluster: Σ_d m_d(c) / n_docs}`` for clusters ``0..n_clusters-1`` (zeros included)."""
    mass = [0.0] * n_clusters
    for doc_id in sorted(weights):
        for c, w in weights[doc_id].items():
            mass[c] += w
    return {c: (mass[c] / n_docs if n_docs else 0.0) for c in range(n_clusters)}


def stratum_weights(weights: dict, doc_ids, n_clusters: int) -> tuple[dict, dict]:
    """``({cluster: share of documents whose own stratum it is}, {doc_id: its stratum})``."""
    from ..core.stats.strata import ClusterWeights

    cw = ClusterWeights.from_dict(weights, max(n_clusters, 1), doc_ids=list(doc_ids))
    primary = cw.primary()
    share = cw.primary_share()
    own = {d: int(p) for d, p in zip(cw.doc_ids, primary.tolist()) if p >= 0}
    return {c: float(share[c]) for c in range(n_clusters)}, own
