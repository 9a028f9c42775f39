"""The sentence model the structure embeds with (structure/sentence_model.py), and its int8 form:
which layers are quantised and how, how close its embeddings stay to the float32 model's on
real NFCorpus abstracts, that it is deterministic, and where its embeddings are cached."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

N_DOCS = 60


@pytest.fixture(scope="module")
def texts():
    from mteb_stratified.io import bundled_path, load_beir
    from mteb_stratified.io.corpus_text import doc_text
    data = load_beir(bundled_path("nfcorpus"), "test")
    return [doc_text(data.corpus[d]) for d in sorted(data.corpus)[:N_DOCS]]


@pytest.fixture(scope="module")
def both(texts):
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.embed import embed_with
    return embed_with(texts, None, "model"), embed_with(texts, None, "int8")


def test_int8_quantises_every_linear_layer_per_channel_and_nothing_else():
    import torch
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    from mteb_stratified.structure.sentence_model import load_sentence_model
    fp32, int8 = load_sentence_model(None), load_sentence_model(None, int8=True)
    assert int8 is not fp32 and load_sentence_model(None, int8=True) is int8  # loaded once
    linear = {n: m for n, m in fp32.named_modules() if isinstance(m, torch.nn.Linear)}
    quant = {n: m for n, m in int8.named_modules() if isinstance(m, QLinear)}
    assert len(linear) == 37 and set(quant) == set(linear)  # 6 layers x 6, and the pooler
    assert not any(type(m) is torch.nn.Linear for m in int8.modules())
    for name, q in quant.items():
        w = q.weight()
        assert w.dtype == torch.qint8 and w.qscheme() == torch.per_channel_affine
        assert w.q_per_channel_scales().shape == (linear[name].out_features,)
        # the int8 weight is the float32 one to within half a step of its row's scale
        err = (w.dequantize() - linear[name].weight.detach()).abs().max(dim=1).values
        assert (err <= w.q_per_channel_scales() * 0.5 * (1 + 1e-4)).all()  # float32 rounding
    # what is not a linear layer is the float32 model's own
    emb = dict(fp32.named_parameters())
    for name, p in int8.named_parameters():
        assert torch.equal(p, emb[name]), name


def test_int8_embeddings_stay_close_to_the_float32_ones(both):
    """On 60 real abstracts: cosine to the float32 embedding 0.985 on average when written (min
    0.977, 9.4 of 10 nearest neighbours kept); not equal, so the
    quantised model is what ran."""
    fp32, int8 = both
    assert fp32.shape == int8.shape and fp32.dtype == int8.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cos = (fp32 * int8).sum(1)
    assert cos.mean() > 0.97 and cos.min() > 0.93
    assert not np.allclose(fp32, int8, atol=1e-3)

    def knn(e):
        s = e @ e.T
        np.fill_diagonal(s, -np.inf)
        return np.argsort(-s, axis=1)[:, :10]
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(knn(fp32), knn(int8))])
    assert overlap > 0.8


def test_int8_is_deterministic(texts, both):
    """The same texts give the same bits (in the same batches: :func:`~.embed.length_batches`;
    one activation scale per batch, so a text's int8 bits depend on its batch)."""
    from mteb_stratified.structure.embed import embed_with
    _, int8 = both
    assert np.array_equal(embed_with(list(texts), None, "int8"), int8)


def test_int8_runs_on_the_cpu_only():
    from mteb_stratified.structure.sentence_model import load_sentence_model
    with pytest.raises(ValueError, match="CPU only"):
        load_sentence_model(None, "cuda", int8=True)


def test_a_build_caches_int8_and_float32_embeddings_apart(tmp_path, texts):
    from mteb_stratified.structure.documents import embed_documents
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.pipeline import StructureConfig

    docs = {f"d{i}": t for i, t in enumerate(texts[:8])}
    work = str(tmp_path)
    a = embed_documents(docs, StructureConfig(document_embedding="int8"), work, LocalEngine())
    b = embed_documents(docs, StructureConfig(document_embedding="model"), work, LocalEngine())
    assert len(list(tmp_path.glob("doc-embeddings-*.npy"))) == 2 and not np.array_equal(a, b)
    again = embed_documents(docs, StructureConfig(document_embedding="int8"), work, None)
    assert np.array_equal(a, again)  # from the cache: no engine was given


def test_an_unknown_embedding_method_names_the_choices():
    """Documents: static, model or int8; entity names: static or model (int8 was measured for
    documents only)."""
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.structure.pipeline import StructureConfig
    for field, value, choices in (("document_embedding", "fp16", "static, model or int8"),
                                  ("entity_embedding", "fp16", "static or model"),
                                  ("entity_embedding", "int8", "static or model")):
        with pytest.raises(InputError) as err:
            dataclasses.replace(StructureConfig(), **{field: value})
        assert choices in str(err.value.fix)
