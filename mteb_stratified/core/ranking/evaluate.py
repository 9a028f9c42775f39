"""Tie-aware evaluation of padded ranking arrays: the numeric core's high-level entry point.

:func:`evaluate_arrays` selects each row's top window once, sorts only that window, and walks
its tie groups once to read every requested measure (all cutoffs at once) as expected / min /
max / oblivious values: in C one row at a time (:mod:`mteb_stratified.core.ranking.walk`), or with
numpy over chunks of rows, so memory stays a small multiple of the input.

Conventions (trec_eval's unless stated):

* a document is relevant when its grade ≥ ``relevance_level`` (per-measure ``rel=`` overrides);
* nDCG uses the graded gain (linear by default) and ``IDCG@k`` from *all* judged documents of the
  query (``ideal="qrels"``).  ``ideal="candidates"`` takes the ideal ranking of the retrieved
  candidates only, the convention of the TRM paper (Yang et al., 2026), which inflates nDCG when
  relevant documents were not retrieved;
* a query with no relevant document scores 0 on R, AP (``R = 0``) and RR/P/Success (nothing
  relevant retrieved); nDCG is 0 when ``IDCG = 0``.  Such queries stay in the mean, as in
  trec_eval, and are counted in the result settings (``queries_without_relevant``);
* ``oblivious="trec_eval"``: float32 score descending, then doc id descending (byte order), what
  pytrec_eval, ir_measures and MTEB report; ``"input"``: the given order among equal scores;
* a query's *truncated tie*: its list is at the run's depth (``depth``, default the longest
  list) and its last ≥ 2 documents share one score, so documents with that score may have been
  cut; its expectation is exact only over what was retrieved.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .arrays import RankingArrays, from_matrices, pad_judged
from ..errors import InputError
from .kernels import GAIN_KERNEL, at_cutoffs, discount, gain, top_window, trec_eval_sort_key
from .measures import Measure, parse_measures
from ..options import IDEALS, OBLIVIOUS_ORDERS
from .results import ARRANGEMENT_KEYS, EvaluationResult, MeasureResult
from .walk import KERNELS, compiled_available, compiled_evaluate, numpy_walk

__all__ = ["evaluate_arrays", "evaluate_matrices", "OBLIVIOUS_ORDERS", "IDEALS"]

#: Entries (rows × candidates) per chunk: the large temporaries stay a few MiB.
CHUNK_ENTRIES = 2 ** 18


def _family(m: Measure, relevance_level: float) -> tuple:
    """The ``(kernel, variant)`` pair of a measure (its family's kernel and the value of the
    parameter that selects the kernel's variant)."""
    family = m.family
    return (family.kernel, m.param(family.variant, relevance_level))


class _Plan:
    """Everything about the measures that does not depend on the rows, set up once."""

    def __init__(self, measures: Sequence[Measure], level: float, tie_cutoffs) -> None:
        self.families = list(dict.fromkeys(_family(m, level) for m in measures))
        whole = any(m.cutoff is None for m in measures)
        self.cuts = sorted({m.cutoff for m in measures if m.cutoff is not None})
        self.audit_cuts = sorted(set(self.cuts) | set(tie_cutoffs or ()))
        # every value at cutoffs <= K is fixed by the first K positions and the tie group at K
        self.reach = None if whole or not self.audit_cuts else max(self.audit_cuts)
        self.levels = sorted({m.param("rel", level) for m in measures
                              if m.family.variant == "rel"} | {level})
        self.dcgs = sorted({fam[1] for fam in self.families if fam[0] == GAIN_KERNEL})
        cut_list = self.cuts + ([None] if whole else [])
        self.slot = {m: (self.families.index(_family(m, level)), cut_list.index(m.cutoff))
                     for m in measures}
        self.n_cuts = len(cut_list)
        self.ideal_cuts = self.cuts + [None]
        # each measure's normalisation for the compiled path (numpy: _finish)
        self.norms = [self._norm(m, level) for m in measures]

    def _norm(self, m: Measure, level: float) -> tuple:
        """``(family index, cut index, norm, slot, k)`` of a measure for the compiled walk:
        ``slot`` indexes the ideal DCG (norm ``"ideal"``) or the level (``"rel"``)."""
        f, c = self.slot[m]
        norm = m.family.norm
        slot = 0
        if norm == "ideal":
            slot = (self.dcgs.index(m.param("dcg")) * len(self.ideal_cuts)
                    + self.ideal_cuts.index(m.cutoff))
        elif norm == "rel":
            slot = self.levels.index(m.param("rel", level))
        return (f, c, norm, slot, m.cutoff if norm == "k" else 0)

    def walk_cuts(self, width: int) -> list:
        """The cutoffs handed to the walk: the whole list is the window's width."""
        return self.cuts + ([max(width, 1)] if self.n_cuts > len(self.cuts) else [])


def _finish(m: Measure, value: np.ndarray, ideal_dcg: dict, n_rel: dict, level: float) -> np.ndarray:
    """Measure values from the summed contributions (the normalisations; the compiled path
    does the same divisions, see :data:`mteb_stratified.core.ranking.walk.NORMS`); ``value`` is
    (4, Q): the four arrangements at once."""
    norm = m.family.norm
    if norm == "ideal":
        ideal = np.broadcast_to(ideal_dcg[(m.param("dcg"), m.cutoff)], value.shape)
        return np.divide(value, ideal, out=np.zeros_like(value), where=ideal > 0)
    if norm == "k":
        return value / m.cutoff
    if norm == "rel":
        r = np.broadcast_to(n_rel[m.param("rel", level)], value.shape)
        return np.divide(value, r, out=np.zeros_like(value), where=r > 0)
    return value


def _whole_list_audit(scores: np.ndarray, n_cand: np.ndarray) -> dict:
    """Number of tie groups and the largest group over each whole list, from a value sort.

    Run lengths of equal values come from the flat positions where a row's sorted values change
    (``np.add/maximum.reduceat`` per row), never from a per-row Python loop.
    """
    q, n = scores.shape
    if n == 0:
        zeros = np.zeros(q, dtype=np.int64)
        return {"groups": zeros, "docs": zeros.copy(), "max_group": zeros.copy()}
    srt = np.sort(scores, axis=1)  # ascending: the -inf padding comes first
    change = np.empty(srt.shape, dtype=bool)
    change[:, 0] = True
    np.not_equal(srt[:, 1:], srt[:, :-1], out=change[:, 1:])
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, srt.size))
    real = srt.ravel()[starts] != -np.inf
    lengths = np.where(real, lengths, 0)
    first = np.searchsorted(starts, np.arange(q) * n)
    return {"groups": np.add.reduceat(real.astype(np.int64), first),
            "docs": n_cand.copy(),
            "max_group": np.maximum.reduceat(lengths, first)}


