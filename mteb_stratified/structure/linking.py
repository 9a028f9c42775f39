"""Step 3 of the structure pipeline: merge near-duplicate names, and link the entities.

* **near-duplicate merge**: names joined by cosine ≥ ``merge_threshold`` become one entity (the
  most frequent name is canonical, then the shortest, then the first alphabetically; the others
  are kept as aliases);
* **graph**: each entity linked to its k nearest neighbours with cosine ≥ ``threshold``
  (:func:`.graph.knn_edges`; one k-NN search serves the merge and the graph), one undirected
  edge per pair with its largest weight, as an igraph Graph.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

__all__ = ["EntityGraph", "link_entities", "canonical_doc_entities"]


@dataclass(frozen=True)
class EntityGraph:
    """Canonical entities, their aliases, every document's canonical entities and the graph."""

    node_names: list       # canonical names, node order
    aliases: dict          # canonical name -> its merged aliases (sorted)
    alias_count: int       # names merged into another
    doc_entities: dict     # doc_id -> sorted canonical names (rare ones included)
    node_doc_freq: Counter  # canonical name -> documents
    lo: np.ndarray         # edge endpoints (lo < hi) and weights, one edge per pair
    hi: np.ndarray
    weight: np.ndarray
    graph: object          # igraph.Graph over the nodes
    index: str             # the k-NN search used (:func:`.graph.knn_edges`)


def link_entities(vocab, emb: np.ndarray, texts: dict, cfg,
                  graph_emb: np.ndarray | None = None) -> EntityGraph:
    """Merge near-duplicates of ``vocab.names`` and link the canonical entities.

    ``emb``: the bare names' embeddings, which decide the near-duplicate merge; ``graph_emb``:
    the embeddings with context that link the graph (None: ``emb`` serves both, with one k-NN
    search).  Two names from one sentence share their context, so context embeddings must not
    decide a merge.
    """
    from .graph import knn_edges, merge_near_duplicates, to_igraph

    names, df = vocab.names, vocab.doc_freq
    stop_set = set(vocab.stop_entities)
    if graph_emb is None:
        edges = knn_edges(emb, k=cfg.k, threshold=min(cfg.threshold, cfg.merge_threshold),
                          exact_max=cfg.exact_max, nprobe=cfg.nprobe, seed=cfg.seed)
        merge_edges = edges
    else:
        merge_edges = knn_edges(emb, k=cfg.k, threshold=cfg.merge_threshold,
                                exact_max=cfg.exact_max, nprobe=cfg.nprobe, seed=cfg.seed)
        edges = knn_edges(graph_emb, k=cfg.k, threshold=cfg.threshold,
                          exact_max=cfg.exact_max, nprobe=cfg.nprobe, seed=cfg.seed)
    rank = np.empty(len(names), dtype=np.int64)
    order = sorted(range(len(names)), key=lambda i: (-df[names[i]], len(names[i]), names[i]))
    rank[order] = np.arange(len(names))
    canon_of = merge_near_duplicates(merge_edges, cfg.merge_threshold, rank)
    canon_ids = np.unique(canon_of)  # sorted vocabulary indices of canonical names
    node_of = np.searchsorted(canon_ids, canon_of)  # vocabulary index -> node
    node_names = [names[i] for i in canon_ids]
    alias_of = {names[i]: names[canon_of[i]] for i in range(len(names)) if canon_of[i] != i}
    aliases: dict = {}
    for a in sorted(alias_of):
        aliases.setdefault(alias_of[a], []).append(a)

    # canonical doc entities (all names, rare ones included; stop-entities dropped)
    doc_entities, node_df = canonical_doc_entities(vocab.doc_names, alias_of, stop_set)

    src, dst = node_of[edges.src], node_of[edges.dst]
    keep = (edges.weight >= cfg.threshold) & (src != dst)
    lo, hi, w = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep], edges.weight[keep]
    n_nodes = len(node_names)
    key = lo * n_nodes + hi
    o = np.lexsort((-w, key))
    key, lo, hi, w = key[o], lo[o], hi[o], w[o]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    lo, hi, w = lo[first], hi[first], w[first]
    return EntityGraph(node_names, aliases, len(alias_of), doc_entities, node_df, lo, hi, w,
                       to_igraph(n_nodes, lo, hi, w), edges.index)


def canonical_doc_entities(doc_names, alias_of: dict, stop_set: set) -> tuple:
    """``(doc_entities, node_doc_freq)``: each document's distinct canonical names, sorted
    (aliases replaced by their canonical name, stop-entities dropped), as a
    :class:`~.namelists.NameLists` over the same names as ``doc_names``, and the documents of
    each canonical name (a Counter in order of first occurrence, as counting the documents one
    by one gives it).  Worked out on the codes, without a list or set per document."""
    from .namelists import NameLists

    names = doc_names.names
    code = {n: i for i, n in enumerate(names)}
    canon = np.arange(len(names), dtype=np.int64)
    for a, c in alias_of.items():
        canon[code[a]] = code[c]
    for n in stop_set:
        if n in code:
            canon[code[n]] = -1
    doc = doc_names.doc_index()
    c = canon[doc_names.codes]
    keep = c >= 0
    # names sorted, so their codes are too: unique (document, code) pairs are each
    # document's sorted distinct canonical names
    key = np.unique(doc[keep] * max(len(names), 1) + c[keep])
    pair_doc, pair_code = np.divmod(key, max(len(names), 1))
    offsets = np.zeros(len(doc_names.ids) + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_doc, minlength=len(doc_names.ids)), out=offsets[1:])
    doc_entities = NameLists(doc_names.ids, names, offsets, pair_code.astype(np.int32))
    counts = np.bincount(pair_code, minlength=len(names))
    seen, first = np.unique(pair_code, return_index=True)
    order = seen[np.argsort(first, kind="stable")]
    node_df = Counter({names[i]: n for i, n in zip(order.tolist(), counts[order].tolist())})
    return doc_entities, node_df
