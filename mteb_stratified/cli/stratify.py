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
import contextlib
import os

from ..core import InputError
from ..io.outputs import atomic_write, dumps_json, fsync_dir, output_dir, safe_name
from . import summary
from ._args import HelpFormatter
from ._strata_args import add_common, check_evaluated, check_options, load_context


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
    from ..io.mteb_results import copy_target, expand_results, read_values, resolve_inputs
    from ..stratification import (flat_strata_scores, gate_verdict, split_origin,
                                  stratified_summary)

    check_options(args)
    if args.out is not None:
        output_dir(args.out)
    items = resolve_inputs(expand_results(args.results, args.task,
                                          skip_unreadable=args.skip_unreadable), args.per_query,
                           prediction_folder=args.prediction_folder)
    # every input checked first
    values = [read_values(item, args.measure, split=args.split) for item in items]
    _query_sets(items, values, args)
    targets = [item.path if args.out is None else copy_target(item.path, args.out)
               for item in items]
    if len(set(targets)) < len(targets):
        raise InputError(f"several results files would be copied to the same place in {args.out}",
                         fix="stratify them in place (leave out -o/--out), or one at a time")
    from ..stratification.table import strata_rows, strata_table_text
    from ._progress import Steps

    step = Steps("stratify", enabled=not args.no_progress)
    with step("loading the structure, the queries and their strata"):
        art, data, strata = load_context(args)
    art.cluster_tree.check_level(args.level)  # a level the artifact lacks: before any work
    for k, (item, vals, target) in enumerate(zip(items, values, targets), 1):
        check_evaluated(vals, strata, item.per_query)  # unknown query ids: said with the file
        with step(f"{k}/{len(items)} {item.model}: estimates, intervals and chance tests "
                  f"({args.resamples} resamples)"):
            summary = stratified_summary(vals, strata, art, measure=args.measure,
                                         scheme=args.scheme, n_min=args.n_min,
                                         min_queries=args.min_queries, level=args.level,
                                         n_resamples=args.resamples, seed=args.seed,
                                         origin=split_origin(data), gate=gate_verdict(data))
        table_rows = strata_rows(strata, art, data.qrels, summary.grain)
        flat = flat_strata_scores(summary, args.measure)
        # named after the result's own task (a quick-run subset's keeps its mark), so results
        # of two tasks, or a subset and a full run, in one folder never share a table
        table = os.path.join(os.path.dirname(target), f"{safe_name(str(item.data['task_name']))}"
                                                      f"_strata_{safe_name(args.split)}.tsv")
        beside = [(table, strata_table_text(table_rows).encode("utf-8"))]
        if args.out:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            meta = os.path.join(os.path.dirname(item.path), "model_meta.json")
            if os.path.isfile(meta):  # the copy keeps its model (leaderboard, report read it)
                with open(meta, "rb") as src:  # replaced in the copy, a link never followed
                    beside.append((os.path.join(os.path.dirname(target), "model_meta.json"),
                                   src.read()))
        _save(item, target, args.split, summary.to_dict(), flat, in_place=not args.out,
              beside=beside)
        _print_summary(target, item.model, summary, table, args.split)
    return 0


def _with_block(res: dict, split: str, block: dict, flat: dict) -> dict:
    """``res`` with ``block`` as its strata block of ``split`` and ``flat`` in its entries."""
    res.setdefault("strata", {})[split] = block
    for entry in res["scores"].get(split, []):
        entry.update(flat)
    return res


def _without_strata(res: dict) -> str:
    """``res`` without what ``stratify`` adds (the strata blocks, the ``strata_*`` keys), as
    canonical JSON (NaN compares equal to NaN there)."""
    scores = {split: [{k: v for k, v in entry.items() if not str(k).startswith("strata_")}
                      if isinstance(entry, dict) else entry for entry in entries]
              for split, entries in res["scores"].items()}
    rest = {k: v for k, v in res.items() if k not in ("strata", "scores")}
    return dumps_json({**rest, "scores": scores}, sort_keys=True, default=str)


