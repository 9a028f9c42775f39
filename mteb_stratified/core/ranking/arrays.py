"""The parsed form of a run joined with its qrels: padded per-query arrays.

Parse once into arrays and stay in arrays: every kernel works on the ``(Q, N)`` matrices of
:class:`RankingArrays`, one row per query, padded on the right.

Conventions (those of trec_eval):

* a candidate's *grade* is its qrels judgment; unjudged candidates and padding get ``-inf``, so
  they are never relevant whatever the relevance level, and their gain is 0;
* ``qrels_grades`` holds every judged grade of the query (retrieved or not), sorted descending
  and padded with ``-inf``; the ideal DCG and the number of relevant documents come from it;
* ``tiebreak`` is the rank of each candidate's doc id in byte-wise (UTF-8) order within its
  query, used by the tie-oblivious ``trec_eval`` order (score descending, then doc id
  descending);
* grades are finite and within ``±MAX_GRADE`` (1000) in every input (files, dicts, arrays), so
  exponential gains ``2**grade - 1`` and their sums stay finite.

:func:`from_blocks` builds the arrays from a run streamed one query at a time (the run files'
reader uses it); :func:`from_dicts` is the same join on in-memory dicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..options import MAX_GRADE

__all__ = ["RankingArrays", "from_dicts", "from_blocks", "from_matrices", "assemble", "Column",
           "pad_judged", "MAX_GRADE"]

PAD_GRADE = -np.inf
_CHECK_ENTRIES = 2 ** 18  # entries per block of the input checks (their temporaries stay small)



@dataclass(frozen=True, eq=False)
class RankingArrays:
    """Padded arrays for Q queries with at most N candidates each.

    Attributes
    ----------
    qids : tuple of str, the query ids (row order).
    scores : (Q, N) float64, the run's scores; padding is ``-inf``.
    grades : (Q, N) float64, qrels grade of each candidate; ``-inf`` when unjudged or padding.
    n_candidates : (Q,) int64, the number of real candidates in each row.
    tiebreak : (Q, N) int64 or None, doc-id rank for the ``trec_eval`` order (None: column order).
    qrels_grades : (Q, J) float64, all judged grades per query sorted descending, ``-inf``
        padded; None when the candidates are all the judgments (arrays input).
    """

    qids: tuple
    scores: np.ndarray
    grades: np.ndarray
    n_candidates: np.ndarray
    tiebreak: np.ndarray | None
    qrels_grades: np.ndarray | None

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    def rows(self, lo: int, hi: int) -> "RankingArrays":
        """The sub-batch of rows ``lo:hi``, trimmed to its own widest row."""
        width = int(self.n_candidates[lo:hi].max(initial=0))
        tb = None if self.tiebreak is None else self.tiebreak[lo:hi, :width]
        judged = None
        if self.qrels_grades is not None:
            judged = self.qrels_grades[lo:hi]
            judged = judged[:, :int(np.isfinite(judged).sum(axis=1).max(initial=0))]
        return RankingArrays(self.qids[lo:hi], self.scores[lo:hi, :width],
                             self.grades[lo:hi, :width], self.n_candidates[lo:hi], tb, judged)


def _check_finite(scores: np.ndarray, where: str) -> None:
    bad = ~np.isfinite(scores)
    if bad.any():
        raise InputError(f"{where} has {int(bad.sum())} NaN or infinite score(s)",
                         fix="replace NaN/inf scores by finite numbers (e.g. drop those "
                             "candidates, or use a large negative score) before evaluating")


def _judged(rel: Mapping, q: str, qrels_name: str) -> np.ndarray:
    """The judged grades of query ``q`` as floats, checked: numbers, finite, within MAX_GRADE."""
    try:
        grades = np.fromiter(rel.values(), dtype=np.float64, count=len(rel))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{qrels_name}: query {q!r} has a non-numeric relevance grade",
                         fix="relevance grades must be integers such as 0, 1, 2") from None
    _check_grades(grades, f"{qrels_name}: query {q!r}")
    return grades


def _check_grades(grades: np.ndarray, where: str) -> None:
    """Grades must be finite and within ``±MAX_GRADE`` (so ``2**grade`` gains stay finite)."""
    if grades.dtype.kind == "f" and not np.isfinite(grades).all():
        raise InputError(f"{where} has a NaN or infinite relevance grade",
                         fix="relevance grades must be finite integers such as 0, 1, 2")
    worst = max(abs(float(grades.max())), abs(float(grades.min()))) if grades.size else 0.0
    if worst > MAX_GRADE:
        raise InputError(f"{where} has relevance grade ±{worst:g}, beyond the bound "
                         f"±{MAX_GRADE}", fix=f"use integer grades within ±{MAX_GRADE}")


class Column:
    """A 1-D numpy buffer grown in place (``ndarray.resize`` reallocates: a large buffer is
    remapped, not copied), so a column being read is never held twice."""

    def __init__(self, dtype) -> None:
        self.data = np.empty(4096, dtype=dtype)
        self.n = 0

    def extend(self, values) -> None:
        end = self.n + len(values)
        if end > len(self.data):
            self.data.resize(max(end, len(self.data) + len(self.data) // 4), refcheck=False)
        self.data[self.n:end] = values
        self.n = end

    def reserve(self, size: int) -> None:
        """Room for ``size`` values in all, allocated and not written (untouched pages take no
        memory): a reader that can estimate its final size spares the growth's zero-filled
        reallocations."""
        if size > len(self.data):
            data = np.empty(size, dtype=self.data.dtype)
            data[:self.n] = self.data[:self.n]
            self.data = data

    def finish(self) -> np.ndarray:
        self.data.resize(self.n, refcheck=False)
        data, self.data = self.data, None
        return data


def _padded(flat: np.ndarray, mask: np.ndarray | None, shape: tuple, fill) -> np.ndarray:
    """``flat`` laid out row-wise in a ``shape`` array padded with ``fill`` (a view when full)."""
    if mask is None:
        return flat.reshape(shape)
    out = np.full(shape, fill, dtype=flat.dtype)
    out[mask] = flat
    return out


def pad_judged(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each query's judged grades (``counts[i]`` of ``values``, query after query) sorted
    descending and padded with ``-inf``: ``qrels_grades``."""
    row = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((-values, row))
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    out = np.full((len(counts), int(counts.max(initial=0))), PAD_GRADE)
    out[row, np.arange(len(values)) - offsets[row]] = values[order]
    return out


