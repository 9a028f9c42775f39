"""The sentence model the structure embeds with (structure/sentence_model.py), its int8 form and
its bfloat16 pass (structure/embed.py): which layers are quantised and how, how close their
embeddings stay to the float32 model's on real NFCorpus abstracts, that they are deterministic,
and where their embeddings are cached."""

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
    from mteb_stratified.structure.embed import embed_with
    return embed_with(texts, None, "model"), embed_with(texts, None, "int8")


@pytest.fixture(scope="module")
def bf16(texts):
    from mteb_stratified.structure.embed import embed_with
    return embed_with(texts, None, "bf16")


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
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(_knn(fp32), _knn(int8))])
    assert overlap > 0.8


def test_int8_is_deterministic(texts, both):
    """The same texts give the same bits (in the same batches: :func:`~.embed.length_batches`;
    one activation scale per batch, so a text's int8 bits depend on its batch)."""
    from mteb_stratified.structure.embed import embed_with
    _, int8 = both
    assert np.array_equal(embed_with(list(texts), None, "int8"), int8)


def _knn(e, k=10):
    s = e @ e.T
    np.fill_diagonal(s, -np.inf)
    return np.argsort(-s, axis=1)[:, :k]


def test_bf16_embeddings_are_the_float32_ones_to_within_bfloat16_rounding(both, bf16):
    """On 60 real abstracts: cosine to the float32 embedding 0.99999 on average when written
    (min 0.99998), 9.95 of 10 nearest neighbours kept; not equal, so the bfloat16 products ran
    (autocast on); and much closer than int8."""
    fp32, int8 = both
    assert bf16.shape == fp32.shape and bf16.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    cos = (fp32 * bf16).sum(1)
    assert cos.mean() > 0.9999 and cos.min() > 0.9995
    assert not np.array_equal(fp32, bf16)
    assert (1 - cos).mean() < 0.1 * (1 - (fp32 * int8).sum(1)).mean()
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(_knn(fp32), _knn(bf16))])
    assert overlap > 0.95


def test_bf16_is_deterministic_and_leaves_the_float32_model_alone(texts, both, bf16):
    """The same texts give the same bits, and a bfloat16 pass changes nothing of the float32
    path that runs after it (autocast is a context, the weights stay float32)."""
    from mteb_stratified.structure.embed import embed_with
    assert np.array_equal(embed_with(list(texts), None, "bf16"), bf16)
    assert np.array_equal(embed_with(list(texts), None, "model"), both[0])


def test_an_unknown_precision_or_method_is_refused():
    from mteb_stratified.structure.embed import embed_texts, embed_with
    with pytest.raises(ValueError, match="bf16"):
        embed_texts(["a"], None, precision="fp16")
    with pytest.raises(ValueError, match="static, model, bf16, int8"):
        embed_with(["a"], None, "fp16")


def test_int8_runs_on_the_cpu_only():
    from mteb_stratified.structure.sentence_model import load_sentence_model
    with pytest.raises(ValueError, match="CPU only"):
        load_sentence_model(None, "cuda", int8=True)


def test_a_build_caches_each_precision_apart(tmp_path, texts):
    from mteb_stratified.structure.documents import embed_documents
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.pipeline import StructureConfig

    docs = {f"d{i}": t for i, t in enumerate(texts[:8])}
    work = str(tmp_path)
    made = {m: embed_documents(docs, StructureConfig(document_embedding=m), work, LocalEngine())
            for m in ("int8", "model", "bf16")}
    assert len(list(tmp_path.glob("doc-embeddings-*.npy"))) == 3
    assert not any(np.array_equal(made[a], made[b]) for a, b in
                   (("int8", "model"), ("int8", "bf16"), ("model", "bf16")))
    for m in made:  # from the cache: no engine was given
        again = embed_documents(docs, StructureConfig(document_embedding=m), work, None)
        assert np.array_equal(made[m], again)


