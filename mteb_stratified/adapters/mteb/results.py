"""Read MTEB results folders and build the tie-aware leaderboard (json + pandas; no mteb import).

A results folder is what ``mteb run --output-folder DIR`` writes:
``DIR/results/<org__model>/<revision>/<Task>.json`` (``mteb.ResultCache`` layout; any depth is
accepted).  Each TaskResult JSON holds ``scores[split]`` = a list of per-subset dicts.  For each
(model, task) the leaderboard takes the task's main metric (``ndcg_at_10`` when the stored
``main_score`` is ``ndcg_at_10_expected`` or ``ndcg_at_10``), averages it over subsets of the
first evaluated split (``test`` preferred), and reports:

* ``expected`` / ``range`` / ``bias`` / ``oblivious`` - the tie-aware columns of that metric;
* ``tied_share`` - ``ties_query_share_at_<k>`` (share of queries with a tie in the top k);
* ``strata_*`` - stratified estimates, when the results carry them.

Rows (models) are sorted by mean expected score over tasks; :func:`ranking_note` states whether
the ranking by oblivious (stock MTEB) scores would differ, and which models swap.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from mteb_stratified.core.errors import InputError

from ._keys import split_tie_key

__all__ = ["ResultRow", "scan_results", "leaderboard_frame", "ranking_note", "to_markdown",
           "export_leaderboard"]

_SKIP = {"model_meta.json"}


@dataclass
class ResultRow:
    """One (model, task) pair from a TaskResult file."""

    model: str
    revision: str
    task: str
    metric: str
    split: str
    expected: float
    range: float
    bias: float
    oblivious: float
    tied_share: float
    extra: dict = field(default_factory=dict)
    path: str = ""


def _load_json(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read results file ({exc.strerror})", source=str(path),
                         fix="check the file permissions") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"corrupt results file: not valid JSON ({exc.msg} at line {exc.lineno}, "
                         f"column {exc.colno})", source=str(path),
                         fix="delete the file and re-run the task (mteb run ... "
                             "--overwrite-strategy always), or restore it from a backup") from None
    if not isinstance(data, dict) or "scores" not in data or "task_name" not in data:
        raise InputError("not an MTEB TaskResult file (no 'task_name'/'scores' keys)",
                         source=str(path),
                         fix="give the folder that `mteb run --output-folder` wrote, or remove "
                             "unrelated JSON files from it")
    return data


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


def _model_of(path: Path, data: dict) -> tuple[str, str]:
    meta_path = path.parent / "model_meta.json"
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            return (str(meta.get("name") or path.parent.parent.name),
                    str(meta.get("revision") or path.parent.name))
        except (OSError, json.JSONDecodeError):
            pass
    return path.parent.parent.name.replace("__", "/"), path.parent.name


def scan_results(results_dir, *, tasks=None) -> tuple[list[ResultRow], list[Path]]:
    """Read every TaskResult JSON under ``results_dir``.

    Returns the rows with tie-aware columns and the result files without them.
    """
    root = Path(results_dir).expanduser()
    if not root.exists():
        raise InputError(f"results folder not found: {root}",
                         fix="give the --output-folder of `mteb run` (default: ./results)")
    if not root.is_dir():
        raise InputError(f"{root} is a file, not a results folder",
                         fix="give the folder that `mteb run --output-folder` wrote")
    files = sorted(p for p in root.rglob("*.json")
                   if p.name not in _SKIP and not p.name.endswith("_predictions.json"))
    rows: list[ResultRow] = []
    plain: list[Path] = []
    for path in files:
        data = _load_json(path)
        task = str(data["task_name"])
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

        def mean(key, _subs=subsets):
            vals = [float(s[key]) for s in _subs if isinstance(s.get(key), (int, float))]
            return sum(vals) / len(vals) if vals else float("nan")

        k = metric.rsplit("_at_", 1)[-1]
        extra = {key: mean(key) for key in subsets[0] if key.startswith("strata_")}
        model, revision = _model_of(path, data)
        rows.append(ResultRow(model, revision, task, metric, split, mean(f"{metric}_expected"),
                              mean(f"{metric}_range"), mean(f"{metric}_bias"),
                              mean(f"{metric}_oblivious"), mean(f"ties_query_share_at_{k}"),
                              extra, str(path)))
    if not rows:
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


def leaderboard_frame(rows: list[ResultRow]):
    """Models × tasks: ``<task> expected/range/bias/tied_share`` (+ strata), sorted by the mean
    expected score over tasks (descending); ``mean_expected`` and ``mean_oblivious`` columns."""
    from mteb_stratified.adapters import require

    pd = require("pandas", "mteb")
    tasks = sorted({r.task for r in rows})
    table: dict = {}
    for r in rows:
        key = (r.model, r.revision)
        row = table.setdefault(key, {"model": r.model, "revision": r.revision})
        row[f"{r.task} expected"] = r.expected
        row[f"{r.task} range"] = r.range
        row[f"{r.task} bias"] = r.bias
        row[f"{r.task} tied_share"] = r.tied_share
        row[f"{r.task} oblivious"] = r.oblivious
        for k, v in r.extra.items():
            row[f"{r.task} {k}"] = v
    frame = pd.DataFrame(list(table.values()))
    frame["mean_expected"] = frame[[f"{t} expected" for t in tasks]].mean(axis=1)
    frame["mean_oblivious"] = frame[[f"{t} oblivious" for t in tasks]].mean(axis=1)
    frame = frame.sort_values(["mean_expected", "model"], ascending=[False, True]).reset_index(drop=True)
    frame.insert(0, "rank", range(1, len(frame) + 1))
    frame.attrs["metric"] = sorted({r.metric for r in rows})
    return frame


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


def to_markdown(frame, digits: int = 4) -> str:
    """The frame as a GitHub Markdown table (no tabulate dependency)."""
    cols = list(frame.columns)

    def fmt(v):
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:.{digits}f}"
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def export_leaderboard(results_dir, output_dir=None, *, tasks=None, digits: int = 4) -> dict:
    """Scan, build, and write ``leaderboard.csv`` and ``leaderboard.md`` to ``output_dir``
    (default: ``results_dir``).  Returns ``{"frame", "note", "markdown", "csv", "md",
    "skipped"}``."""
    rows, plain = scan_results(results_dir, tasks=tasks)
    frame = leaderboard_frame(rows)
    note = ranking_note(frame)
    metric = ", ".join(frame.attrs.get("metric", []))
    md = (f"Tie-aware leaderboard (main metric: {metric}; expected = mean over all orders of "
          "tied scores; range = max - min; bias = oblivious - expected; tied_share = share of "
          "queries with a tie in the top k)\n\n" + to_markdown(frame, digits) + "\n\n" + note + "\n")
    if plain:
        md += (f"\n{len(plain)} result file(s) without tie-aware columns were left out "
               f"(e.g. {plain[0].name}).\n")
    out = Path(output_dir).expanduser() if output_dir else Path(results_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / "leaderboard.csv", out / "leaderboard.md"
    frame.to_csv(csv_path, index=False)
    md_path.write_text(md, encoding="utf-8")
    return {"frame": frame, "note": note, "markdown": md, "csv": csv_path, "md": md_path,
            "skipped": plain}