def assemble(qids: Sequence[str], sizes: np.ndarray, columns: list, judged: np.ndarray,
             counts: np.ndarray, only_run: list, only_qrels: list, missing: str,
             ) -> tuple["RankingArrays", dict]:
    """The arrays of a joined run, and what was left out, from the flat columns of its rows.

    ``columns`` are three :class:`Column` (scores, grades, tie-break) holding the candidates
    of the queries ``qids`` row after row (``sizes`` per query; 0 for the queries of
    ``missing="zero"``), ``judged``/``counts`` their judged grades.  One column at a time is
    laid out and its flat buffer freed, so peak memory stays near the size of the arrays (a
    view, no copy, when every query has the same number of candidates).
    """
    n = np.asarray(sizes, dtype=np.int64)
    shape = (len(qids), int(n.max(initial=0)))
    mask = None if n.min() == shape[1] else np.arange(shape[1]) < n[:, None]
    scores = columns.pop(0).finish()
    scores += 0.0  # -0.0 -> +0.0: equal scores, one key
    scores = _padded(scores, mask, shape, -np.inf)
    grades = _padded(columns.pop(0).finish(), mask, shape, PAD_GRADE)
    tiebreak = _padded(columns.pop(0).finish(), mask, shape, 0)
    arrays = RankingArrays(tuple(qids), scores, grades, n, tiebreak,
                           pad_judged(judged, np.asarray(counts, dtype=np.int64)))
    skipped = {"queries_only_in_run": only_run,
               "queries_only_in_qrels": only_qrels if missing == "skip" else [],
               "queries_scored_zero": only_qrels if missing == "zero" else []}
    return arrays, skipped


