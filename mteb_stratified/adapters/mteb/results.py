"""Read MTEB results folders and build the tie-aware leaderboard (json + pandas; no mteb import).

A results folder is what ``mteb run --output-folder DIR`` writes:
``DIR/results/<org__model>/<revision>/<Task>.json`` (``mteb.ResultCache`` layout; any depth is
accepted; a prediction folder inside ``DIR`` is not read; see
:mod:`mteb_stratified.io.mteb_results`).  Each TaskResult JSON holds ``scores[split]`` = a list of per-subset dicts.  For each
(model, task) the leaderboard takes the task's main metric (``ndcg_at_10`` when the stored
``main_score`` is ``ndcg_at_10_expected`` or ``ndcg_at_10``), averages it over subsets of the
first evaluated split (``test`` preferred), and reports:

* ``expected`` / ``range`` / ``bias`` / ``oblivious`` / ``min`` / ``max`` - the tie-aware
  columns of that metric;
* ``tied_share`` - ``ties_query_share_at_<k>`` (share of queries with a tie in the top k);
* ``strata_*`` - stratified estimates, coverage and their intervals, when present;
* ``queries`` - how many queries were evaluated (:mod:`mteb_stratified.core.query_set`).

Results are ranked only against results of the same evaluated queries: when a task's results
hold different query sets (a quick-run subset next to the full split, another split's queries),
:func:`query_set_groups` splits them, and each group gets its own table and ranking, under a
line that says why (``--require-same-queries``: an error instead).

The CSV holds every column (``<task> <column>``); the printed and Markdown table shows
:data:`DEFAULT_COLUMNS` (``--columns`` for others) under short headers.

Rows (models) are sorted by mean expected score over tasks; :func:`ranking_note` states whether
the ranking by oblivious (stock MTEB) scores would differ, and which models swap.
"""

from __future__ import annotations

import difflib
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from mteb_stratified.core.errors import InputError, InputWarning
from mteb_stratified.core.query_set import (QuerySet, QuerySetGroups, base_task_name,
                                            same_query_sets)
from mteb_stratified.core.ranking.results import VALUE_KEYS
from mteb_stratified.io.outputs import write_together
from mteb_stratified.io.outputs import output_dir as checked_dir
from mteb_stratified.io.mteb_results import (distinct_results, load_task_result, model_of,
                                             query_set_of, task_result_files)
from mteb_stratified.naming import audit_key, measure_of_key, split_tie_key, tie_key
from mteb_stratified.io.markdown import md_cell, term_cell

__all__ = ["ResultRow", "COLUMNS", "DEFAULT_COLUMNS", "scan_results", "leaderboard_frame",
           "query_set_groups", "check_same_queries",
           "display_frame", "check_columns", "ranking_note", "to_markdown", "export_leaderboard"]

#: Leaderboard columns per task (``--columns``), in display order, with their headers.
COLUMNS = {
    "queries": "queries", "expected": "E", "range": "range", "bias": "bias", "oblivious": "oblivious",
    "min": "min", "max": "max", "tied_share": "tied share",
    "strata_post_stratified": "corpus-weighted E", "strata_pooled": "pooled E",
    "strata_macro": "macro E", "strata_msc": "MSC", "strata_scc": "SCC",
    "strata_uncovered_weight": "uncovered weight",
    **{f"strata_{est}_ci_{side}": f"{label} CI {side}"
       for est, label in (("post_stratified", "corpus-weighted"), ("pooled", "pooled"),
                          ("macro", "macro")) for side in ("low", "high")},
}
#: The compact default: the tie-aware triple and one stratified estimate (when present).
DEFAULT_COLUMNS = ("queries", "expected", "range", "bias", "strata_post_stratified")


@dataclass
class ResultRow:
    """One (model, task) pair from a TaskResult file.

    ``values`` maps every column name of :data:`COLUMNS` found in the file to its mean over
    the split's subsets (``expected``, ``range``, ..., ``strata_post_stratified``, ...), and
    ``queries`` to the number of evaluated queries when known; ``query_set`` names them.
    """

    model: str
    revision: str
    task: str
    metric: str
    split: str
    values: dict = field(default_factory=dict)
    path: str = ""
    query_set: QuerySet | None = None

    def __getattr__(self, name):  # row.expected, row.range, ... (NaN when absent)
        if name in COLUMNS:
            return self.values.get(name, float("nan"))
        raise AttributeError(name)