def test_the_float32_path_keeps_its_cache_key_and_passes_no_keyword(tmp_path, texts):
    """float32's cache file is named as before the other precisions came (old caches stay
    valid), and it calls an engine that takes no keyword (written before int8)."""
    from mteb_stratified.structure.documents import embed_documents
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.fingerprint import settings_hash
    from mteb_stratified.structure.pipeline import StructureConfig

    class OldEngine:
        def embed(self, inputs, model, batch_size):
            return LocalEngine().embed(inputs, model, batch_size)

    docs = {f"d{i}": t for i, t in enumerate(texts[:4])}
    emb = embed_documents(docs, StructureConfig(document_embedding="model"), str(tmp_path),
                          OldEngine())
    key = settings_hash({"model": None, "documents": [docs[d] for d in sorted(docs)]})
    assert [p.name for p in tmp_path.glob("doc-embeddings-*.npy")] == \
        [f"doc-embeddings-{key}.npy"]
    assert emb.shape == (4, 384)


def test_an_unknown_embedding_method_names_the_choices():
    """Documents: static, model, bf16 or int8; entity names: static or model (bf16 and int8 were
    measured on documents only)."""
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.structure.pipeline import StructureConfig
    for field, value, choices in (("document_embedding", "fp16", "static, model, bf16 or int8"),
                                  ("entity_embedding", "fp16", "static or model"),
                                  ("entity_embedding", "bf16", "static or model"),
                                  ("entity_embedding", "int8", "static or model")):
        with pytest.raises(InputError) as err:
            dataclasses.replace(StructureConfig(), **{field: value})
        assert choices in str(err.value.fix)


@pytest.mark.parametrize("text, native", [
    ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni avx512_bf16\n", True),
    ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw amx_tile amx_bf16\n", True),
    ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni\n", False),
    ("processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n", True),
    ("processor\t: 0\nFeatures\t: fp asimd crc32\n", False),
    ("processor\t: 0\nmodel name\t: a CPU that lists no flags\n", None),
])
def test_the_bf16_probe_reads_the_cpu_flags(tmp_path, text, native):
    """AVX-512 without its BF16 extension is not native (oneDNN converts there, slower than
    float32); an unreadable file or one without flags says nothing."""
    from mteb_stratified.structure.sentence_model import cpu_bf16_native
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    assert cpu_bf16_native(str(path)) is native
    assert cpu_bf16_native(str(tmp_path / "absent")) is None


def test_bf16_on_a_cpu_without_bf16_instructions_is_said_on_stderr(monkeypatch, capsys,
                                                                   tmp_path):
    """A warning, not an error: the result is right, only slower; said before any work."""
    from mteb_stratified.cli import main as cli_main
    from mteb_stratified.io import bundled_path
    from mteb_stratified.structure import sentence_model
    monkeypatch.setattr(sentence_model, "cpu_bf16_native", lambda: False)
    args = ["structure", "--corpus", bundled_path("nfcorpus"), "-o", str(tmp_path / "o"),
            "--document-embedding", "bf16", "--bins-splits", "train"]  # fails just after
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert "warning: --document-embedding bf16: this CPU has no bfloat16 instructions" in err
    assert "--bins-splits" in err and not (tmp_path / "o" / ".work").exists()
    assert cli_main.main(args + ["--clusters", "entities"]) == 2  # no document is embedded
    assert "bfloat16 instructions" not in capsys.readouterr().err
    monkeypatch.setattr(sentence_model, "cpu_bf16_native", lambda: True)
    assert cli_main.main(args) == 2
    assert "bfloat16 instructions" not in capsys.readouterr().err


def test_offline_miss_is_said_before_the_job(monkeypatch, tmp_path):
    """#46.13e: with HF_HUB_OFFLINE set, a hub name missing from the local cache is refused
    before any work (``structure`` calls this first); a folder, the packaged model, or the hub
    online are left to the load."""
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.structure.sentence_model import offline_miss

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache
    miss = offline_miss("nobody-46/no-such-model")
    assert isinstance(miss, InputError) and "not in the local Hugging Face cache" in str(miss)
    assert offline_miss(None) is None and offline_miss(str(tmp_path)) is None
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert offline_miss("nobody-46/no-such-model") is None
