"""The document map (``structure --clusters documents``): clusters of documents, not entities.

Each document (``title. text``) is embedded with the structure's embedding model (the packaged
all-MiniLM-L6-v2 by default; cached in the user's embedding cache, which every command that
embeds a corpus shares: :mod:`mteb_stratified.io.embedding_cache`), linked to its ``k``
nearest documents (exact cosine; a neighbour at negative cosine is no link: Leiden takes no
negative weight), and the graph is clustered by the same consensus Leiden as the entity map
(:mod:`.clustering`) at ``document_resolution`` into **topics**; each topic is split again
into **leaves**, the artifact's clusters, and the topics are merged into coarser levels
(:mod:`.levels`: the cluster tree).  No document is left out, so every document has a
stratum.  Then, with the same tables as the entity map:

* m_d(c) = 1 for the document's own leaf (a document is in one cluster);
* an entity's cluster is the one holding most of the documents it occurs in (ties by the hash
  rule of :func:`mteb_stratified.core.stats.strata.argmax_rows`): the clusters' top entities, labels
  and NPMI come from it, J and Δ are computed as for the entity map;

Measured against the entity map on NFCorpus dev (power of the strata tests and coherence):
docs/validity/strata-power.md.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from .fingerprint import settings_hash

__all__ = ["DocumentClusters", "embed_documents", "embed_documents_cached", "read_back",
           "cluster_documents", "entity_clusters"]


@dataclass(frozen=True)
class DocumentClusters:
    """Each document's cluster (``doc_ids`` sorted), the embeddings and the fitted Leiden."""

    doc_ids: list
    labels: np.ndarray
    n_clusters: int
    embeddings: np.ndarray | None  # None once the pipeline has built the tree (split halves)
    leiden: object
    halves: tuple | None = None  # split-half partitions of the topics (:mod:`.clustering`)
    tree: object = None          # the ClusterTree of the leaves (:mod:`.levels`)
    topics: np.ndarray | None = None  # each document's topic (the tree's level 1)
    n_topics: int = 0


def embed_documents(texts: dict, cfg, work: str | None, engine) -> np.ndarray:
    """Unit embeddings of every document text (sorted ids), cached in ``work``."""
    return embed_documents_cached(texts, cfg, work, engine)[0]


def embed_documents_cached(texts: dict, cfg, work: str | None, engine) -> tuple:
    """``(embeddings, path)``: :func:`embed_documents` and the file that holds them, for
    :func:`read_back`: the user's embedding cache entry (:func:`.embed.embed_corpus`: reused
    by every command that embeds the same texts with the same model and precision), or, with
    that cache off, a file in ``work`` (None: not cached, with no work folder or for the
    static lookup)."""
    from .embed import DOCUMENT_BATCH, INT8_BATCH, PRECISIONS, embed_corpus

    ids = sorted(texts)
    inputs = [texts[d] for d in ids]
    if cfg.document_embedding == "static":  # a lookup: no engine, no cache
        from .embed import embed_with
        return embed_with(inputs, cfg.embedding_model, "static"), None
    precision = PRECISIONS[cfg.document_embedding]
    batch = INT8_BATCH if precision == "int8" else DOCUMENT_BATCH
    # float32's key is the one written before the other precisions: existing caches stay valid
    extra = {} if precision == "float32" else {precision: True, "batch": batch}
    key = settings_hash({"model": cfg.embedding_model, "documents": inputs, **extra})
    path = os.path.join(work, f"doc-embeddings-{key}.npy") if work is not None else None
    # the precision is passed only when it is not float32, so an engine that takes no keyword
    # (written before int8) keeps working for float32
    kwargs = {} if precision == "float32" else {"precision": precision}
    return embed_corpus(inputs, cfg.embedding_model, precision, fallback=path,
                        device=getattr(engine, "embed_device", "cpu"),
                        compute=lambda: engine.embed(inputs, cfg.embedding_model, batch,
                                                     **kwargs))


def read_back(path: str, n_docs: int) -> np.ndarray:
    """The document embeddings this build cached at ``path``, read again (after Leiden).

    Never computed again: a second embedding could differ from the one the k-NN graph was
    built from (a GPU's bits), so a file that went missing is an :class:`InputError`."""
    from ..core.errors import InputError

    fix = ("leave the work folder and the embedding cache alone while the build runs, and run "
           "the command again (the extraction checkpoint is kept)")
    try:
        emb = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: the document embeddings this build wrote cannot be read back "
                         f"({type(exc).__name__}: {exc})", fix=fix) from None
    if emb.ndim != 2 or emb.shape[0] != n_docs:
        raise InputError(f"{path}: holds {emb.shape} embeddings, not {n_docs} rows", fix=fix)
    return emb


def cluster_documents(texts: dict, cfg, emb, *, seed: int | None = None,
                      halves: bool = False):
    """Consensus Leiden of the documents' k-NN graph (module docstring); ``halves``: with the
    split-half partitions of :func:`.clustering.cluster_entities`.

    ``emb``: the embeddings, or a function that gives them.  A function is called for the
    k-NN graph and again after Leiden, so nothing here holds them while Leiden runs (the
    pipeline reads them back from the file :func:`embed_documents_cached` gave: 1.5 GB at 1M
    documents)."""
    from .clustering import cluster_entities
    from .graph import knn_edges, to_igraph
    from .levels import document_tree

    load = emb if callable(emb) else (lambda: emb)
    ids = sorted(texts)
    edges = knn_edges(np.ascontiguousarray(load(), dtype=np.float32), k=cfg.k, threshold=0.0,
                      exact_max=cfg.exact_max, nprobe=cfg.nprobe, seed=cfg.seed)
    graph = to_igraph(len(ids), edges.src, edges.dst, edges.weight)
    arrays = None  # the consensus graphs' input, without igraph's Python edge list
    if cfg.consensus_runs > 1:
        arrays = (np.column_stack([edges.src, edges.dst]).astype(np.int64, copy=False),
                  np.asarray(edges.weight, dtype=np.float64))
    del edges
    run = dataclasses.replace(cfg, resolution=cfg.document_resolution, min_cluster_size=1,
                              seed=cfg.seed if seed is None else seed)
    topics = cluster_entities(graph, run, halves=halves, edges=arrays)
    leaves, n_leaves, tree = document_tree(graph, topics.labels, topics.n_clusters, run,
                                           edges=arrays)
    del graph, arrays  # before the embeddings come back
    return DocumentClusters(ids, leaves, n_leaves, load(), topics.leiden, topics.halves, tree,
                            topics.labels, topics.n_clusters)


def entity_clusters(docs: DocumentClusters, linked):
    """An :class:`~.clustering.EntityClusters` of the entities: each node in the cluster that
    holds most of its documents (module docstring), the documents' Leiden as its estimator."""
    from scipy import sparse

    from ..core.stats.strata import argmax_rows
    from .clustering import EntityClusters

    node = {n: i for i, n in enumerate(linked.node_names)}
    doc_cluster = dict(zip(docs.doc_ids, docs.labels.tolist()))
    rows, cols = [], []
    for d in docs.doc_ids:
        c = doc_cluster[d]
        for name in linked.doc_entities.get(d, ()):
            i = node.get(name)
            if i is not None and c >= 0:
                rows.append(i)
                cols.append(c)
    counts = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)),
                               shape=(len(linked.node_names), max(docs.n_clusters, 1)))
    counts.sum_duplicates()
    labels = argmax_rows(counts, linked.node_names)
    return EntityClusters(labels, docs.n_clusters, docs.leiden)
