"""Quantized embeddings, scored the way production retrieval scores them.

The quantizer is sentence-transformers' :func:`quantize_embeddings`; the Hamming search is a FAISS
``IndexBinaryFlat``. Nothing here quantizes by hand or loops over documents in Python.

=================  ====================================================  ==================
regime             score s(q, d)                                         bytes per document
=================  ====================================================  ==================
``int8``           ⟨c(q), c(d)⟩, the integer dot product of the int8     ``dim``
                   codes ``c = floor((x − lo) / step) − 128`` (per
                   dimension, ``step = (hi − lo) / 255``), ``lo``/``hi``
                   the min/max of the *corpus* embeddings (calibration)
``binary``         ``dim − popcount(b(q) XOR b(d))``: the Hamming        ``ceil(dim / 8)``
                   similarity of the sign bits ``b(x) = [x > 0]``
``binary+rescore`` first stage: the top ``k·m`` by Hamming similarity     ``ceil(dim / 8)``
                   (FAISS's order inside a tie at the cut); then         (``+ dim`` with
                   ⟨q, 2·b(d) − 1⟩ with the fp32 query (±1 documents),   int8 documents)
                   or ⟨q, x̂(d)⟩ with the dequantized int8 codes
                   ``x̂ = lo + (c + 128)·step`` (``rescore_docs="int8"``)
=================  ====================================================  ==================

``k`` is the deepest cutoff evaluated (100) and ``m`` the rescore multiplier (default 2, as in
sentence-transformers' ``semantic_search_faiss``). Rescoring is the analogue of High-Precision
Scoring: the cheap representation stays, only the final scoring runs in fp32.

A dimension that is not a multiple of 8 is padded with zero bits by ``np.packbits`` (what
sentence-transformers does); the padding bits are 0 in queries and documents alike, so they
never add to a Hamming distance, and the similarity is taken against the real ``dim``.

Integer scores are exact: an int8 dot product is at most ``dim · 128²`` in magnitude, which a
float32 product holds exactly up to 2²⁴ (``dim ≤ 1024``); larger ``dim`` use float64. The codes
are sentence-transformers' (``floor``, clipped to [0, 255], minus 128), so a query outside the
corpus's range gets the end code of that dimension.

Embeddings must be finite: a NaN would quantize to an arbitrary code (and poison an int8
dimension's range), so it is refused, as is an empty matrix.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...core.errors import InputError
from .regimes import DEFAULT_RESCORE_MULTIPLIER, RESCORE_DOCS

__all__ = ["QUANTIZATIONS", "RESCORE_DOCS", "DEFAULT_RESCORE_MULTIPLIER", "MIN_CALIBRATION",
           "RESCORE_DEPTH", "QuantizedScores", "calibration_ranges", "int8_codes",
           "binary_codes", "dequantize_int8", "BinaryIndex", "int8_scores", "rescore",
           "bytes_per_document", "check_rescore_multiplier", "quantized_scores",
           "rescore_vectors", "resample_cut", "cut_draws", "DEFAULT_CUT_DRAWS",
           "first_stage_rescore", "cut_tied_share", "DOC_BLOCK", "as_embeddings"]

#: The quantizations of the regimes (sentence-transformers' precision names).
QUANTIZATIONS = ("int8", "ubinary")
#: Fewer calibration embeddings than this give unstable int8 ranges (sentence-transformers warns
#: below the same number).
MIN_CALIBRATION = 100
#: k of the first stage's ``k·m``: the deepest cutoff the precision sweep evaluates (R@100).
RESCORE_DEPTH = 100
#: Random tie orders at a rescore's first-stage cut that the sweep draws (see :func:`cut_draws`).
DEFAULT_CUT_DRAWS = 20


def _st_quantize():
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:
        try:  # sentence-transformers < 5.2
            from sentence_transformers.quantization import quantize_embeddings
        except ImportError:
            from ..._optional import install_hint

            raise InputError("quantized regimes need sentence-transformers",
                             fix=install_hint("precision")) from None
    return quantize_embeddings


def _faiss():
    try:
        import faiss
    except ImportError:
        from ..._optional import install_hint

        raise InputError("the binary regimes search with FAISS, which is not installed",
                         fix=install_hint("precision") + " (faiss-cpu)") from None
    return faiss


def as_embeddings(x, what: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 (n ≥ 1, dim ≥ 1) matrix of finite values."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise InputError(f"{what} must be a non-empty (n, dim) matrix, got shape {a.shape}",
                         fix="pass one embedding per row, at least one row")
    bad = ~np.isfinite(a)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        raise InputError(f"{what}: {int(bad.sum())} non-finite values (NaN or inf) in "
                         f"{len(rows)} rows, the first at row {int(rows[0])}",
                         fix="check the model's output (an fp16 overflow?); a NaN would "
                             "quantize to an arbitrary code")
    return a


def calibration_ranges(calibration) -> np.ndarray:
    """``(2, dim)``: the per-dimension min and max of the calibration embeddings (the ranges
    sentence-transformers computes); fewer than :data:`MIN_CALIBRATION` rows are refused."""
    c = as_embeddings(calibration, "the int8 calibration embeddings")
    if len(c) < MIN_CALIBRATION:
        raise InputError(
            f"int8 needs at least {MIN_CALIBRATION} calibration embeddings to set its per-"
            f"dimension ranges, and {len(c)} were given (the corpus embeddings)",
            fix=f"calibrate on a corpus of at least {MIN_CALIBRATION} documents, or use the "
                "binary regimes, which need no calibration")
    return np.vstack((c.min(axis=0), c.max(axis=0)))


def int8_codes(embeddings, ranges: np.ndarray) -> np.ndarray:
    """int8 codes of ``embeddings`` with the given ranges (sentence-transformers' quantizer)."""
    return _st_quantize()(as_embeddings(embeddings, "embeddings"), precision="int8", ranges=ranges)


def binary_codes(embeddings) -> np.ndarray:
    """Packed sign bits (``ubinary``), ``ceil(dim / 8)`` bytes a row, zero-padded."""
    return _st_quantize()(as_embeddings(embeddings, "embeddings"), precision="ubinary")


def dequantize_int8(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """``x̂ = lo + (c + 128)·step`` with ``step = (hi − lo) / 255`` (1 where hi = lo): the
    inverse sentence-transformers' rescoring applies to scalar-quantized candidates."""
    ranges = ranges.astype(np.float32, copy=False)
    steps = (ranges[1] - ranges[0]) / 255
    steps = np.where(steps == 0, 1, steps)
    return ((codes.astype(np.float64) + 128) * steps + ranges[0]).astype(np.float32)


class BinaryIndex:
    """A FAISS ``IndexBinaryFlat`` over packed codes; :meth:`search` returns Hamming
    similarities ``dim − distance`` (``dim`` the unpadded embedding dimension)."""

    def __init__(self, codes: np.ndarray, dim: int) -> None:
        faiss = _faiss()
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        self.dim = int(dim)
        self.index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
        self.index.add(codes)

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def search(self, query_codes: np.ndarray, k: int) -> tuple:
        """``(similarity, doc positions)``, (Q, k) each, best first."""
        if int(k) < 1:
            raise InputError(f"a search needs k ≥ 1, got {k}", fix="ask for at least one result")
        k = min(int(k), self.ntotal)
        dist, idx = self.index.search(np.ascontiguousarray(query_codes, dtype=np.uint8), k)
        return self.dim - dist.astype(np.int64), idx

    def top_k_with_ties(self, query_codes: np.ndarray, k: int) -> list:
        """Per query ``(positions, similarities)``: its top ``k`` plus every document tied with
        the k-th, best first. Searches ``2k``, ``4k``, … until the deepest result scores below
        the k-th (or the index is exhausted): never a full-corpus search for a short list."""
        k = min(int(k), self.ntotal)
        out: list = [None] * len(query_codes)
        todo, depth = np.arange(len(query_codes)), 2 * k
        while len(todo):
            depth = min(depth, self.ntotal)
            sims, pos = self.search(query_codes[todo], depth)
            done = (sims[:, -1] < sims[:, k - 1]) | (depth == self.ntotal)
            for i, s_row, p_row in zip(todo[done], sims[done], pos[done]):
                keep = s_row >= s_row[k - 1]
                out[i] = (p_row[keep], s_row[keep])
            todo, depth = todo[~done], depth * 2
        return out

    def all_scores(self, query_codes: np.ndarray) -> np.ndarray:
        """(Q, N) Hamming similarity of every query to every document, in index order."""
        sim, idx = self.search(query_codes, self.ntotal)
        out = np.empty_like(sim)
        np.put_along_axis(out, idx, sim, axis=1)
        return out


#: Documents converted to floats at a time by :func:`int8_scores` (a block, not the corpus).
DOC_BLOCK = 65536


def int8_scores(query_codes: np.ndarray, doc_codes: np.ndarray) -> np.ndarray:
    """(Q, N) exact integer dot products of int8 codes (as float64 values), computed in
    blocks of :data:`DOC_BLOCK` documents so the corpus is never held as floats."""
    dtype = np.float32 if query_codes.shape[1] * 128 * 128 <= 2 ** 24 else np.float64
    q = query_codes.astype(dtype)
    out = np.empty((len(q), len(doc_codes)), dtype=np.float64)
    for start in range(0, len(doc_codes), DOC_BLOCK):
        block = doc_codes[start:start + DOC_BLOCK].astype(dtype)
        out[:, start:start + len(block)] = q @ block.T
    return out


def rescore(queries: np.ndarray, candidates: np.ndarray, doc_vectors,
            block: int = 256) -> np.ndarray:
    """(Q, C) fp32 scores ⟨q, v(d)⟩ of each query's candidates (positions ``candidates[i]``);
    ``doc_vectors(positions)`` gives the (n, dim) float32 rescoring vectors (gathered for
    ``block`` queries at a time)."""
    q = queries.astype(np.float32)
    out = np.empty(candidates.shape, dtype=np.float32)
    for start in range(0, len(q), block):
        cand = candidates[start:start + block]
        flat = doc_vectors(cand.reshape(-1)).reshape(*cand.shape, -1)
        out[start:start + block] = np.matmul(flat, q[start:start + block, :, None])[:, :, 0]
    return out


def first_stage_rescore(index: "BinaryIndex", queries: np.ndarray, query_codes: np.ndarray,
                        doc_vectors, multiplier: int, depth: int = RESCORE_DEPTH) -> tuple:
    """``(positions, scores, cut)``: the binary first stage's top ``cut = min(depth·m, N)``
    (FAISS's order inside a tie at the cut) rescored with the fp32 queries
    (:func:`rescore`)."""
    cut = min(int(depth) * check_rescore_multiplier(multiplier), index.ntotal)
    _, positions = index.search(query_codes, cut)
    return positions, rescore(queries, positions, doc_vectors).astype(np.float64), cut


def cut_tied_share(index: "BinaryIndex", query_codes: np.ndarray, cut: int) -> float:
    """Share of queries whose ``cut``-th and ``cut+1``-th Hamming similarities are equal: the
    cut splits a tie group, and FAISS's order chose which of its documents go on."""
    if cut >= index.ntotal or len(query_codes) == 0:
        return 0.0
    sims, _ = index.search(query_codes, cut + 1)
    return float(np.mean(sims[:, cut - 1] == sims[:, cut]))


def rescore_vectors(documents: np.ndarray, rescore_docs: str, packed: "np.ndarray | None" = None):
    """``positions -> (n, dim) float32`` rescoring vectors of the documents: ±1 from their
    packed sign bits (``"binary"``; ``packed`` if already computed) or their dequantized int8
    codes (``"int8"``, ranges calibrated on ``documents``)."""
    dim = documents.shape[1]
    if rescore_docs == "int8":
        ranges = calibration_ranges(documents)
        vectors = dequantize_int8(int8_codes(documents, ranges), ranges)
        return lambda pos: vectors[pos]
    bits = binary_codes(documents) if packed is None else packed
    return lambda pos: np.unpackbits(bits[pos], axis=-1)[:, :dim].astype(np.float32) * 2 - 1


def bytes_per_document(quantization: "str | None", dim: int, *, model_bits: int = 32,
                       rescore_docs: "str | None" = None) -> int:
    """Stored bytes per document vector: ``dim·bits/8`` for float vectors, ``dim`` for int8,
    ``ceil(dim/8)`` for binary, plus ``dim`` when int8 vectors are kept for rescoring."""
    if quantization is None:
        return dim * model_bits // 8
    if quantization == "int8":
        return dim
    return -(-dim // 8) + (dim if rescore_docs == "int8" else 0)


def check_rescore_multiplier(value) -> int:
    """The rescore multiplier as an int ≥ 1, or an :class:`InputError` naming the valid range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"rescore multiplier {value!r} is not an integer ≥ 1",
                         fix=f"use an integer ≥ 1 (default {DEFAULT_RESCORE_MULTIPLIER}, "
                             "sentence-transformers' semantic_search_faiss default)")
    return int(value)


@dataclass(frozen=True)
class QuantizedScores:
    """What one quantized regime scored.

    ``scores``: (Q, C) scores of ``positions`` (C = N for full-corpus regimes, ``k·m`` after a
    rescore); ``first_stage``: (Q, N) scores the candidates were cut from (the Hamming scores of
    a rescore, else ``scores``) and ``first_stage_depth`` the cut (None: no cut);
    ``search_s`` the query-side time, the fastest of three runs (quantize the queries, search
    the top ``depth``, or the ``k·m`` of a rescore and rescore them; int8: the exhaustive
    integer score matrix, as a flat search computes it); ``index_s`` the
    document side (calibrate, quantize, add to the index); ``cut_tied_share``: share of queries
    whose ``k·m`` cut splits a tie group of Hamming scores (FAISS chose which of them go on).
    """

    positions: np.ndarray
    scores: np.ndarray
    first_stage: np.ndarray
    first_stage_depth: "int | None"
    search_s: float
    index_s: float
    bytes_per_document: int
    metadata: dict = field(default_factory=dict)


def _full(positions_n: int, q: int) -> np.ndarray:
    return np.broadcast_to(np.arange(positions_n), (q, positions_n))


def quantized_scores(queries, documents, quantization: str, *, rescore_docs: "str | None" = None,
                     rescore_multiplier: int = DEFAULT_RESCORE_MULTIPLIER,
                     depth: int = RESCORE_DEPTH) -> QuantizedScores:
    """Score fp32 ``queries`` (Q, dim) against ``documents`` (N, dim) under a quantization
    (``"int8"`` or ``"ubinary"``), with a binary first stage and a rescore when
    ``rescore_docs`` is given (see the module table)."""
    q = as_embeddings(queries, "query embeddings")
    d = as_embeddings(documents, "document embeddings")
    if q.shape[1] != d.shape[1]:
        raise InputError(f"query embeddings have {q.shape[1]} dimensions and document "
                         f"embeddings {d.shape[1]}", fix="encode both with one model")
    if quantization not in QUANTIZATIONS:
        raise InputError(f"unknown quantization {quantization!r}",
                         fix=f"use one of {', '.join(QUANTIZATIONS)}")
    if rescore_docs is not None and (quantization != "ubinary" or rescore_docs not in RESCORE_DOCS):
        raise InputError(f"rescoring {rescore_docs!r} documents after {quantization!r}",
                         fix=f"rescore a binary first stage with {' or '.join(RESCORE_DOCS)}")
    dim, nq = q.shape[1], len(q)
    meta = {"quantization": quantization, "quantizer": "sentence_transformers.quantize_embeddings"}
    _st_quantize(), _faiss()  # imported before any timing
    t0 = time.perf_counter()
    if quantization == "int8":
        ranges = calibration_ranges(d)
        doc_codes = int8_codes(d, ranges)
        t1 = time.perf_counter()
        search_s, scores = _best_of(lambda: int8_scores(int8_codes(q, ranges), doc_codes))
        meta.update(calibration="corpus", calibration_size=len(d))
        return QuantizedScores(_full(len(d), nq), scores, scores, None, search_s, t1 - t0,
                               bytes_per_document("int8", dim), meta)
    packed = binary_codes(d)
    index = BinaryIndex(packed, dim)
    doc_vectors = None if rescore_docs is None else rescore_vectors(d, rescore_docs, packed)
    index_s = time.perf_counter() - t0
    meta.update(search="faiss.IndexBinaryFlat", padded_bits=index.index.d - dim)
    q_codes = binary_codes(q)  # for the audit; the timed searches quantize the queries again
    hamming = index.all_scores(q_codes)  # every score, for the tie-aware audit
    if rescore_docs is None:  # timed: what a search costs, the top ``depth``
        search_s, _ = _best_of(lambda: index.search(binary_codes(q), depth))
        return QuantizedScores(_full(len(d), nq), hamming.astype(np.float64), hamming, None,
                               search_s, index_s, bytes_per_document("ubinary", dim), meta)
    m = check_rescore_multiplier(rescore_multiplier)
    search_s, (positions, scores, cut) = _best_of(lambda: first_stage_rescore(
        index, q, binary_codes(q), doc_vectors, m, depth))
    meta.update(rescore_docs=rescore_docs, rescore_multiplier=m, rescore_depth=depth,
                first_stage_depth=cut,
                cut_tied_share=cut_tied_share(index, q_codes, cut))
    return QuantizedScores(positions, scores, hamming, cut, search_s, index_s,
                           bytes_per_document("ubinary", dim, rescore_docs=rescore_docs), meta)


def _best_of(job, repeats: int = 3) -> tuple:
    """``(fastest wall seconds, result)`` of ``repeats`` runs of ``job()`` (a shared machine's
    noise lands on the slower runs)."""
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = job()
        best = min(best, time.perf_counter() - t)
    return best, out


def resample_cut(first_stage: np.ndarray, cut: int, rng: np.random.Generator) -> np.ndarray:
    """(Q, cut) document positions of a first stage cut at ``cut`` with its tie at the cut
    broken uniformly at random: every document scoring above the ``cut``-th score, plus a
    uniformly drawn subset of the documents tied with it that fills the remaining places."""
    n = first_stage.shape[1]
    out = np.empty((len(first_stage), cut), dtype=np.int64)
    for i, row in enumerate(first_stage):
        kth = np.partition(row, n - cut)[n - cut]
        above = np.flatnonzero(row > kth)
        tied = np.flatnonzero(row == kth)
        out[i, :len(above)] = above
        out[i, len(above):] = rng.choice(tied, cut - len(above), replace=False)
    return out


def cut_draws(queries, documents, first_stage: np.ndarray, cut: int, rescore_docs: str,
              draws: int, seed: int) -> list:
    """``draws`` rescored runs, each from a first stage whose tie at the cut is broken at
    random (:func:`resample_cut`, one ``numpy.random.default_rng(seed)`` for all): a list of
    ``(positions, scores)``. What the rescored figures would have been had FAISS picked other
    tied documents at the cut."""
    q = as_embeddings(queries, "query embeddings")
    d = as_embeddings(documents, "document embeddings")
    doc_vectors = rescore_vectors(d, rescore_docs)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        positions = resample_cut(first_stage, cut, rng)
        out.append((positions, rescore(q, positions, doc_vectors).astype(np.float64)))
    return out
