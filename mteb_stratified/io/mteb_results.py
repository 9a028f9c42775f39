"""MTEB output folders: TaskResult files, the model they belong to, and our per-query CSV.

Plain json/csv, no mteb import.  ``mteb run --output-folder OUT --prediction-folder PRED``
writes::

    OUT/results/<org__model>/<revision>/<Task>.json   TaskResult (+ model_meta.json beside it)
    PRED/<Task>_predictions.json                      mteb's saved run (model name, revision)
    PRED/<Task>_per_query.csv                         ours: per-query tie-aware values
    PRED/<Task>_strata_<split>.json                   ours: the strata block (bundled strata)

The per-query CSV has one row per (model, revision, subset, split, query, measure); several
models can share one prediction folder.  :func:`find_per_query` locates the CSV of a TaskResult
file: ``--prediction-folder`` when given, else next to the results file, else up to four
folders deep under the output folder ``OUT`` (outside ``OUT/results``); the CSV must hold rows
of the results file's model and revision.

Nothing read from a file chooses a path: a ``task_name`` that is not a plain name is refused
(:func:`check_task_name`), and a per-query CSV found by the search must lie inside the folder
it was found in (a link leading elsewhere is refused).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, InputWarning
from ..core.ranking.per_query import PerQuery
from ..core.ranking.results import ARRANGEMENT_KEYS
from ..core.query_set import QuerySet, base_task_name
from ..naming import canonical_name
from .files import open_text, read_bytes, utf8_error
from .numbers import parse_number

__all__ = ["query_set_of", "recorded_query_set", "evaluated_query_set", "load_task_result",
           "is_own_file", "task_result_files", "model_of",
           "output_folder_of", "find_per_query", "read_per_query_csv", "per_query_name",
           "check_task_name", "check_matches_results", "PER_QUERY_KEYS", "ResultsInput",
           "expand_results", "resolve_inputs", "read_values", "copy_target",
           "distinct_results", "distinct_inputs", "input_list"]

#: The tie-aware values of one measure and query in the per-query CSV.
PER_QUERY_KEYS = ARRANGEMENT_KEYS

_OWN_NAMES = {"model_meta.json"}
_OWN_SUFFIXES = ("_predictions.json",)
_OWN_PATTERN = re.compile(r".+_strata_[^/]+\.json")
#: How deep under the output folder the per-query CSV is looked for.
_SEARCH_DEPTH = 4
#: A task name that can be part of a file name: no separator, no ``..``, no drive.
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
#: Slack of the min <= expected/oblivious <= max check (values are written as floats).
_ORDER_TOLERANCE = 1e-9


def check_task_name(name, *, source=None) -> str:
    """``name`` when it is a plain task name (it becomes part of a file name), else an
    :class:`InputError` naming ``source`` (the results file it came from)."""
    if not isinstance(name, str) or not _TASK_NAME.fullmatch(name):
        raise InputError(f"task_name {name!r} is not a plain task name (letters, digits, "
                         "'_', '-', '.'; no path)", source=None if source is None else str(source),
                         fix="give a TaskResult file written by mteb run (its task_name is "
                             "the task's name, e.g. StratifiedNFCorpus)")
    return name


def per_query_name(task_name: str, *, source=None) -> str:
    """``<Task>_per_query.csv``; a task name that is not a plain name is refused
    (:func:`check_task_name`), so the name never points into another folder."""
    return f"{check_task_name(task_name, source=source)}_per_query.csv"


def load_task_result(path) -> dict:
    """A TaskResult JSON (``task_name`` a string, ``scores`` ``{split: [entry, ...]}`` with
    dict entries), or a clear :class:`InputError`.  A UTF-8 BOM is skipped."""
    path = os.fspath(path)
    fix_json = ("delete the file and re-run the task (mteb run ... --overwrite-strategy "
                "always), or restore it from a backup")
    if os.path.isdir(path):
        raise InputError("is a folder, not a results file", source=path,
                         fix="give <Task>.json, or the mteb --output-folder where a command "
                             "takes a folder")
    if not os.path.lexists(path):
        raise InputError("results file not found", source=path,
                         fix="give <Task>.json of an mteb run (OUT/results/<model>/<revision>/)")
    data = read_bytes(path)  # a regular file only; a gzip bomb refused
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    if not text.strip():
        raise InputError("empty results file", source=path, line=1, fix=fix_json)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"corrupt results file: not valid JSON ({exc.msg}, column {exc.colno})",
                         source=path, line=exc.lineno, fix=fix_json) from None
    except RecursionError:
        raise InputError("corrupt results file: nested too deeply", source=path,
                         fix=fix_json) from None
    if not isinstance(data, dict) or "scores" not in data or "task_name" not in data:
        raise InputError("not an MTEB TaskResult file (no 'task_name'/'scores' keys)",
                         source=path,
                         fix="give <Task>.json from the results/ folder that `mteb run "
                             "--output-folder` wrote")
    problem = _task_result_problem(data)
    if problem:
        key, message = problem
        raise InputError(f"corrupt results file: {message}", source=path,
                         line=_line_of(text, key), fix=fix_json)
    return data


def _task_result_problem(data: dict) -> tuple[str, str] | None:
    """(key at fault, what is wrong) when the TaskResult layout is broken, else None."""
    if not isinstance(data["task_name"], str) or not data["task_name"]:
        return "task_name", f"task_name is {type(data['task_name']).__name__}, not a task name"
    scores = data["scores"]
    if not isinstance(scores, dict):
        return "scores", f"scores is {type(scores).__name__}, not {{split: [score entries]}}"
    for split, entries in scores.items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            return split, f"scores[{split!r}] is not a list of score entries ({{metric: value}})"
    return None


def _line_of(text: str, key: str) -> int | None:
    """The line of the first ``"key":`` in a JSON text (None when not found)."""
    at = text.find(json.dumps(key) + ":")
    if at < 0:
        at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def is_own_file(path) -> bool:
    """JSON files an MTEB run or this package writes beside TaskResults (not TaskResults)."""
    name = Path(path).name
    return (name in _OWN_NAMES or name.endswith(_OWN_SUFFIXES)
            or bool(_OWN_PATTERN.fullmatch(name)))


def task_result_files(root, *, skip_unreadable: bool = False) -> list[Path]:
    """Candidate TaskResult files under an output folder: ``root/results/**.json`` when that
    folder exists (mteb's layout; prediction folders are then not read), else
    ``root/**.json``; the files of :func:`is_own_file` are left out, and links to folders are
    not followed.

    A folder that cannot be listed, a link to nowhere (or a loop), and a results file or
    ``model_meta.json`` that cannot be opened or is not a regular file are never passed over
    in silence: an :class:`InputError` lists each with its reason, or, with
    ``skip_unreadable``, each is named in a warning and left out."""
    root = Path(root).expanduser()
    if not root.exists():
        raise InputError(f"results folder not found: {root}",
                         fix="give the --output-folder of `mteb run` (default: ./results)")
    if not root.is_dir():
        raise InputError(f"{root} is a file, not a results folder",
                         fix="give the folder that `mteb run --output-folder` wrote")
    base = root / "results" if (root / "results").is_dir() else root
    files, unreadable = _walk_results(str(base))
    if unreadable and not skip_unreadable:
        shown = "; ".join(f"{path} ({why})" for path, why in unreadable[:10])
        more = f"; and {len(unreadable) - 10} more" if len(unreadable) > 10 else ""
        raise InputError(f"{len(unreadable)} folder(s) or file(s) under {root} could not be "
                         f"read, so their results would be missing: {shown}{more}",
                         fix="make them readable (e.g. chmod -R u+rX FOLDER), remove a broken "
                             "link, or pass --skip-unreadable to leave them out with a warning")
    for path, why in unreadable:
        warnings.warn(InputWarning(f"left out (--skip-unreadable): cannot be read ({why})",
                                   source=path), stacklevel=2)
    return sorted(Path(p) for p in files)


def _walk_results(base: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``(files, unreadable)`` under ``base`` for :func:`task_result_files`: the ``*.json``
    files that are not :func:`is_own_file`, and ``(path, reason)`` of whatever could not be
    read (``os.scandir`` errors are collected, where ``Path.rglob`` swallowed them)."""
    files, unreadable, folders = [], [], [base]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            unreadable.append((folder, _reason(exc)))
            continue
        for entry in entries:
            link = False
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                    continue
                link = entry.is_symlink()
                if link:
                    os.stat(entry.path)  # a link to nowhere, or a loop
            except OSError as exc:
                why = _reason(exc)
                unreadable.append((entry.path, f"a broken link: {why}" if link else why))
                continue
            own = is_own_file(entry.name)
            if not entry.name.endswith(".json") or (own and entry.name not in _OWN_NAMES):
                continue  # a link to a folder, another file, a prediction file
            why = _open_problem(entry.path)  # model_meta.json too: it names the model
            if why is not None:
                unreadable.append((entry.path, why))
            elif not own:
                files.append(entry.path)
    return files, sorted(unreadable)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _open_problem(path: str) -> str | None:
    """Why the file at ``path`` cannot be read (it does not open, or it is not a regular
    file), else None; opened without blocking (a FIFO would block) and closed at once."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return _reason(exc)
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    return None if stat.S_ISREG(mode) else "not a regular file"


def model_of(path) -> tuple[str, str]:
    """(model name, revision) of a TaskResult file: its ``model_meta.json``, else the folder
    names ``<org__model>/<revision>/``."""
    path = Path(path)
    meta_path = path.parent / "model_meta.json"
    if meta_path.exists():
        try:
            meta = json.loads(read_bytes(meta_path).decode("utf-8"))
            return (str(meta.get("name") or path.parent.parent.name.replace("__", "/")),
                    str(meta.get("revision") or path.parent.name))
        except (InputError, OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError,
                RecursionError):
            pass
    return path.parent.parent.name.replace("__", "/"), path.parent.name


def output_folder_of(results_path) -> Path | None:
    """``OUT`` of ``OUT/results/<model>/<revision>/<Task>.json``, or None for another layout."""
    parts = Path(os.path.abspath(os.fspath(results_path))).parents
    for folder in list(parts)[:4]:
        if folder.name == "results":
            return folder.parent
    return None


def _csv_models(path: Path) -> set | None:
    """The (model, revision) pairs of a per-query CSV; None for a CSV without those columns
    (written before they existed: it may belong to any model)."""
    try:
        with open_text(path) as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "model" not in reader.fieldnames:
                return None
            return {(row.get("model") or "", row.get("revision") or "") for row in reader}
    except (InputError, OSError, UnicodeDecodeError, csv.Error):
        return None


def _candidates(folder: Path, name: str) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        depth = len(Path(dirpath).relative_to(folder).parts)
        if depth == 0 and "results" in dirnames:
            dirnames.remove("results")  # the TaskResults, never the prediction folder
        if depth >= _SEARCH_DEPTH:
            dirnames[:] = []
        dirnames.sort()
        if name in filenames:
            out.append(Path(dirpath) / name)
    return out


def _inside(folder: Path, name: str, source: Path) -> Path:
    """``folder / name``, refused when it resolves outside ``folder`` (a link elsewhere): a
    file the search finds is never read from another place."""
    path = folder / name
    if not path.resolve().is_relative_to(folder.resolve()):
        raise InputError(f"{path} leads outside {folder} (to {path.resolve()})", source=str(source),
                         fix="replace the link by the per-query CSV itself, or pass the CSV "
                             "with --per-query")
    return path


def find_per_query(results_path, task_name: str, *, model: str | None = None,
                   revision: str | None = None, prediction_folder=None) -> str:
    """The per-query CSV of a TaskResult file (see the module docstring for the search).

    ``model``/``revision`` default to :func:`model_of` the results file; a CSV with rows of
    other models only is never taken.
    """
    results_path = Path(os.fspath(results_path))
    name = per_query_name(task_name, source=results_path)
    if model is None:
        model, revision = model_of(results_path)
    want = (model, revision)
    if prediction_folder is not None:
        cand = _inside(Path(prediction_folder).expanduser(), name, results_path)
        if not cand.is_file():
            raise InputError(f"no {name} in the prediction folder {prediction_folder}",
                             source=str(results_path),
                             fix="give the --prediction-folder that `mteb run` wrote for this "
                                 "model, or re-run mteb with --prediction-folder DIR")
        models = _csv_models(cand)
        if models is not None and want not in models and ("", "") not in models:
            raise InputError(f"{cand} holds no rows of model {model} (revision {revision})",
                             source=str(results_path),
                             fix="give the prediction folder of this model's run")
        return str(cand)
    def matches(found):
        models = {p: _csv_models(p) for p in found}
        ok = [p for p in found if models[p] is None or want in models[p] or ("", "") in models[p]]
        return ok, [p for p in ok if models[p] is not None and want in models[p]]

    searched = [results_path.parent]
    beside = _inside(results_path.parent, name, results_path)
    matching, exact = matches([beside] if beside.is_file() else [])
    out = output_folder_of(results_path)
    if not matching and out is not None:  # nothing of this model beside it: search OUT
        searched.append(out)
        matching, exact = matches([_inside(out, str(p.relative_to(out)), results_path)
                                   for p in _candidates(out, name)])
    if len(exact) == 1 or (len(matching) == 1 and not exact):
        return str(exact[0] if exact else matching[0])
    if len(exact) > 1 or len(matching) > 1:
        listed = ", ".join(str(p) for p in (exact or matching))
        raise InputError(f"several {name} files could belong to model {model}: {listed}",
                         source=str(results_path),
                         fix="pass --prediction-folder DIR (the one mteb wrote for this run)")
    where = " and ".join(str(p) for p in searched)
    raise InputError(f"no {name} with rows of model {model} (revision {revision}) in {where}",
                     source=str(results_path),
                     fix="run mteb with --prediction-folder DIR (the per-query values are "
                         "written there), then pass --prediction-folder DIR if it lies "
                         "outside the --output-folder; or pass the CSV with --per-query")


def read_per_query_csv(path, measure: str = "nDCG@10", *, split: str | None = None,
                       subset: str | None = None, model: str | None = None,
                       revision: str | None = None) -> PerQuery:
    """The :class:`~mteb_stratified.core.ranking.per_query.PerQuery` (expected/min/max/oblivious,
    and bias derived; also a mapping ``{key: {qid: value}}``) of one measure from a per-query CSV
    (columns ``[model, revision,] hf_subset, hf_split, qid, measure, expected, min, max,
    oblivious, ...``), restricted to ``model``/``revision`` when the CSV records them.  A BOM
    is skipped; a short or long row, a non-finite or non-numeric value, an empty or repeated
    qid, or values out of order (not min <= expected, oblivious <= max) is an
    :class:`InputError` at its line, never a number taken on trust."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("per-query file not found", source=path,
                         fix="pass the <Task>_per_query.csv written into mteb's "
                             "--prediction-folder")
    out = {k: {} for k in PER_QUERY_KEYS}
    measures = set()
    models = set()
    want = canonical_name(measure)  # MRR@10 and RR@10 are one measure
    canon: dict = {}
    regen = "regenerate the per-query file (re-run the task with --prediction-folder)"

    def canon_of(name: str) -> str:
        if name not in canon:
            try:
                canon[name] = canonical_name(name)
            except InputError:
                canon[name] = name
        return canon[name]

    reader = None
    try:
        with open_text(path) as fh:  # a BOM is skipped; regular files, bounded lines
            reader = csv.DictReader(fh)
            need = {"qid", "measure", *PER_QUERY_KEYS}
            if not reader.fieldnames:
                raise InputError("empty per-query file (no header)", source=path, line=1,
                                 fix=regen)
            if not need <= set(reader.fieldnames):
                raise InputError(f"not a per-query CSV (needs columns {sorted(need)})",
                                 source=path, line=1,
                                 fix="use the <Task>_per_query.csv of a Stratified* task run")
            by_model = model is not None and "model" in reader.fieldnames
            for row in reader:
                line = reader.line_num
                if None in row or None in row.values():  # DictReader: extra / missing cells
                    n = (len(reader.fieldnames) + len(row.get(None) or ())
                         - sum(v is None for k, v in row.items() if k is not None))
                    raise InputError(f"row has {n} fields, the header has "
                                     f"{len(reader.fieldnames)}", source=path, line=line,
                                     fix=regen)
                measures.add(row["measure"])
                if by_model and row.get("model"):  # an empty model: written without one
                    models.add(row.get("model"))
                    if row.get("model") != model or (revision is not None
                                                     and row.get("revision") != revision):
                        continue
                if canon_of(row["measure"]) != want:
                    continue
                if split is not None and row.get("hf_split", split) != split:
                    continue
                if subset is not None and row.get("hf_subset", subset) != subset:
                    continue
                q = row["qid"]
                if not q:
                    raise InputError("empty qid", source=path, line=line, fix=regen)
                if q in out["expected"]:
                    raise InputError(f"query {q!r} listed twice for {measure}", source=path,
                                     line=line,
                                     fix="the file holds several evaluations (models, "
                                         "subsets or splits): pass --split, or give the "
                                         "TaskResult file or output folder instead of the CSV "
                                         "(its model then picks the rows)")
                for k, v in _row_values(row, q, path, line, regen).items():
                    out[k][q] = v
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    except csv.Error as exc:
        raise InputError(f"corrupt per-query CSV ({exc})", source=path,
                         line=reader.line_num + 1 if reader is not None else None,
                         fix=regen) from None
    except OSError as exc:
        raise InputError(f"cannot read the per-query file ({exc.strerror})", source=path,
                         fix="give the <Task>_per_query.csv file (not a folder) that the run "
                             "wrote") from None
    if not out["expected"]:
        raise _no_rows(path, measure, split, model, revision, models,
                       want in {canon_of(m) for m in measures}, measures)
    return PerQuery.from_mapping(out)  # bias derived there


def _row_values(row: dict, q: str, path: str, line: int, regen: str) -> dict:
    """One CSV row's values of :data:`PER_QUERY_KEYS` (the number grammar of every file), in
    order (min <= expected, oblivious <= max, within a rounding tolerance)."""
    vals = {k: parse_number(row[k], k, source=path, line=line, fix=regen)
            for k in PER_QUERY_KEYS}
    lo, hi = vals["min"] - _ORDER_TOLERANCE, vals["max"] + _ORDER_TOLERANCE
    if not (lo <= vals["expected"] <= hi and lo <= vals["oblivious"] <= hi):
        raise InputError(f"query {q!r}: min {vals['min']!r}, expected {vals['expected']!r}, "
                         f"oblivious {vals['oblivious']!r}, max {vals['max']!r} are not in "
                         "order (min <= expected, oblivious <= max)", source=path, line=line,
                         fix=regen)
    return vals


def _no_rows(path, measure, split, model, revision, models: set, has_measure: bool,
             measures: set) -> InputError:
    """Why a per-query CSV gave no row: another model's file, another measure, or another
    split (or revision)."""
    if model is not None and models and model not in models:
        return InputError(f"no rows of model {model} (has: {', '.join(sorted(models))})",
                          source=path, fix="give the per-query CSV of this model's run")
    if not has_measure:
        return InputError(f"no rows for measure {measure!r} (has: "
                          f"{', '.join(sorted(measures))})", source=path,
                          fix="pick one of the listed measures with --measure")
    return InputError(f"no rows for {measure!r} with split {split!r}"
                      + (f" and revision {revision!r}" if revision else ""), source=path,
                      fix="pass the --split the results were computed on, or the CSV of this "
                          "run")


def check_matches_results(values: dict, task_result: dict, score_key: str, *, split: str,
                          per_query_path: str, results_path: str, tolerance: float = 1e-6) -> None:
    """The per-query values must average to the TaskResult's ``<score_key>_expected`` (mteb
    rounds scores to 6 decimals): otherwise the CSV comes from another run (an earlier run of
    the same model, a query subset, another model in a shared prediction folder)."""
    entries = task_result.get("scores", {}).get(split) or []
    stored = [e.get(f"{score_key}_expected") for e in entries if isinstance(e, dict)]
    stored = [float(v) for v in stored if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(stored) != 1 or not values.get("expected"):
        return  # several subsets, or no tie-aware key: nothing to compare with
    if not math.isfinite(stored[0]):
        raise InputError(f"{score_key}_expected is {stored[0]} in split {split!r}: the per-query "
                         "values cannot be checked against it", source=results_path,
                         fix="re-run the task (mteb run ... --overwrite-strategy always)")
    mean = math.fsum(values["expected"].values()) / len(values["expected"])
    if abs(mean - stored[0]) > tolerance:
        raise InputError(
            f"the per-query values ({len(values['expected'])} queries, mean {score_key}_expected "
            f"{mean:.6f}) do not match the results file ({stored[0]:.6f} in {results_path}): "
            "the CSV comes from another run", source=per_query_path,
            fix="re-run mteb with --prediction-folder, or pass the CSV of this run with "
                "--per-query / --prediction-folder")


# -- the inputs of stratify and report: results files, their per-query CSVs and copies ------
@dataclass(frozen=True)
class ResultsInput:
    """One TaskResult file with its model and the per-query CSV that belongs to it."""

    path: str
    data: dict
    model: str
    revision: str
    per_query: str


def input_list(specs) -> list:
    """``specs`` (results files, folders or ``NAME=PATH`` systems) as a list: one string or
    path-like is a list of one, never a sequence of its characters; none at all is an
    :class:`InputError`."""
    out = [specs] if isinstance(specs, (str, bytes, os.PathLike)) else list(specs)
    if not out:
        raise InputError("no results given",
                         fix="name TaskResult files or mteb --output-folder folders")
    return out


def expand_results(specs, task: str, *, skip_unreadable: bool = False) -> list[str]:
    """Result files for the RESULTS arguments: a folder stands for every ``task`` TaskResult
    under it (mteb layout; what cannot be read is an error, or a warning with
    ``skip_unreadable``: :func:`task_result_files`), a file for itself."""
    out: list[str] = []
    for spec in specs:
        if os.path.isdir(spec):
            found, other, unreadable = [], set(), []
            for path in task_result_files(spec, skip_unreadable=skip_unreadable):
                try:
                    name = load_task_result(path)["task_name"]
                except InputError as exc:  # the folder may hold other JSON files
                    unreadable.append(exc)
                    continue
                if isinstance(name, str) and base_task_name(name) == task:
                    found.append(str(path))  # a quick-run subset's too (its query set says)
                else:
                    other.add(base_task_name(str(name)))
            if not found:
                why = ""
                if other:
                    why += f" (it holds results of {', '.join(sorted(other))})"
                if unreadable:  # a corrupt result of this task must not hide behind "none"
                    why += (f"; {len(unreadable)} JSON file(s) could not be read, e.g. "
                            f"{str(unreadable[0]).splitlines()[0]}")
                raise InputError(f"no {task} results under {spec}{why}",
                                 fix="give the --output-folder of an mteb run of this task, "
                                     "or choose another one with --task")
            for exc in unreadable:  # named, and the readable results still used
                warnings.warn(f"left out: {exc}", InputWarning, stacklevel=2)
            out.extend(found)
        elif not os.path.exists(spec):
            raise InputError("results file not found", source=spec,
                             fix="give <Task>.json of an mteb run, or its --output-folder")
        else:
            out.append(spec)
    return out


def resolve_inputs(paths, per_query=None, *, prediction_folder=None) -> list[ResultsInput]:
    """Load each results file and locate its per-query CSV (cheap: no structure, no model):
    ``per_query[i]`` when given (one per file, in order), else :func:`find_per_query` (with
    mteb's ``prediction_folder`` when given)."""
    if per_query is not None and len(per_query) != len(paths):
        raise InputError(f"{len(per_query)} --per-query files for {len(paths)} results files",
                         fix="give one per-query CSV per results file, in the same order")
    out = []
    for i, path in enumerate(paths):
        data = load_task_result(path)
        model, revision = model_of(path)
        csv_path = per_query[i] if per_query else find_per_query(
            path, check_task_name(data["task_name"], source=path), model=model, revision=revision,
            prediction_folder=prediction_folder)
        if not os.path.isfile(csv_path):
            raise InputError("per-query file not found", source=csv_path,
                             fix="give the <Task>_per_query.csv of this run")
        out.append(ResultsInput(path, data, model, revision, csv_path))
    return out


def distinct_results(entries) -> list[int]:
    """The indices of ``entries`` to keep, one per result.  Each entry is ``(identity, path,
    scores)``: ``identity`` starts with the model, the revision (both as :func:`model_of` reads
    them: ``model_meta.json``, else the folder names ``<org__model>/<revision>/``) and the
    task, and holds whatever else makes two results one row or one system (a query set).

    Two files of one identity with the same scores are a copy: the first is kept and the
    other named in a warning.  With different scores neither can be chosen: an
    :class:`InputError` naming both files (``leaderboard`` and ``report`` share this check)."""
    first: dict = {}
    keep: list[int] = []
    for i, (identity, path, scores) in enumerate(entries):
        text = json.dumps(scores, sort_keys=True, default=str)  # NaN equals NaN here
        if identity not in first:
            first[identity] = (path, text)
            keep.append(i)
            continue
        other, other_text = first[identity]
        model, revision, task = identity[:3]
        if text == other_text:
            warnings.warn(InputWarning(f"left out: a copy of {other} (the same scores of "
                                       f"{model}, revision {revision}, on {task})",
                                       source=str(path)), stacklevel=2)
            continue
        raise InputError(f"{other} and {path} hold different scores of the same model and "
                         f"revision ({model}, revision {revision}) on {task}, so neither can "
                         "be chosen", fix="move the run you do not mean out of the folder, or "
                                          "give each run its own revision (its "
                                          "<org__model>/<revision>/ folder and model_meta.json)")
    return keep


def distinct_inputs(paths: list[str]) -> list[str]:
    """The results files ``paths`` with a copy of a result left out, and two different results
    of one model, revision and task refused (:func:`distinct_results`), before any per-query
    CSV is looked for."""
    entries = []
    for path in paths:
        data = load_task_result(path)
        entries.append(((*model_of(path), str(data["task_name"])), path, data["scores"]))
    return [paths[i] for i in distinct_results(entries)]


def read_values(item: ResultsInput, measure: str, *, split: str) -> dict:
    """The item's per-query values of ``measure`` on ``split``, checked against its results
    file (:func:`check_matches_results`)."""
    from ..naming import mteb_key

    vals = read_per_query_csv(item.per_query, measure, split=split, model=item.model,
                              revision=item.revision)
    check_matches_results(vals, item.data, mteb_key(measure), split=split,
                          per_query_path=item.per_query, results_path=item.path)
    return vals


def recorded_query_set(data: dict, split: str) -> QuerySet:
    """The query set a results file's first score entry of ``split`` records (not known when
    it records none: :meth:`QuerySet.from_scores`)."""
    entries = [e for e in data["scores"].get(split, ()) if isinstance(e, dict)]
    return QuerySet.from_scores(entries[0], split) if entries else QuerySet(str(split))


def evaluated_query_set(queries, data: dict, split: str) -> QuerySet:
    """The query set of the evaluated ``queries`` of a results file (``data``), with the
    quick-run subset the file records (:func:`recorded_query_set`): what ``stratify`` and
    ``report`` group results by."""
    return QuerySet.of(queries, split, subset=recorded_query_set(data, split).subset)


def query_set_of(path, data: dict, split: str, measure: str) -> QuerySet:
    """The evaluated queries of a results file: the query set its scores record
    (:meth:`QuerySet.from_scores`, written by the tie-aware tasks), else the queries of its
    per-query CSV (found and checked against the file's score as for ``stratify``), else a
    query set that is not known (an older result without its CSV)."""
    if (recorded := recorded_query_set(data, split)).known:
        return recorded
    try:
        item = resolve_inputs([os.fspath(path)])[0]
        return QuerySet.of(read_values(item, measure, split=split).queries, split)
    except InputError:  # no CSV of this model, or one of another run: not known
        return QuerySet(split)


def copy_target(results_path: str, out: str) -> str:
    """Where ``-o/--out`` writes a results file's copy: its path below mteb's output folder
    (``results/<model>/<revision>/<Task>.json``) under ``out``, so the copies form an output
    folder of their own; a file outside that layout goes to ``out/<file name>``."""
    root = output_folder_of(results_path)
    rel = (os.path.relpath(os.path.abspath(results_path), root) if root is not None
           else os.path.basename(results_path))
    return os.path.join(out, rel)
