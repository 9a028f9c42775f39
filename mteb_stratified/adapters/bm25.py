"""BM25 retrieval with the ``bm25s`` package (extra ``[bm25]``): a real lexical baseline run.

Every document of the corpus is scored for every query (``BM25.get_scores``), so the run's depth
boundary is exact: all documents tied with the ``depth``-th score are kept.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ..io.corpus_text import doc_text

__all__ = ["bm25_run"]


def bm25_run(corpus: dict, queries: dict, *, depth: int = 1000, k1: float = 1.5,
             b: float = 0.75) -> tuple[dict, dict]:
    """Score ``queries`` ``{qid: text}`` against ``corpus`` ``{doc_id: {"title", "text"}}``.

    Returns ``(run, info)``: the run ``{qid: {doc_id: score}}`` with bm25s's float32 scores
    (exact values as Python floats), keeping at least ``depth`` documents per query plus every
    document tied with the last kept score, and ``info`` with how many queries needed that.
    Documents with a score of 0 (no query term) are left out, as a BM25 engine returns them.
    """
    bm25s = require("bm25s", "bm25")
    doc_ids = list(corpus)
    texts = [doc_text(corpus[d], style="beir") for d in doc_ids]
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
                    show_progress=False)
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", return_ids=False,
                            show_progress=False)
    run: dict = {}
    widened = 0
    ids = np.asarray(doc_ids, dtype=object)
    for qid, toks in zip(qids, tokens):
        scores = retriever.get_scores(toks).astype(np.float32)
        positive = np.flatnonzero(scores > 0)
        order = positive[np.argsort(-scores[positive], kind="stable")]
        keep = order[:depth]
        if len(order) > depth:
            last = scores[order[depth - 1]]
            tied = order[depth:][scores[order[depth:]] == last]
            if len(tied):
                widened += 1
                keep = np.concatenate([keep, tied])
        run[qid] = {str(d): float(s) for d, s in zip(ids[keep], scores[keep])}
    return run, {"queries_widened_at_depth": widened, "depth": depth}
