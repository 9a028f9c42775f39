"""Issue #48, part 4: a corpus embedded once is reused.  ``structure`` on an NFCorpus slice,
then ``generate`` with its default targets: the second command runs the real packaged MiniLM
on no document of the corpus.  The model's ``encode`` is wrapped with a counter (the model
itself is the real one); the embedding cache is a folder of this test, never the user's."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mteb_stratified.cli import main as cli_main

pytestmark = pytest.mark.slow


@pytest.fixture()
def counted(monkeypatch):
    """Every text the packaged MiniLM encodes, one list per ``encode`` call."""
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.sentence_model import load_sentence_model

    model = load_sentence_model(None)  # the real packaged all-MiniLM-L6-v2, loaded once
    real = model.encode
    calls: list = []

    def encode(sentences, *args, **kwargs):
        calls.append([sentences] if isinstance(sentences, str) else list(sentences))
        return real(sentences, *args, **kwargs)

    monkeypatch.setattr(model, "encode", encode)
    return calls


def _corpus_texts(folder) -> set:
    from mteb_stratified.io import load_corpus
    from mteb_stratified.io.corpus_text import doc_text
    corpus = load_corpus(folder)
    return {doc_text(corpus[d]) for d in corpus} | {doc_text(corpus[d], style="beir")
                                                   for d in corpus}


def load_ids(folder) -> list:
    from mteb_stratified.io import load_corpus
    return sorted(load_corpus(folder))


def _generate(folder, structure, out) -> int:
    return cli_main.main(["generate", "--dataset", folder, "--structure", structure, "--out",
                          str(out), "--no-progress", "--json"])


def test_generate_after_structure_embeds_no_document(tmp_path, monkeypatch, counted, capsys):
    from ._data import write_slice

    monkeypatch.setenv("MTEB_STRATIFIED_EMBEDDING_CACHE", str(tmp_path / "cache"))
    folder, structure = str(tmp_path / "beir"), str(tmp_path / "structure")
    write_slice(folder)
    docs = _corpus_texts(folder)
    assert cli_main.main(["structure", "--corpus", folder, "--out", structure, "--no-progress",
                          "--max-doc-share", "0.3", "--json"]) == 0
    embedded = [t for call in counted for t in call if t in docs]
    assert len(set(embedded)) == len(load_ids(folder)), "structure embeds every document once"
    entries = sorted(os.listdir(tmp_path / "cache"))
    assert len(entries) == 2 and entries[0].endswith(".json") and entries[1].endswith(".npy")

    counted.clear()
    assert _generate(folder, structure, tmp_path / "gen") == 0
    cov = json.load(open(tmp_path / "gen" / "coverage.json", encoding="utf-8"))
    assert cov["gate"]["panel"][:2] == ["BM25", "MiniLM"], "the gate ran its dense system"
    assert counted, "the gate embeds the real and the added queries"
    on_corpus = [t for call in counted for t in call if t in docs]
    assert on_corpus == [], f"generate embedded {len(on_corpus)} documents again"
    assert sum(len(c) for c in counted) <= cov["gate"]["added_queries"] + \
        cov["gate"]["original_queries"]
    assert sorted(os.listdir(tmp_path / "cache")) == entries  # nothing new was stored

    # with the cache off, the same command embeds the corpus: the counter sees it
    counted.clear()
    monkeypatch.setenv("MTEB_STRATIFIED_EMBEDDING_CACHE", "off")
    assert _generate(folder, structure, tmp_path / "gen-off") == 0
    assert {t for call in counted for t in call if t in docs} == \
        {t for t in docs if t in set(embedded)}
    gate = json.load(open(tmp_path / "gen-off" / "coverage.json", encoding="utf-8"))["gate"]
    assert gate["system_order"] == cov["gate"]["system_order"]  # the same embeddings
    capsys.readouterr()


def test_auto_is_recorded_next_to_what_ran(tmp_path, monkeypatch, counted):
    """``--document-embedding auto`` on a CPU without bfloat16 instructions (the flags are
    injected: this test does not depend on the machine) builds float32's map, reuses float32's
    cached embeddings, and the artifact says what was asked, what ran and why."""
    from mteb_stratified.structure import StructureArtifact, sentence_model

    from ._data import write_slice

    monkeypatch.setenv("MTEB_STRATIFIED_EMBEDDING_CACHE", str(tmp_path / "cache"))
    folder, out = str(tmp_path / "beir"), str(tmp_path / "structure")
    write_slice(folder, n_docs=60, n_queries=12, n_original=4)
    base = ["structure", "--corpus", folder, "--out", out, "--no-progress",
            "--max-doc-share", "0.3", "--bins-splits", "none", "--json"]
    assert cli_main.main(base) == 0
    art = StructureArtifact.load(out)
    assert "document_embedding_choice" not in art.metadata
    counted.clear()
    monkeypatch.setattr(sentence_model, "cpu_bf16_native", lambda cpuinfo=None: False)
    assert cli_main.main(base + ["--document-embedding", "auto"]) == 0
    art = StructureArtifact.load(out)
    choice = dict(art.metadata["document_embedding_choice"])
    assert choice["requested"] == "auto" and choice["resolved"] == "model"
    assert "no bfloat16 instructions" in choice["why"]
    assert art.metadata["parameters"]["document_embedding"] == "model"
    assert counted == []  # the same settings: the artifact itself was reused
    # and an explicit method drops the record again
    assert cli_main.main(base + ["--document-embedding", "model"]) == 0
    assert "document_embedding_choice" not in StructureArtifact.load(out).metadata
