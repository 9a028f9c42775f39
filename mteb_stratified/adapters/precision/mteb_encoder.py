"""HPS for mteb encoders (``mteb.models.EncoderProtocol``), whatever the installed mteb does.

mteb ≥ 2.26 already upcasts the embeddings of its own sentence-transformers wrapper; older
versions and custom encoders return bf16/fp16 embeddings and score in that dtype.
:class:`HPSMtebEncoder` wraps any encoder so that

* ``encode(...)`` returns its embeddings cast to ``score_dtype`` (a torch tensor stays a tensor,
  a numpy array becomes ``float32``/``float64`` numpy);
* ``similarity`` / ``similarity_pairwise`` upcast both inputs and compute cosine, dot,
  euclidean or manhattan themselves in ``score_dtype`` (the model meta's
  ``similarity_fn_name``), or, for another function (e.g. MaxSim), call the wrapped encoder's own
  on the upcast inputs and upcast its result;
* ``mteb_model_meta`` is the wrapped model's meta with ``revision`` suffixed by
  ``+hps-<score dtype>``, so results of different regimes land in different cache folders and
  never overwrite each other; ``score_dtype`` is also an attribute.

Anything else is delegated to the wrapped encoder.
"""

from __future__ import annotations

from . import scoring
from ._torch import dtype_name, to_torch_dtype, torch_module

__all__ = ["HPSMtebEncoder", "is_mteb_encoder"]

_REQUIRED = ("encode", "similarity", "mteb_model_meta")


def is_mteb_encoder(model) -> bool:
    """True when ``model`` has the methods of mteb's ``EncoderProtocol``."""
    try:
        return all(hasattr(model, name) for name in _REQUIRED)
    except Exception:  # a property that raises: not usable as an encoder  # noqa: BLE001
        return False


def _upcast(x, dtype: str):
    torch = torch_module()
    if isinstance(x, torch.Tensor):
        if x.is_sparse:
            return x.to_dense().to(to_torch_dtype(dtype))
        return x.to(to_torch_dtype(dtype))
    import numpy as np

    arr = np.asarray(x)
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":  # ml_dtypes bf16 is kind "V"
        return arr.astype(np.float64 if dtype == "float64" else np.float32)
    return arr


class HPSMtebEncoder:
    """An mteb encoder whose embeddings come back in ``score_dtype`` and are scored there."""

    def __init__(self, model, score_dtype="float32") -> None:
        self.model = model
        self.score_dtype = dtype_name(score_dtype)

    def with_score_dtype(self, score_dtype) -> "HPSMtebEncoder":
        return HPSMtebEncoder(self.model, score_dtype)

    # EncoderProtocol ----------------------------------------------------------------------
    def encode(self, inputs, *args, **kwargs):
        """The wrapped encoder's embeddings, cast to ``score_dtype``."""
        return _upcast(self.model.encode(inputs, *args, **kwargs), self.score_dtype)

    def _fn(self) -> "str | None":
        meta = getattr(self.model, "mteb_model_meta", None)
        name = getattr(meta, "similarity_fn_name", None)
        name = getattr(name, "value", name)
        return str(name).lower() if name is not None else None

    def _tensors(self, a, b):
        torch = torch_module()
        a, b = _upcast(a, self.score_dtype), _upcast(b, self.score_dtype)
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b)
        dtype = to_torch_dtype(self.score_dtype)
        return a.to(dtype), b.to(dtype)

    def similarity(self, embeddings1, embeddings2):
        """(N1, N2) similarity matrix computed in ``score_dtype``."""
        a, b = self._tensors(embeddings1, embeddings2)
        fn = self._fn()
        if fn in scoring.SIMILARITIES:
            return scoring.similarity(a, b, fn=fn, score_dtype=self.score_dtype)
        out = self.model.similarity(a, b)
        return _upcast(out, self.score_dtype)

    def similarity_pairwise(self, embeddings1, embeddings2):
        """(N,) similarity of matched pairs computed in ``score_dtype``."""
        torch = torch_module()
        a, b = self._tensors(embeddings1, embeddings2)
        fn = self._fn()
        if fn == "cosine":
            a = torch.nn.functional.normalize(a, dim=-1)
            b = torch.nn.functional.normalize(b, dim=-1)
            return (a * b).sum(-1)
        if fn == "dot":
            return (a * b).sum(-1)
        if fn in ("euclidean", "manhattan"):
            return -torch.linalg.vector_norm(a - b, ord=2 if fn == "euclidean" else 1, dim=-1)
        return _upcast(self.model.similarity_pairwise(a, b), self.score_dtype)

    @property
    def mteb_model_meta(self):
        """The wrapped meta with ``revision`` suffixed ``+hps-<score dtype>``."""
        meta = self.model.mteb_model_meta
        tag = f"hps-{self.score_dtype}"
        if hasattr(meta, "model_copy"):
            revision = getattr(meta, "revision", None)
            new = f"{revision}+{tag}" if revision else tag
            return meta.model_copy(update={"revision": new})
        return meta

    def __getattr__(self, name):
        if name == "model":  # not set yet (during copy/unpickle): avoid recursion
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"HPSMtebEncoder({type(self.model).__name__}, score_dtype={self.score_dtype})"
