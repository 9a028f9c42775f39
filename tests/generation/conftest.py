"""Shared fixtures: a 160-document NFCorpus slice with 12 original test queries, its structure
(offline extractor, bins from the slice's dev queries) and a BM25 + MiniLM pooler."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def slice_paths(tmp_path_factory):
    pytest.importorskip("spacy")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("bm25s")
    from ._data import build_slice
    return build_slice(str(tmp_path_factory.mktemp("genslice")))


@pytest.fixture(scope="session")
def slice_data(slice_paths):
    from mteb_stratified.io import load_beir
    from mteb_stratified.structure import StructureArtifact
    folder, structure = slice_paths
    return load_beir(folder, "test"), StructureArtifact.load(structure)


@pytest.fixture(scope="session")
def pooler(slice_data, tmp_path_factory):
    from mteb_stratified.generation import Pooler
    data, _ = slice_data
    return Pooler(data.corpus, k_bm25=2, k_dense=2, max_pool=4,
                  cache_dir=str(tmp_path_factory.mktemp("pool")))
