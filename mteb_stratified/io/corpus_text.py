"""The text of a corpus document: the one joiner of a BEIR document's title and text.

Two conventions, named by what reads the text:

* ``style="sentence"`` (default) — ``title. text``: the title as its own sentence (no second
  stop when it already ends in ``.``, ``!`` or ``?``).  Entity extraction reads this (a title
  must not run into the first sentence), and so do the LLM prompts of query generation;
* ``style="beir"`` — ``title text``, as BEIR's and MTEB's retrievers join them.  Dense and
  BM25 retrieval read this, so the precision sweep scores the same texts as ``mteb run``.
  (For BM25 both give the same tokens: its tokenizer drops the stop.)

A plain string is its own text; an empty title or text leaves just the other.
"""

from __future__ import annotations

from ..core.errors import InputError

__all__ = ["doc_text", "STYLES"]

STYLES = ("sentence", "beir")


def doc_text(doc, style: str = "sentence") -> str:
    """The text of ``doc`` (``{"title", "text"}`` or a string) in ``style`` (module docstring)."""
    if style not in STYLES:
        raise InputError(f"unknown document-text style {style!r}",
                         fix=f"use one of {', '.join(STYLES)}")
    if isinstance(doc, str):
        return doc.strip()
    title = str(doc.get("title", "") or "").strip()
    text = str(doc.get("text", "") or "").strip()
    if not (title and text):
        return title or text
    if style == "beir":
        return f"{title} {text}"
    return f"{title}. {text}" if title[-1] not in ".!?" else f"{title} {text}"
