"""The parsed form of a run joined with its qrels: padded per-query arrays.

Parse once into arrays and stay in arrays: every kernel works on the ``(Q, N)`` matrices of
:class:`RankingArrays`, one row per query, padded on the right.

Conventions (those of trec_eval):

* a candidate's *grade* is its qrels judgment; unjudged candidates and padding get ``-inf``, so
  they are never relevant whatever the relevance level, and their gain is 0;
* ``qrels_grades`` holds every judged grade of the query (retrieved or not), sorted descending
  and padded with ``-inf``; the ideal DCG and the number of relevant documents come from it;
* ``tiebreak`` is the rank of each candidate's doc id in byte-wise (UTF-8) order, used by the
  tie-oblivious ``trec_eval`` order (score descending, then doc id descending).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .errors import InputError

__all__ = ["RankingArrays", "from_dicts", "from_matrices"]

PAD_GRADE = -np.inf


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

    def judged_grades(self, top: int | None = None) -> np.ndarray:
        """All judged grades per query sorted descending (``-inf`` padded); the ``top`` best only."""
        if self.qrels_grades is not None:
            return self.qrels_grades if top is None else self.qrels_grades[:, :top]
        grades = self.grades.astype(np.float64)
        real = np.arange(grades.shape[1]) < self.n_candidates[:, None]
        neg = np.where(real, -grades, np.inf)
        if top is not None and top < neg.shape[1]:
            neg = np.partition(neg, top - 1, axis=1)[:, :top]
        return -np.sort(neg, axis=1)

    def n_relevant(self, level: float) -> np.ndarray:
        """Judged documents with grade ≥ ``level`` per query (trec_eval's num_rel)."""
        if self.qrels_grades is not None:
            return (self.qrels_grades >= level).sum(axis=1).astype(np.float64)
        real = np.arange(self.grades.shape[1]) < self.n_candidates[:, None]
        return ((self.grades >= level) & real).sum(axis=1).astype(np.float64)


def _check_finite(scores: np.ndarray, where: str) -> None:
    bad = ~np.isfinite(scores)
    if bad.any():
        raise InputError(f"{where} has {int(bad.sum())} NaN or infinite score(s)",
                         fix="replace NaN/inf scores by finite numbers (e.g. drop those "
                             "candidates, or use a large negative score) before evaluating")


def _pad_qrels(judged: Sequence[np.ndarray]) -> np.ndarray:
    width = max((len(j) for j in judged), default=0)
    out = np.full((len(judged), width), PAD_GRADE)
    for i, j in enumerate(judged):
        out[i, :len(j)] = -np.sort(-j)
    return out


def from_dicts(qrels: Mapping[str, Mapping[str, float]], run: Mapping[str, Mapping[str, float]],
               *, missing: str = "skip", qrels_name: str = "qrels", run_name: str = "run",
               ) -> tuple["RankingArrays", dict]:
    """Join pytrec_eval-style dicts ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}``.

    Queries are those in both (as trec_eval); with ``missing="zero"`` (``trec_eval -c``) the
    qrels queries absent from the run are kept with no candidates, so they score 0.
    Returns the arrays and a dict of what was left out (``queries_only_in_run``,
    ``queries_only_in_qrels``), which the result reports: nothing is dropped silently.
    """
    if missing not in ("skip", "zero"):
        raise InputError(f"missing={missing!r} is not valid", fix="use missing='skip' or 'zero'")
    # A query with an empty dict has no lines in a file: trec_eval does not know it.
    qrels = {q: d for q, d in qrels.items() if d}
    run = {q: d for q, d in run.items() if d}
    if not qrels:
        raise InputError(f"{qrels_name} is empty", fix="give at least one judgment")
    if not run:
        raise InputError(f"{run_name} is empty", fix="give at least one retrieved document")
    shared = [q for q in run if q in qrels]
    if not shared:
        ex_run = ", ".join(map(repr, list(run)[:3]))
        ex_qrels = ", ".join(map(repr, list(qrels)[:3]))
        raise InputError(f"{run_name} and {qrels_name} share no query id (run has {ex_run}...; "
                         f"qrels have {ex_qrels}...)",
                         fix="check that both files belong to the same dataset and split, and "
                             "that query ids are written the same way")
    only_run = sorted(q for q in run if q not in qrels)
    only_qrels = sorted(q for q in qrels if q not in run)
    qids = list(shared) + (only_qrels if missing == "zero" else [])

    sizes = np.array([len(run.get(q, ())) for q in qids], dtype=np.int64)
    width = int(sizes.max(initial=0))
    total = int(sizes.sum())
    flat_scores = np.empty(total, dtype=np.float64)
    flat_grades = np.empty(total, dtype=np.float64)
    flat_docs: list[str] = []
    judged: list[np.ndarray] = []
    pos = 0
    for q in qids:
        docs = run.get(q, {})
        rel = qrels[q]
        n = len(docs)
        try:
            flat_scores[pos:pos + n] = np.fromiter(docs.values(), dtype=np.float64, count=n)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{run_name}: query {q!r} has a non-numeric score ({exc})",
                             fix="scores must be numbers") from None
        try:
            judged.append(np.fromiter(rel.values(), dtype=np.float64, count=len(rel)))
        except (TypeError, ValueError):
            raise InputError(f"{qrels_name}: query {q!r} has a non-numeric relevance grade",
                             fix="relevance grades must be integers such as 0, 1, 2") from None
        flat_grades[pos:pos + n] = [rel.get(d, PAD_GRADE) for d in docs]
        flat_docs.extend(docs)
        pos += n
    bad = ~np.isfinite(flat_scores)
    if bad.any():
        i = int(np.argmax(bad))
        row = int(np.searchsorted(np.cumsum(sizes), i, side="right"))
        raise InputError(f"{run_name}: score {flat_scores[i]!r} of document {flat_docs[i]!r} for "
                         f"query {qids[row]!r} is not finite ({int(bad.sum())} such score(s))",
                         fix="replace NaN/inf scores by finite numbers before evaluating")
    for q, grades in zip(qids, judged):
        if not np.isfinite(grades).all():
            raise InputError(f"{qrels_name}: query {q!r} has a NaN or infinite relevance grade",
                             fix="relevance grades must be finite integers such as 0, 1, 2")

    # Byte-wise doc id order (UTF-8 byte order == code point order == Python str order).
    ranks = {d: i for i, d in enumerate(sorted(set(flat_docs)))}
    flat_rank = np.fromiter((ranks[d] for d in flat_docs), dtype=np.int64, count=total)

    scores = np.full((len(qids), width), -np.inf)
    grades = np.full((len(qids), width), PAD_GRADE)
    tiebreak = np.zeros((len(qids), width), dtype=np.int64)
    mask = np.arange(width) < sizes[:, None]
    scores[mask] = flat_scores + 0.0  # -0.0 -> +0.0: equal scores, one key
    grades[mask] = flat_grades
    tiebreak[mask] = flat_rank
    arrays = RankingArrays(tuple(qids), scores, grades, sizes, tiebreak, _pad_qrels(judged))
    skipped = {"queries_only_in_run": only_run,
               "queries_only_in_qrels": only_qrels if missing == "skip" else [],
               "queries_scored_zero": only_qrels if missing == "zero" else []}
    return arrays, skipped


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
    names = tuple(str(i) for i in range(q)) if qids is None else tuple(str(x) for x in qids)
    if len(names) != q:
        raise InputError(f"{len(names)} qids for {q} rows", fix="pass one qid per row")
    if len(set(names)) != q:
        raise InputError("qids lists a query twice", fix="each row needs a distinct qid")
    m = None if mask is None else np.asarray(mask, dtype=bool)
    if m is not None and m.shape != s.shape:
        raise InputError(f"mask {m.shape} must have the shape of scores {s.shape}")
    _check_finite(s if m is None else s[m], "scores")
    if r.dtype.kind == "f" and not np.isfinite(r if m is None else r[m]).all():
        raise InputError("relevance has NaN or infinite grades", fix="use finite integer grades")
    if np.any((s == 0) & np.signbit(s)):
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