def _main_metric(subset: dict) -> str | None:
    """The tie-aware base metric (``ndcg_at_10``) of a subset's scores, or None."""
    main = subset.get("main_score")
    candidates = []
    for key, value in subset.items():
        parsed = split_tie_key(key)
        if parsed and parsed[1] == "expected":
            candidates.append(parsed[0])
            if isinstance(value, (int, float)) and isinstance(main, (int, float)) \
                    and math.isclose(value, main, rel_tol=0, abs_tol=1e-12):
                return parsed[0]
    if not candidates:
        return None
    for key, value in subset.items():  # tie_aware(task): main_score is the stock metric
        if f"{key}_expected" in subset and isinstance(value, (int, float)) and \
                isinstance(main, (int, float)) and math.isclose(value, main, abs_tol=1e-12):
            return key
    return "ndcg_at_10" if "ndcg_at_10" in candidates else sorted(candidates)[0]


def _column_values(subsets: list, metric: str) -> dict:
    """Every :data:`COLUMNS` value of a split: the mean over its subsets."""
    def mean(key):
        vals = [float(s[key]) for s in subsets if isinstance(s.get(key), (int, float))
                and not isinstance(s[key], bool) and math.isfinite(s[key])]
        return sum(vals) / len(vals) if vals else None

    measure = measure_of_key(metric)
    keys = {stat: tie_key(measure, stat) for stat in VALUE_KEYS}
    if measure.cutoff is not None:
        keys["tied_share"] = audit_key("tied_query_share", measure.cutoff)
    for est in ("post_stratified", "pooled", "macro"):
        keys[f"strata_{est}"] = f"strata_{est}_{metric}_expected"
        for side in ("low", "high"):
            keys[f"strata_{est}_ci_{side}"] = f"strata_{est}_{metric}_expected_ci_{side}"
    for extra in ("msc", "scc", "uncovered_weight"):
        keys[f"strata_{extra}"] = f"strata_{extra}"
    out = {col: mean(key) for col, key in keys.items()}
    return {col: v for col, v in out.items() if v is not None}


def scan_results(results_dir, *, tasks=None,
                 skip_unreadable: bool = False) -> tuple[list[ResultRow], list[Path]]:
    """Read every TaskResult JSON under ``results_dir``.

    Returns the rows with tie-aware columns and the result files without them.  A quick-run
    subset's results (``<Task>__subset-q5-d100.json``) count as the task's, labelled by their
    query set, so they are ranked apart from a full run.  A file that cannot be read (corrupt,
    half-written) is named in a warning and the others are still read; a folder or file that
    cannot be read at all is an error, or a warning with ``skip_unreadable``
    (:func:`~mteb_stratified.io.mteb_results.task_result_files`); ``tasks`` that no file holds
    are an error listing the task names found.  Two files of one model, revision, task and
    query set are one row when they are copies, else an error naming both
    (:func:`~mteb_stratified.io.mteb_results.distinct_results`).
    """
    root = Path(results_dir).expanduser()
    # mteb's layout: <output-folder>/results/<model>/<revision>/<Task>.json; the prediction
    # folder (often <output-folder>/pred) is not scanned then
    files = task_result_files(root, skip_unreadable=skip_unreadable)
    rows: list[ResultRow] = []
    kept_scores: list = []  # each row's file's scores: a copy or a different run
    plain: list[Path] = []
    found: set[str] = set()
    unreadable: list[InputError] = []
    for path in files:
        try:
            data = load_task_result(path)
        except InputError as exc:  # one bad file must not hide the others
            unreadable.append(exc)
            continue
        task = base_task_name(str(data["task_name"]))
        found.add(task)
        if tasks and task not in tasks:
            continue
        scores = data["scores"]
        if not isinstance(scores, dict) or not scores:
            raise InputError("results file has no scores", source=str(path),
                             fix="re-run the task with --overwrite-strategy always")
        split = "test" if "test" in scores else sorted(scores)[0]
        subsets = [s for s in scores[split] if isinstance(s, dict)]
        metric = _main_metric(subsets[0]) if subsets else None
        if metric is None:
            plain.append(path)
            continue
        query_set = query_set_of(path, data, split, str(measure_of_key(metric)))
        values = _column_values(subsets, metric)
        if query_set.known:
            values["queries"] = query_set.n_queries
        rows.append(ResultRow(*model_of(path), task, metric, split, values, str(path),
                              query_set))
        kept_scores.append(data["scores"])
    rows = [rows[i] for i in distinct_results([((r.model, r.revision, r.task, r.query_set),
                                                r.path, s) for r, s in zip(rows, kept_scores)])]
    if not rows and unreadable and not found:  # nothing else: the reason is the error
        raise unreadable[0]
    for exc in unreadable:
        warnings.warn(f"left out: {exc}", InputWarning, stacklevel=2)
    if not rows:
        if tasks and found and not found & set(tasks):
            near = difflib.get_close_matches(tasks[0], sorted(found), n=1)
            raise InputError(
                f"no results of {', '.join(tasks)} under {root}; its result files hold "
                f"{', '.join(sorted(found))}",
                fix=(f"did you mean -t {near[0]}? " if near else "")
                + "give one of the task names found, or leave out -t for every task")
        if plain:
            raise InputError(
                f"no tie-aware columns (e.g. ndcg_at_10_expected) in the {len(plain)} result "
                f"file(s) under {root} (e.g. {plain[0]})",
                fix="run a tie-aware task: `mteb run -t StratifiedNFCorpus -m MODEL`, wrap a "
                    "built-in task with mteb_stratified.adapters.mteb.tie_aware(task), or call "
                    "mteb_stratified.adapters.mteb.patch() before mteb.evaluate(...)")
        raise InputError(f"no MTEB result files under {root}",
                         fix="give the --output-folder of `mteb run` (it holds results/<model>/...)")
    return rows, plain


