"""mteb-stratified report: a stratified HTML report and its Markdown summary.

Examples:
  mteb-stratified report runs bm25=mteb-stratified-demo/nfcorpus-test.bm25.fp32.trec
  mteb-stratified report minilm=runs/results/ORG__MODEL/REVISION/StratifiedNFCorpus.json \
      bm25=run.trec -o report.html

Each SYSTEM is [NAME=]PATH, where PATH is an mteb --output-folder (one system per result of
--task in it, named by model), a TaskResult file (its per-query CSV is found as for stratify),
a per-query CSV, or a TREC run (evaluated tie-aware on the dataset's qrels; queries it misses
score 0, as trec_eval -c). Every input is checked before the structure is loaded. The Markdown
summary is written next to the HTML (same name, .md). Needs the [plots] extra (matplotlib).
"""

from __future__ import annotations

import argparse
import os

from ..core import InputError
from ..io.markdown import term_cell
from ..io.outputs import output_file
from . import summary
from ._args import HelpFormatter
from ._strata_args import add_common, check_evaluated, check_options, load_context


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help=summary(__name__),
                              description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("results", nargs="+", metavar="SYSTEM",
                   help="[NAME=]PATH: an mteb output folder, a TaskResult JSON, a per-query "
                        "CSV or a TREC run")
    p.add_argument("-o", "--out", default="report.html", metavar="FILE",
                   help="HTML file to write; the .md summary goes next to it "
                        "(default: report.html)")
    p.add_argument("--title", default=None,
                   help="report title (default: Stratified evaluation (MEASURE))")
    add_common(p)
    p.set_defaults(func=run)
    return p


def _split_spec(spec: str) -> tuple[str | None, str]:
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


def collect_systems(args) -> list:
    """``[(name, loader, subset)]``: every input located and checked, nothing heavy loaded
    yet.

    ``loader(qrels)`` returns the per-query values (a TREC run is evaluated then); ``subset``
    is the quick-run subset a results file records (its query set, with the values' ids).
    """
    from ..io.mteb_results import (distinct_inputs, expand_results, read_per_query_csv,
                                   read_values, recorded_query_set, resolve_inputs)

    systems = []
    for spec in args.results:
        name, path = _split_spec(spec)
        if not os.path.exists(path):
            raise InputError("file or folder not found", source=path,
                             fix="give an mteb output folder, a TaskResult JSON, a per-query "
                                 "CSV or a TREC run")
        low = path.lower()
        if os.path.isdir(path) or low.endswith(".json"):
            items = resolve_inputs(distinct_inputs(  # a copy once; two runs refused
                expand_results([path], args.task, skip_unreadable=args.skip_unreadable)),
                prediction_folder=args.prediction_folder)
            if name is not None and len(items) > 1:
                raise InputError(f"{path} holds {len(items)} results of {args.task} "
                                 f"({', '.join(i.model for i in items)}), so one name cannot "
                                 "stand for them", fix="name each TaskResult file: NAME=FILE, "
                                                       "or leave NAME= out (model names)")
            for item in items:
                vals = read_values(item, args.measure, split=args.split)
                systems.append((name or item.model, _given(vals, item.per_query),
                                recorded_query_set(item.data, args.split).subset))
        elif low.endswith(".csv"):
            vals = read_per_query_csv(path, args.measure, split=args.split)
            systems.append((name or _plain_name(path), _given(vals, path), None))
        else:
            from ..io import read_run

            run = read_run(path)  # parse errors surface here, before the structure loads
            systems.append((name or _plain_name(path), _run_loader(run, path, args.measure),
                            None))
    names = [n for n, _, _ in systems]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"two systems named {dup[0]!r}", fix="name them: NAME=PATH")
    return systems


def query_sets(values: dict, subsets: dict, split: str) -> dict:
    """``{system: QuerySet}`` of the evaluated queries of each system."""
    from ..core.per_query import PerQuery
    from ..core.query_set import QuerySet

    return {n: QuerySet.of(PerQuery.from_mapping(v).queries, split, subset=subsets[n])
            for n, v in values.items()}


def _run_loader(run: dict, path: str, measure: str):
    def load(qrels):
        from ..report.inputs import per_query_from_dicts

        return per_query_from_dicts(qrels, run, measure, run_name=path)
    load.source = path
    return load


def _given(values, source: str):
    """The loader of per-query values read from ``source`` (named if its queries are unknown)."""
    def load(qrels):
        return values
    load.source = source
    return load