def _best_grades(grades: np.ndarray) -> np.ndarray:
    """The positive grades of each row sorted descending, ``-inf`` padded: the top of the ideal
    ranking (grades ≤ 0 have no gain), from one comparison over the row and a sort of the few
    positive entries."""
    rows, cols = np.nonzero(grades > 0)
    return pad_judged(grades[rows, cols].astype(np.float64),
                      np.bincount(rows, minlength=grades.shape[0]))


def _truncated(scores: np.ndarray, nc: np.ndarray, depth: int) -> np.ndarray:
    """The truncated-tie flag: the list is at the run's depth and its lowest score occurs at
    least twice (its last two retrieved documents are tied)."""
    q, n = scores.shape
    flag = (nc == depth) & (nc >= 2)
    if flag.any():
        sub = scores if flag.all() else scores[flag]
        sub_n = nc[flag]
        if not np.all(sub_n == n):
            sub = np.where(np.arange(n) < sub_n[:, None], sub, np.inf)
        lowest = sub.min(axis=1)
        flag[flag] = np.count_nonzero(sub == lowest[:, None], axis=1) >= 2
    return flag


def _ordered(arr: RankingArrays, plan: _Plan, oblivious: str) -> tuple:
    """The window of each row in the exact order and in the tie-oblivious order.

    Returns the sorted scores (float64), the grades in both orders (the same array when the
    orders coincide) and the window size of each row.
    """
    scores, grades, nc = arr.scores, arr.grades, arr.n_candidates
    q, n = scores.shape
    k = plan.reach
    s32 = scores if scores.dtype == np.float32 else scores.astype(np.float32)
    if k is None or k >= n:
        win_s, win_g, m = scores, grades, nc
        win_tb = arr.tiebreak if arr.tiebreak is not None else np.arange(n)[None, :]
        win_32 = s32
    else:
        rows, cols, pos, m = top_window(s32, nc, k)
        w = int(m.max(initial=0))
        flat = rows * n + cols
        dst = rows * w + pos
        win_s = np.full((q, w), -np.inf, dtype=scores.dtype)
        win_s.ravel()[dst] = scores.ravel()[flat]
        win_32 = win_s if win_s.dtype == np.float32 else win_s.astype(np.float32)
        win_g = np.full((q, w), -np.inf)
        win_g.ravel()[dst] = grades.ravel()[flat]
        win_tb = np.zeros((q, w), dtype=np.int64)
        win_tb.ravel()[dst] = cols if arr.tiebreak is None else arr.tiebreak.ravel()[flat]
    w = win_s.shape[1]
    win_64 = win_s.astype(np.float64, copy=False)
    if oblivious == "trec_eval":
        key = trec_eval_sort_key(win_32, np.broadcast_to(win_tb, win_s.shape))
        if not np.all(m == w):  # padding last, whatever a real score rounds to in float32
            key[np.arange(w) >= m[:, None]] = np.uint64(0xFFFFFFFFFFFFFFFF)
        order_obl = np.argsort(key, axis=1, kind="stable")  # equal keys: by column, as in C
        if win_s.dtype == np.float32 or np.array_equal(win_32, win_64):
            order = order_obl  # exact ties coincide with float32 ties: one sort serves both
        else:
            order = np.argsort(-win_64, axis=1, kind="stable")
    else:
        order = order_obl = np.argsort(-win_64, axis=1, kind="stable")
    s_sorted = np.take_along_axis(win_64, order, axis=1)
    g_sorted = np.take_along_axis(win_g, order, axis=1).astype(np.float64, copy=False)
    g_obl = g_sorted if order_obl is order else np.take_along_axis(
        win_g, order_obl, axis=1).astype(np.float64, copy=False)
    return s_sorted, g_sorted, g_obl, m


