"""The artifact is read-only data; the extractor of queries is built from (artifact, the user's
inputs) by the code that needs it (structure.query_entities)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.structure import (QueryReader, StructureArtifact, embedding_model_of,
                                       query_extractor)
from mteb_stratified.structure.extractors import Entity, SpacyNounChunkExtractor
from mteb_stratified.structure.query_entities import recorded_extractor


@pytest.fixture(scope="module")
def bundled():
    return StructureArtifact.bundled("nfcorpus")


def _llm_built(art, **extractor) -> StructureArtifact:
    """``art`` as if an LLM had extracted its entities (its recorded endpoint: theirs)."""
    meta = json.loads(json.dumps(art.metadata))
    meta["extractor"] = {"kind": "llm", "name": "llm-openai-compatible",
                         "params": {"model": "their-model", "max_tokens": 512},
                         "init_params": {"base_url": "http://their.host/v1",
                                         "model": "their-model"}, **extractor}
    return StructureArtifact(meta, art.entities, art.doc_entities, art.clusters,
                             art.doc_cluster_weights, art.cluster_levels)


class Fixed:
    """An extractor that finds the same entities in every text."""

    name, version = "fixed", "1"

    def __init__(self, *names):
        self.names = names
        self.calls = 0

    def params(self):
        return {}

    def extract(self, texts):
        self.calls += 1
        return [[Entity(n, "") for n in self.names] for _ in texts]


def test_the_artifact_cannot_be_changed(bundled):
    for gone in ("set_extractor", "use_endpoint", "allow_embedding_model", "query_extractor",
                 "embedding_model"):
        assert not hasattr(bundled, gone), gone
    with pytest.raises(TypeError, match="read-only"):
        bundled.metadata["bins"] = {}
    with pytest.raises(TypeError, match="read-only"):
        bundled.metadata["parameters"]["min_doc_freq"] = 1
    with pytest.raises(TypeError, match="read-only"):
        bundled.metadata["bins"]["dispersion"].append(0.9)
    with pytest.raises(TypeError, match="read-only"):
        bundled.entities.append({"name": "x", "cluster": 0})
    with pytest.raises(TypeError, match="read-only"):
        bundled.doc_cluster_weights.clear()
    with pytest.raises(AttributeError, match="read-only"):
        bundled.metadata = {}
    with pytest.raises(AttributeError, match="read-only"):
        del bundled.clusters
    assert isinstance(next(iter(bundled.doc_entities.values())), frozenset)


def test_with_bins_is_a_new_artifact(bundled, tmp_path):
    stored = bundled.bins
    new = bundled.with_bins({"dispersion": [0.1, 0.2], "alignment": [0.3, 0.4]})
    assert new is not bundled and bundled.bins == stored
    assert new.bins == {"dispersion": [0.1, 0.2], "alignment": [0.3, 0.4]}
    assert new.entities is bundled.entities and new.source == bundled.source
    assert "bins" not in bundled.with_bins(None).metadata
    # a copy, a pickle and a saved folder hold the same read-only data
    for twin in (copy.deepcopy(new), pickle.loads(pickle.dumps(new)),
                 StructureArtifact.load(new.save(str(tmp_path / "a")))):
        assert twin.metadata == new.metadata and twin.entities == new.entities
        with pytest.raises(TypeError):
            twin.metadata["bins"] = {}
    assert json.load(open(tmp_path / "a" / "metadata.json"))["bins"] == new.bins


def test_query_extractor_builds_the_recorded_kind(bundled):
    ex = query_extractor(bundled)
    assert isinstance(ex, SpacyNounChunkExtractor)
    assert ex.params() == query_extractor(bundled).params()
    assert recorded_extractor(bundled) is recorded_extractor(bundled)  # built once
    query = "Do statins cause muscle pain (myalgia)?"
    assert bundled.extract_entities(query, ex) == bundled.extract_entities(query)
    assert embedding_model_of(bundled) is None  # the packaged model


def test_a_given_extractor_reads_the_queries(bundled):
    fixed = Fixed("Vitamin D", "the Statins")
    assert bundled.extract_entities_batch(["a", "b"], fixed) == [{"vitamin d", "statin"}] * 2
    reader = QueryReader(bundled, fixed)
    assert reader.extract_entities("anything") == {"vitamin d", "statin"}
    assert reader.metadata is bundled.metadata and reader.n_clusters == bundled.n_clusters
    assert reader.canonical_doc_entities() is bundled.canonical_doc_entities()
    with pytest.raises(AttributeError, match="read-only"):
        reader.extractor = None


def test_an_llm_built_artifact_needs_the_users_endpoint(bundled, monkeypatch):
    pytest.importorskip("openai")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    art = _llm_built(bundled)
    for endpoint in (None, {}, {"model": "mine"}):
        with pytest.raises(InputError, match="LLM endpoint of your own"):
            query_extractor(art, endpoint)
    with pytest.raises(InputError, match="LLM endpoint of your own"):
        art.extract_entities("vitamin d")  # no extractor given: nothing recorded is used
    notes = []
    ex = query_extractor(art, {"model": "mine", "api_key": "k",
                               "base_url": "http://127.0.0.1:9/v1"}, notify=notes.append)
    assert (ex.model, ex.base_url) == ("mine", "http://127.0.0.1:9/v1")
    assert notes == ["note: the artifact's entities were extracted by model 'their-model' at "
                     "http://their.host/v1 (recorded, not contacted); the query entities now "
                     "come from a different extractor: model 'mine' at http://127.0.0.1:9/v1"]
    # unset settings come from the user's environment, read by llm.endpoint alone
    monkeypatch.setenv("OPENAI_MODEL", "their-model")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://their.host/v1/")
    notes.clear()
    ex = query_extractor(art, {}, notify=notes.append)
    assert (ex.model, ex.base_url) == ("their-model", "http://their.host/v1/") and notes == []


def test_resolve_settings_is_the_one_reader_of_the_environment(monkeypatch):
    from mteb_stratified.llm import resolve_settings
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert resolve_settings() == (None, None, None)
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert resolve_settings() == (None, "env-model", "env-key")
    assert resolve_settings("http://h", "m", "k") == ("http://h", "m", "k")