def run(args: argparse.Namespace) -> int:
    check_options(args)
    if args.out.lower().endswith(".md"):
        raise InputError(f"-o/--out {args.out} ends in .md, the name of the Markdown summary "
                         "written next to the HTML", fix="give the HTML file, e.g. -o report.html")
    output_file(args.out, option="-o/--out")  # a folder, or a file as parent: fail before work
    md = output_file(os.path.splitext(args.out)[0] + ".md", option="the .md summary next to -o")
    systems = collect_systems(args)
    from ..core.query_set import group_by_query_set
    from ..report import build_report
    from ..report.html import write_report_pair
    from ..stratification import gate_verdict, split_origin, stratified_summary
    from ..report.html import require_matplotlib

    require_matplotlib()  # a missing [plots] extra fails now, before the work
    from ._progress import Steps

    step = Steps("report", enabled=not args.no_progress)
    with step("loading the structure, the queries and their strata"):
        art, data, strata = load_context(args)
    art.cluster_tree.check_level(args.level)  # a level the artifact lacks: before any work
    with step(f"reading the per-query values of {len(systems)} system(s)"):
        values = {name: load(data.qrels) for name, load, _ in systems}
    for name, load, _ in systems:  # unknown query ids: said with the file
        check_evaluated(values[name], strata, load.source)
    sets = query_sets(values, {name: subset for name, _, subset in systems}, args.split)
    groups = group_by_query_set(values, key=sets.get)
    values = {n: values[n] for g in groups for n in g}  # the largest query set first
    if args.require_same_queries and len(groups) > 1:
        raise InputError("the systems were evaluated on different query sets, so they cannot "
                         "be compared: " + "; ".join(
                             f"{sets[g[0]].label}: {', '.join(g)}" for g in groups),
                         fix="evaluate every system on the same queries, or leave out "
                             "--require-same-queries (each set is then compared on its own)")
    grain = {"min_queries": args.min_queries, "level": args.level}
    summaries = {}
    for k, (n, v) in enumerate(values.items(), 1):
        with step(f"{k}/{len(values)} {n}: estimates, intervals and chance tests "
                  f"({args.resamples} resamples)"):
            summaries[n] = stratified_summary(v, strata, art, measure=args.measure,
                                              scheme=args.scheme, n_min=args.n_min,
                                              n_resamples=args.resamples, seed=args.seed,
                                              origin=split_origin(data),
                                              gate=gate_verdict(data), **grain)
    with step("paired tests and ranking stability"):
        stability, pairs = _within_sets(values, groups, sets, strata, art, args, grain)
    report = build_report(summaries, stability, pairs, title=args.title,
                          query_sets={n: sets[n].label for n in values})
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with step("drawing the plots and writing the HTML and Markdown"):
        write_report_pair(report, args.out, md)  # one unit: never a mismatched pair (#46)
    print(f"wrote {term_cell(args.out)} and {term_cell(md)}")
    print(report_summary_line(report))
    return 0


def _within_sets(values, groups, sets, strata, art, args, grain) -> tuple:
    """Decision stability and the paired tests, each within one query set: with one set as
    they always were; with several, ``[(label, stability)]`` per set of ≥ 2 systems and the
    pairs of every set together (never a pair across sets)."""
    from ..stratification import paired_summary, stability_summary

    def pairs_of(names):
        return paired_summary({n: values[n] for n in names}, strata, art, scheme=args.scheme,
                              n_min=args.n_min, n_resamples=args.resamples, seed=args.seed,
                              **grain)

    def stability_of(names):
        return stability_summary({n: values[n] for n in names}, strata, art,
                                 scheme=args.scheme, **grain)

    if len(groups) == 1:
        return (stability_of(groups[0]) if len(groups[0]) >= 2 else None), pairs_of(groups[0])
    several = [g for g in groups if len(g) >= 2]
    stability = [(sets[g[0]].label, stability_of(g)) for g in several]
    pairs = {"pairs": [p for g in several for p in pairs_of(g)["pairs"]]}
    if not several:
        pairs["note"] = "no two systems share a query set, so no pair is compared"
    return stability, pairs


def report_summary_line(report: dict) -> str:
    """One line: each system's pooled and corpus-weighted estimate, and coverage; systems of
    different query sets in one bracket per set (never side by side without their set)."""
    from ..report.html import set_groups

    systems = report["systems"]

    def part(name):
        summary, post = systems[name], systems[name].post_stratified
        return (f"{term_cell(name)} {summary.pooled.estimate:.4f} pooled"
                + (f" / {post.estimate:.4f} corpus-weighted" if post is not None else ""))

    groups = set_groups(report)
    if len(groups) == 1:
        body = "; ".join(part(n) for n in groups[0][1])
    else:
        body = " | ".join(f"[{term_cell(label)}] " + "; ".join(part(n) for n in names)
                          for label, names in groups)
    first = next(iter(systems.values()))
    cov = first.cluster_coverage
    return f"{first.measure}: {body} (MSC {cov.msc:.3f}, SCC {cov.scc:.3f})"
