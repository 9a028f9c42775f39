"""Exact top-k search: keep every document tied with the k-th score.

mteb's ``SearchEncoderWrapper`` merges per-chunk ``torch.topk`` results in a heap of
``(score, doc_id)`` pairs of size k, so a tie group that straddles rank k is cut by doc id (the
smaller ids fall out), and ``torch.topk`` itself cuts ties arbitrarily inside a chunk.  The
expectation over tie orders then misses documents it should average over.

:class:`ExactTieSearch` returns, for each query, the top k documents **plus every document whose
score equals the k-th score** (the list is widened, never cut inside a tie group), so the
tie-aware expectation at every cutoff ≤ k is exact.  Per corpus chunk it keeps the documents
scoring ≥ the chunk's k-th score, then merges with the running candidates the same way: the
k-th score of a subset is ≤ the k-th score overall, so no document of the final top-k-with-ties
is ever dropped.  Scores are compared in the dtype the model's ``similarity`` returns (a bf16
score matrix stays bf16 until it is compared, then is widened losslessly).

Reranking (``top_ranked``) scores every candidate of the first stage and keeps the same
top-k-with-ties.  Models that implement their own search (``SearchProtocol``, e.g. BM25) are
used as they are: their depth cut is reported by ``ties_truncated_queries``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from mteb._create_dataloaders import create_dataloader
from mteb.models.search_wrappers import SearchEncoderWrapper
from mteb.types import PromptType

logger = logging.getLogger(__name__)

__all__ = ["ExactTieSearch", "keep_top_k_with_ties"]


def keep_top_k_with_ties(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the top ``k`` entries of a 1-D array plus all entries equal to the k-th.

    NaN scores are never kept.  Returned in descending score order (ties by index).
    """
    finite = np.flatnonzero(~np.isnan(scores))
    if finite.size <= k:
        idx = finite
    else:
        vals = scores[finite]
        kth = np.partition(vals, vals.size - k)[vals.size - k]
        idx = finite[vals >= kth]
    return idx[np.argsort(-scores[idx], kind="stable")]