def _save(item, target: str, split: str, block: dict, flat: dict, *, in_place: bool,
          beside: "list | tuple" = ()) -> dict:
    """Write the results file ``target`` with this split's strata block, and the files
    ``beside`` it (``[(path, bytes)]``: the per-query strata table, the copy's
    model_meta.json); returns the results written.  In place, the file is read again under its
    lock and only this split's block and keys change, so two runs on one file (say ``--split
    test`` and ``--split dev``) both land; a file whose scores changed since it was read is
    refused."""
    from ..io.lock import file_lock
    from ..io.mteb_results import load_task_result

    if not in_place:
        res = _with_block(item.data, split, block, flat)
        _write_results(target, res, beside)
        return res
    with file_lock(target, what="mteb-stratified stratify"):
        current = load_task_result(target)
        if _without_strata(current) != _without_strata(item.data):
            raise InputError("the results file changed while stratify ran (its scores are no "
                             "longer the ones stratified)", source=target,
                             fix="run stratify again on the new results")
        res = _with_block(current, split, block, flat)
        _write_results(target, res, beside)
    return res


def _write_results(target: str, res: dict, beside: list) -> None:
    """The results file and the files beside it, so that a kill never leaves a new strata
    block beside an old table, nor an old block beside a new one: the files beside are
    removed first, then the results file is replaced (atomically: it is never missing, it may
    be the user's only copy), then the files beside are written."""
    for path, _ in beside:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a link is removed, never followed
    fsync_dir(os.path.dirname(os.path.abspath(target)))
    with atomic_write(target, encoding="utf-8") as fh:
        fh.write(dumps_json(res, indent=2, default=str))
    for path, data in beside:
        with atomic_write(path, "wb") as fh:
            fh.write(data)


def _query_sets(items, values, args) -> list:
    """Each input's evaluated query set; results of different sets are stratified each on its
    own and said apart (``--require-same-queries``: an error instead)."""
    from ..core.query_set import QuerySet, group_by_query_set
    from ..io.mteb_results import recorded_query_set

    sets = [QuerySet.of(vals.queries, args.split,
                        subset=recorded_query_set(item.data, args.split).subset)
            for item, vals in zip(items, values)]
    groups = group_by_query_set(range(len(items)), key=sets.__getitem__)
    if len(groups) > 1:
        text = "; ".join(f"{sets[g[0]].label}: {', '.join(items[i].model for i in g)}"
                         for g in groups)
        if args.require_same_queries:
            raise InputError(f"the results were evaluated on different query sets: {text}",
                             fix="evaluate every model on the same queries, or leave out "
                                 "--require-same-queries")
        from ..io.markdown import term_cell  # model names from model_meta.json

        print(f"note: these results were evaluated on {len(groups)} different query sets "
              f"({term_cell(text)}); their strata figures are not comparable across sets")
    return sets


def _print_summary(target: str, model: str, summary, table: str, split: str) -> None:
    """What ``stratify`` says of one results file: the grain, coverage and estimates."""
    from ..io.markdown import term_cell

    post = summary.post_stratified
    cov = summary.cluster_coverage
    print(f"{term_cell(target)}: {term_cell(model)}: {summary.n_queries} queries "
          f"({summary.n_excluded} excluded) in {summary.n_strata} strata of ≥ "
          f"{summary.min_queries} queries, MSC {cov.msc:.3f}, SCC {cov.scc:.3f}, pooled "
          f"{summary.pooled.estimate:.4f}, corpus-weighted "
          f"{post.estimate if post is not None else float('nan'):.4f}; per-query strata: "
          f"{term_cell(table)}")
    untested = cov.weighted_units - cov.covered
    heaviest = "; ".join(f"{term_cell(g.label or str(g.stratum))} ({g.mass:.1%})"
                         for g in cov.gaps[:3])
    print(f"  untested: {untested} of {cov.weighted_units} leaves ({1 - cov.msc:.1%}), "
          f"{cov.uncovered_mass:.1%} of the documents"
          + (f"; the heaviest: {heaviest}" if heaviest else ""))
    gen = summary.generated
    if gen:
        g, o = gen["generated"], gen["original"]
        ci = "" if g["ci_low"] is None else f" [{g['ci_low']:.4f}, {g['ci_high']:.4f}]"
        print(f"  {g['n_queries']} generated queries in split {split!r}, "
              f"reported apart (never in the estimates above): pooled {g['estimate']:.4f}{ci} "
              f"against the {o['n_queries']} original queries' {o['estimate']:.4f}")
    for w in summary.warnings:
        if summary.origin != "original" and w.startswith("every query of this split"):
            print(f"  note: {w}")
