"""Strata of the bundled NFCorpus test queries, ready without spaCy at run time.

The query entities are extracted once with the bundled structure artifact's own extractor and
normalisation (``python -m mteb_stratified.stratification.bundled`` rebuilds the file) and shipped in
``mteb_stratified/data/nfcorpus/query_entities/test.jsonl.gz``, so ``StratifiedNFCorpus``
results carry the strata block out of the box with only numpy/scipy.
"""

from __future__ import annotations

import functools
import gzip
import json
import os

from ..core import InputError, QueryStrata
from ..io import bundled_path, load_beir
from ..io.outputs import atomic_write
from .dataset import strata_for_dataset

__all__ = ["query_entities_path", "build_query_entities", "load_query_entities", "bundled_strata"]


def query_entities_path(name: str = "nfcorpus", split: str = "test") -> str:
    return os.path.join(bundled_path(name), "query_entities", f"{split}.jsonl.gz")


def build_query_entities(artifact, dataset, path: str) -> int:
    """Extract every judged query's entities with the artifact's extractor; write JSONL.gz.

    Deterministic bytes: sorted queries, sorted entities, gzip mtime 0.
    """
    qids = sorted(q for q in dataset.qrels if q in dataset.queries)
    entities = artifact.extract_entities_batch([dataset.queries[q] for q in qids])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = "".join(json.dumps({"qid": q, "entities": sorted(e)}, ensure_ascii=False) + "\n"
                    for q, e in zip(qids, entities))
    with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(lines.encode("utf-8"))
    return len(qids)


def load_query_entities(path: str) -> dict:
    """``{qid: set of entities}`` from :func:`build_query_entities`'s file."""
    if not os.path.exists(path):
        raise InputError("precomputed query entities not found", source=path,
                         fix="rebuild them: python -m mteb_stratified.stratification.bundled")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {r["qid"]: set(r["entities"]) for r in rows}


def bundled_strata(name: str = "nfcorpus", split: str = "test") -> tuple:
    """``(artifact, QueryStrata)`` of a bundled dataset's judged queries.

    Loaded once per process and handed out as copies, so a caller that changes its artifact
    (its metadata, say) changes nobody else's.
    """
    import copy

    return copy.deepcopy(_load_bundled_strata(name, split))


@functools.lru_cache(maxsize=4)
def _load_bundled_strata(name: str, split: str) -> tuple:
    from ..structure.artifact import StructureArtifact

    artifact = StructureArtifact.bundled(name)
    dataset = load_beir(bundled_path(name), split)
    strata: QueryStrata = strata_for_dataset(
        artifact, dataset, query_entities=load_query_entities(query_entities_path(name, split)))
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
