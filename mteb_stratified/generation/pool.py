"""Candidate pooling for a generated query: BM25 (bm25s) ∪ dense (sentence-transformers) ∪ seeds.

The pool of query q is ``seeds ∪ top_k(BM25, q) ∪ top_k(dense, q)`` in that order, duplicates
removed, cut at ``max_pool`` documents (seeds always kept).  Ties in either ranking are broken
by document id, so the pool is deterministic.  Document embeddings are the structure's
(:func:`corpus_embeddings`): taken from the user's embedding cache when a command embedded the
corpus before, else computed once and cached there.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .._optional import require
from ..io.corpus_text import doc_text

__all__ = ["Pooler"]


def corpus_embeddings(corpus: dict, ids: list, model: str | None, cache_dir: str | None, *,
                      show_progress: bool = False) -> np.ndarray:
    """Unit float32 embeddings of the documents ``ids`` of ``corpus`` (in that order) by
    ``model``: the structure's document embeddings (:func:`..structure.embed.embed_corpus`:
    each document as ``title. text``, the same batches), so the user's embedding cache
    (:mod:`..io.embedding_cache`) gives them without a forward pass when ``structure`` (or an
    earlier run) embedded the corpus with this model in float32.  With that cache off, they are
    cached in ``cache_dir`` as ``doc-emb-<key>.npy`` (key: the model, the ids, each text's
    SHA-256 and the batch size).  The pool and the validity gate share them: a run embeds its
    corpus at most once."""
    from ..structure.embed import DOCUMENT_BATCH, embed_corpus
    texts = [doc_text(corpus[d]) for d in ids]
    key = hashlib.sha256(repr((model, list(ids), [hashlib.sha256(
        t.encode()).hexdigest() for t in texts], DOCUMENT_BATCH)).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir, f"doc-emb-{key}.npy") if cache_dir else None
    return embed_corpus(texts, model, "float32", fallback=path, show_progress=show_progress,
                        desc="embed the corpus")[0]


class Pooler:
    """BM25 + dense candidate pooling over a corpus ``{doc_id: {"title", "text"}}``."""

    def __init__(self, corpus: dict, *, k_bm25: int = 5, k_dense: int = 5, max_pool: int = 10,
                 dense: bool = True, model: str | None = None, cache_dir: str | None = None):
        self.ids = sorted(corpus)
        self.k_bm25, self.k_dense, self.max_pool = int(k_bm25), int(k_dense), int(max_pool)
        texts = [doc_text(corpus[d], style="beir") for d in self.ids]
        bm25s = require("bm25s", "bm25")
        self._bm25s = bm25s
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
                         show_progress=False)
        self.model = model
        self.emb = None
        if dense and self.k_dense > 0:
            self.emb = corpus_embeddings(corpus, self.ids, self.model, cache_dir)

    @staticmethod
    def _top(scores: np.ndarray, k: int) -> list[int]:
        order = np.lexsort((np.arange(scores.size), -scores))  # score desc, then id order
        return [int(i) for i in order[:k] if scores[i] > 0]

    def bm25(self, query: str) -> list[str]:
        return self.bm25_top(query, self.k_bm25)

    def bm25_top(self, query: str, k: int) -> list[str]:
        """The ``k`` best documents by BM25 (score > 0; ties by document id)."""
        toks = self._bm25s.tokenize([query], stopwords="en", return_ids=False,
                                    show_progress=False)[0]
        scores = self._bm25.get_scores(toks).astype(np.float64)
        return [self.ids[i] for i in self._top(scores, k)]

    def dense(self, query: str) -> list[str]:
        if self.emb is None:
            return []
        from ..structure.embed import embed_texts
        q = embed_texts([query], self.model)[0]
        scores = self.emb @ q
        # cosine can be ≤ 0: shift so every document can be chosen
        return [self.ids[i] for i in self._top(scores.astype(np.float64) + 2.0, self.k_dense)]

    def pool(self, query: str, seeds=()) -> dict:
        """``{"pool": [...], "bm25": [...], "dense": [...]}`` (pool: seeds first)."""
        b, d = self.bm25(query), self.dense(query)
        pool = list(dict.fromkeys([*seeds, *b, *d]))
        keep = max(self.max_pool, len(seeds))
        return {"pool": pool[:keep], "bm25": b, "dense": d}
