"""Precision regimes: which dtype the model runs in, and which dtype the scores are computed in.

=============  ===========  ===========  ===================================================
regime         model dtype  score dtype  what it measures
=============  ===========  ===========  ===================================================
fp32           float32      float32      the reference
bf16           bfloat16     bfloat16     a plain bf16 run: the scoring function in bf16
fp16           float16      float16      a plain fp16 run
bf16+hps       bfloat16     float32      HPS: bf16 forward, final logits/embeddings upcast
fp16+hps       float16      float32      HPS: fp16 forward, final logits/embeddings upcast
scores-bf16    float32      float32 →    fp32 scores rounded to bf16 afterwards: the pure
                            bfloat16     tie damage of an 8-bit mantissa, with no forward-pass
                                         error
int8           float32      int32        fp32 embeddings quantized to int8 (ranges calibrated
                                         on the corpus), integer dot product
binary         float32      int32        sign bits, Hamming similarity ``dim − distance``
                                         (FAISS ``IndexBinaryFlat``)
binary+rescore float32      float32      binary first stage for the top ``k·m``, rescored with
                                         the fp32 query against ±1 (or int8) documents
=============  ===========  ===========  ===================================================

The last three (:data:`QUANTIZED_NAMES`) quantize a bi-encoder's embeddings, the way vector
search serves them (see :mod:`.quantized`); ``binary+rescore`` is their High-Precision Scoring:
the cheap representation stays and only the final scoring runs in fp32. They are swept only when
asked for: ``parse_regimes(None)`` gives the six float regimes (:data:`FLOAT_NAMES`), and the
group names ``float``, ``quantized`` and ``all`` stand for theirs.

A regime is a frozen value object; :meth:`Regime.metadata` is what goes into result metadata so
that runs in different regimes never overwrite each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ...core.errors import InputError
from ...core.ranking.precision import DTYPES

#: sentence-transformers' ``semantic_search_faiss`` / ``semantic_search_usearch`` default.
DEFAULT_RESCORE_MULTIPLIER = 2
#: What a rescoring step multiplies the fp32 query with: ±1 sign vectors, dequantized int8.
RESCORE_DOCS = ("binary", "int8")

__all__ = ["Regime", "REGIMES", "REGIME_NAMES", "QUANTIZED_NAMES", "FLOAT_NAMES", "GROUPS",
           "get_regime", "parse_regimes"]


@dataclass(frozen=True)
class Regime:
    """One precision regime.

    Attributes
    ----------
    name : the canonical name (``"bf16+hps"``).
    model_dtype : the dtype of the forward pass (``"float32"``, ``"bfloat16"``, ``"float16"``).
    score_dtype : the dtype the scoring function (softmax, sigmoid, normalisation and dot
        product) runs in.
    cast_scores_to : when set, the final scores are rounded to this dtype afterwards
        (``"scores-bf16"``); None otherwise.
    quantization : the embeddings' quantization (``"int8"``, ``"ubinary"``: the precision
        names of sentence-transformers' ``quantize_embeddings``); None for the float regimes.
    rescore_docs : what a rescoring step multiplies the fp32 query with after a binary first
        stage (``"binary"``: ±1 vectors, ``"int8"``: dequantized int8); None: no rescoring.
    rescore_multiplier : the first stage keeps the top ``k·m`` (``m`` this) for rescoring.
    """

    name: str
    model_dtype: str
    score_dtype: str
    cast_scores_to: str | None = None
    quantization: str | None = None
    rescore_docs: str | None = None
    rescore_multiplier: int | None = None

    @property
    def hps(self) -> bool:
        """True when a low-precision forward pass (or a quantized first stage) is scored in
        higher precision."""
        if self.quantization is not None:
            return self.rescore_docs is not None
        return DTYPES[self.score_dtype].bits > DTYPES[self.model_dtype].bits

    @property
    def result_dtype(self) -> str:
        """The precision of the scores handed to the evaluator."""
        return self.cast_scores_to or self.score_dtype

    def metadata(self) -> dict:
        """JSON-ready description recorded next to every result of this regime."""
        return {"regime": self.name, "model_dtype": self.model_dtype,
                "score_dtype": self.score_dtype, "hps": self.hps,
                "scores_cast_to": self.cast_scores_to, "result_dtype": self.result_dtype,
                "quantization": self.quantization, "rescore_docs": self.rescore_docs,
                "rescore_multiplier": self.rescore_multiplier}

    def with_rescore(self, docs: "str | None" = None,
                     multiplier: "int | None" = None) -> "Regime":
        """This regime with other rescoring settings (only a rescoring regime has any). Its
        name then carries them (``binary+rescore[int8,x4]``), so rows of different settings
        never read alike."""
        if self.rescore_docs is None:
            return self
        from dataclasses import replace

        docs = docs or self.rescore_docs
        multiplier = multiplier or self.rescore_multiplier
        base = REGIMES[self.name.split("[")[0]]  # the registered regime, settings unnamed
        name = base.name
        if (docs, multiplier) != (base.rescore_docs, base.rescore_multiplier):
            name = f"{base.name}[{docs},x{multiplier}]"
        return replace(self, name=name, rescore_docs=docs, rescore_multiplier=multiplier)

    def __str__(self) -> str:
        return self.name


REGIMES = {r.name: r for r in (
    Regime("fp32", "float32", "float32"),
    Regime("bf16", "bfloat16", "bfloat16"),
    Regime("fp16", "float16", "float16"),
    Regime("bf16+hps", "bfloat16", "float32"),
    Regime("fp16+hps", "float16", "float32"),
    Regime("scores-bf16", "float32", "float32", cast_scores_to="bfloat16"),
    Regime("int8", "float32", "int32", quantization="int8"),
    Regime("binary", "float32", "int32", quantization="ubinary"),
    Regime("binary+rescore", "float32", "float32", quantization="ubinary",
           rescore_docs="binary", rescore_multiplier=DEFAULT_RESCORE_MULTIPLIER),
)}
REGIME_NAMES = tuple(REGIMES)
#: The quantized regimes (a bi-encoder's embeddings quantized) and the float ones.
QUANTIZED_NAMES = tuple(n for n, r in REGIMES.items() if r.quantization)
FLOAT_NAMES = tuple(n for n in REGIME_NAMES if n not in QUANTIZED_NAMES)
#: Names that stand for several regimes in :func:`parse_regimes`.
GROUPS = {"float": FLOAT_NAMES, "quantized": QUANTIZED_NAMES, "all": REGIME_NAMES}

#: Other names of the regimes: a dtype's canonical name for the regime of its short name
#: (``bfloat16`` -> ``bf16``), and other spellings of the ``+hps`` and ``scores-`` regimes.
_ALIASES = {**{d.name: d.short for d in DTYPES.values() if d.short in REGIMES},
            "bf16-hps": "bf16+hps", "fp16-hps": "fp16+hps", "bf16_hps": "bf16+hps",
            "fp16_hps": "fp16+hps", "scores_bf16": "scores-bf16", "bf16-scores": "scores-bf16",
            "ubinary": "binary", "hamming": "binary", "binary-rescore": "binary+rescore",
            "binary_rescore": "binary+rescore"}


def get_regime(name: "str | Regime") -> Regime:
    """The :class:`Regime` of a name (case-insensitive; ``bf16+HPS`` works).

    An unknown name raises :class:`InputError` listing the valid names.
    """
    if isinstance(name, Regime):
        return name
    if not isinstance(name, str):
        raise InputError(f"a regime must be a name, got {type(name).__name__}",
                         fix=f"use one of {', '.join(REGIME_NAMES)}")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in REGIMES:
        raise InputError(f"unknown precision regime {name!r}",
                         fix=f"valid regimes: {', '.join(REGIME_NAMES)} (or the groups "
                             f"{', '.join(GROUPS)})")
    return REGIMES[key]


def parse_regimes(names: "str | Iterable[str] | None") -> tuple:
    """Regimes from names or one comma-separated string; None gives the six float regimes, in
    table order; ``float``, ``quantized`` and ``all`` stand for their groups."""
    if names is None:
        return tuple(REGIMES[n] for n in FLOAT_NAMES)
    if isinstance(names, str):
        names = [names]
    out: list = []
    for item in names:
        for part in (item.split(",") if isinstance(item, str) else [item]):
            if isinstance(part, str) and not part.strip():
                continue
            group = GROUPS.get(part.strip().lower()) if isinstance(part, str) else None
            for regime in (REGIMES[n] for n in group) if group else [get_regime(part)]:
                if regime not in out:
                    out.append(regime)
    if not out:
        raise InputError("no regime given", fix=f"valid regimes: {', '.join(REGIME_NAMES)}")
    return tuple(out)
