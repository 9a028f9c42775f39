"""The precision hook: ``hps(model)`` and the scorer wrappers it returns.

``hps(model, score_dtype="float32")`` leaves the model's forward pass in whatever dtype it was
loaded in (bf16, fp16, fp32) and makes the *scoring* run in ``score_dtype``:

* sentence-transformers bi-encoder → :class:`BiEncoderScorer`: the pooled embedding is upcast
  before the model's ``Normalize`` module, then cosine/dot runs in ``score_dtype``;
* sentence-transformers ``CrossEncoder`` → :class:`CrossEncoderScorer`: the classification
  head (the last ``Linear`` with ``num_labels`` outputs) runs in ``score_dtype`` on the
  upcast hidden state, and the activation (sigmoid/softmax) too;
* :class:`~mteb_stratified.adapters.precision.reranker.YesNoReranker` (any causal LM as a
  Qwen3-Reranker-style yes/no reranker) → the same reranker with ``score_dtype`` set;
* an mteb encoder (``mteb.models.EncoderProtocol``) →
  :class:`~mteb_stratified.adapters.precision.mteb_encoder.HPSMtebEncoder`.

The wrappers hold no global state: the in-model hooks are installed for the duration of one
call and removed afterwards, so the wrapped model behaves as before outside the wrapper.
"""

from __future__ import annotations

import contextlib
from typing import Protocol, Sequence, runtime_checkable

from ...core.errors import InputError
from . import scoring
from ._torch import dtype_name, to_torch_dtype, torch_module

__all__ = ["hps", "PairScorer", "BiEncoderScorer", "CrossEncoderScorer", "model_dtype_of",
           "last_linear", "normalize_modules"]


@runtime_checkable
class PairScorer(Protocol):
    """Anything that scores one query against candidate documents in a known score dtype."""

    score_dtype: "str | None"

    def score(self, query: str, documents: Sequence[str]):
        """A 1-D tensor of scores, one per document."""
        ...


def model_dtype_of(model) -> str:
    """Canonical dtype name of a torch module's (first floating-point) parameters."""
    torch = torch_module()
    root = model if isinstance(model, torch.nn.Module) else getattr(model, "model", None)
    if isinstance(root, torch.nn.Module):
        for p in root.parameters():
            if p.is_floating_point():
                return dtype_name(p.dtype)
    dtype = getattr(model, "dtype", None)
    if dtype is not None:
        return dtype_name(dtype)
    raise InputError(f"cannot tell the dtype of {type(model).__name__}",
                     fix="pass a torch module or a sentence-transformers model")


def _score_dtype(score_dtype) -> "str | None":
    return None if score_dtype in (None, "model") else dtype_name(score_dtype)


# ----------------------------------------------------------------------------- bi-encoders

@contextlib.contextmanager
def _without_normalize(model):
    """Make every sentence-transformers ``Normalize`` module a no-op for the duration.

    A forward pre-hook keeps the pooled embedding, and a forward hook puts it back after the
    module ran (works whether ``Normalize`` updates the features dict in place or not).
    """
    kept: dict = {}
    handles = []

    def pre(module, args):
        features = args[0]
        kept[id(module)] = features.get("sentence_embedding")

    def post(module, args, output):
        emb = kept.pop(id(module), None)
        if emb is not None and isinstance(output, dict):
            output["sentence_embedding"] = emb
        return output

    for module in normalize_modules(model):
        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def normalize_modules(model) -> list:
    """The sentence-transformers ``Normalize`` modules of ``model`` (empty: its embeddings are
    not unit vectors); a bi-encoder scorer bypasses them and normalises in its own dtype."""
    return [m for m in getattr(model, "_modules", {}).values() if type(m).__name__ == "Normalize"]


