"""Each judged query's stratum over a corpus structure (primary cluster, Δ, J, bins).

:func:`strata_for_dataset` takes the query entities from the caller's query extractor
(:func:`~mteb_stratified.structure.query_entities.query_extractor`: the recorded kind, built
from the artifact and the user's settings, never from a path or endpoint in the artifact) (or
given, e.g. precomputed and bundled) and canonicalises the document entities;
``alignment="soft"`` matches entities by embedding (cosine ≥ τ).  Each query also carries its
lexical containment (:mod:`.lexical`), the yardstick J is reported next to.  Definitions
(ours): :mod:`mteb_stratified.core.stats.strata`.

What it reads from the structure artifact (this module owns both readers):

* :func:`cluster_weights` — m_d(c), each corpus document's cluster mass;
* :func:`corpus_bins` — the corpus' stored Δ/J cut-points (our rule: :mod:`.reference`).  An
  artifact without stored bins falls back to the fixed, corpus-independent cut-points of
  :data:`~mteb_stratified.core.DEFAULT_BINS` (for either J); its ``source`` says so;
* :data:`ALIGNMENTS` — the J variants the cut-points are stored for: ``soft`` (the default: J
  over concepts, entities matched at MiniLM cosine ≥ τ) or ``exact`` (J over entity names).
  The default was chosen on NFCorpus dev: given |rel| and lexical containment, J over concepts
  kept a partial Spearman correlation with nDCG@10 of 0.38 (BM25) and 0.38 (MiniLM), J over
  names 0.38 and 0.31 (``benchmarks/strata_validity.py``; docs/validity/strata-power.md).

The number of bins follows the number of cut-points (k cut-points, k + 1 bins); cells and level
names: :mod:`mteb_stratified.core.stats.cells`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ..core import DEFAULT_BINS, Bins, ClusterWeights, InputError, QueryStrata, stratify
from ..core.stats.strata import ExcludedQuery
from .lexical import lexical_containment

__all__ = ["strata_for_dataset", "split_origin", "gate_verdict", "GENERATED_APART",
           "cluster_weights", "corpus_bins", "ALIGNMENTS", "SOFT_TAU", "check_alignment"]

#: J variants: over concepts (soft: entities matched by embedding, cosine ≥ τ; the default) or
#: over entity names (exact).
ALIGNMENTS = ("exact", "soft")
DEFAULT_ALIGNMENT = "soft"
#: Default τ of the soft J (cosine between MiniLM entity embeddings).
SOFT_TAU = 0.8

#: the reason a generated query in a split of original queries is left out of the estimates
#: (the block reports those queries apart: ``stratified_summary``'s ``"generated"``)
GENERATED_APART = ("generated query in a split of original queries: reported apart, never "
                   "pooled into the original queries' estimates")


def cluster_weights(artifact, doc_ids) -> ClusterWeights:
    """m_d(c) of every corpus document (documents without clustered entities get empty rows)."""
    return ClusterWeights.from_dict(artifact.doc_cluster_weights, artifact.n_clusters,
                                    doc_ids=list(doc_ids))


def check_alignment(alignment: str) -> str:
    """Return ``alignment`` if it is one of :data:`ALIGNMENTS`, else raise :class:`InputError`."""
    if alignment not in ALIGNMENTS:
        raise InputError(f"unknown alignment {alignment!r}",
                         fix=f"use one of {', '.join(ALIGNMENTS)}")
    return alignment


def corpus_bins(artifact, *, alignment: str = "exact") -> Bins:
    """The corpus-fixed bins stored in the artifact, else the fixed fallback cut-points.

    ``alignment="soft"`` takes the stored soft-J cut-points (``alignment_soft``).
    """
    check_alignment(alignment)
    stored = artifact.bins
    key = "alignment" if alignment == "exact" else "alignment_soft"
    if stored and "dispersion" in stored and key in stored:
        return Bins(tuple(stored["dispersion"]), tuple(stored[key]),
                    stored.get("source", "stored"))
    if alignment == "soft" and stored:
        raise InputError("the structure artifact stores no soft-J cut-points (J over concepts, "
                         "the default alignment)",
                         fix="recompute its bins with `mteb-stratified structure --corpus ... "
                             "--out DIR` (soft cut-points are stored by default; a reference "
                             "query pool is needed), or use the exact J (--alignment exact)")
    return Bins(DEFAULT_BINS.dispersion, DEFAULT_BINS.alignment,
                "fallback (no stored bins): the fixed cut-points Δ (0.5, 0.75), J (0.25, 0.5)")


def split_origin(dataset) -> str:
    """``"original"``, unless every judged query of the split has another origin (a split that
    ``generate`` wrote): then that origin (``"generated"``)."""
    gen = dataset.generated() if hasattr(dataset, "generated") else []
    if not gen or len(gen) < len(dataset.qrels):
        return "original"
    kinds = {dataset.origins[q] for q in gen}
    return kinds.pop() if len(kinds) == 1 else "generated"


def gate_verdict(dataset) -> str | None:
    """The validity-gate verdict ``generate`` wrote next to the dataset (``coverage.json``),
    for a split whose queries are not original; None when there is none to read."""
    import json
    import os

    folder = getattr(dataset, "folder", None)
    path = os.path.join(folder, "coverage.json") if folder else None
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            verdict = (json.load(fh).get("gate") or {}).get("verdict")
    except (OSError, ValueError, AttributeError):
        return f"unreadable ({path})"
    return str(verdict)[:400] if verdict else None


def _entity_vectors(artifact, names, allowed: str | None) -> dict:
    """Embeddings of entity names with the artifact's embedding model (unit rows): the packaged
    one, or the one the user named (``allowed``), used as the artifact's entities were (its
    static embedding or the model itself)."""
    from ..structure.embed import embed_with, entity_embedding_of
    from ..structure.query_entities import embedding_model_of
    names = sorted(names)
    model = embedding_model_of(artifact, allowed)
    emb = embed_with(names, model, entity_embedding_of(artifact))
    return dict(zip(names, emb))


def strata_for_dataset(artifact, dataset, *, bins: Bins | None = None, level: float = 1,
                       check_corpus: bool = True,
                       query_entities: Mapping[str, set] | None = None,
                       alignment: str = "exact", tau: float | None = None,
                       extractor=None, embedding_model: str | None = None) -> QueryStrata:
    """Strata of every judged query of a BEIR dataset (``load_beir``) over ``artifact``.

    The corpus must be the one the artifact was built on (fingerprint check; with
    ``check_corpus=False`` the relevant documents must still be known to the structure).
    Queries without relevant documents are listed in ``excluded``, never dropped silently.
    In a split that mixes original and generated queries (``dataset.origins``, a split that
    ``generate --merge-into-split`` wrote), the generated ones are ``excluded`` with the reason
    :data:`GENERATED_APART`: estimates and tests see the original queries only, and the block
    reports the generated ones apart.  A split of generated queries only is stratified as it
    is (the block says that its queries are generated).
    ``query_entities`` (``{qid: entities}``, e.g. precomputed with the artifact's extractor and
    bundled) skips the extraction; otherwise ``extractor`` reads the queries (one
    :func:`~mteb_stratified.structure.query_entities.query_extractor` built; None: the
    artifact's recorded one, which needs no user input).
    ``alignment="soft"`` computes the soft J (entities matched by cosine ≥ ``tau`` between
    embeddings of the artifact's embedding model, loaded when it is the packaged one or the
    user's ``embedding_model``; default τ: the one stored with the bins, else 0.8) and bins it
    with the stored soft cut-points.
    """
    check_alignment(alignment)
    corpus = getattr(dataset, "corpus", None)
    if not corpus:
        raise InputError("the dataset has no corpus loaded",
                         fix="load it with load_beir(folder, split) (corpus=True)")
    if check_corpus:
        artifact.check_corpus(corpus)
    weights = cluster_weights(artifact, corpus)
    if bins is None:
        bins = corpus_bins(artifact, alignment=alignment)
    qids = [q for q in dataset.qrels if q in dataset.queries]
    generated = set(dataset.generated()) if hasattr(dataset, "generated") else set()
    apart = sorted(generated) if len(generated) < len(qids) else []
    if apart:
        qids = [q for q in qids if q not in generated]
    if query_entities is None:
        extracted = artifact.extract_entities_batch([dataset.queries[q] for q in qids],
                                                    extractor)
        query_entities = dict(zip(qids, extracted))
    missing = [q for q in qids if q not in query_entities]
    if missing:
        raise InputError(f"{len(missing)} judged queries have no entity set (e.g. {missing[:3]})",
                         fix="extract them with the artifact's extractor (extract_entities_batch)")
    query_entities = {q: {artifact.canonical(e) for e in query_entities[q]} for q in qids}
    doc_entities = artifact.canonical_doc_entities()
    qrels = {q: dataset.qrels[q] for q in qids}
    vectors = None
    if alignment == "soft":
        if tau is None:
            tau = float(artifact.bins.get("tau", SOFT_TAU))
        names = set().union(*query_entities.values()) if query_entities else set()
        for judged in qrels.values():
            for d, g in judged.items():
                if g >= level:
                    names |= doc_entities.get(d, set())
        vectors = _entity_vectors(artifact, names, embedding_model)
    strata = stratify(qrels, weights, query_entities=query_entities, doc_entities=doc_entities,
                      bins=bins, level=level, entity_vectors=vectors,
                      tau=SOFT_TAU if tau is None else tau)
    strata = strata.with_lexical(lexical_containment(dataset.queries, corpus, qrels,
                                                     strata.queries, level))
    if apart:
        strata = replace(strata, excluded=strata.excluded + tuple(
            ExcludedQuery(q, GENERATED_APART) for q in apart))
    return strata
