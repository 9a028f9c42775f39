"""The scoring functions, computed in an explicit dtype: the heart of HPS.

HPS (High-Precision Scoring) keeps the model's forward pass in low precision and upcasts only
what enters the scoring function: the final embeddings (bi-encoders) or the final logits
(cross-encoders, yes/no rerankers). Every function here takes ``score_dtype``: the inputs are
cast to it first and the whole function runs in it. ``score_dtype=None`` keeps the input dtype,
which is what a plain bf16/fp16 run does (and what collapses nearby scores into ties: bf16 keeps
8 significant bits, so scores in [0.5, 1) are multiples of 2⁻⁹ ≈ 0.002).

Formulas
--------
* cosine:     s(q, d) = ⟨q/‖q‖₂, d/‖d‖₂⟩
* dot:        s(q, d) = ⟨q, d⟩
* euclidean:  s(q, d) = −‖q − d‖₂;  manhattan: s(q, d) = −‖q − d‖₁
* yes/no softmax (Qwen3-Reranker): p(yes) = e^{ℓ_yes} / (e^{ℓ_yes} + e^{ℓ_no}), computed as
  ``exp(log_softmax([ℓ_no, ℓ_yes]))[1]``
* sigmoid (cross-encoder with one logit ℓ): σ(ℓ) = 1 / (1 + e^{−ℓ}); for a yes/no model the
  logit is the margin ℓ = ℓ_yes − ℓ_no, and σ(ℓ_yes − ℓ_no) equals the softmax above in exact
  arithmetic (it differs only by rounding).
"""

from __future__ import annotations

from ._torch import dtype_name, to_torch_dtype, torch_module

__all__ = ["SIMILARITIES", "similarity", "yes_no_softmax", "sigmoid", "softmax_last",
           "round_scores", "to_floats"]

SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")


def _cast(x, score_dtype):
    torch = torch_module()
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if score_dtype is None:
        return x
    return x.to(to_torch_dtype(score_dtype))


def similarity(queries, documents, *, fn: str = "cosine", score_dtype=None):
    """Similarity matrix (Q, D) of query and document embeddings, computed in ``score_dtype``.

    ``queries`` (Q, dim) and ``documents`` (D, dim) are tensors in any dtype; with
    ``score_dtype="float32"`` they are upcast *before* normalisation and the product (HPS);
    with None the product runs in their own dtype and the result keeps it.
    """
    from ...core.errors import InputError

    if fn not in SIMILARITIES:
        raise InputError(f"unknown similarity function {fn!r}",
                         fix=f"use one of {', '.join(SIMILARITIES)}")
    torch = torch_module()
    q = _cast(queries, score_dtype)
    d = _cast(documents, score_dtype)
    if q.dtype != d.dtype:
        raise InputError(f"query embeddings are {q.dtype} and document embeddings {d.dtype}",
                         fix="encode both with one model, or pass score_dtype='float32'")
    if q.ndim == 1:
        q = q[None]
    if d.ndim == 1:
        d = d[None]
    if fn == "cosine":
        q = torch.nn.functional.normalize(q, p=2.0, dim=-1)
        d = torch.nn.functional.normalize(d, p=2.0, dim=-1)
        return q @ d.T
    if fn == "dot":
        return q @ d.T
    p = 2.0 if fn == "euclidean" else 1.0
    return -torch.cdist(q, d, p=p)


def yes_no_softmax(yes_logits, no_logits, *, score_dtype=None):
    """p(yes) = softmax([ℓ_no, ℓ_yes])[1] per pair, in ``score_dtype`` (None: the logits' dtype)."""
    torch = torch_module()
    yes = _cast(yes_logits, score_dtype)
    no = _cast(no_logits, score_dtype)
    pair = torch.stack([no, yes], dim=-1)
    return torch.log_softmax(pair, dim=-1)[..., 1].exp()


def sigmoid(logits, *, score_dtype=None):
    """σ(ℓ) = 1/(1 + e^{−ℓ}) in ``score_dtype`` (None: the logits' dtype)."""
    torch = torch_module()
    return torch.sigmoid(_cast(logits, score_dtype))


def softmax_last(logits, *, score_dtype=None):
    """Softmax over the last axis; the probability of the last label (e.g. "relevant")."""
    torch = torch_module()
    return torch.softmax(_cast(logits, score_dtype), dim=-1)[..., -1]


def round_scores(scores, dtype="bfloat16"):
    """Round scores to ``dtype`` (round-to-nearest-even) and back to float32: the pure tie damage."""
    torch = torch_module()
    x = _cast(scores, None)
    return x.to(to_torch_dtype(dtype)).to(torch.float32)


def to_floats(scores) -> list:
    """Exact Python floats of a tensor's values (a bf16 value becomes its exact bf16 number)."""
    torch = torch_module()
    x = _cast(scores, None).detach().cpu()
    if dtype_name(x.dtype) != "float64":
        x = x.to(torch.float32)  # exact for bf16/fp16/fp32
    return x.tolist()