class BiEncoderScorer:
    """A sentence-transformers bi-encoder whose similarity runs in an explicit dtype.

    ``embed`` returns the *pooled, un-normalised* embeddings in the model's dtype (the model's
    ``Normalize`` module is bypassed); ``similarity`` casts them to ``score_dtype``, normalises
    (if the model normalises or its similarity is cosine) and takes the dot product there:

        s(q, d) = ⟨q̂, d̂⟩,  q̂ = cast(q)/‖cast(q)‖₂,  cast = identity (score_dtype=None) or
        an upcast to ``score_dtype`` (HPS).

    With ``score_dtype=None`` a bf16 model therefore scores exactly as a plain bf16 run: bf16
    normalisation, bf16 matmul, bf16 result.
    """

    def __init__(self, model, *, score_dtype=None, batch_size: int = 32,
                 similarity_fn: "str | None" = None) -> None:
        self.model = model
        self.score_dtype = _score_dtype(score_dtype)
        self.batch_size = batch_size
        if similarity_fn is None:
            if normalize_modules(model):
                similarity_fn = "cosine"
            else:
                similarity_fn = str(getattr(model, "similarity_fn_name", None) or "cosine")
        if similarity_fn not in scoring.SIMILARITIES:
            raise InputError(f"unsupported similarity function {similarity_fn!r}",
                             fix=f"use one of {', '.join(scoring.SIMILARITIES)}")
        self.similarity_fn = similarity_fn

    @property
    def model_dtype(self) -> str:
        return model_dtype_of(self.model)

    def with_score_dtype(self, score_dtype) -> "BiEncoderScorer":
        """The same scorer scoring in another dtype (None: the model's own)."""
        return BiEncoderScorer(self.model, score_dtype=score_dtype, batch_size=self.batch_size,
                               similarity_fn=self.similarity_fn)

    def embed(self, texts: Sequence[str], *, kind: str = "document", progress: bool = False):
        """Pooled embeddings (N, dim) in the model dtype; ``kind`` is "query" or "document";
        ``progress`` shows sentence-transformers' bar per batch."""
        if kind not in ("query", "document"):
            raise InputError(f"kind={kind!r} is not valid", fix="use 'query' or 'document'")
        method = getattr(self.model, f"encode_{kind}", None) or self.model.encode
        with _without_normalize(self.model):
            out = method(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                         show_progress_bar=progress)
        return out

    def similarity(self, query_embeddings, document_embeddings):
        """(Q, D) scores in ``score_dtype`` (None: the embeddings' dtype)."""
        return scoring.similarity(query_embeddings, document_embeddings, fn=self.similarity_fn,
                                  score_dtype=self.score_dtype)

    def score(self, query: str, documents: Sequence[str]):
        """Scores of one query against ``documents`` (1-D tensor)."""
        q = self.embed([query], kind="query")
        d = self.embed(documents, kind="document")
        return self.similarity(q, d)[0]

    def __repr__(self) -> str:
        return (f"BiEncoderScorer(model_dtype={self.model_dtype}, score_dtype={self.score_dtype}, "
                f"similarity={self.similarity_fn})")


# ----------------------------------------------------------------------------- cross-encoders

def _upcast_linear(linear, dtype):
    """A module computing ``linear`` in ``dtype`` on its upcast input (autocast off)."""
    torch = torch_module()

    class UpcastHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = linear

        def forward(self, x):
            with torch.autocast(device_type=x.device.type, enabled=False):
                w = self.inner.weight.to(dtype)
                b = None if self.inner.bias is None else self.inner.bias.to(dtype)
                return torch.nn.functional.linear(x.to(dtype), w, b)

    return UpcastHead()


def last_linear(root, num_labels: int) -> tuple:
    """``(name, module)`` of the last ``nn.Linear`` with ``num_labels`` outputs in ``root`` (a
    classifier's scoring head), or ``(None, None)``."""
    torch = torch_module()
    found = (None, None)
    for name, module in root.named_modules():
        if isinstance(module, torch.nn.Linear) and module.out_features == num_labels:
            found = (name, module)
    return found


@contextlib.contextmanager
def upcast_head(root, num_labels: int, dtype):
    """Temporarily run the scoring head (last ``nn.Linear`` with ``num_labels`` outputs) in ``dtype``.

    Yields the name of the replaced module, or None when no such head was found (then only the
    activation is upcast). The original module is put back on exit.
    """
    name = last_linear(root, num_labels)[0]
    if name is None:
        yield None
        return
    parent_name, _, attr = name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    original = getattr(parent, attr)
    setattr(parent, attr, _upcast_linear(original, dtype))
    try:
        yield name
    finally:
        setattr(parent, attr, original)


def _pooled(h, out, features) -> tuple:
    """The head's (input, output) rows that became the scores, one per pair.

    An encoder's head sees one pooled vector per pair: (B, hidden). A decoder turned
    classifier (``*ForSequenceClassification`` of Llama, Qwen, ...) applies its head at every
    position, (B, T, hidden), and keeps each pair's last real token: the last position of the
    attention mask, whichever side the padding is on. The caller checks that the rows picked
    are the model's scores.
    """
    if h is None or out is None:
        return None, None
    if h.ndim == 2:
        return h, out
    mask = features.get("attention_mask") if hasattr(features, "get") else None
    if h.ndim != 3 or mask is None or mask.shape != h.shape[:2]:
        return None, None
    torch = torch_module()
    last = mask.shape[1] - 1 - torch.flip(mask, dims=[1]).to(torch.long).argmax(dim=1)
    rows = torch.arange(h.shape[0], device=h.device)
    last = last.to(h.device)
    return h[rows, last], out[rows, last]


