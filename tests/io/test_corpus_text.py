"""One document-text joiner for extraction, prompts, BM25 and dense retrieval."""

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io.corpus_text import doc_text


def test_the_two_styles():
    doc = {"title": "Statins and cancer", "text": "Statin use lowered mortality."}
    assert doc_text(doc) == "Statins and cancer. Statin use lowered mortality."
    assert doc_text(doc, style="beir") == "Statins and cancer Statin use lowered mortality."
    assert doc_text({"title": "Why?", "text": "Because."}) == "Why? Because."
    assert doc_text({"title": "", "text": " only text "}) == "only text"
    assert doc_text({"title": "only title", "text": None}) == "only title"
    assert doc_text("  a string  ") == "a string"
    with pytest.raises(InputError, match="unknown document-text style"):
        doc_text(doc, style="mteb")


def test_bm25_sees_the_same_tokens_in_both_styles():
    bm25s = pytest.importorskip("bm25s")
    doc = {"title": "Vitamin D.", "text": "Bone density rose."}
    a = bm25s.tokenize([doc_text(doc)], stopwords="en", return_ids=False, show_progress=False)
    b = bm25s.tokenize([doc_text(doc, style="beir")], stopwords="en", return_ids=False,
                       show_progress=False)
    assert a == b
