"""Per-query tie-aware values of a system: from MTEB results (the adapter's
``<Task>_per_query.csv``; readers in :mod:`mteb_stratified.io.mteb_results`) or from a TREC run."""

from __future__ import annotations

import os

from ..core.per_query import PerQuery
from ..io.mteb_results import find_per_query, load_task_result, read_per_query_csv

__all__ = ["read_per_query_csv", "find_per_query", "per_query_from_run", "per_query_from_dicts",
           "load_results_json"]

#: A TaskResult JSON (kept under its earlier name).
load_results_json = load_task_result


def per_query_from_run(qrels, run_path, measure: str = "nDCG@10") -> PerQuery:
    """Evaluate a TREC run tie-aware (queries missing from the run score 0, ``trec_eval -c``)."""
    from ..io import read_run

    path = os.fspath(run_path)
    return per_query_from_dicts(qrels, read_run(path), measure, run_name=path)


def per_query_from_dicts(qrels, run: dict, measure: str = "nDCG@10", *,
                         run_name: str = "run") -> PerQuery:
    """The per-query values of a run dict evaluated tie-aware (missing queries score 0)."""
    from ..core import from_dicts
    from ..core.evaluate import evaluate_arrays

    arrays, left_out = from_dicts(qrels, run, missing="zero", qrels_name="qrels",
                                  run_name=run_name)
    res = evaluate_arrays(arrays, [measure], left_out=left_out)
    return PerQuery.from_result(res[measure])
