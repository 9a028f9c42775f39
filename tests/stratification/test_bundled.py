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
