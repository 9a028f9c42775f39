"""Shared fixtures: a small NFCorpus subset and its structure artifact (built once)."""

from __future__ import annotations

import os

import pytest

N_DOCS = 60


@pytest.fixture(scope="session")
def small_corpus():
    from mteb_stratified.io import bundled_path, load_beir
    data = load_beir(bundled_path("nfcorpus"), "test")
    ids = sorted(data.corpus)[:N_DOCS]
    corpus = {d: data.corpus[d] for d in ids}
    corpus["ZZ-EMPTY-ENTITIES"] = {"title": "", "text": "We did it. It was so."}
    return corpus


@pytest.fixture(scope="session")
def small_config():
    from mteb_stratified.structure.pipeline import StructureConfig
    # the entity map: these tests check its definitions (test_documents_map.py: the other)
    return StructureConfig(min_doc_freq=2, max_doc_share=0.25, chunk_size=16,
                           clusters="entities")


@pytest.fixture(scope="session")
def built(tmp_path_factory, small_corpus, small_config):
    pytest.importorskip("spacy")
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.pipeline import BuildReport, build_structure
    out = str(tmp_path_factory.mktemp("structure") / "art")
    report = BuildReport()
    art = build_structure(small_corpus, small_config, out=out, report=report)
    return out, art, report


def files_of(folder):
    return {name: open(os.path.join(folder, name), "rb").read()
            for name in sorted(os.listdir(folder)) if not name.startswith(".")}


@pytest.fixture(scope="session")
def nfcorpus_texts():
    from mteb_stratified.io import bundled_path, load_beir
    from mteb_stratified.io.corpus_text import doc_text
    corpus = load_beir(bundled_path("nfcorpus"), "test").corpus
    return [doc_text(corpus[d]) for d in sorted(corpus)]
