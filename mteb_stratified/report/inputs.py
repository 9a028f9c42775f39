"""Read per-query tie-aware values: the adapter's ``<Task>_per_query.csv``, or a TREC run."""

from __future__ import annotations

import csv
import json
import math
import os

from ..core import InputError

__all__ = ["read_per_query_csv", "find_per_query", "per_query_from_run", "load_results_json"]

_KEYS = ("expected", "min", "max", "oblivious")


def read_per_query_csv(path, measure: str = "nDCG@10", *, split: str | None = None,
                       subset: str | None = None) -> dict:
    """``{key: {qid: value}}`` (expected/min/max/oblivious/bias) of one measure from a CSV with
    columns ``hf_subset, hf_split, qid, measure, expected, min, max, oblivious, ...``."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("per-query file not found", source=path,
                         fix="pass the <Task>_per_query.csv written next to the predictions")
    out = {k: {} for k in _KEYS}
    measures = set()
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        need = {"qid", "measure", *_KEYS}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise InputError(f"not a per-query CSV (needs columns {sorted(need)})", source=path,
                             fix="use the <Task>_per_query.csv of a StratifiedNFCorpus run")
        for line, row in enumerate(reader, start=2):
            measures.add(row["measure"])
            if row["measure"] != measure:
                continue
            if split is not None and row.get("hf_split", split) != split:
                continue
            if subset is not None and row.get("hf_subset", subset) != subset:
                continue
            q = row["qid"]
            if q in out["expected"]:
                raise InputError(f"query {q!r} listed twice for {measure}", source=path,
                                 line=line, fix="pass --split/--subset to pick one evaluation")
            for k in _KEYS:
                try:
                    v = float(row[k])
                except ValueError:
                    raise InputError(f"non-numeric {k} {row[k]!r}", source=path, line=line,
                                     fix="regenerate the per-query file") from None
                if not math.isfinite(v):
                    raise InputError(f"non-finite {k}", source=path, line=line,
                                     fix="regenerate the per-query file")
                out[k][q] = v
    if not out["expected"]:
        raise InputError(f"no rows for measure {measure!r} (has: {', '.join(sorted(measures))})",
                         source=path, fix="pick one of the listed measures with --measure")
    out["bias"] = {q: out["oblivious"][q] - v for q, v in out["expected"].items()}
    return out


def load_results_json(path) -> dict:
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read results file ({exc.strerror})", source=path,
                         fix="pass an MTEB results JSON file") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg})", source=path, line=exc.lineno,
                         fix="pass an MTEB results JSON file") from None
    if not isinstance(data, dict) or "scores" not in data or "task_name" not in data:
        raise InputError("not an MTEB results file (no task_name/scores)", source=path,
                         fix="pass <Task>.json from an `mteb run` results folder")
    return data


def find_per_query(results_path, task_name: str) -> str:
    """The per-query CSV next to a results JSON (``<Task>_per_query.csv``)."""
    folder = os.path.dirname(os.path.abspath(os.fspath(results_path)))
    for name in (f"{task_name}_per_query.csv",):
        cand = os.path.join(folder, name)
        if os.path.exists(cand):
            return cand
    raise InputError(f"no {task_name}_per_query.csv next to the results file",
                     source=os.fspath(results_path),
                     fix="stratify: pass --per-query PATH; report: pass the per-query CSV "
                         "itself (it is written next to the predictions with "
                         "--prediction-folder)")


def per_query_from_run(qrels, run_path, measure: str = "nDCG@10") -> dict:
    """Evaluate a TREC run tie-aware (queries missing from the run score 0, ``trec_eval -c``)."""
    from ..api import evaluate
    res = evaluate(qrels, os.fspath(run_path), [measure], missing="zero")
    m = res[measure]
    out = {k: dict(zip(res.queries, m.values[k].tolist())) for k in _KEYS}
    out["bias"] = {q: out["oblivious"][q] - v for q, v in out["expected"].items()}
    return out
