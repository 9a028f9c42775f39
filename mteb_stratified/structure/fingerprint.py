"""Corpus fingerprint: a hash of every document id, title and text (order-independent)."""

from __future__ import annotations

import hashlib

__all__ = ["corpus_fingerprint", "doc_text", "text_hash"]


def doc_text(doc) -> str:
    """The text a document is extracted from: ``title. text`` (either may be empty)."""
    if isinstance(doc, str):
        return doc.strip()
    title = str(doc.get("title", "") or "").strip()
    text = str(doc.get("text", "") or "").strip()
    if title and text:
        return f"{title}. {text}" if title[-1] not in ".!?" else f"{title} {text}"
    return title or text


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
