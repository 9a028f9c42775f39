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
=============  ===========  ===========  ===================================================

A regime is a frozen value object; :meth:`Regime.metadata` is what goes into result metadata so
that runs in different regimes never overwrite each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ...core.errors import InputError
from ...core.precision import DTYPES

__all__ = ["Regime", "REGIMES", "REGIME_NAMES", "get_regime", "parse_regimes"]


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
    """

    name: str
    model_dtype: str
    score_dtype: str
    cast_scores_to: str | None = None

    @property
    def hps(self) -> bool:
        """True when a low-precision forward pass is scored in higher precision."""
        return DTYPES[self.score_dtype].bits > DTYPES[self.model_dtype].bits

    @property
    def result_dtype(self) -> str:
        """The precision of the scores handed to the evaluator."""
        return self.cast_scores_to or self.score_dtype

    def metadata(self) -> dict:
        """JSON-ready description recorded next to every result of this regime."""
        return {"regime": self.name, "model_dtype": self.model_dtype,
                "score_dtype": self.score_dtype, "hps": self.hps,
                "scores_cast_to": self.cast_scores_to, "result_dtype": self.result_dtype}

    def __str__(self) -> str:
        return self.name


REGIMES = {r.name: r for r in (
    Regime("fp32", "float32", "float32"),
    Regime("bf16", "bfloat16", "bfloat16"),
    Regime("fp16", "float16", "float16"),
    Regime("bf16+hps", "bfloat16", "float32"),
    Regime("fp16+hps", "float16", "float32"),
    Regime("scores-bf16", "float32", "float32", cast_scores_to="bfloat16"),
)}
REGIME_NAMES = tuple(REGIMES)

#: Other names of the regimes: a dtype's canonical name for the regime of its short name
#: (``bfloat16`` -> ``bf16``), and other spellings of the ``+hps`` and ``scores-`` regimes.
_ALIASES = {**{d.name: d.short for d in DTYPES.values() if d.short in REGIMES},
            "bf16-hps": "bf16+hps", "fp16-hps": "fp16+hps", "bf16_hps": "bf16+hps",
            "fp16_hps": "fp16+hps", "scores_bf16": "scores-bf16", "bf16-scores": "scores-bf16"}


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
                         fix=f"valid regimes: {', '.join(REGIME_NAMES)}")
    return REGIMES[key]


def parse_regimes(names: "str | Iterable[str] | None") -> tuple:
    """Regimes from names or one comma-separated string; None gives all six, in table order."""
    if names is None:
        return tuple(REGIMES.values())
    if isinstance(names, str):
        names = [names]
    out: list = []
    for item in names:
        for part in (item.split(",") if isinstance(item, str) else [item]):
            if isinstance(part, str) and not part.strip():
                continue
            regime = get_regime(part)
            if regime not in out:
                out.append(regime)
    if not out:
        raise InputError("no regime given", fix=f"valid regimes: {', '.join(REGIME_NAMES)}")
    return tuple(out)
