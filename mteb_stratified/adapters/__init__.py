"""Adapters: the only layer that imports mteb, beir, torch, transformers, bm25s or openai.

Each adapter imports its heavy dependency lazily and, when it is missing, raises an ImportError
that names the extra to install (``pip install mteb-stratified[...]``).
"""

from __future__ import annotations

from .._optional import require

__all__ = ["require"]
