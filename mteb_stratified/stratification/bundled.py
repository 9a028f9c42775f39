"""Strata of the bundled NFCorpus test queries, ready without spaCy or a model at run time.

The query entities are extracted once with the bundled structure artifact's own extractor and
normalisation, and each judged query's soft J (entities matched at cosine ≥ τ between the
artifact's embedding model's name embeddings: J over concepts, the default alignment) is
computed once, and both are shipped in ``mteb_stratified/data/nfcorpus/query_entities/
test.jsonl.gz`` (``python -m mteb_stratified.stratification.bundled`` rebuilds the file), so
``StratifiedNFCorpus`` results carry the strata block out of the box with only numpy/scipy.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import math
import os

import numpy as np

from ..core import InputError, QueryStrata
from ..io import bundled_path, load_beir
from ..io.outputs import atomic_write
from .dataset import check_alignment, corpus_bins, strata_for_dataset

__all__ = ["query_entities_path", "build_query_entities", "load_query_entities",
           "load_soft_alignment", "bundled_strata"]


def query_entities_path(name: str = "nfcorpus", split: str = "test") -> str:
    return os.path.join(bundled_path(name), "query_entities", f"{split}.jsonl.gz")


def build_query_entities(artifact, dataset, path: str) -> int:
    """Extract every judged query's entities with the artifact's extractor, compute its soft J
    (:func:`strata_for_dataset` with ``alignment="soft"``), and write JSONL.gz rows
    ``{qid, entities, alignment_soft}`` (``null`` where J is N/A or the query is not
    stratified).  Deterministic bytes: sorted queries, sorted entities, gzip mtime 0.
    """
    qids = sorted(q for q in dataset.qrels if q in dataset.queries)
    texts = [dataset.queries[q] for q in qids]
    entities = dict(zip(qids, artifact.extract_entities_batch(texts)))
    soft = strata_for_dataset(artifact, dataset, check_corpus=False, alignment="soft",
                              query_entities=entities)
    j = dict(zip(soft.queries, soft.alignment.tolist()))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = "".join(json.dumps({"qid": q, "entities": sorted(entities[q]),
                                "alignment_soft": None if q not in j or math.isnan(j[q])
                                else j[q]}, ensure_ascii=False) + "\n" for q in qids)
    with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(lines.encode("utf-8"))
    return len(qids)


def _rows(path: str) -> list:
    if not os.path.exists(path):
        raise InputError("precomputed query entities not found", source=path,
                         fix="rebuild them: python -m mteb_stratified.stratification.bundled")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_query_entities(path: str) -> dict:
    """``{qid: set of entities}`` from :func:`build_query_entities`'s file."""
    return {r["qid"]: set(r["entities"]) for r in _rows(path)}


def load_soft_alignment(path: str) -> dict:
    """``{qid: soft J}`` (NaN where N/A) from :func:`build_query_entities`'s file."""
    rows = _rows(path)
    if rows and "alignment_soft" not in rows[0]:
        raise InputError("the precomputed query entities carry no soft J", source=path,
                         fix="rebuild them: python -m mteb_stratified.stratification.bundled")
    return {r["qid"]: float("nan") if r["alignment_soft"] is None else float(r["alignment_soft"])
            for r in rows}


def bundled_strata(name: str = "nfcorpus", split: str = "test",
                   alignment: str = "soft") -> tuple:
    """``(artifact, QueryStrata)`` of a bundled dataset's judged queries, with J over concepts
    (``alignment="soft"``, the default, from the precomputed values) or over names (exact).

    Loaded once per process: the artifact is read-only, so it is shared; the strata are handed
    out as copies, so a caller that changes its strata changes nobody else's.
    """
    import copy

    check_alignment(alignment)
    artifact, strata = _load_bundled_strata(name, split, alignment)
    return artifact, copy.deepcopy(strata)


@functools.lru_cache(maxsize=4)
def _load_bundled_strata(name: str, split: str, alignment: str) -> tuple:
    from ..structure.artifact import StructureArtifact

    artifact = StructureArtifact.bundled(name)
    dataset = load_beir(bundled_path(name), split)
    path = query_entities_path(name, split)
    strata: QueryStrata = strata_for_dataset(
        artifact, dataset, query_entities=load_query_entities(path),
        bins=corpus_bins(artifact, alignment=alignment))
    if alignment == "soft":
        stored = load_soft_alignment(path)
        missing = [q for q in strata.queries if q not in stored]
        if missing:
            raise InputError(f"{len(missing)} stratified queries have no precomputed soft J",
                             source=path, fix="rebuild them: python -m "
                                              "mteb_stratified.stratification.bundled")
        strata = dataclasses.replace(strata, alignment=np.array([stored[q]
                                                                 for q in strata.queries]))
    return artifact, strata


def main() -> int:  # pragma: no cover - a build step, run by hand
    from ..structure.artifact import StructureArtifact

    artifact = StructureArtifact.bundled("nfcorpus")
    dataset = load_beir(bundled_path("nfcorpus"), "test")
    n = build_query_entities(artifact, dataset, query_entities_path("nfcorpus", "test"))
    print(f"wrote {n} queries to {query_entities_path('nfcorpus', 'test')}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
