"""Corpus -> entities -> vocabulary -> entity graph -> Leiden clusters -> structure artifact.

:func:`build_structure` runs the named steps, each in its own module (every parameter is in
:class:`StructureConfig` and stored in the artifact metadata):

1. :mod:`.extraction` — raw entities per document (``title. text``) with an
   :class:`~.extractors.EntityExtractor`, normalised (:mod:`.normalise`: abbreviations the
   document defines, singular, lower case), checkpointed under ``OUT/.work/`` so that a rerun
   after a crash resumes;
2. :mod:`.vocabulary` — the names to cluster (document-frequency filter, corpus stop-entities,
   the generic-phrase test of :mod:`.specificity`) and their embeddings with context;
3. :mod:`.linking` — near-duplicate merge and the k-NN entity graph;
4. :mod:`.clustering` — Leiden, small clusters dissolved; the cluster tree: for the document
   map its leaves (each topic split again), topics and coarser levels (:mod:`.levels`), for
   the entity map Ward's linkage of the clusters' centroids, cut level by level
   (:mod:`.hierarchy`);
5. :mod:`.describe` — document weights m_d(c), corpus mass, each unit's terms, label and
   central titles (:mod:`.terms`), the tables and metadata.

To add an extractor: implement the protocol in :mod:`.extractors` and register it in
:mod:`.registry` (or under the ``mteb_stratified.extractors`` entry-point group).
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

from ..core.errors import InputError, InputWarning
from ..io.corpus_text import doc_text
from .artifact import ARTIFACT_FORMAT, StructureArtifact
from .embed import EMBEDDING_METHODS
from .fingerprint import corpus_fingerprint, settings_hash
from .leiden import BACKENDS as LEIDEN_BACKENDS
from .leiden import ITERATIONS_RULE, valid_iterations
from .levels import MAX_LEAF_RESOLUTION, MAX_LEAF_SIZE
from .normalise import NORMALISER_VERSION

__all__ = ["StructureConfig", "build_structure", "BuildReport", "CLUSTER_MAPS"]

#: How ``quality.seed_ari`` is measured (:mod:`.clustering`): from the two halves of the
#: consensus runs already made, or from a second build with seed + 1.
SEED_ARI_METHODS = ("split-half", "second-build")

#: What the structure clusters: the entity graph (the paper's map), or the documents.
CLUSTER_MAPS = ("entities", "documents")


def _positive(x) -> bool:
    """A finite real number > 0 (not a bool)."""
    return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and x > 0)


@dataclass(frozen=True)
class StructureConfig:
    """Every setting of the structure pipeline (all stored in the artifact)."""

    extractor: str = "offline"
    clusters: str = "documents"              # what is clustered: documents, or entities
    extractor_params: dict = field(default_factory=dict)
    embedding_model: str | None = None       # None: packaged all-MiniLM-L6-v2
    k: int = 10                              # neighbours per entity
    threshold: float = 0.6                   # τ: minimum cosine of an edge
    merge_threshold: float = 0.92            # near-duplicate merge cosine
    min_doc_freq: int = 2
    max_doc_share: float = 0.1               # stop-entity: in more than this share of docs
    min_chars: int = 3
    max_words: int = 6
    generic_max_ridf: float | None = 0.7     # generic-phrase test (None: off); .specificity
    generic_min_doc_share: float = 0.01
    entity_context: str = "description"     # embed "name: description", or "name" alone
    entity_embedding: str = "static"         # entity names: "static" (distilled) or "model"
    document_embedding: str = "model"        # documents (document map): those two, bf16 or int8
    idf_weights: bool = True                 # m_d(c) weighs entities by ln(N / df)
    objective: str = "modularity"
    resolution: float = 0.5                  # chosen on NFCorpus' corpus and dev figures
    document_resolution: float = 1.0         # Leiden resolution of the document map's topics
    leaf_resolution: float = 0.5             # each topic split again at this resolution
    leaf_min_size: int = 10                  # documents of a leaf (unless its topic has fewer)
    seed: int = 0
    n_iterations: int = 2                    # Leiden iterations of a fit (-1: until no gain)
    leiden_backend: str = "igraph"           # igraph's C community_leiden, or leidenalg
    leiden_split_above: int | None = 50_000  # larger graphs: Leiden by batches of components
    leiden_batch_size: int = 10_000          # vertices per batch of whole components
    min_cluster_size: int = 3
    consensus_runs: int = 10                 # Leiden runs whose consensus is clustered (1: one)
    consensus_iterations: int = 2            # Leiden iterations of each consensus run
    consensus_threshold: float = 0.5         # keep edges co-clustered in this share of runs
    seed_ari: str = "split-half"             # quality.seed_ari: split-half or second-build
    exact_max: int = 50_000                  # exact faiss search up to this many entities
    nprobe: int = 16
    chunk_size: int = 128                    # extraction checkpoint granularity

    def __post_init__(self):
        checks = [
            (self.k >= 1, "k must be >= 1", "e.g. k=10"),
            (-1.0 <= self.threshold <= 1.0, "threshold must be a cosine in [-1, 1]", "e.g. 0.6"),
            (0.0 < self.merge_threshold <= 1.0, "merge_threshold must be in (0, 1]", "e.g. 0.92"),
            (self.min_doc_freq >= 1, "min_doc_freq must be >= 1", "e.g. 2"),
            (0.0 < self.max_doc_share <= 1.0, "max_doc_share must be in (0, 1]", "e.g. 0.1"),
            (_positive(self.resolution), "resolution must be a number > 0", "e.g. 1.0"),
            (_positive(self.document_resolution), "document_resolution must be a number > 0",
             "e.g. 1.0"),
            (0 < self.leaf_resolution <= MAX_LEAF_RESOLUTION,
             f"leaf_resolution must be in (0, {MAX_LEAF_RESOLUTION:g}]", "e.g. 0.5"),
            (isinstance(self.leaf_min_size, int) and not isinstance(self.leaf_min_size, bool)
             and 1 <= self.leaf_min_size <= MAX_LEAF_SIZE,
             f"leaf_min_size must be an integer in [1, {MAX_LEAF_SIZE}]", "e.g. 10"),
            (self.clusters in CLUSTER_MAPS, f"unknown cluster map {self.clusters!r}",
             f"choose one of {', '.join(CLUSTER_MAPS)}"),
            (self.min_cluster_size >= 1, "min_cluster_size must be >= 1", "e.g. 3"),
            (self.consensus_runs >= 1, "consensus_runs must be >= 1", "e.g. 10"),
            (valid_iterations(self.n_iterations), f"n_iterations must be {ITERATIONS_RULE}",
             "e.g. 2"),
            (valid_iterations(self.consensus_iterations),
             f"consensus_iterations must be {ITERATIONS_RULE}", "e.g. 2"),
            (self.leiden_backend in LEIDEN_BACKENDS,
             f"unknown leiden_backend {self.leiden_backend!r}",
             f"choose one of {', '.join(LEIDEN_BACKENDS)}"),
            (0.0 < self.consensus_threshold <= 1.0, "consensus_threshold must be in (0, 1]",
             "e.g. 0.5"),
            (self.leiden_split_above is None or self.leiden_split_above >= 0,
             "leiden_split_above must be >= 0 or None", "e.g. 50000, or None to never split"),
            (self.leiden_batch_size >= 1, "leiden_batch_size must be >= 1", "e.g. 10000"),
            (self.objective in ("modularity", "cpm"), f"unknown objective {self.objective!r}",
             "choose modularity or cpm"),
            (self.entity_context in ("description", "name"),
             f"unknown entity_context {self.entity_context!r}", "choose description or name"),
            (self.entity_embedding in ("static", "model"),  # bf16, int8: measured on documents
             f"unknown entity_embedding {self.entity_embedding!r}", "choose static or model"),
            (self.document_embedding in EMBEDDING_METHODS,
             f"unknown document_embedding {self.document_embedding!r}",
             "choose static, model, bf16 or int8"),
            (self.seed_ari in SEED_ARI_METHODS, f"unknown seed_ari {self.seed_ari!r}",
             f"choose one of {', '.join(SEED_ARI_METHODS)}"),
            (0.0 <= self.generic_min_doc_share <= 1.0, "generic_min_doc_share must be in [0, 1]",
             "e.g. 0.01"),
        ]
        for ok, message, fix in checks:
            if not ok:
                raise InputError(message, fix=fix)
        for name in ("n_iterations", "consensus_iterations"):  # a numpy integer: a plain int,
            object.__setattr__(self, name, int(getattr(self, name)))  # as the JSON settings

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class BuildReport:
    """What a build did: timings (seconds) and counts; not part of the artifact.

    ``reused``: a finished artifact with the same settings was loaded, not built; ``written``:
    this build wrote the artifact (once; a reused one only when its last step made a new one).
    ``llm_plan``: what the LLM extractor was to send, worked out before it sent anything
    (:meth:`~.llm.LLMExtractor.plan` of the documents not checkpointed); ``announce``, when
    given, is called with it in words at that moment (the CLI prints it).
    """

    timings: dict = field(default_factory=dict)
    cpu_timings: dict = field(default_factory=dict)  # CPU seconds of each step, all threads
    resumed_docs: int = 0
    extracted_docs: int = 0
    reused: bool = False
    written: bool = False
    llm_plan: dict | None = None
    announce: Callable[[str], None] | None = field(default=None, repr=False, compare=False)


def _validate(corpus: dict) -> dict:
    if not corpus:
        raise InputError("the corpus is empty", fix="give a corpus with at least one document")
    texts = {doc_id: doc_text(corpus[doc_id]) for doc_id in sorted(corpus)}
    empty = [d for d, t in texts.items() if not t]
    if empty:
        raise InputError(f"{len(empty)} documents have no text (e.g. {empty[:5]})",
                         fix="remove them from the corpus or give them a title or text")
    return texts



def _warn_thin(texts: dict, vocab, n_clusters: int, cfg) -> None:
    """An :class:`InputWarning` for a structure that maps nothing: no entity passed the filters
    (a small or a non-English corpus), or one cluster holds every document."""
    n = len(texts)
    if not vocab.names:
        warnings.warn(InputWarning(
            f"no entity passed the filters in the {n} documents ({len(vocab.doc_freq)} distinct "
            f"names extracted; a name must be in at least {cfg.min_doc_freq} documents and in "
            f"at most {cfg.max_doc_share:.0%} of them): the clusters have no entity labels and "
            "the query-document entity overlap J is 0 for every query",
            fix="give a larger corpus, or lower --min-doc-freq; for a corpus that is not in "
                "English, use --extractor llm (the offline extractor reads English only)"),
            stacklevel=3)
    if n_clusters == 1:
        warnings.warn(InputWarning(
            f"the map has 1 cluster for the {n} documents: every query falls in one stratum, "
            "so stratifying by it changes nothing",
            fix="give a larger or more varied corpus, or raise --document-resolution (the "
                "document map) / --resolution (--clusters entities)"), stacklevel=3)


def _check_extracted(rows, work: str | None) -> None:
    """An InputError when the extraction failed for every document (nothing to cluster);
    ``rows`` (a dict or :class:`~.rows.CheckpointRows`) are read up to the first good one."""
    if not rows or any(not r.get("failed") for r in rows.values()):
        return
    first = next(iter(rows.values()))
    where = (f"each document's reason is in {os.path.join(work, 'extraction.jsonl')} "
             "('failed') and the answer cache" if work else "see the extractor's failures")
    raise InputError(
        f"the entity extraction failed for all {len(rows)} documents (first reason: "
        f"{str(first['failed'])[:200]}); {where}",
        fix="check that --base-url serves --model and that the model answers in JSON (an "
            "instruction-following model), then rerun with --retry-failed to ask again "
            "for the failed documents")


def _quality(texts: dict, vocab, linked, tables, cfg, docs=None, clusters=None) -> dict:
    from .describe import document_seed_stability, seed_stability
    from .quality import cluster_quality
    from .specificity import GenericTest, WordStats

    # the vocabulary's fitted test; with the filter off, the default test judges the clusters
    test = vocab.generic_test or GenericTest(WordStats.of_texts(texts[d] for d in sorted(texts)),
                                             min_doc_share=cfg.generic_min_doc_share)
    out = cluster_quality(tables.clusters, tables.entities, linked.doc_entities, texts,
                          term_counts=tables.term_counts, generic_test=test,
                          levels=tables.levels)
    out.update(seed_stability(texts, linked, tables, cfg, clusters) if docs is None
               else document_seed_stability(texts, docs, cfg))
    return out


def _tree(vocab, linked, clusters, emb):
    """The cluster tree (:mod:`.hierarchy`) from the entities' embeddings (with context, the
    ones that linked the graph)."""
    from .hierarchy import cluster_tree

    row = {n: i for i, n in enumerate(vocab.names)}
    node_emb = emb[[row[n] for n in linked.node_names]] if linked.node_names else emb[:0]
    return cluster_tree(clusters.labels, node_emb, clusters.n_clusters)


def _reusable(out: str | None, settings_key: str, retry_failed: bool):
    """The finished artifact in ``out`` when it was built with these settings (and, with
    ``retry_failed``, no document failed), else None (none there, another build, damaged)."""
    if out is None or not os.path.exists(os.path.join(out, "metadata.json")):
        return None
    try:
        old = StructureArtifact.load(out)
    except InputError as exc:  # say why it is built again (the work folder's caches are used)
        warnings.warn(InputWarning(f"the artifact there is not reused, it is built again: "
                                   f"{exc.message}", source=exc.source or out))
        return None
    failed = retry_failed and old.metadata.get("extraction_failures", {}).get("count")
    return old if old.metadata.get("settings_key") == settings_key and not failed else None


def _cluster(texts, vocab, linked, tree_emb, cfg, work, engine, timed) -> tuple:
    """``(clusters, tree, docs)``: the clusters of the chosen map (``cfg.clusters``: the
    documents' k-NN graph, with ``docs`` its document clustering, or the entity graph, ``docs``
    None) and their cluster tree; no cluster at all is an :class:`InputError`."""
    from .clustering import cluster_entities

    docs = None
    halves = cfg.seed_ari == "split-half"
    if cfg.clusters == "documents":
        from .documents import (cluster_documents, embed_documents_cached, entity_clusters,
                                read_back)
        emb, path = timed("embed_documents", embed_documents_cached, texts, cfg, work, engine)
        held = [emb]
        del emb

        def doc_emb():
            """The embeddings for the k-NN graph; after Leiden, read back from the work
            folder's cache, so they are not held while Leiden runs (kept when not cached: no
            work folder, or the static lookup)."""
            if path is None:
                return held[0]
            return held.pop() if held else read_back(path, len(texts))

        docs = timed("leiden", cluster_documents, texts, cfg, doc_emb, halves=halves)
        clusters = entity_clusters(docs, linked)
    else:
        clusters = timed("leiden", cluster_entities, linked.graph, cfg, halves=halves)
    if clusters.n_clusters < 1:
        raise InputError(
            f"no cluster of at least {cfg.min_cluster_size} entities in {len(texts)} documents "
            f"({len(vocab.names)} entities passed the filters)",
            fix="give a larger corpus, or lower --min-doc-freq / --min-cluster-size, raise "
                "--max-doc-share, or lower --threshold")
    if docs is not None:  # the leaves' tree was built with them (:mod:`.levels`)
        tree = docs.tree
        if docs.halves is not None:  # only a second build reads the embeddings again
            docs = dataclasses.replace(docs, embeddings=None)
    else:
        tree = timed("tree", _tree, vocab, linked, clusters, tree_emb)
    return clusters, tree, docs


def build_structure(corpus: dict, config: StructureConfig | None = None, *,
                    out: str | None = None, extractor=None, progress: bool = False,
                    keep_work: bool = False, name: str | None = None,
                    report: BuildReport | None = None,
                    retry_failed: bool = False, engine=None,
                    finish: Callable | None = None) -> StructureArtifact:
    """Build (and with ``out``, save) the structure artifact of ``corpus``.

    With ``out``, extraction is checkpointed under ``out/.work`` and a rerun resumes; a
    finished artifact with the same settings and corpus is loaded instead of rebuilt.
    ``retry_failed``: documents whose extraction failed are extracted again (a finished
    artifact with failures is rebuilt).  Whether the extractor answers them from its cache
    again is the extractor's setting (the LLM extractor's ``retry_failed``, which the
    ``structure`` command sets with ``--retry-failed``).

    ``engine`` runs extraction and embedding (:mod:`.engine`): this process by default, or a
    cluster (:class:`mteb_stratified.adapters.ray_engine.RayEngine`).  It never changes the
    artifact, so it is not one of its settings.

    ``finish(artifact, extractor) -> artifact``: the pipeline's last step, before the one save,
    given the built artifact and the extractor that built it; it returns the artifact to save,
    a new one when it adds something (the ``structure`` command's Δ/J bins:
    :meth:`~.artifact.StructureArtifact.with_bins`).  On a reused artifact it runs too, and the
    folder is written only when it returns a new artifact (``report.written``).
    """
    from .describe import build_metadata, describe, doc_title
    from .extraction import extract_documents
    from .extractors import EntityExtractor
    from .linking import link_entities
    from .registry import make_extractor
    from .vocabulary import build_vocabulary, embed_vocabulary

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
    settings_key = settings_hash({"cfg": cfg.to_dict(), "fp": fingerprint,
                                  "extractor": [extractor.name, extractor.version,
                                                extractor.params()]})
    old = _reusable(out, settings_key, retry_failed)
    if old is not None:
        report.reused = True
        new = old if finish is None else finish(old, extractor)  # the user's extractor
        if new is not old:
            report.written = True
            new.save(out)
        return new
    work = os.path.join(out, ".work") if out is not None else None

    def timed(step: str, fn, *args, **kwargs):
        t, cpu = time.perf_counter(), time.process_time()
        value = fn(*args, **kwargs)
        report.timings[step] = report.timings.get(step, 0.0) + time.perf_counter() - t
        report.cpu_timings[step] = report.cpu_timings.get(step, 0.0) + time.process_time() - cpu
        return value

    if engine is None:
        from .engine import LocalEngine
        engine = LocalEngine(progress=progress)
    rows = timed("extract", extract_documents, texts, extractor, cfg, work, progress, report,
                 retry_failed, engine)
    _check_extracted(rows, work)
    vocab = timed("vocabulary", build_vocabulary, texts, rows, cfg)
    emb = timed("embed", embed_vocabulary, vocab.names, dataclasses.replace(
        cfg, entity_context="name"), work, progress, None, engine)
    graph_emb = None
    if cfg.entity_context != "name":
        graph_emb = timed("embed", embed_vocabulary, vocab.names, cfg, work, progress,
                          vocab.description, engine)
    linked = timed("graph", link_entities, vocab, emb, texts, cfg, graph_emb)
    clusters, tree, docs = _cluster(texts, vocab, linked, graph_emb if graph_emb is not None
                                    else emb, cfg, work, engine, timed)
    _warn_thin(texts, vocab, clusters.n_clusters, cfg)
    titles = {d: doc_title(corpus[d], texts[d]) for d in texts}
    tables = timed("weights", describe, texts, rows, vocab, linked, clusters, cfg, tree,
                   docs, titles)
    quality = timed("quality", _quality, texts, vocab, linked, tables, cfg, docs, clusters)
    metadata = build_metadata(quality=quality, cfg=cfg, name=name, settings_key=settings_key,
                              extractor=extractor, fingerprint=fingerprint, texts=texts,
                              rows=rows, vocab=vocab, linked=linked, clusters=clusters,
                              tables=tables,
                              artifact_format=ARTIFACT_FORMAT,
                              normaliser_version=NORMALISER_VERSION, docs=docs)
    artifact = StructureArtifact(metadata, tables.entities, linked.doc_entities, tables.clusters,
                                 tables.weights, tables.levels)
    if finish is not None:
        artifact = finish(artifact, extractor)
    if out is not None:
        artifact.save(out)
        report.written = True
        if not keep_work and work is not None and os.path.isdir(work):
            shutil.rmtree(work)
    report.timings["total"] = time.perf_counter() - t0
    return artifact