def query_set_groups(rows: list[ResultRow], *, require_same: bool = False) -> QuerySetGroups:
    """The rows in groups that may be ranked together: the same-query-set rule
    (:func:`~mteb_stratified.core.query_set.same_query_sets`) over tasks.

    One group when every task's results share one query set (a model that skipped a task
    still belongs); else one group per (task, query set), the largest first, since results of
    different queries are never ranked against each other.  ``require_same``: more than one
    group is refused (an :class:`InputError`) instead.
    """
    return same_query_sets(rows, lambda r: r.query_set, lambda r: r.model,
                           task=lambda r: r.task, require_same=require_same)


def check_same_queries(rows: list[ResultRow]) -> None:
    """An :class:`InputError` naming the query sets when the rows cannot be ranked together
    (``--require-same-queries``)."""
    query_set_groups(rows, require_same=True)


def leaderboard_frame(rows: list[ResultRow]):
    """Models × tasks, every column: ``<task> <column>`` for each name of :data:`COLUMNS` that
    some row has, sorted by the mean expected score over tasks (descending), with
    ``mean_expected`` and ``mean_oblivious`` columns."""
    from mteb_stratified._optional import require

    pd = require("pandas", "mteb")
    tasks = sorted({r.task for r in rows})
    present = [c for c in COLUMNS if any(c in r.values for r in rows)]
    table: dict = {}
    for r in rows:
        key = (r.model, r.revision)
        row = table.setdefault(key, {"model": r.model, "revision": r.revision})
        for col in present:
            row[f"{r.task} {col}"] = r.values.get(col, float("nan"))
    frame = pd.DataFrame(list(table.values()))
    for t in tasks:  # a (model, task) pair that was not run stays NaN
        for col in dict.fromkeys([*present, "expected", "oblivious"]):
            if f"{t} {col}" not in frame:
                frame[f"{t} {col}"] = float("nan")
    frame["mean_expected"] = frame[[f"{t} expected" for t in tasks]].mean(axis=1)
    frame["mean_oblivious"] = frame[[f"{t} oblivious" for t in tasks]].mean(axis=1)
    frame = frame.sort_values(["mean_expected", "model"], ascending=[False, True]).reset_index(drop=True)
    frame.insert(0, "rank", range(1, len(frame) + 1))
    frame.attrs["metric"] = sorted({r.metric for r in rows})
    frame.attrs["tasks"] = tasks
    frame.attrs["columns"] = present
    return frame