def _normalisers(arr: RankingArrays, plan: _Plan, ideal: str, disc: np.ndarray) -> tuple:
    """``{level: R}`` and ``{(dcg, k): ideal DCG@k}`` of a chunk (the numpy path)."""
    if ideal == "qrels" and arr.qrels_grades is not None:
        judged = arr.qrels_grades
    else:
        judged = _best_grades(arr.grades)
    n_rel = {}
    for lv in plan.levels:
        if arr.qrels_grades is not None:
            n_rel[lv] = np.count_nonzero(arr.qrels_grades >= lv, axis=1).astype(np.float64)
        elif lv > 0:
            n_rel[lv] = np.count_nonzero(judged >= lv, axis=1).astype(np.float64)
        else:  # padding is -inf, never relevant; compared in float64 whatever the grades' type
            n_rel[lv] = np.count_nonzero(arr.grades >= np.float64(lv), axis=1).astype(np.float64)
    ks = plan.ideal_cuts
    ideal_dcg = {}
    for dcg in plan.dcgs:
        sums = at_cutoffs(gain(judged, dcg) * disc[:judged.shape[1]], ks)
        ideal_dcg.update({(dcg, k): sums[:, j] for j, k in enumerate(ks)})
    return n_rel, ideal_dcg


def _chunk_numpy(arr: RankingArrays, plan: _Plan, oblivious: str, ideal: str, depth: int,
                 disc: np.ndarray) -> tuple:
    """One chunk of rows through the numpy path: window, sort, walk, normalisers."""
    s_sorted, g_sorted, g_obl, m = _ordered(arr, plan, oblivious)
    sums, audit = numpy_walk(s_sorted, g_sorted, g_obl, m, disc, plan.families,
                             plan.walk_cuts(s_sorted.shape[1]), plan.audit_cuts)
    truncated = _truncated(arr.scores, arr.n_candidates, depth)
    return (sums, audit, truncated) + _normalisers(arr, plan, ideal, disc)