class CrossEncoderScorer:
    """A sentence-transformers ``CrossEncoder`` whose head and activation run in ``score_dtype``.

    The raw logits ℓ come from the classification head computed in ``score_dtype`` on the upcast
    final hidden state (HPS); the activation then runs in ``score_dtype`` too: σ(ℓ) for one
    label, softmax over labels (probability of the last label) otherwise. ``activation="none"``
    returns the logits.
    """

    def __init__(self, model, *, score_dtype=None, activation: str = "auto",
                 batch_size: int = 32) -> None:
        if activation not in ("auto", "sigmoid", "softmax", "none"):
            raise InputError(f"activation={activation!r} is not valid",
                             fix="use auto, sigmoid, softmax or none")
        self.model = model
        self.score_dtype = _score_dtype(score_dtype)
        self.activation = activation
        self.batch_size = batch_size

    def with_score_dtype(self, score_dtype) -> "CrossEncoderScorer":
        """The same scorer scoring in another dtype (None: the model's own)."""
        return CrossEncoderScorer(self.model, score_dtype=score_dtype, activation=self.activation,
                                  batch_size=self.batch_size)

    @property
    def num_labels(self) -> int:
        n = getattr(self.model, "num_labels", None)
        if n is None:
            n = getattr(getattr(getattr(self.model, "model", None), "config", None), "num_labels", 1)
        return int(n)

    def logits(self, pairs: Sequence[tuple]):
        """Raw logits (N,) or (N, num_labels), in ``score_dtype`` when it is set."""
        torch = torch_module()
        root = self.model if isinstance(self.model, torch.nn.Module) else self.model.model
        ctx = (upcast_head(root, self.num_labels, to_torch_dtype(self.score_dtype))
               if self.score_dtype else contextlib.nullcontext())
        with ctx:
            out = self.model.predict(list(pairs), batch_size=self.batch_size,
                                     activation_fn=torch.nn.Identity(), convert_to_tensor=True,
                                     show_progress_bar=False)
        if self.score_dtype is None:  # sentence-transformers >= 6 upcasts bf16/fp16 logits to
            return out.to(to_torch_dtype(model_dtype_of(self.model)))  # fp32: exact, cast back
        return out.to(to_torch_dtype(self.score_dtype))

    def predict(self, pairs: Sequence[tuple]):
        """Scores of (query, document) pairs after the activation, in ``score_dtype``."""
        return self._activate(self.logits(pairs))

    def _activation_kind(self) -> str:
        """``activation`` resolved: with one label, the model's own ``activation_fn`` (identity:
        the raw logit) and otherwise sigmoid; with more labels, the softmax probability of the
        last label (a sigmoid when the model says so)."""
        kind = self.activation
        if kind != "auto":
            return kind
        own = type(getattr(self.model, "activation_fn", None)).__name__
        if self.num_labels > 1:  # p(last label); sentence-transformers sets Identity here
            return "sigmoid" if own == "Sigmoid" else "softmax"
        return {"Identity": "none"}.get(own, "sigmoid")

    def _activate(self, logits):
        kind = self._activation_kind()
        if kind == "none":
            return logits.reshape(-1) if self.num_labels == 1 else logits[..., -1]
        if kind == "sigmoid":
            return scoring.sigmoid(logits.reshape(-1) if self.num_labels == 1 else logits[..., -1],
                                   score_dtype=self.score_dtype)
        return scoring.softmax_last(logits, score_dtype=self.score_dtype)

    # ------------------------------------------------------------------ forward / scoring split
    def head(self):
        """The scoring head: the last ``nn.Linear`` with ``num_labels`` outputs."""
        torch = torch_module()
        root = self.model if isinstance(self.model, torch.nn.Module) else self.model.model
        found = last_linear(root, self.num_labels)[1]
        if found is None:
            raise InputError(f"{type(self.model).__name__} has no Linear layer with "
                             f"{self.num_labels} outputs (its scoring head)",
                             fix="pass a CrossEncoder whose scores come from a Linear head")
        return found

    def head_inputs(self, pairs: Sequence[tuple], *, progress: bool = False):
        """The scoring head's inputs h (N, hidden) in the model dtype, in input order: the whole
        forward pass; :meth:`scores_from_head_inputs` is the (cheap) scoring part.

        Pairs are batched by length. Each batch checks that the head's output is the model's
        score, so a model that transforms its logits after the head is refused, not mis-scored.
        """
        torch = torch_module()
        pairs = [tuple(p) for p in pairs]
        head = self.head()
        if not pairs:
            return torch.empty(0, head.in_features, dtype=head.weight.dtype)
        if not hasattr(self.model, "preprocess"):
            raise InputError("this sentence-transformers CrossEncoder has no preprocess() "
                             "(sentence-transformers < 6)",
                             fix='upgrade: pip install "sentence-transformers>=6"')
        from sentence_transformers.util import batch_to_device

        order = sorted(range(len(pairs)), key=lambda i: -sum(len(str(x)) for x in pairs[i]))
        resolve = getattr(self.model, "_resolve_prompt", None)  # the model's default prompt
        prompt = resolve(None, None) if callable(resolve) else None
        seen: dict = {}
        handles = [head.register_forward_pre_hook(lambda m, args: seen.__setitem__("in", args[0])),
                   head.register_forward_hook(lambda m, args, out: seen.__setitem__("out", out))]
        starts = range(0, len(order), self.batch_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="cross-encoder batches", unit="batch")
        chunks = []
        try:
            self.model.eval()
            with torch.inference_mode():
                for lo in starts:
                    seen.clear()
                    batch = [pairs[i] for i in order[lo:lo + self.batch_size]]
                    features = batch_to_device(self.model.preprocess(batch, prompt=prompt),
                                               self.model.device)
                    scores = self.model(features)["scores"]
                    h, out = _pooled(seen.get("in"), seen.get("out"), features)
                    if h is None or out.shape != scores.shape or not torch.equal(out, scores):
                        raise InputError(
                            f"the scores of {type(self.model).__name__} are not the output of "
                            "its last Linear layer (at one position per pair)",
                            fix="the sweep splits the forward pass from the scoring at the last "
                                "Linear layer; this model's scores come from elsewhere, so it "
                                "cannot be swept (hps() still upcasts its activation)")
                    chunks.append(h.detach())
        finally:
            for handle in handles:
                handle.remove()
        h = torch.cat(chunks)
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return h[inverse.to(h.device)]

    def scores_from_head_inputs(self, hidden):
        """Scores from head inputs (see :meth:`head_inputs`): ℓ = cast(h)·cast(W)ᵀ + cast(b),
        then the activation, all in ``score_dtype`` (None: the model's dtype, which is what the
        model's own head computes)."""
        torch = torch_module()
        head = self.head()
        dtype = to_torch_dtype(self.score_dtype) if self.score_dtype else head.weight.dtype
        with torch.inference_mode(), torch.autocast(device_type=hidden.device.type, enabled=False):
            bias = None if head.bias is None else head.bias.detach().to(hidden.device, dtype)
            logits = torch.nn.functional.linear(hidden.to(dtype),
                                                head.weight.detach().to(hidden.device, dtype), bias)
            return self._activate(logits)

    def score(self, query: str, documents: Sequence[str]):
        return self.predict([(query, d) for d in documents])


