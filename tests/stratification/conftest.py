"""Shared fixtures: the bundled NFCorpus structure, a 40-query subset and synthetic scores."""

import numpy as np
import pytest

N_QUERIES = 40


@pytest.fixture(scope="session")
def artifact():
    from mteb_stratified.structure.artifact import StructureArtifact
    return StructureArtifact.bundled("nfcorpus")


@pytest.fixture(scope="session")
def dataset():
    """NFCorpus test split (full corpus, for the fingerprint) with its first 40 judged queries."""
    from dataclasses import replace

    from mteb_stratified.io import bundled_path, load_beir
    data = load_beir(bundled_path("nfcorpus"), "test")
    keep = sorted(data.qrels)[:N_QUERIES]
    return replace(data, qrels={q: data.qrels[q] for q in keep},
                   queries={q: data.queries[q] for q in keep})


@pytest.fixture(scope="session")
def strata(artifact, dataset):
    from mteb_stratified.stratification import strata_for_dataset
    return strata_for_dataset(artifact, dataset)


def synthetic_values(qids, seed):
    """Deterministic tie-aware per-query values in [0, 1] (min ≤ expected ≤ max)."""
    rng = np.random.default_rng(seed)
    e = rng.uniform(0.05, 0.95, len(qids))
    lo = e - rng.uniform(0, 0.05, len(qids)) * (rng.random(len(qids)) < 0.3)
    hi = e + (e - lo)
    obl = np.where(rng.random(len(qids)) < 0.5, lo, hi)
    return {"expected": dict(zip(qids, e.tolist())), "min": dict(zip(qids, lo.tolist())),
            "max": dict(zip(qids, hi.tolist())), "oblivious": dict(zip(qids, obl.tolist()))}


@pytest.fixture(scope="session")
def two_systems(strata):
    qids = list(strata.queries)
    return {"A": synthetic_values(qids, 1), "B": synthetic_values(qids, 2)}


@pytest.fixture(scope="session")
def real_differences():
    """Per-query nDCG@10 (expected) of two real BM25 systems on the NFCorpus test split:
    bm25s's defaults (k1 1.5, b 0.75) against Anserini's (k1 0.9, b 0.4); their differences
    are the skewed, zero-heavy shape real paired differences have."""
    pytest.importorskip("bm25s")
    from mteb_stratified import evaluate
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io import bundled_path, load_beir

    data = load_beir(bundled_path("nfcorpus"), "test")
    values = []
    for k1, b in ((1.5, 0.75), (0.9, 0.4)):
        run, _ = bm25_run(data.corpus, data.queries, depth=100, k1=k1, b=b)
        res = evaluate(data.qrels, run, ["nDCG@10"], missing="zero")
        values.append(res["nDCG@10"].values["expected"])
    return values[0] - values[1]
