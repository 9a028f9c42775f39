"""Adapters: the only layer that imports mteb, beir, torch, transformers or bm25s.

* :mod:`.mteb` — the tie-aware tasks, exact search, scores, registration, the leaderboard;
* :mod:`.beir` — the drop-in ``EvaluateRetrieval``;
* :mod:`.bm25` — the BM25 baseline run;
* :mod:`.precision` — High-Precision Scoring and the precision sweep.

Each adapter imports its heavy dependency lazily and, when it is missing, raises an ImportError
that names the extra to install (:mod:`mteb_stratified._optional`).
"""

from __future__ import annotations

from .._optional import require

__all__ = ["require"]
