"""StratifiedNFCorpus's out-of-the-box strata: bundled query entities and the strata block."""

import pytest

from mteb_stratified.io import bundled_path, load_beir
from mteb_stratified.stratification import flat_strata_scores, stratified_summary
from mteb_stratified.stratification.bundled import (bundled_strata, load_query_entities,
                                                    query_entities_path)

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def bm25_result():
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified import evaluate

    data = load_beir(bundled_path("nfcorpus"), "test")
    run, _ = bm25_run(data.corpus, data.queries)
    return evaluate(data.qrels, run, ["nDCG@10"], missing="zero")


def test_bundled_query_entities_cover_every_test_query():
    data = load_beir(bundled_path("nfcorpus"), "test", corpus=False)
    entities = load_query_entities(query_entities_path("nfcorpus", "test"))
    assert set(entities) == set(data.qrels)
    assert sum(bool(e) for e in entities.values()) > 300


def test_bundled_query_entities_match_a_fresh_extraction():
    pytest.importorskip("spacy")
    from mteb_stratified.structure.artifact import StructureArtifact

    artifact = StructureArtifact.bundled("nfcorpus")
    data = load_beir(bundled_path("nfcorpus"), "test", corpus=False)
    stored = load_query_entities(query_entities_path("nfcorpus", "test"))
    qids = sorted(stored)[:25]
    fresh = artifact.extract_entities_batch([data.queries[q] for q in qids])
    assert [set(f) for f in fresh] == [stored[q] for q in qids]


def test_task_strata_block_equals_the_report_summary(bm25_result):
    mteb = pytest.importorskip("mteb")  # noqa: F841
    from mteb_stratified.adapters.mteb.tasks import StratifiedNFCorpus, bundled_strata_block

    block = bundled_strata_block(StratifiedNFCorpus, bm25_result, "test")
    artifact, strata = bundled_strata("nfcorpus", "test")
    m = bm25_result["nDCG@10"]
    values = {k: dict(zip(bm25_result.queries, m.values[k].tolist()))
              for k in ("expected", "min", "max", "oblivious")}
    direct = stratified_summary(values, strata, artifact, measure="nDCG@10")
    flat = flat_strata_scores(block, "nDCG@10")
    assert flat == flat_strata_scores(direct, "nDCG@10")
    assert flat["strata_pooled_ndcg_at_10_expected"] == pytest.approx(m.expected)
    assert 0 < flat["strata_msc"] < 1 and 0 < flat["strata_scc"] < 1
    low = flat["strata_post_stratified_ndcg_at_10_expected_ci_low"]
    high = flat["strata_post_stratified_ndcg_at_10_expected_ci_high"]
    assert low < flat["strata_post_stratified_ndcg_at_10_expected"] < high
    assert bundled_strata_block(StratifiedNFCorpus, bm25_result, "dev") is None


def test_bundled_soft_alignment_matches_a_fresh_computation():
    """J over concepts (the default alignment) is shipped precomputed: it equals the soft J
    computed now with the artifact's embedding model (5 queries)."""
    pytest.importorskip("sentence_transformers")
    from dataclasses import replace

    import numpy as np

    from mteb_stratified.stratification import strata_for_dataset
    from mteb_stratified.stratification.bundled import load_soft_alignment
    from mteb_stratified.structure.artifact import StructureArtifact

    artifact = StructureArtifact.bundled("nfcorpus")
    data = load_beir(bundled_path("nfcorpus"), "test")
    path = query_entities_path("nfcorpus", "test")
    stored = load_soft_alignment(path)
    entities = load_query_entities(path)
    qids = sorted(stored)[:5]
    sub = replace(data, qrels={q: data.qrels[q] for q in qids})
    fresh = strata_for_dataset(artifact, sub, alignment="soft", query_entities=entities)
    got = dict(zip(fresh.queries, fresh.alignment.tolist()))
    for q in qids:
        assert np.isclose(got[q], stored[q], atol=1e-6) or (np.isnan(got[q])
                                                            and np.isnan(stored[q]))
    _, strata = bundled_strata("nfcorpus", "test")
    _, exact = bundled_strata("nfcorpus", "test", "exact")
    assert strata.bins.alignment == tuple(artifact.bins["alignment_soft"])
    assert exact.bins.alignment == tuple(artifact.bins["alignment"])
