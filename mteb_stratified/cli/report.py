"""``mteb-stratified report RESULTS... --out report.html``: HTML report + Markdown summary.

Each RESULTS item is an MTEB results JSON (per-query values from ``<Task>_per_query.csv`` next
to it), a per-query CSV, or a TREC run (evaluated tie-aware on the dataset's qrels, missing
queries scored 0).  Name systems with ``NAME=PATH``; otherwise the model folder / file name is
used.  The Markdown summary goes next to the HTML (``.md``).
"""

from __future__ import annotations

import argparse
import os

from ..core import InputError
from .stratify import add_common, check_options, load_context


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help="stratified HTML report + Markdown summary",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", metavar="[NAME=]PATH",
                   help="MTEB results JSON, per-query CSV or TREC run")
    p.add_argument("--out", default="report.html", help="HTML output (default report.html)")
    p.add_argument("--title", default=None)
    add_common(p)
    p.set_defaults(func=run)
    return p


def _name(path: str, data: dict | None) -> str:
    if data is not None:
        parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
        if len(parts) >= 3:
            return parts[-3].replace("__", "/")
    return os.path.basename(path)


def load_values(spec: str, args, qrels) -> tuple[str, dict]:
    from ..report import find_per_query, load_results_json, per_query_from_run, read_per_query_csv
    name, sep, path = spec.partition("=")
    if not sep or not os.path.exists(path) and os.path.exists(spec):
        name, path = None, spec
    if not os.path.exists(path):
        raise InputError("file not found", source=path, fix="pass existing result files")
    low = path.lower()
    if low.endswith(".json"):
        data = load_results_json(path)
        vals = read_per_query_csv(find_per_query(path, data["task_name"]), args.measure,
                                  split=args.split)
        return name or _name(path, data), vals
    if low.endswith(".csv"):
        return name or _name(path, None), read_per_query_csv(path, args.measure, split=args.split)
    return name or _name(path, None), per_query_from_run(qrels, path, args.measure)


def run(args: argparse.Namespace) -> int:
    from ..report import (build_report, stability_summary, stratified_summary, to_markdown,
                          write_html)
    check_options(args)
    art, data, strata = load_context(args)
    systems = {}
    for spec in args.results:
        name, vals = load_values(spec, args, data.qrels)
        if name in systems:
            raise InputError(f"two systems named {name!r}", fix="name them: NAME=PATH")
        systems[name] = vals
    summaries = {n: stratified_summary(v, strata, art, measure=args.measure, scheme=args.scheme,
                                       n_min=args.n_min, n_resamples=args.resamples,
                                       seed=args.seed) for n, v in systems.items()}
    stability = (stability_summary(systems, strata, art, scheme=args.scheme)
                 if len(systems) >= 2 else None)
    report = build_report(summaries, stability, title=args.title)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_html(report, args.out)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w", encoding="utf-8") as fh:
        fh.write(to_markdown(report))
    print(f"wrote {args.out} and {md}")
    return 0