def check_columns(columns) -> list[str]:
    """The ``--columns`` names (``all`` = every one), or an :class:`InputError` naming the
    valid ones."""
    if columns is None:
        return list(DEFAULT_COLUMNS)
    if list(columns) == ["all"]:
        return list(COLUMNS)
    if "all" in columns:
        raise InputError("--columns all stands alone", fix="give `all`, or a list of columns")
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise InputError(f"unknown leaderboard column(s): {', '.join(unknown)}",
                         fix=f"choose among: all, {', '.join(COLUMNS)}")
    return list(dict.fromkeys(columns))


def display_frame(frame, columns=None):
    """The columns a person reads (default :data:`DEFAULT_COLUMNS`), with short headers.

    Columns no row has are left out; with one task the headers drop the task name (the title
    says it); with several, ``mean E`` is added.
    """
    wanted = [c for c in check_columns(columns) if c in frame.attrs.get("columns", COLUMNS)]
    tasks = frame.attrs.get("tasks") or sorted({c.rsplit(" ", 1)[0] for c in frame.columns
                                                if c.endswith(" expected")})
    out = frame[["rank", "model", "revision"]].copy()
    for t in tasks:
        for col in wanted:
            out[COLUMNS[col] if len(tasks) == 1 else f"{t} {COLUMNS[col]}"] = frame[f"{t} {col}"]
    if len(tasks) > 1:
        out["mean E"] = frame["mean_expected"]
    return out


def ranking_note(frame) -> str:
    """A sentence saying whether ranking by the oblivious (stock) score would differ."""
    by_expected = list(frame["model"])
    obl = frame.sort_values(["mean_oblivious", "model"], ascending=[False, True])
    by_oblivious = list(obl["model"])
    if by_expected == by_oblivious:
        return "Ranking by the oblivious (stock MTEB) score is the same as by the expected score."
    moved = [f"{m} (expected #{by_expected.index(m) + 1}, oblivious #{by_oblivious.index(m) + 1})"
             for m in by_expected if by_expected.index(m) != by_oblivious.index(m)]
    return ("Ranking by the oblivious (stock MTEB) score WOULD DIFFER: " + "; ".join(moved) + ".")


