"""Hashes: the corpus fingerprint (every document id, title and text, order-independent) and
the short settings hash of checkpoints and artifacts."""

from __future__ import annotations

import hashlib

from ..io.corpus_text import doc_text

__all__ = ["corpus_fingerprint", "doc_text", "text_hash", "settings_hash"]


def settings_hash(obj) -> str:
    """A short, stable hash of JSON-able settings (checkpoint and artifact keys)."""
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_fingerprint(corpus: dict) -> str:
    """``sha256:`` of the sorted lines ``doc_id \\t sha256(title \\n text)``."""
    h = hashlib.sha256()
    for doc_id in sorted(corpus):
        doc = corpus[doc_id]
        if isinstance(doc, str):
            body = doc
        else:
            body = f"{doc.get('title', '') or ''}\n{doc.get('text', '') or ''}"
        h.update(f"{doc_id}\t{text_hash(body)}\n".encode("utf-8"))
    return "sha256:" + h.hexdigest()
