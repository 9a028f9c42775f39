"""mteb-stratified stratify: add a strata block to MTEB results.

Examples:
  mteb-stratified stratify runs                      every StratifiedNFCorpus result under runs/
  mteb-stratified stratify runs/results/ORG__MODEL/REVISION/StratifiedNFCorpus.json
  mteb-stratified stratify runs --prediction-folder elsewhere/pred -o stratified-runs

RESULTS are TaskResult files (<Task>.json) or mteb --output-folder folders (every result of
--task in them). The per-query values come from <Task>_per_query.csv, which a tie-aware task
writes into mteb's --prediction-folder; it is looked for there when given, else next to the
results file, else anywhere under the --output-folder, and must hold rows of the results
file's model. Its mean must equal the results file's score, so a CSV from another run is
refused.

Each results file gains "strata": {split: block} and flat strata_<estimator>_<metric>_expected,
strata_msc, strata_scc and strata_uncovered_weight keys in its score entries (read by the
leaderboard). The default structure and dataset are the bundled NFCorpus ones, with the test
queries' entities precomputed, so no extractor runs; another --structure or --dataset runs the
structure's kind of extractor (needs the [structure] extra). For a structure built with the LLM
extractor that is your own endpoint (--base-url, --model, --api-key or $OPENAI_*): the endpoint,
key and cache path recorded in its metadata.json are provenance only, never used, and its
answers are cached in your folders (-o/--out, else your cache folder), never in the artifact's.
"""

from __future__ import annotations

import argparse

from . import summary
from ._args import HelpFormatter
from ._strata_args import add_common, check_options, load_context


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("stratify", help=summary(__name__),
                              description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="TaskResult JSON files or mteb --output-folder folders")
    p.add_argument("--per-query", nargs="+", default=None, metavar="CSV",
                   help="per-query CSV(s), one per results file in the same order (default: "
                        "found as described above)")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="write updated copies into this folder (default: update the results "
                        "files in place)")
    add_common(p)
    p.set_defaults(func=run, out_is_folder=True)
    return p


def run(args: argparse.Namespace) -> int:
    """Map the flags onto :func:`mteb_stratified.stratification.stratify_results` and say
    what it did to each results file as it goes."""
    from ..stratification import stratify_results
    from ._progress import Steps

    check_options(args)
    stratify_results(
        args.results, per_query=args.per_query, out=args.out, task=args.task, split=args.split,
        measure=args.measure, scheme=args.scheme, n_min=args.n_min,
        min_queries=args.min_queries, level=args.level, n_resamples=args.resamples,
        seed=args.seed, prediction_folder=args.prediction_folder,
        require_same_queries=args.require_same_queries, skip_unreadable=args.skip_unreadable,
        context=lambda: load_context(args),
        steps=Steps("stratify", enabled=not args.no_progress),
        on_query_sets=_print_query_sets, on_file=_print_file)
    return 0


def _print_query_sets(groups) -> None:
    """The note when the results were evaluated on different query sets."""
    from ..io.markdown import term_cell  # model names from model_meta.json

    if groups.mixed:
        so = "their strata figures are not comparable across sets"
        print(f"note: {groups.note(term_cell, so=so)}")


def _print_file(done) -> None:
    """What ``stratify`` says of one results file (a
    :class:`~mteb_stratified.stratification.StratifiedFile`): the grain, coverage and
    estimates, the generated queries reported apart, and the note on a generated split."""
    from ..io.markdown import term_cell
    from ..stratification.results import ORIGIN

    summary = done.summary
    post = summary.post_stratified
    cov = summary.cluster_coverage
    print(f"{term_cell(done.target)}: {term_cell(done.model)}: {summary.n_queries} queries "
          f"({summary.n_excluded} excluded) in {summary.n_strata} strata of ≥ "
          f"{summary.min_queries} queries, MSC {cov.msc:.3f}, SCC {cov.scc:.3f}, pooled "
          f"{summary.pooled.estimate:.4f}, corpus-weighted "
          f"{post.estimate if post is not None else float('nan'):.4f}; per-query strata: "
          f"{term_cell(done.table)}")
    untested = cov.weighted_units - cov.covered
    heaviest = "; ".join(f"{term_cell(g.label or str(g.stratum))} ({g.mass:.1%})"
                         for g in cov.gaps[:3])
    print(f"  untested: {untested} of {cov.weighted_units} leaves ({1 - cov.msc:.1%}), "
          f"{cov.uncovered_mass:.1%} of the documents"
          + (f"; the heaviest: {heaviest}" if heaviest else ""))
    gen = done.generated
    if gen is not None:
        ci = "" if gen.ci_low is None else f" [{gen.ci_low:.4f}, {gen.ci_high:.4f}]"
        print(f"  {gen.n_queries} generated queries in split {done.split!r}, "
              f"reported apart (never in the estimates above): pooled {gen.estimate:.4f}{ci} "
              f"against the {gen.n_original} original queries' {gen.original_estimate:.4f}")
    for w in done.warnings:
        if w.kind == ORIGIN:
            print(f"  note: {w.text}")