def to_markdown(frame, digits: int = 4, cell=md_cell) -> str:
    """The frame as a GitHub Markdown table (no tabulate dependency); bias columns signed.
    ``cell`` makes each cell safe (:func:`md_cell` for a file, :func:`term_cell` to print)."""
    cols = list(frame.columns)

    def fmt(v, col):
        if isinstance(v, float):
            if math.isnan(v):
                return ""
            if str(col).endswith("queries"):  # a count (a float column when one is NaN)
                return str(int(v))
            v = round(v, digits) + 0.0  # no "-0.0000"
            return f"{v:+.{digits}f}" if "bias" in str(col) else f"{v:.{digits}f}"
        return str(v)

    if cell is not md_cell:  # a "|" in a printed name must not split its column
        cell = (lambda c, plain=cell: plain(c).replace("|", "/"))
    lines = ["| " + " | ".join(cell(c) for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():  # model names come from data files: escaped
        lines.append("| " + " | ".join(cell(fmt(row[c], c)) for c in cols) + " |")
    return "\n".join(lines)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_numeric(series) -> bool:
    from pandas.api.types import is_numeric_dtype
    return bool(is_numeric_dtype(series))


def _formula_safe(frame):
    """``frame`` with every text cell that a spreadsheet would run as a formula (``=``, ``+``,
    ``-``, ``@``, tab, CR first) prefixed with ``'`` (OWASP's CSV-injection rule); numbers stay
    numbers."""
    def cell(v):
        return "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
    out = frame.copy()
    for col in out.columns:
        if not _is_numeric(out[col]):  # object or string dtype (pandas 3 reads text as str)
            out[col] = out[col].map(cell)
    out.columns = [cell(c) for c in out.columns]
    return out


def export_leaderboard(results_dir, output_dir=None, *, tasks=None, digits: int = 4,
                       columns=None, require_same_queries: bool = False,
                       skip_unreadable: bool = False) -> dict:
    """Scan, build, and write ``leaderboard.csv`` (every column) and ``leaderboard.md`` (the
    ``columns`` a person reads, default :data:`DEFAULT_COLUMNS`) to ``output_dir`` (default:
    ``results_dir``).  Results of different query sets are ranked apart, one table each
    (:func:`query_set_groups`; the CSV's ``query_set`` column says which), or refused with
    ``require_same_queries``.  Returns ``{"frame", "display", "note", "markdown", "csv", "md",
    "skipped", "groups"}`` (frame, display and note of the first, largest group)."""
    check_columns(columns)
    rows, plain = scan_results(results_dir, tasks=tasks, skip_unreadable=skip_unreadable)
    policy = query_set_groups(rows, require_same=require_same_queries)
    groups = [list(g) for g in policy.groups]
    frames = [leaderboard_frame(g) for g in groups]
    shown = [display_frame(f, columns) for f in frames]
    notes = [ranking_note(f) for f in frames]
    md = _leaderboard_text(policy, frames, shown, notes, plain, digits, md_cell)
    text = _leaderboard_text(policy, frames, shown, notes, plain, digits, term_cell)
    out = Path(checked_dir(os.path.expanduser(output_dir or results_dir), option="-o/--out"))
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / "leaderboard.csv", out / "leaderboard.md"
    table = _formula_safe(_csv_frame(groups, frames)).to_csv(index=False)
    # one unit: a kill never leaves this run's CSV beside the last run's Markdown
    write_together([(csv_path, table.encode("utf-8")), (md_path, md.encode("utf-8"))])
    return {"frame": frames[0], "display": shown[0], "note": notes[0], "markdown": md,
            "text": text, "csv": csv_path, "md": md_path, "skipped": plain, "groups": groups}


def _leaderboard_text(policy, frames, shown, notes, plain, digits: int, cell) -> str:
    """The leaderboard as Markdown (``cell=md_cell``, for leaderboard.md) or as the same text
    for a terminal (``cell=term_cell``: no Markdown escapes); ``policy``: the rows grouped by
    query set (:func:`query_set_groups`)."""
    groups = policy.groups
    legend = ("E = expected value over all orders of tied scores; range = max − min over "
              "those orders; bias = stock (tie-oblivious) score − E; corpus-weighted E = "
              "stratified estimate with strata weighted by corpus mass.")
    if len(groups) == 1:
        metric = ", ".join(frames[0].attrs.get("metric", []))
        task_text = ", ".join(frames[0].attrs["tasks"])
        query_set = groups[0][0].query_set
        subset = (f"\n\nA QUICK-RUN SUBSET: {cell(query_set.label)}; not comparable with "
                  "full-split figures." if query_set.subset else "")
        out = (f"Tie-aware leaderboard: {cell(task_text)}, main metric {cell(metric)}. {legend}"
               f"{subset}\n\n" + to_markdown(shown[0], digits, cell) + "\n\n" + cell(notes[0])
               + "\n")
    else:
        bold = "**" if cell is md_cell else ""
        note = policy.note(cell, so="each set is ranked on its own, never against another")
        out = (f"Tie-aware leaderboard. {legend}\n\n{bold}{note[:1].upper()}{note[1:]}."
               f"{bold}\n")
        for g, frame, table, note in zip(groups, frames, shown, notes):
            out += (f"\n### {cell(g[0].task)}: {cell(g[0].query_set.label)}, main metric "
                    f"{cell(g[0].metric)}\n\n" + to_markdown(table, digits, cell) + "\n\n"
                    + cell(note) + "\n")
    if plain:
        out += (f"\n{len(plain)} result file(s) without tie-aware columns were left out "
                f"(e.g. {cell(plain[0].name)}).\n")
    return out


def _csv_frame(groups, frames):
    """One frame for the CSV: the group's frame itself, or every group's frame (each ranked
    within its group) with the ``query_set`` that group was evaluated on."""
    if len(frames) == 1:
        return frames[0]
    import pandas as pd

    parts = []
    for g, frame in zip(groups, frames):
        frame = frame.copy()
        frame.insert(1, "query_set", f"{g[0].task}: {g[0].query_set.label}")
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)
