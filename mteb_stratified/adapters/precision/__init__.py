"""High-Precision Scoring (HPS) and the precision audit.

Keep the forward pass in bf16/fp16, upcast only the final embeddings or logits, and run the
scoring function (normalisation + dot product, softmax, sigmoid) in fp32: low precision saves
time and memory in the model, while fp32 scoring keeps nearby scores distinct instead of
collapsing them into spurious ties.

* :func:`hps` — the hook: wraps a sentence-transformers bi-encoder or CrossEncoder, a
  :class:`YesNoReranker` (any transformers causal LM), or an mteb encoder;
* :mod:`.regimes` — fp32, bf16, fp16, bf16+hps, fp16+hps, scores-bf16, and the quantized
  int8, binary and binary+rescore (:mod:`.quantized`: rescoring is their HPS);
* :mod:`.sweep` — the audit table (``mteb-stratified precision-sweep``).

Importing this package does not import torch; the names below load on first use.
"""

from __future__ import annotations

import importlib

from .regimes import REGIME_NAMES, REGIMES, Regime, get_regime, parse_regimes

__all__ = ["hps", "BiEncoderScorer", "CrossEncoderScorer", "YesNoReranker", "HPSMtebEncoder",
           "PairScorer", "PromptTemplate", "QWEN3_RERANKER", "CHATML_RERANKER", "Regime",
           "REGIMES", "REGIME_NAMES", "get_regime", "parse_regimes", "run_sweep",
           "check_dtype_supported", "PrecisionUnsupportedError"]

_LAZY = {"hps": "hooks", "BiEncoderScorer": "hooks", "CrossEncoderScorer": "hooks",
         "PairScorer": "hooks", "YesNoReranker": "reranker", "PromptTemplate": "reranker",
         "QWEN3_RERANKER": "reranker", "CHATML_RERANKER": "reranker",
         "HPSMtebEncoder": "mteb_encoder", "run_sweep": "sweep",
         "check_dtype_supported": "_torch", "PrecisionUnsupportedError": "_torch"}


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
