"""Per-query tie-aware values of a system: from MTEB results (the adapter's
``<Task>_per_query.csv``; readers in :mod:`mteb_stratified.io.mteb_results`) or from a TREC run;
:func:`collect_systems` locates and checks the systems a report is given."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..core import InputError
from ..core.ranking.per_query import PerQuery
from ..io.mteb_results import find_per_query, load_task_result, read_per_query_csv

__all__ = ["read_per_query_csv", "find_per_query", "per_query_from_run", "per_query_from_dicts",
           "load_results_json", "SystemInput", "collect_systems", "split_system_spec"]

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
    from ..core.ranking.evaluate import evaluate_arrays

    arrays, left_out = from_dicts(qrels, run, missing="zero", qrels_name="qrels",
                                  run_name=run_name)
    res = evaluate_arrays(arrays, [measure], left_out=left_out)
    return PerQuery.from_result(res[measure])


@dataclass(frozen=True)
class SystemInput:
    """One system of a report, located and checked, nothing heavy loaded yet: its ``name``,
    ``load(qrels)`` returning its per-query values (a TREC run is evaluated then), the
    ``source`` file they come from (named when its queries are unknown) and the quick-run
    ``subset`` a results file records (None for a CSV or a run)."""

    name: str
    load: Callable
    source: str
    subset: str | None = None


def split_system_spec(spec: str) -> tuple[str | None, str]:
    """``(name or None, path)`` of ``[NAME=]PATH`` (a path that holds ``=`` and exists is
    taken whole)."""
    name, sep, path = spec.partition("=")
    if not sep or (not os.path.exists(path) and os.path.exists(spec)):
        return None, spec
    if not name:
        raise InputError(f"empty system name in {spec!r}", fix="write NAME=PATH, or just PATH")
    return name, path


def _plain_name(path: str) -> str:
    base = os.path.basename(os.path.normpath(path))
    for ext in (".gz", ".trec", ".run", ".txt", ".tsv", ".csv"):
        if base.lower().endswith(ext) and len(base) > len(ext):
            base = base[: -len(ext)]
    return base


def collect_systems(specs, *, task: str, measure: str, split: str,
                    prediction_folder: str | None = None,
                    skip_unreadable: bool = False) -> list[SystemInput]:
    """Every system of ``specs`` (``[NAME=]PATH``: an mteb output folder, one system per
    result of ``task`` in it, named by model; a TaskResult file; a per-query CSV; a TREC run)
    located and checked, as :class:`SystemInput`; two systems of one name are refused."""
    from ..io.mteb_results import (distinct_inputs, expand_results, read_values,
                                   recorded_query_set, resolve_inputs)

    systems = []
    for spec in specs:
        name, path = split_system_spec(spec)
        if not os.path.exists(path):
            raise InputError("file or folder not found", source=path,
                             fix="give an mteb output folder, a TaskResult JSON, a per-query "
                                 "CSV or a TREC run")
        low = path.lower()
        if os.path.isdir(path) or low.endswith(".json"):
            items = resolve_inputs(distinct_inputs(  # a copy once; two runs refused
                expand_results([path], task, skip_unreadable=skip_unreadable)),
                prediction_folder=prediction_folder)
            if name is not None and len(items) > 1:
                raise InputError(f"{path} holds {len(items)} results of {task} "
                                 f"({', '.join(i.model for i in items)}), so one name cannot "
                                 "stand for them", fix="name each TaskResult file: NAME=FILE, "
                                                       "or leave NAME= out (model names)")
            for item in items:
                vals = read_values(item, measure, split=split)
                systems.append(SystemInput(name or item.model, _given(vals), item.per_query,
                                           recorded_query_set(item.data, split).subset))
        elif low.endswith(".csv"):
            vals = read_per_query_csv(path, measure, split=split)
            systems.append(SystemInput(name or _plain_name(path), _given(vals), path))
        else:
            from ..io import read_run

            run = read_run(path)  # parse errors surface here, before the structure loads
            systems.append(SystemInput(name or _plain_name(path), _run_loader(run, path, measure),
                                       path))
    names = [s.name for s in systems]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"two systems named {dup[0]!r}", fix="name them: NAME=PATH")
    return systems


def _run_loader(run: dict, path: str, measure: str) -> Callable:
    def load(qrels):
        return per_query_from_dicts(qrels, run, measure, run_name=path)
    return load


def _given(values) -> Callable:
    def load(qrels):
        return values
    return load
