"""Adapters: the only layer that imports mteb, beir, torch, transformers, bm25s or openai.

Each adapter imports its heavy dependency lazily and, when it is missing, raises an ImportError
that names the extra to install (``pip install mteb-stratified[...]``).
"""

from __future__ import annotations

import importlib


def require(module: str, extra: str):
    """Import ``module`` or raise an ImportError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed here (it is missing: {exc}); install it with "
                          f"pip install mteb-stratified[{extra}]") from exc