def evaluate_arrays(arrays: RankingArrays, measures, *, relevance_level: float = 1,
                    oblivious: str = "trec_eval", ideal: str = "qrels", depth: int | None = None,
                    tie_cutoffs: Iterable[int] | None = None, whole_list_audit: bool = False,
                    chunk_size: int | None = None, kernel: str = "auto",
                    left_out: dict | None = None) -> EvaluationResult:
    """Tie-aware evaluation of :class:`RankingArrays`.

    Each row goes through one selection of its top window (the first k positions and the tie
    group at k, k the largest cutoff), one sort of that window, and one walk over its tie
    groups that yields every measure at every cutoff in the four arrangements
    (:mod:`mteb_stratified.core.ranking.walk`: compiled, or numpy over chunks of rows).

    Parameters
    ----------
    measures : measure names (``"nDCG@10"``) or :class:`Measure` objects.
    relevance_level : minimum grade of a relevant document (trec_eval ``-l``), default 1.
    oblivious : ``"trec_eval"`` (default) or ``"input"``: the tie-oblivious order reported.
    ideal : ``"qrels"`` (default, trec_eval) or ``"candidates"`` (TRM paper): source of IDCG.
    depth : the run's retrieval depth for the truncated-tie flag; default the longest list.
    tie_cutoffs : cutoffs of the tie audit; default the measures' cutoffs.
    whole_list_audit : also audit ties over whole lists (``tie_stats()``, the distinct scores
        per query): a sort of every whole row, so off unless asked for.
    chunk_size : rows per chunk of the numpy path; default as many as make about
        :data:`CHUNK_ENTRIES` entries (memory/speed trade-off only; results are identical).
        The compiled path takes one row at a time and needs no chunks.
    kernel : ``"auto"`` (the compiled path when it was built, else numpy), ``"compiled"`` or
        ``"numpy"``; both give the same values (the oblivious ones bit for bit).
    """
    ms = parse_measures(measures)
    if oblivious not in OBLIVIOUS_ORDERS:
        raise InputError(f"oblivious={oblivious!r} is not a known order",
                         fix=f"use one of {', '.join(OBLIVIOUS_ORDERS)}")
    if ideal not in IDEALS:
        raise InputError(f"ideal={ideal!r} is not valid", fix=f"use one of {', '.join(IDEALS)}")
    if not np.isfinite(relevance_level):
        raise InputError(f"relevance_level={relevance_level!r} must be finite", fix="e.g. 1")
    if chunk_size is not None and chunk_size < 1:
        raise InputError(f"chunk_size={chunk_size} must be ≥ 1")
    if kernel not in KERNELS:
        raise InputError(f"kernel={kernel!r} is not valid", fix=f"use one of {', '.join(KERNELS)}")
    if depth is None:
        depth = int(arrays.n_candidates.max(initial=0))
    try:
        whole = float(depth) == int(depth) >= 0
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise InputError(f"depth={depth!r} must be a whole number ≥ 0", fix="e.g. depth=100")
    depth = int(depth)
    plan = _Plan(ms, relevance_level, tie_cutoffs)
    q = arrays.n_queries
    n = arrays.scores.shape[1]
    judged_width = 0 if arrays.qrels_grades is None else arrays.qrels_grades.shape[1]
    disc = discount(max(n, judged_width, 1))
    if kernel == "compiled" or (kernel == "auto" and compiled_available()):
        values, audit, truncated, n_rel = compiled_evaluate(
            arrays, plan.families, plan.walk_cuts(n), plan.audit_cuts, plan.levels, plan.dcgs,
            plan.ideal_cuts, plan.norms, oblivious=oblivious, ideal=ideal, depth=depth,
            disc=disc)
        per = dict(zip(ms, values))
        no_rel = n_rel[relevance_level] == 0
    else:
        if chunk_size is None:
            chunk_size = max(1, CHUNK_ENTRIES // max(n, 1))
        per = {m: np.empty((4, q)) for m in ms}
        truncated = np.zeros(q, dtype=bool)
        no_rel = np.zeros(q, dtype=bool)
        audit = np.zeros((3, len(plan.audit_cuts), q), dtype=np.int64)
        for lo in range(0, q, chunk_size):
            hi = min(q, lo + chunk_size)
            sums, aud, trunc, n_rel, ideal_dcg = _chunk_numpy(arrays.rows(lo, hi), plan,
                                                              oblivious, ideal, depth, disc)
            for m, (f, c) in plan.slot.items():
                per[m][:, lo:hi] = _finish(m, sums[f, c], ideal_dcg, n_rel, relevance_level)
            truncated[lo:hi] = trunc
            no_rel[lo:hi] = n_rel[relevance_level] == 0
            audit[:, :, lo:hi] = aud
    tie_audit = {k: {"groups": audit[0, j], "docs": audit[1, j], "max_group": audit[2, j]}
                 for j, k in enumerate(plan.audit_cuts)}
    if whole_list_audit:
        tie_audit[None] = _whole_list_audit(arrays.scores, arrays.n_candidates)
    settings = {"relevance_level": relevance_level, "oblivious": oblivious, "ideal": ideal,
                "depth": depth, "queries_without_relevant": int(no_rel.sum())}
    results = {m: MeasureResult(m, arrays.qids, dict(zip(ARRANGEMENT_KEYS, per[m]))) for m in ms}
    return EvaluationResult(arrays.qids, results, truncated, tie_audit, settings,
                            dict(left_out or {}))


def evaluate_matrices(scores, relevance, measures, *, mask=None, doc_ids=None, qids=None,
                      **options) -> EvaluationResult:
    """Tie-aware evaluation of a scores matrix and a relevance matrix (one row per query).

    See :func:`mteb_stratified.core.ranking.arrays.from_matrices` for the inputs and
    :func:`evaluate_arrays` for the options.
    """
    arrays = from_matrices(scores, relevance, mask=mask, doc_ids=doc_ids, qids=qids)
    return evaluate_arrays(arrays, measures, **options)
