"""The structure's document embeddings in the user's embedding cache
(mteb_stratified/io/embedding_cache.py): the key's model identity and recipe, the k-NN graph and
the tree reading the same bits, and ``--document-embedding auto``'s choice (CPU flags injected,
never this machine's)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mteb_stratified.structure.embed import (corpus_key, model_identity,
                                             resolve_document_embedding)

TEXTS = {"d1": "Vitamin D and bone density in older adults.",
         "d2": "Statins lower cholesterol.", "d3": "Coffee intake and sleep quality.",
         "d4": "Breast cancer screening by mammography."}


class CountingEngine:
    """The local engine, counting its calls (the model is the real packaged MiniLM)."""

    def __init__(self):
        from mteb_stratified.structure.engine import LocalEngine
        self.inner, self.calls = LocalEngine(), 0

    def embed(self, inputs, model, batch_size, **kwargs):
        self.calls += 1
        return self.inner.embed(inputs, model, batch_size, **kwargs)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("MTEB_STRATIFIED_EMBEDDING_CACHE", str(folder))
    return folder


def test_a_build_embeds_once_and_reads_back_the_same_bits(cache, tmp_path):
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.documents import embed_documents_cached, read_back
    from mteb_stratified.structure.pipeline import StructureConfig

    cfg, work = StructureConfig(), str(tmp_path / "work")
    engine = CountingEngine()
    emb, path = embed_documents_cached(TEXTS, cfg, work, engine)
    assert engine.calls == 1 and os.path.dirname(path) == str(cache)
    assert not os.path.exists(work)  # the work folder holds no second copy
    assert np.array_equal(read_back(path, len(TEXTS)), emb)  # what the tree reads
    again, path2 = embed_documents_cached(TEXTS, cfg, str(tmp_path / "w2"), engine)
    assert engine.calls == 1 and path2 == path and np.array_equal(again, emb)
    # another precision is another entry, computed (never float32's rows)
    other, path3 = embed_documents_cached(TEXTS, StructureConfig(document_embedding="int8"),
                                          work, engine)
    assert engine.calls == 2 and path3 != path and not np.array_equal(other, emb)
    # the generate gate's corpus embeddings are the same entry
    from mteb_stratified.generation.pool import corpus_embeddings
    corpus = {d: {"title": "", "text": t} for d, t in TEXTS.items()}
    assert np.array_equal(corpus_embeddings(corpus, sorted(corpus), None, None), emb)
    assert len(os.listdir(cache)) == 4


def test_with_the_cache_off_the_work_folder_keeps_them(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.documents import embed_documents_cached
    from mteb_stratified.structure.pipeline import StructureConfig

    monkeypatch.setenv("MTEB_STRATIFIED_EMBEDDING_CACHE", "off")
    work = str(tmp_path / "work")
    _, path = embed_documents_cached(TEXTS, StructureConfig(), work, CountingEngine())
    assert os.path.dirname(path) == work and os.path.basename(path).startswith("doc-embeddings-")


def _model_folder(root, weights: bytes):
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "config.json"), "w") as fh:
        fh.write('{"hidden_size": 8}')
    with open(os.path.join(root, "model.safetensors"), "wb") as fh:
        fh.write(weights)
    return str(root)


def test_the_model_identity_follows_the_weights_not_the_folder(tmp_path):
    a = model_identity(_model_folder(tmp_path / "a", b"weights-1"))
    b = model_identity(_model_folder(tmp_path / "b", b"weights-1"))
    c = model_identity(_model_folder(tmp_path / "c", b"weights-2"))
    assert a["files_sha256"] == b["files_sha256"] != c["files_sha256"]
    assert a["path"] != b["path"]
    ka = corpus_key(["x"], str(tmp_path / "a"), "float32")
    kb = corpus_key(["x"], str(tmp_path / "b"), "float32")
    kc = corpus_key(["x"], str(tmp_path / "c"), "float32")
    assert ka.digest() == kb.digest() != kc.digest()
    assert kc.differences(ka.to_dict())[0].startswith("another model")
    k16 = corpus_key(["x"], str(tmp_path / "a"), "bf16")
    k8 = corpus_key(["x"], str(tmp_path / "a"), "int8")
    assert len({ka.digest(), k16.digest(), k8.digest()}) == 3
    assert k8.recipe["batch_size"] == 16 and ka.recipe["batch_size"] == 64
    assert corpus_key(["x"], str(tmp_path / "a"), "float32", device="cuda").digest() != \
        ka.digest()
    # a hub name with no local snapshot has no known weights: it is not cached
    assert model_identity("no-such-org/no-such-model") is None


def _cpuinfo(tmp_path, flags: str) -> str:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\n")
    return str(path)


@pytest.mark.parametrize("flags, method", [
    ("fpu sse2 avx2 fma", "model"),
    ("fpu avx2 avx512f avx512_bf16", "bf16"),
    ("fpu avx2 avx512f amx_bf16 amx_tile", "bf16"),
    ("fpu avx2 avx512f avx512_vnni", "model"),  # AVX-512 without BF16: converted, slow
])
def test_auto_picks_bf16_only_with_bfloat16_instructions(tmp_path, flags, method):
    got, why = resolve_document_embedding("auto", cpuinfo=_cpuinfo(tmp_path, flags))
    assert got == method and why.startswith("auto: ")


def test_auto_on_a_gpu_or_an_unknown_cpu(tmp_path):
    assert resolve_document_embedding("auto", device="cuda")[0] == "bf16"
    got, why = resolve_document_embedding("auto", cpuinfo=str(tmp_path / "missing"))
    assert got == "model" and "cannot be read" in why
    for method in ("static", "model", "bf16", "int8"):
        assert resolve_document_embedding(method, cpuinfo=str(tmp_path / "x"))[0] == method
