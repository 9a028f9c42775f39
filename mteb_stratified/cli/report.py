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
from . import summary
from ._args import HelpFormatter
from ._strata_args import add_common, check_options, load_context


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


def run(args: argparse.Namespace) -> int:
    """Map the flags onto :func:`mteb_stratified.report.build`, write the report it returns
    and print one line of it."""
    from ..io.markdown import term_cell
    from ..io.outputs import output_file
    from ..report import build
    from ._progress import Steps

    check_options(args)
    if args.out.lower().endswith(".md"):
        raise InputError(f"-o/--out {args.out} ends in .md, the name of the Markdown summary "
                         "written next to the HTML", fix="give the HTML file, e.g. -o report.html")
    output_file(args.out, option="-o/--out")  # a folder, or a file as parent: fail before work
    md = output_file(os.path.splitext(args.out)[0] + ".md", option="the .md summary next to -o")
    step = Steps("report", enabled=not args.no_progress)
    report = build(args.results, task=args.task, split=args.split, measure=args.measure,
                   scheme=args.scheme, n_min=args.n_min, min_queries=args.min_queries,
                   level=args.level, n_resamples=args.resamples, seed=args.seed,
                   prediction_folder=args.prediction_folder,
                   require_same_queries=args.require_same_queries,
                   skip_unreadable=args.skip_unreadable, title=args.title,
                   context=lambda: load_context(args), steps=step)
    with step("drawing the plots and writing the HTML and Markdown"):
        report.write(args.out, md)  # one unit: never a mismatched pair (#46)
    print(f"wrote {term_cell(args.out)} and {term_cell(md)}")
    print(report_summary_line(report))
    return 0


def report_summary_line(report) -> str:
    """One line of a :class:`~mteb_stratified.report.Report`: each system's pooled and
    corpus-weighted estimate, and coverage; systems of different query sets in one bracket per
    set (never side by side without their set)."""
    from ..io.markdown import term_cell

    systems = report.summaries

    def part(name):
        summary, post = systems[name], systems[name].post_stratified
        return (f"{term_cell(name)} {summary.pooled.estimate:.4f} pooled"
                + (f" / {post.estimate:.4f} corpus-weighted" if post is not None else ""))

    groups = report.query_sets
    if not groups.mixed:
        body = "; ".join(part(n) for n in systems)
    else:
        body = " | ".join(f"[{term_cell(label)}] " + "; ".join(part(n) for n in names)
                          for label, names in zip(groups.labels, groups.names))
    first = next(iter(systems.values()))
    cov = first.cluster_coverage
    return f"{first.measure}: {body} (MSC {cov.msc:.3f}, SCC {cov.scc:.3f})"