# ----------------------------------------------------------------------------- the hook

def hps(model, score_dtype="float32"):
    """High-Precision Scoring for ``model``: low-precision forward, scoring in ``score_dtype``.

    Accepts a sentence-transformers ``SentenceTransformer`` or ``CrossEncoder``, a
    :class:`~mteb_stratified.adapters.precision.reranker.YesNoReranker`, one of this module's
    scorers, or an mteb encoder (``EncoderProtocol``). Returns a scorer/encoder wrapper; the model
    itself is not modified.

    Examples
    --------
    >>> model = SentenceTransformer(path, model_kwargs={"dtype": torch.bfloat16})  # doctest: +SKIP
    >>> scorer = hps(model)                  # bf16 forward, fp32 normalisation and dot product
    >>> scores = scorer.score("query", ["doc a", "doc b"])  # float32 tensor
    """
    score_dtype = dtype_name(score_dtype)
    from .mteb_encoder import HPSMtebEncoder, is_mteb_encoder
    from .reranker import YesNoReranker

    if isinstance(model, (BiEncoderScorer, CrossEncoderScorer, YesNoReranker, HPSMtebEncoder)):
        return model.with_score_dtype(score_dtype)
    try:
        import sentence_transformers as st
    except ImportError:
        st = None
    if st is not None:
        if isinstance(model, st.CrossEncoder):
            return CrossEncoderScorer(model, score_dtype=score_dtype)
        if isinstance(model, st.SentenceTransformer):
            return BiEncoderScorer(model, score_dtype=score_dtype)
    if is_mteb_encoder(model):
        return HPSMtebEncoder(model, score_dtype=score_dtype)
    if hasattr(model, "generate") and hasattr(model, "get_output_embeddings"):
        raise InputError(f"{type(model).__name__} is a causal LM: HPS needs its tokenizer and a "
                         "prompt template",
                         fix="wrap it first: YesNoReranker(model, tokenizer, score_dtype='float32')")
    raise InputError(f"hps() does not know how to score with {type(model).__name__}",
                     fix="pass a sentence-transformers SentenceTransformer or CrossEncoder, a "
                         "YesNoReranker, or an mteb encoder (mteb.models.EncoderProtocol)")