def from_blocks(qrels: Mapping[str, Mapping[str, float]], blocks: Iterable[tuple], *,
                missing: str = "skip", qrels_name: str = "qrels", run_name: str = "run",
                ) -> tuple["RankingArrays", dict]:
    """Join qrels with a run given as ``(qid, doc ids, scores)`` blocks, one per query.

    The streaming form of :func:`from_dicts`, with the same result: a run file is parsed one
    query at a time into growing numpy buffers, so the whole run never exists as Python
    objects.  ``scores`` is a float64 array aligned with the list of doc ids (the input order,
    ``oblivious="input"``); each query must come in one block, with distinct doc ids.
    The tie-break is the rank of each doc id within its query in byte-wise (UTF-8) order: only
    the order inside a row matters to the ``trec_eval`` order.
    """
    if missing not in ("skip", "zero"):
        raise InputError(f"missing={missing!r} is not valid", fix="use missing='skip' or 'zero'")
    # A query with an empty dict has no lines in a file: trec_eval does not know it.
    qrels = {q: d for q, d in qrels.items() if d}
    if not qrels:
        raise InputError(f"{qrels_name} is empty", fix="give at least one judgment")
    run_qids: dict = {}
    qids: list = []
    sizes: list = []
    judged: list = []
    columns = [Column(np.float64), Column(np.float64), Column(np.int64)]
    for q, docs, scores in blocks:
        if not len(docs):
            continue
        if q in run_qids:
            raise InputError(f"{run_name}: query {q!r} comes in two separate blocks",
                             fix="give each query's documents together")
        run_qids[q] = None
        rel = qrels.get(q)
        if rel is None:
            continue
        bad = ~np.isfinite(scores)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"{run_name}: score {scores[i]!r} of document {docs[i]!r} for query "
                             f"{q!r} is not finite ({int(bad.sum())} such score(s))",
                             fix="replace NaN/inf scores by finite numbers before evaluating")
        judged.append(_judged(rel, q, qrels_name))
        order = sorted(range(len(docs)), key=docs.__getitem__)
        ranks = np.empty(len(docs), dtype=np.int64)
        ranks[order] = np.arange(len(docs))
        columns[0].extend(scores)
        columns[1].extend([rel.get(d, PAD_GRADE) for d in docs])
        columns[2].extend(ranks)
        qids.append(q)
        sizes.append(len(docs))
    if not run_qids:
        raise InputError(f"{run_name} is empty", fix="give at least one retrieved document")
    if not qids:
        ex_run = ", ".join(map(repr, list(run_qids)[:3]))
        ex_qrels = ", ".join(map(repr, list(qrels)[:3]))
        raise InputError(f"{run_name} and {qrels_name} share no query id (run has {ex_run}...; "
                         f"qrels have {ex_qrels}...)",
                         fix="check that both files belong to the same dataset and split, and "
                             "that query ids are written the same way")
    only_run = sorted(q for q in run_qids if q not in qrels)
    only_qrels = sorted(q for q in qrels if q not in run_qids)
    if missing == "zero":
        for q in only_qrels:
            judged.append(_judged(qrels[q], q, qrels_name))
        qids += only_qrels
        sizes += [0] * len(only_qrels)

    judged_all = np.concatenate(judged) if judged else np.zeros(0)
    return assemble(qids, sizes, columns, judged_all, [len(j) for j in judged], only_run,
                    only_qrels, missing)


def from_dicts(qrels: Mapping[str, Mapping[str, float]], run: Mapping[str, Mapping[str, float]],
               *, missing: str = "skip", qrels_name: str = "qrels", run_name: str = "run",
               ) -> tuple["RankingArrays", dict]:
    """Join pytrec_eval-style dicts ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}``.

    Queries are those in both (as trec_eval); with ``missing="zero"`` (``trec_eval -c``) the
    qrels queries absent from the run are kept with no candidates, so they score 0.
    Returns the arrays and a dict of what was left out (``queries_only_in_run``,
    ``queries_only_in_qrels``), which the result reports: nothing is dropped silently.
    Grades must be finite and within ``±MAX_GRADE``; scores finite.
    """
    return from_blocks(qrels, _dict_blocks(run, run_name), missing=missing,
                       qrels_name=qrels_name, run_name=run_name)


def _dict_blocks(run: Mapping, run_name: str) -> Iterator[tuple]:
    """``(qid, doc ids, scores)`` of each query of a run dict."""
    for q, docs in run.items():
        try:
            scores = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
        except (TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"{run_name}: query {q!r} has a non-numeric score ({exc})",
                             fix="scores must be numbers") from None
        yield q, list(docs), scores


