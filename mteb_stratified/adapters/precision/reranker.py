"""Any causal LM from transformers as a Qwen3-Reranker-style yes/no reranker, with HPS.

The model reads a prompt that asks whether the document meets the query and must answer "yes"
or "no". The score of a (query, document) pair is read from the next-token logits ℓ at the
last prompt position:

    softmax path:  s = p(yes) = e^{ℓ_yes} / (e^{ℓ_yes} + e^{ℓ_no})
    sigmoid path:  s = σ(ℓ_yes − ℓ_no)    (the cross-encoder path: one logit, the margin)

The two paths are equal in exact arithmetic and differ only by rounding. No cross-encoder with
real weights is available offline here, so the sigmoid path of HPS is exercised on this margin.

HPS: the two logits are recomputed from the final hidden state h (after the model's last norm)
and the two rows of the output embedding W:  ℓ = cast(h) · cast(W[[yes, no]])ᵀ (+ bias), with
``cast`` an upcast to ``score_dtype``; then the softmax/sigmoid runs in ``score_dtype``. Without
HPS (``score_dtype=None``) the same computation stays in the model dtype, which is what
the model's own ``lm_head`` + softmax would give. Only 2 of the vocabulary's columns are
computed (never the whole lm_head), so the upcast costs a few hundred multiply-adds per pair.

Prompts follow Qwen3-Reranker: a system line, then ``<Instruct>: … <Query>: … <Document>: …``,
then the assistant turn. The default :data:`CHATML_RERANKER` drops Qwen3's empty ``<think>``
block (for ChatML models such as SmolLM2); :data:`QWEN3_RERANKER` keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...core.errors import InputError
from . import scoring
from ._torch import dtype_name, to_torch_dtype, torch_module

__all__ = ["PromptTemplate", "QWEN3_RERANKER", "CHATML_RERANKER", "DEFAULT_INSTRUCTION",
           "TEMPLATES", "get_template", "YesNoReranker", "yes_no_token_ids"]

DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"

_SYSTEM = ("<|im_start|>system\nJudge whether the Document meets the requirements based on the "
           "Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
           "<|im_end|>\n<|im_start|>user\n")


@dataclass(frozen=True)
class PromptTemplate:
    """``prefix + body.format(instruction=, query=, document=) + suffix``.

    Only the body is truncated to fit ``max_length`` tokens; prefix and suffix stay whole, so the
    answer position always directly follows the suffix.
    """

    prefix: str
    body: str
    suffix: str

    def render_body(self, query: str, document: str, instruction: str) -> str:
        return self.body.format(instruction=instruction, query=query, document=document)

    def render(self, query: str, document: str, instruction: str = DEFAULT_INSTRUCTION) -> str:
        return self.prefix + self.render_body(query, document, instruction) + self.suffix


_BODY = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
QWEN3_RERANKER = PromptTemplate(_SYSTEM, _BODY,
                                "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
CHATML_RERANKER = PromptTemplate(_SYSTEM, _BODY, "<|im_end|>\n<|im_start|>assistant\n")
#: The named templates of ``precision-sweep --prompt-template``.
TEMPLATES = {"qwen3": QWEN3_RERANKER, "chatml": CHATML_RERANKER}
_FIELDS = ("instruction", "query", "document")


def _check_body(body: str, source: str) -> None:
    """A body may use only ``{instruction}``, ``{query}`` and ``{document}`` (no attribute,
    index, conversion or format spec) and must use the last two; ``{{``/``}}`` are braces."""
    import string

    try:
        parts = list(string.Formatter().parse(body))
    except ValueError as exc:
        raise InputError(f"the prompt body is not a valid template: {exc}", source=source,
                         fix="write {query} and {document} (and optionally {instruction}); "
                             "double a literal brace: {{ }}") from None
    used = set()
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in _FIELDS or spec or conversion:
            raise InputError(f"the prompt body uses {{{name}{'!' + conversion if conversion else ''}"
                             f"{':' + spec if spec else ''}}}; only {{instruction}}, {{query}} "
                             "and {document} are filled in", source=source,
                             fix="use only those three fields; double a literal brace: {{ }}")
        used.add(name)
    missing = [f for f in ("query", "document") if f not in used]
    if missing:
        raise InputError(f"the prompt body has no {{{missing[0]}}}", source=source,
                         fix="the body must contain {query} and {document}")


def get_template(spec: "str | PromptTemplate") -> PromptTemplate:
    """A named template (``qwen3``, ``chatml``) or one read from a JSON file holding the strings
    ``prefix``, ``body`` and ``suffix``. Only the body is filled in (see :func:`_check_body`);
    the prefix and suffix are used as written."""
    import json
    import os

    if isinstance(spec, PromptTemplate):
        return spec
    key = str(spec).strip()
    if key.lower() in TEMPLATES:
        return TEMPLATES[key.lower()]
    if not os.path.isfile(key):
        looks_like_file = os.sep in key or key.lower().endswith(".json")
        raise InputError(f"prompt template file {key!r} not found" if looks_like_file
                         else f"unknown prompt template {spec!r}",
                         fix=f"use {', '.join(TEMPLATES)} or a JSON file with prefix, body, suffix")
    try:
        with open(key, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the prompt template: {exc}", source=key,
                         fix='write {"prefix": "...", "body": "...{query}...{document}...", '
                             '"suffix": "..."} in UTF-8') from None
    if not isinstance(data, dict) or set(data) != {"prefix", "body", "suffix"} \
            or not all(isinstance(v, str) for v in data.values()):
        raise InputError("the prompt template must be a JSON object with exactly the strings "
                         "prefix, body and suffix", source=key,
                         fix='e.g. {"prefix": "", "body": "Query: {query}\\nDocument: {document}", '
                             '"suffix": "\\nRelevant:"}')
    _check_body(data["body"], key)
    return PromptTemplate(data["prefix"], data["body"], data["suffix"])


def yes_no_token_ids(tokenizer, yes: str = "yes", no: str = "no") -> tuple:
    """The single token ids of ``yes`` and ``no``; a clear error when they are not single tokens."""
    ids = {}
    for word in (yes, no):
        try:
            pieces = tokenizer.encode(word, add_special_tokens=False)
        except Exception as exc:  # noqa: BLE001 - any tokenizer failure is a setup problem
            raise InputError(f"the tokenizer cannot encode {word!r}: {exc}",
                             fix="pass the model's own tokenizer") from None
        if len(pieces) != 1:
            raise InputError(
                f"the tokenizer has no single token for {word!r} (it splits into {len(pieces)} "
                f"tokens {pieces}); a yes/no reranker reads one logit per answer",
                fix="pass answer spellings that are single tokens of this tokenizer "
                    "(--yes-token/--no-token, or yes_token=/no_token= in Python; e.g. 'Yes'/'No' "
                    "or with a leading space), or use a model whose vocabulary holds them")
        unk = getattr(tokenizer, "unk_token_id", None)
        if unk is not None and pieces[0] == unk:
            raise InputError(f"{word!r} maps to the unknown token of this tokenizer",
                             fix="pass answer spellings in its vocabulary (--yes-token/--no-token)")
        ids[word] = int(pieces[0])
    if ids[yes] == ids[no]:
        raise InputError(f"{yes!r} and {no!r} map to one token id {ids[yes]}",
                         fix="pass two different answer tokens")
    return ids[yes], ids[no]


class YesNoReranker:
    """A causal LM scoring (query, document) pairs by its "yes"/"no" next-token logits.

    Parameters
    ----------
    model : a transformers causal LM (``AutoModelForCausalLM``), in any dtype.
    tokenizer : its tokenizer.
    score_dtype : dtype of the logit recomputation and the softmax/sigmoid (``"float32"`` is
        HPS); None keeps the model's dtype (a plain low-precision run).
    activation : ``"softmax"`` (p(yes) over the two answers) or ``"sigmoid"`` (σ of the margin).
    template, instruction : the prompt (see :class:`PromptTemplate`).
    max_length : tokens per prompt; the body is truncated to fit.
    batch_size : pairs per forward pass (pairs are sorted by length to limit padding; the
        scores come back in input order).
    yes_token, no_token : the answer spellings; each must be a single token.
    """

    def __init__(self, model, tokenizer, *, score_dtype=None, activation: str = "softmax",
                 template: PromptTemplate = CHATML_RERANKER,
                 instruction: str = DEFAULT_INSTRUCTION, max_length: int = 512,
                 batch_size: int = 8, yes_token: str = "yes", no_token: str = "no") -> None:
        if activation not in ("softmax", "sigmoid"):
            raise InputError(f"activation={activation!r} is not valid",
                             fix="use 'softmax' (p(yes)) or 'sigmoid' (σ of the yes−no margin)")
        if max_length < 16:
            raise InputError(f"max_length={max_length} is too small", fix="use e.g. 512")
        if batch_size < 1:
            raise InputError(f"batch_size={batch_size} must be ≥ 1")
        self.model = model
        self.tokenizer = tokenizer
        self.score_dtype = None if score_dtype in (None, "model") else dtype_name(score_dtype)
        self.activation = activation
        self.template = template
        self.instruction = instruction
        self.max_length = max_length
        self.batch_size = batch_size
        self.yes_token, self.no_token = yes_token, no_token
        self.yes_id, self.no_id = yes_no_token_ids(tokenizer, yes_token, no_token)
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if head is None or not hasattr(head, "weight"):
            raise InputError(f"{type(model).__name__} has no output embedding (lm_head)",
                             fix="pass a causal LM loaded with AutoModelForCausalLM")
        self._prefix_ids = tokenizer.encode(template.prefix, add_special_tokens=False)
        self._suffix_ids = tokenizer.encode(template.suffix, add_special_tokens=False)
        if len(self._prefix_ids) + len(self._suffix_ids) + 8 > max_length:
            raise InputError(f"max_length={max_length} leaves no room for the query and document "
                             f"(the template takes {len(self._prefix_ids) + len(self._suffix_ids)} "
                             "tokens)", fix="raise max_length")

    def with_score_dtype(self, score_dtype) -> "YesNoReranker":
        """The same reranker (same model object) scoring in another dtype."""
        return YesNoReranker(self.model, self.tokenizer, score_dtype=score_dtype,
                             activation=self.activation, template=self.template,
                             instruction=self.instruction, max_length=self.max_length,
                             batch_size=self.batch_size, yes_token=self.yes_token,
                             no_token=self.no_token)

    def with_activation(self, activation: str) -> "YesNoReranker":
        out = self.with_score_dtype(self.score_dtype)
        if activation not in ("softmax", "sigmoid"):
            raise InputError(f"activation={activation!r} is not valid", fix="softmax or sigmoid")
        out.activation = activation
        return out

    @property
    def model_dtype(self) -> str:
        return dtype_name(self.model.get_output_embeddings().weight.dtype)

    # ------------------------------------------------------------------ prompts and forward
    def encode_pairs(self, pairs: Sequence[tuple]) -> list:
        """Token ids of each pair's prompt (body truncated to fit ``max_length``)."""
        room = self.max_length - len(self._prefix_ids) - len(self._suffix_ids)
        out = []
        for query, document in pairs:
            body = self.tokenizer.encode(
                self.template.render_body(query, document, self.instruction),
                add_special_tokens=False)[:room]
            out.append(self._prefix_ids + body + self._suffix_ids)
        return out

    def _hidden_last(self, batch_ids: list):
        """Final hidden state (after the last norm) at the last prompt position, (B, hidden)."""
        torch = torch_module()
        device = self.model.get_output_embeddings().weight.device
        width = max(len(x) for x in batch_ids)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id or 0
        ids = torch.full((len(batch_ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch_ids), width), dtype=torch.long)
        for i, x in enumerate(batch_ids):  # left padding: the answer position is the last one
            ids[i, width - len(x):] = torch.tensor(x, dtype=torch.long)
            mask[i, width - len(x):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        base = self.model.base_model
        out = base(input_ids=ids.to(device), attention_mask=mask.to(device),
                   position_ids=positions.to(device), use_cache=False)
        return out.last_hidden_state[:, -1, :]

    def last_hidden(self, pairs: Sequence[tuple], *, progress: bool = False):
        """Final hidden states h (N, hidden) at the answer position, in the model dtype.

        This is the whole forward pass; :meth:`logits_from_hidden` is the (cheap) scoring part.
        Pairs are batched by length; rows come back in input order.  ``progress`` shows a bar
        per batch (stderr).
        """
        torch = torch_module()
        pairs = list(pairs)
        if not pairs:
            head = self.model.get_output_embeddings().weight
            return torch.empty(0, head.shape[1], dtype=head.dtype)
        encoded = self.encode_pairs(pairs)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        chunks = []
        starts = range(0, len(order), self.batch_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="rerank batches", unit="batch")
        with torch.inference_mode():
            for lo in starts:
                idx = order[lo:lo + self.batch_size]
                chunks.append(self._hidden_last([encoded[i] for i in idx]))
        h = torch.cat(chunks)  # stays on the model's device: scoring runs there too
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return h[inverse.to(h.device)]

    def logits_from_hidden(self, hidden):
        """(ℓ_yes, ℓ_no) = cast(h) · cast(W[[yes, no]])ᵀ (+ bias), in ``score_dtype`` or the model's."""
        torch = torch_module()
        head = self.model.get_output_embeddings()
        ids = [self.yes_id, self.no_id]
        rows = head.weight[ids].detach().to(hidden.device)
        bias = getattr(head, "bias", None)
        bias = None if bias is None else bias[ids].detach().to(hidden.device)
        dtype = to_torch_dtype(self.score_dtype) if self.score_dtype else rows.dtype
        with torch.inference_mode(), torch.autocast(device_type=hidden.device.type, enabled=False):
            two = torch.nn.functional.linear(hidden.to(dtype), rows.to(dtype),
                                             None if bias is None else bias.to(dtype))
        two = self._post_logits(two)
        return two[:, 0], two[:, 1]

    def logits(self, pairs: Sequence[tuple]):
        """(ℓ_yes, ℓ_no), each (N,), in ``score_dtype`` (HPS) or the model dtype."""
        return self.logits_from_hidden(self.last_hidden(pairs))

    def scores_from_hidden(self, hidden):
        """Scores from final hidden states (see :meth:`last_hidden`): the scoring function alone."""
        yes, no = self.logits_from_hidden(hidden)
        if self.activation == "softmax":
            return scoring.yes_no_softmax(yes, no, score_dtype=self.score_dtype)
        return scoring.sigmoid(yes - no, score_dtype=self.score_dtype)

    def _post_logits(self, logits):
        """Model-specific final logit transforms (Cohere's logit_scale, Gemma 2's soft-capping)."""
        torch = torch_module()
        config = getattr(self.model, "config", None)
        scale = getattr(config, "logit_scale", None)
        if isinstance(scale, (int, float)) and scale != 1:
            logits = logits * scale
        cap = getattr(config, "final_logit_softcapping", None)
        if isinstance(cap, (int, float)) and cap:
            logits = cap * torch.tanh(logits / cap)
        return logits

    # ------------------------------------------------------------------ scores
    def predict(self, pairs: Sequence[tuple]):
        """Scores of (query, document) pairs (1-D tensor in ``score_dtype`` or the model dtype)."""
        return self.scores_from_hidden(self.last_hidden(pairs))

    def score(self, query: str, documents: Sequence[str]):
        return self.predict([(query, d) for d in documents])

    def __repr__(self) -> str:
        return (f"YesNoReranker({type(self.model).__name__}, model_dtype={self.model_dtype}, "
                f"score_dtype={self.score_dtype}, activation={self.activation})")