class ExactTieSearch(SearchEncoderWrapper):
    """``SearchEncoderWrapper`` whose top-k keeps whole tie groups (see module doc).

    ``last_depth_extended`` holds, after each search, the number of queries whose list was
    widened past k.
    """

    last_depth_extended: int = 0

    def __init__(self, model, corpus_chunk_size: int = 50_000) -> None:
        super().__init__(model, corpus_chunk_size=corpus_chunk_size, index_backend=None)

    def search(self, queries, *, encode_kwargs, **kwargs: Any):
        """mteb's search, with the encoder's per-batch progress bar on unless the caller turned
        it off (``mteb.evaluate(..., show_progress_bar=False)`` sets
        ``encode_kwargs["show_progress_bar"] = False``)."""
        encode_kwargs = {"show_progress_bar": True, **(encode_kwargs or {})}
        return super().search(queries, encode_kwargs=encode_kwargs, **kwargs)

    def _merge(self, cand_scores, cand_ids, new_scores, new_ids, k):
        scores = np.concatenate([cand_scores, new_scores])
        ids = np.concatenate([cand_ids, new_ids])
        keep = keep_top_k_with_ties(scores, k)
        return scores[keep], ids[keep]

    def _to_numpy_scores(self, scores) -> np.ndarray:
        import torch

        t = torch.as_tensor(scores).detach().cpu()
        # bf16/fp16 -> fp32 is exact, so equal scores stay equal; fp32/fp64 are kept as they are
        if t.dtype not in (torch.float32, torch.float64):
            t = t.to(torch.float32)
        return t.numpy()

    def _full_corpus_search(self, *, query_idx_to_id, query_embeddings, task_metadata, hf_subset,
                            hf_split, top_k, encode_kwargs, timer, **kwargs: Any):
        if self.task_corpus is None:
            raise ValueError("Corpus must be indexed before searching.")
        corpus = self.task_corpus
        n_q = len(query_idx_to_id)
        cand_scores = [np.empty(0) for _ in range(n_q)]
        cand_ids = [np.empty(0, dtype=object) for _ in range(n_q)]
        with timer("Searching corpus", split=hf_split, subset=hf_subset):
            for start in range(0, len(corpus), self.corpus_chunk_size):
                end = min(start + self.corpus_chunk_size, len(corpus))
                sub = corpus.select(range(start, end))
                sub_ids = np.asarray(list(sub["id"]), dtype=object)
                t0 = time.monotonic()
                emb = self.model.encode(
                    create_dataloader(sub, task_metadata=task_metadata,
                                      prompt_type=PromptType.document,
                                      batch_size=encode_kwargs.get("batch_size", 32)),
                    task_metadata=task_metadata, hf_split=hf_split, hf_subset=hf_subset,
                    prompt_type=PromptType.document, **encode_kwargs)
                t1 = time.monotonic()
                mat = self._to_numpy_scores(self.model.similarity(query_embeddings, emb))
                del emb
                for qi in range(n_q):
                    row = mat[qi]
                    keep = keep_top_k_with_ties(row, top_k)
                    cand_scores[qi], cand_ids[qi] = self._merge(
                        cand_scores[qi], cand_ids[qi], row[keep], sub_ids[keep], top_k)
                logger.info("corpus chunk %d-%d: encoding %.1fs, exact top-k %.1fs", start, end,
                            t1 - t0, time.monotonic() - t1)
        return self._heaps(query_idx_to_id, cand_scores, cand_ids, top_k)

    def _rerank_documents(self, *, query_idx_to_id, query_embeddings, top_ranked, top_k,
                          task_metadata, hf_subset, hf_split, encode_kwargs, timer, **kwargs: Any):
        if self.task_corpus is None:
            raise ValueError("Corpus must be indexed before searching.")
        corpus = self.task_corpus
        id_to_row = {doc_id: i for i, doc_id in enumerate(corpus["id"])}
        needed = sorted({id_to_row[d] for qid in query_idx_to_id.values()
                         for d in top_ranked.get(qid, []) if d in id_to_row})
        with timer("Encoding corpus", split=hf_split, subset=hf_subset):
            sub = corpus.select(needed)
            emb = self.model.encode(
                create_dataloader(sub, task_metadata=task_metadata, prompt_type=PromptType.document,
                                  batch_size=encode_kwargs.get("batch_size", 32)),
                task_metadata=task_metadata, hf_split=hf_split, hf_subset=hf_subset,
                prompt_type=PromptType.document, **encode_kwargs)
        pos = {row: j for j, row in enumerate(needed)}
        cand_scores, cand_ids = [], []
        with timer("Computing similarity", split=hf_split, subset=hf_subset):
            for qi, qid in query_idx_to_id.items():
                docs = [d for d in top_ranked.get(qid, []) if d in id_to_row]
                if not docs:
                    cand_scores.append(np.empty(0))
                    cand_ids.append(np.empty(0, dtype=object))
                    continue
                rows = [pos[id_to_row[d]] for d in docs]
                row = self._to_numpy_scores(
                    self.model.similarity(query_embeddings[qi:qi + 1], emb[rows]))[0]
                keep = keep_top_k_with_ties(row, top_k)
                cand_scores.append(row[keep])
                cand_ids.append(np.asarray(docs, dtype=object)[keep])
        return self._heaps(query_idx_to_id, cand_scores, cand_ids, top_k)

    def _heaps(self, query_idx_to_id, cand_scores, cand_ids, top_k):
        self.last_depth_extended = sum(len(s) > top_k for s in cand_scores)
        return {qid: [(float(s), str(d)) for s, d in zip(cand_scores[qi], cand_ids[qi])]
                for qi, qid in query_idx_to_id.items()}
