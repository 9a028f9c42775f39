"""HPS around mteb encoders: embeddings back in fp32, similarity in fp32, distinct meta revision."""

import pytest

torch = pytest.importorskip("torch")
mteb = pytest.importorskip("mteb")
pytest.importorskip("sentence_transformers")

from mteb_stratified.adapters.precision import HPSMtebEncoder, hps  # noqa: E402

from .conftest import doc_text  # noqa: E402


class LegacyBf16Encoder:
    """An mteb encoder as older mteb wrappers behave: embeddings and similarity in bf16.

    It runs the real packaged MiniLM in bf16 and returns what the model returns.
    """

    def __init__(self, model):
        self.model = model

    def encode(self, inputs, *, task_metadata=None, hf_split=None, hf_subset=None,
               prompt_type=None, **kwargs):
        texts = [t for batch in inputs for t in batch["text"]]
        return self.model.encode(texts, convert_to_tensor=True)

    def similarity(self, a, b):
        return a @ b.T  # bf16 in, bf16 out

    def similarity_pairwise(self, a, b):
        return (a * b).sum(-1)

    @property
    def mteb_model_meta(self):
        from mteb.models.model_meta import ModelMeta

        return ModelMeta.create_empty().model_copy(
            update={"name": "test/legacy-minilm", "revision": "r1", "similarity_fn_name": "cosine"})


def batches(texts, size=32):
    return [{"text": texts[i:i + size]} for i in range(0, len(texts), size)]


@pytest.fixture(scope="module")
def texts(nfcorpus):
    return [doc_text(d) for d in list(nfcorpus.corpus.values())[:120]]


def test_wrapper_is_an_mteb_encoder(minilm_bf16):
    from mteb.models import EncoderProtocol

    wrapped = hps(LegacyBf16Encoder(minilm_bf16))
    assert isinstance(wrapped, HPSMtebEncoder)
    assert isinstance(wrapped, EncoderProtocol)
    meta = wrapped.mteb_model_meta
    assert meta.revision == "r1+hps-float32" and meta.name == "test/legacy-minilm"


def distinct(matrix) -> int:
    """Distinct scores per query row, summed over rows."""
    return sum(len(set(row.tolist())) for row in torch.as_tensor(matrix).float())


def test_hps_restores_distinct_scores_of_a_bf16_mteb_encoder(minilm_bf16, minilm_fp32, texts, nfcorpus):
    queries = [nfcorpus.queries[q] for q in sorted(nfcorpus.qrels)[:8]]
    legacy = LegacyBf16Encoder(minilm_bf16)
    wrapped = HPSMtebEncoder(legacy)
    q_plain, d_plain = legacy.encode(batches(queries)), legacy.encode(batches(texts))
    plain = legacy.similarity(q_plain, d_plain)
    q, d = wrapped.encode(batches(queries)), wrapped.encode(batches(texts))
    assert q.dtype == torch.float32 and d.dtype == torch.float32
    s = wrapped.similarity(q, d)
    assert s.dtype == torch.float32
    ref = (minilm_fp32.encode(queries, convert_to_tensor=True)
           @ minilm_fp32.encode(texts, convert_to_tensor=True).T)
    n_ref = distinct(ref)
    assert n_ref == len(set(texts)) * len(queries)  # fp32: only exact duplicates tie
    assert distinct(plain) < 0.97 * n_ref
    assert distinct(s) == n_ref
    pair = wrapped.similarity_pairwise(q[:1].expand(len(texts), -1), d)
    assert pair.dtype == torch.float32 and torch.allclose(pair, s[0], atol=1e-6)


def test_wrapping_mtebs_own_sentence_transformer_wrapper(minilm_bf16, texts):
    datasets = pytest.importorskip("datasets")
    from torch.utils.data import DataLoader

    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    inner = SentenceTransformerEncoderWrapper(minilm_bf16)
    wrapped = hps(inner)
    task = mteb.get_task("NFCorpus")
    loader = DataLoader(datasets.Dataset.from_dict({"text": texts[:16]}), batch_size=8)
    emb = wrapped.encode(loader, task_metadata=task.metadata, hf_split="test", hf_subset="default")
    emb = torch.as_tensor(emb)
    assert emb.dtype == torch.float32 and emb.shape == (16, 384)
    sim = torch.as_tensor(wrapped.similarity(emb, emb))
    assert sim.dtype == torch.float32
    assert torch.allclose(sim.diagonal(), torch.ones(16), atol=1e-2)
