"""The documented high-level API: ``mteb_stratified.evaluate(qrels, run, measures)``."""

from __future__ import annotations

import os

import numpy as np

from .core import InputError, evaluate_arrays, from_dicts
from .core.options import DEFAULT_MEASURES
from .core.ranking.results import EvaluationResult
from .io.files import read_judgments, read_run, read_run_arrays

__all__ = ["evaluate", "DEFAULT_MEASURES"]



def _load(obj, reader, name: str):
    if isinstance(obj, (str, os.PathLike)):
        return reader(obj), os.fspath(obj)
    if isinstance(obj, dict):
        return obj, name
    raise InputError(f"{name} must be a file path or a dict {{qid: {{docid: value}}}}, "
                     f"got {type(obj).__name__}",
                     fix="for numpy arrays call mteb_stratified.evaluate_matrices(scores, relevance, ...)")


def evaluate(qrels, run, measures=DEFAULT_MEASURES, *, relevance_level: float = 1,
             oblivious: str = "trec_eval", ideal: str = "qrels", missing: str = "skip",
             depth: int | None = None, tie_cutoffs=None,
             whole_list_audit: bool = False) -> EvaluationResult:
    """Tie-aware evaluation of a run against qrels.

    Parameters
    ----------
    qrels : ``{qid: {docid: grade}}`` or a path (TREC qrels, BEIR qrels TSV, JSON; gzip ok).
    run : ``{qid: {docid: score}}`` or a path (TREC run, JSON; gzip ok).  A TREC run file is
        streamed into arrays one query at a time (peak memory near the arrays' size).
    measures : ir_measures-style names, default ``nDCG@10 RR@10 R@100 P@10 AP@100``.
    relevance_level : minimum grade of a relevant document (trec_eval ``-l``).
    oblivious : tie-oblivious order to report: ``"trec_eval"`` (score desc, doc id desc) or
        ``"input"`` (the order given).
    ideal : ``"qrels"`` (IDCG from all judged documents, trec_eval) or ``"candidates"``.
    missing : ``"skip"`` (queries in both, as trec_eval) or ``"zero"`` (``trec_eval -c``).
    depth, tie_cutoffs, whole_list_audit : see :func:`mteb_stratified.core.evaluate_arrays`.

    Returns
    -------
    EvaluationResult
        :class:`~mteb_stratified.core.EvaluationResult`: ``result["nDCG@10"].expected``,
        ``.min``, ``.max``, ``.oblivious``, ``.range``, ``.bias``; per-query values;
        ``to_dict()``; ``to_dataframe()``.

    Examples
    --------
    >>> res = evaluate({"q": {"a": 1}}, {"q": {"a": 0.5, "b": 0.5}}, ["RR@10"])
    >>> res["RR@10"].expected, res["RR@10"].min, res["RR@10"].max
    (0.75, 0.5, 1.0)
    """
    # a qrels file is read as columns (Judgments, a Mapping) that the run join reads directly
    qrels_d, qname = _load(qrels, read_judgments, "qrels")
    if isinstance(run, (str, os.PathLike)):  # streamed: the run never exists as dicts
        arrays, left_out = read_run_arrays(run, qrels_d, missing=missing, qrels_name=qname)
    else:
        run_d, rname = _load(run, read_run, "run")
        arrays, left_out = from_dicts(qrels_d, run_d, missing=missing, qrels_name=qname,
                                      run_name=rname)
    if tie_cutoffs is not None:
        tie_cutoffs = [int(k) for k in np.atleast_1d(tie_cutoffs)]
    return evaluate_arrays(arrays, measures, relevance_level=relevance_level, oblivious=oblivious,
                           ideal=ideal, depth=depth, tie_cutoffs=tie_cutoffs,
                           whole_list_audit=whole_list_audit, left_out=left_out)

