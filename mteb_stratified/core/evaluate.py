"""Tie-aware evaluation of padded ranking arrays: the numeric core's high-level entry point.

:func:`evaluate_arrays` sorts each row once, finds the tie groups, and reads every requested
measure (all cutoffs at once) as expected / min / max / oblivious values.  Rows are processed
in chunks so memory stays a small multiple of the input whatever the number of queries.

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

from .arrays import RankingArrays, from_matrices
from .errors import InputError
from .kernels import (arrange_within_groups, at_cutoffs, deterministic_contributions, discount,
                      expected_contributions, gain, top_order, trec_eval_key)
from .measures import Measure, parse_measures
from .results import EvaluationResult, MeasureResult
from .ties import tie_groups

__all__ = ["evaluate_arrays", "evaluate_matrices", "OBLIVIOUS_ORDERS", "IDEALS"]

OBLIVIOUS_ORDERS = ("trec_eval", "input")
IDEALS = ("qrels", "candidates")
_FAMILY = {"nDCG": "dcg", "P": "hits", "R": "hits", "AP": "ap", "RR": "rr", "Success": "first"}


def _family(m: Measure, relevance_level: float) -> tuple:
    kind = _FAMILY[m.name]
    if kind == "dcg":
        return (kind, m.param("dcg"))
    return (kind, m.param("rel", relevance_level))


def _finish(m: Measure, value: np.ndarray, ideal_dcg: dict, n_rel: dict, level: float) -> np.ndarray:
    """Measure values per row from the summed contributions (the normalisations)."""
    if m.name == "nDCG":
        ideal = ideal_dcg[(m.param("dcg"), m.cutoff)]
        return np.divide(value, ideal, out=np.zeros_like(value), where=ideal > 0)
    if m.name == "P":
        return value / m.cutoff
    if m.name in ("R", "AP"):
        r = n_rel[m.param("rel", level)]
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


def _chunk(arr: RankingArrays, measures: Sequence[Measure], level: float, oblivious: str,
           ideal: str, depth: int, cutoffs: Sequence, full: int) -> tuple[dict, np.ndarray, dict]:
    scores, grades = arr.scores, arr.grades
    q, n = scores.shape
    nc = arr.n_candidates
    rows = np.arange(q)
    families = {_family(m, level) for m in measures}
    needed = [c for c in cutoffs if c is not None]
    # Every value at cutoffs <= K is fixed by the first K positions and the whole tie group at
    # position K, so with only cut-off measures the kernels run on that prefix (width W <= n).
    k_max = max(needed) if needed and all(m.cutoff is not None for m in measures) else None
    levels = {m.param("rel", level) for m in measures if m.name != "nDCG"} | {level}
    n_rel = {lv: arr.n_relevant(lv) for lv in levels}

    if oblivious == "trec_eval":
        tb = arr.tiebreak if arr.tiebreak is not None else np.arange(n)[None, :]
        shift = np.uint64(32)
        order_obl = top_order(trec_eval_key(scores, tb), nc, k_max, same=lambda key: key >> shift)
        if scores.dtype == np.float32 or np.array_equal(scores.astype(np.float32), scores):
            order = order_obl  # exact ties coincide with float32 ties: one sort serves both
        else:
            order = top_order(-scores, nc, k_max)
    else:
        order = order_obl = top_order(-scores, nc, k_max)

    # Truncated tie: the last two retrieved scores are equal (their minimum occurs twice).
    no_padding = bool(np.all(nc == n))
    lowest = (scores if no_padding else np.where(np.arange(n) < nc[:, None], scores, np.inf)).min(
        axis=1, initial=np.inf)
    truncated = (nc == depth) & (nc >= 2) & ((scores == lowest[:, None]).sum(axis=1) >= 2)

    width = order.shape[1]
    judged_all = arr.judged_grades(k_max)
    disc = discount(max(n, judged_all.shape[1], 1))
    sorted_scores = np.take_along_axis(scores, order, axis=1)
    sorted_grades = np.take_along_axis(grades, order, axis=1)
    groups = tie_groups(sorted_scores)
    real = np.arange(width) < nc[:, None]

    d = disc[:width]
    arrangements = {"expected": expected_contributions(sorted_grades, groups, families, d)}
    if bool(np.any((groups.size > 1) & real)):
        worst, best = arrange_within_groups(sorted_grades, groups)
        arrangements["min"] = deterministic_contributions(worst, families, d)
        arrangements["max"] = deterministic_contributions(best, families, d)
    else:
        arrangements["min"] = arrangements["max"] = deterministic_contributions(
            sorted_grades, families, d)
    obl_grades = (sorted_grades if order_obl is order
                  else np.take_along_axis(grades, order_obl, axis=1))
    arrangements["oblivious"] = deterministic_contributions(obl_grades, families,
                                                            disc[:obl_grades.shape[1]])

    # Ideal DCG from all judgments (trec_eval) or from the candidates (TRM paper).
    if ideal == "qrels":
        judged = judged_all
    else:
        judged = -np.sort(-np.where(np.arange(n) < nc[:, None], grades, -np.inf), axis=1)
    dcgs = {dcg for kind, dcg in families if kind == "dcg"}
    ks = list({m.cutoff for m in measures})
    ideal_dcg = {}
    for dcg in dcgs:
        sums = at_cutoffs(gain(judged, dcg) * disc[:judged.shape[1]], ks, full)
        ideal_dcg.update({(dcg, k): sums[:, j] for j, k in enumerate(ks)})

    # Every measure at every cutoff: one contribution array per arrangement and family.
    fam_ks: dict = {}
    for m in measures:
        fam_ks.setdefault(_family(m, level), set()).add(m.cutoff)
    summed: dict = {}
    for name, contrib in arrangements.items():
        for fam, cut in fam_ks.items():
            cut = list(cut)
            sums = at_cutoffs(contrib[fam], cut, full)
            summed.update({(name, fam, k): sums[:, j] for j, k in enumerate(cut)})
    values = {m: {name: _finish(m, summed[(name, _family(m, level), m.cutoff)], ideal_dcg,
                                n_rel, level) for name in arrangements}
              for m in measures}

    # Tie audit: groups reaching into the top k (k <= width, so those groups are whole).
    starts = groups.is_start & real
    audit: dict = {}
    for k in needed:
        kk = np.minimum(k, nc)
        inside = np.arange(width) < kk[:, None]
        end = groups.end[rows, np.maximum(kk - 1, 0)] + 1 if width else np.zeros(q, np.int64)
        audit[k] = {"groups": (starts & inside).sum(axis=1),
                    "docs": np.where(kk > 0, end, 0),
                    "max_group": np.where(inside, groups.size, 0).max(axis=1, initial=0)}
    audit[None] = _whole_list_audit(scores, nc)
    audit["no_relevant"] = n_rel[level] == 0
    return values, truncated, audit


def evaluate_arrays(arrays: RankingArrays, measures, *, relevance_level: float = 1,
                    oblivious: str = "trec_eval", ideal: str = "qrels", depth: int | None = None,
                    tie_cutoffs: Iterable[int] | None = None, chunk_size: int = 256,
                    left_out: dict | None = None) -> EvaluationResult:
    """Tie-aware evaluation of :class:`RankingArrays`.

    Parameters
    ----------
    measures : measure names (``"nDCG@10"``) or :class:`Measure` objects.
    relevance_level : minimum grade of a relevant document (trec_eval ``-l``), default 1.
    oblivious : ``"trec_eval"`` (default) or ``"input"``: the tie-oblivious order reported.
    ideal : ``"qrels"`` (default, trec_eval) or ``"candidates"`` (TRM paper): source of IDCG.
    depth : the run's retrieval depth for the truncated-tie flag; default the longest list.
    tie_cutoffs : cutoffs of the tie audit; default the measures' cutoffs (plus the whole list).
    chunk_size : rows per vectorised chunk (memory/speed trade-off only; results are identical).
    """
    ms = parse_measures(measures)
    if oblivious not in OBLIVIOUS_ORDERS:
        raise InputError(f"oblivious={oblivious!r} is not a known order",
                         fix=f"use one of {', '.join(OBLIVIOUS_ORDERS)}")
    if ideal not in IDEALS:
        raise InputError(f"ideal={ideal!r} is not valid", fix=f"use one of {', '.join(IDEALS)}")
    if not np.isfinite(relevance_level):
        raise InputError(f"relevance_level={relevance_level!r} must be finite", fix="e.g. 1")
    if chunk_size < 1:
        raise InputError(f"chunk_size={chunk_size} must be ≥ 1")
    if depth is None:
        depth = int(arrays.n_candidates.max(initial=0))
    cutoffs = sorted({m.cutoff for m in ms if m.cutoff is not None} | set(tie_cutoffs or ()))
    cutoffs = [None] + cutoffs
    q = arrays.n_queries
    # "whole list" sums run over this many columns in every chunk (see at_cutoffs)
    full = max(arrays.scores.shape[1], 0 if arrays.qrels_grades is None
               else arrays.qrels_grades.shape[1])
    per: dict = {m: {k: np.empty(q) for k in ("expected", "min", "max", "oblivious")} for m in ms}
    truncated = np.zeros(q, dtype=bool)
    no_rel = np.zeros(q, dtype=bool)
    audit = {k: {"groups": np.zeros(q, np.int64), "docs": np.zeros(q, np.int64),
                 "max_group": np.zeros(q, np.int64)} for k in cutoffs}
    for lo in range(0, q, chunk_size):
        hi = min(q, lo + chunk_size)
        values, trunc, aud = _chunk(arrays.rows(lo, hi), ms, relevance_level, oblivious, ideal,
                                    depth, cutoffs, full)
        truncated[lo:hi] = trunc
        no_rel[lo:hi] = aud.pop("no_relevant")
        for m, vals in values.items():
            for key, v in vals.items():
                per[m][key][lo:hi] = v
        for k, a in aud.items():
            for key, v in a.items():
                audit[k][key][lo:hi] = v
    settings = {"relevance_level": relevance_level, "oblivious": oblivious, "ideal": ideal,
                "depth": depth, "queries_without_relevant": int(no_rel.sum())}
    results = {m: MeasureResult(m, arrays.qids, per[m]) for m in ms}
    return EvaluationResult(arrays.qids, results, truncated, audit, settings, dict(left_out or {}))


def evaluate_matrices(scores, relevance, measures, *, mask=None, doc_ids=None, qids=None,
                      **options) -> EvaluationResult:
    """Tie-aware evaluation of a scores matrix and a relevance matrix (one row per query).

    See :func:`mteb_stratified.core.arrays.from_matrices` for the inputs and
    :func:`evaluate_arrays` for the options.
    """
    arrays = from_matrices(scores, relevance, mask=mask, doc_ids=doc_ids, qids=qids)
    return evaluate_arrays(arrays, measures, **options)