def from_matrices(scores, relevance, *, mask=None, doc_ids=None, qids=None) -> "RankingArrays":
    """Arrays input: ``scores`` and ``relevance`` of shape (Q, N), one row per query.

    ``relevance`` holds the graded qrels of each candidate and is also the query's full set of
    judgments (documents outside the row are unknown), so ``ideal="qrels"`` and
    ``ideal="candidates"`` agree here.  ``mask`` (bool, same shape) marks real candidates when
    rows have different lengths.  ``doc_ids`` (same shape, str or int) sets the ``trec_eval``
    tie-break; without it the column index stands for the doc id (higher column first among
    float32-equal scores).  Without ``mask`` the arrays are used as given (no copy for float32
    or float64 scores and any numeric relevance dtype).
    """
    s = np.asarray(scores)
    r = np.asarray(relevance)
    if s.dtype.kind not in "fiu" or r.dtype.kind not in "fiub":
        raise InputError(f"scores ({s.dtype}) and relevance ({r.dtype}) must be numeric arrays",
                         fix="convert them with np.asarray(..., dtype=float)")
    if s.dtype not in (np.float32, np.float64):
        s = s.astype(np.float64)
    if r.dtype.kind == "b":
        r = r.astype(np.int8)
    if s.ndim != 2 or r.shape != s.shape:
        raise InputError(f"scores {s.shape} and relevance {r.shape} must be 2-D arrays of one shape",
                         fix="pass one row per query and one column per candidate")
    if s.shape[0] == 0:
        raise InputError("scores has no rows", fix="pass at least one query")
    q = s.shape[0]
    names = tuple(map(str, range(q) if qids is None else qids))
    if len(names) != q:
        raise InputError(f"{len(names)} qids for {q} rows", fix="pass one qid per row")
    if len(set(names)) != q:
        raise InputError("qids lists a query twice", fix="each row needs a distinct qid")
    m = None if mask is None else np.asarray(mask, dtype=bool)
    if m is not None and m.shape != s.shape:
        raise InputError(f"mask {m.shape} must have the shape of scores {s.shape}")
    negative_zero = False
    for lo in range(0, q, max(1, _CHECK_ENTRIES // max(s.shape[1], 1))):  # bounded temporaries
        rows = slice(lo, lo + max(1, _CHECK_ENTRIES // max(s.shape[1], 1)))
        s_rows, r_rows = s[rows], r[rows]
        if m is not None:
            s_rows, r_rows = s_rows[m[rows]], r_rows[m[rows]]
        _check_finite(s_rows, "scores")
        _check_grades(r_rows, "relevance")
        negative_zero = negative_zero or bool(np.any(np.signbit(s_rows) & (s_rows == 0)))
    if negative_zero:
        s = s + 0.0  # -0.0 -> +0.0: equal scores, one key
    tb = None
    if doc_ids is not None:
        ids = np.asarray(doc_ids)
        if ids.shape != s.shape:
            raise InputError(f"doc_ids {ids.shape} must have the shape of scores {s.shape}")
        tb = _id_ranks(ids, np.ones(s.shape, dtype=bool) if m is None else m)
    if m is None:
        sizes = np.full(q, s.shape[1], dtype=np.int64)
        return RankingArrays(names, s, r, sizes, tb, None)
    # Move real candidates to the left of each row, keeping their order.
    order = np.argsort(~m, axis=1, kind="stable")
    m_sorted = np.take_along_axis(m, order, axis=1)
    sizes = m.sum(axis=1).astype(np.int64)
    out_s = np.where(m_sorted, np.take_along_axis(s, order, axis=1), -np.inf)
    out_g = np.where(m_sorted, np.take_along_axis(r, order, axis=1).astype(np.float64), PAD_GRADE)
    tb = np.where(m_sorted, order if tb is None else np.take_along_axis(tb, order, axis=1), 0)
    return RankingArrays(names, out_s, out_g, sizes, tb.astype(np.int64), None)


def _id_ranks(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rank of each doc id in byte-wise string order (ints compare as their decimal strings)."""
    out = np.zeros(ids.shape, dtype=np.int64)
    for i in range(ids.shape[0]):
        row = [str(x) for x in ids[i][mask[i]]]
        if len(set(row)) != len(row):
            raise InputError(f"doc_ids row {i} lists a document twice",
                             fix="each candidate of a query needs a distinct id")
        ranks = {d: j for j, d in enumerate(sorted(row))}
        out[i][mask[i]] = [ranks[d] for d in row]
    return out
