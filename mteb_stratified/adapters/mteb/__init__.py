"""MTEB integration: tie-aware tasks, exact search, packaged models, drop-in patch.

Lazy: importing this package does not import mteb or torch; the names below are loaded on
first use.

* :func:`register` - add the tasks/models to mteb's registries (the auto-load hook calls it);
* ``StratifiedNFCorpus``, ``StratifiedFiQA``, ``StratifiedSciDocs`` - tie-aware tasks;
* :func:`tie_aware` - make any built-in retrieval/reranking task tie-aware;
* :func:`beir_task` - a tie-aware task over any local BEIR folder;
* :func:`patch` / :func:`unpatch` - make every retrieval task of an existing
  ``mteb.evaluate(...)`` script tie-aware;
* ``MINILM_FP32`` / ``MINILM_BF16`` - the packaged all-MiniLM-L6-v2 model names;
  ``MINILM_QUANTIZED`` its int8/binary/binary-rescore names, :class:`QuantizedSearch` the
  mteb search model behind them.
"""

from __future__ import annotations

from importlib import import_module

_LAZY = {
    "register": ".registration", "is_registered": ".registration",
    "StratifiedNFCorpus": ".tasks", "StratifiedFiQA": ".tasks", "StratifiedSciDocs": ".tasks",
    "tie_aware": ".tasks", "beir_task": ".tasks", "TieAwareRetrievalMixin": ".tasks",
    "LocalBeirRetrieval": ".tasks",
    "patch": ".patching", "unpatch": ".patching", "is_patched": ".patching",
    "ExactTieSearch": ".search",
    "load_packaged_minilm": ".models", "MINILM_FP32": ".models", "MINILM_BF16": ".models",
    "MINILM_QUANTIZED": ".models", "QuantizedSearch": ".quantized",
    "read_task_folder": ".tasks",
    "tie_aware_evaluation": ".scoring", "tie_aware_scores": ".scoring",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
