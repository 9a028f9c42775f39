"""Hashes: the corpus fingerprint (every document id, title and text, order-independent) and
the short settings hash of checkpoints and artifacts."""

from __future__ import annotations

import hashlib

from ..io.corpus_text import doc_text

__all__ = ["corpus_fingerprint", "doc_text", "text_hash", "settings_hash"]


def settings_hash(obj) -> str:
    """A short, stable hash of JSON-able settings (checkpoint and artifact keys).

    The hash of ``json.dumps(obj, sort_keys=True)``, fed to sha256 piece by piece as the
    encoder yields it, so a key over every document text (the document embeddings' cache) never
    holds the whole JSON string, nor its bytes, at once.
    """
    import json

    h = hashlib.sha256()
    piece: list = []
    size = 0
    for chunk in json.JSONEncoder(sort_keys=True).iterencode(obj):
        piece.append(chunk)
        size += len(chunk)
        if size >= 1 << 20:
            h.update("".join(piece).encode())
            piece, size = [], 0
    h.update("".join(piece).encode())
    return h.hexdigest()[:16]


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
