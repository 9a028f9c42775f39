"""``mteb-stratified stratify RESULTS... --structure DIR``: add a ``strata`` block to MTEB results.

For each results JSON (``<Task>.json``) the per-query tie-aware values are read from
``<Task>_per_query.csv`` next to it, or from ``--per-query PATH``.  The queries are stratified
over the structure artifact (default: the bundled NFCorpus structure) with the dataset's qrels
(default: bundled NFCorpus), and the file gains a top-level ``"strata": {split: block}`` and flat
``strata_<estimator>_<metric>_expected`` / ``strata_msc`` / ``strata_scc`` /
``strata_uncovered_weight`` keys in the split's score entries (read by the leaderboard).
"""

from __future__ import annotations

import argparse
import json
import os

from ..core import DEFAULT_N_MIN, InputError


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--structure", default=None,
                   help="structure artifact folder (default: the bundled NFCorpus structure)")
    p.add_argument("--dataset", default=None,
                   help="BEIR folder of the corpus (default: the bundled NFCorpus)")
    p.add_argument("--split", default="test")
    p.add_argument("--measure", default="nDCG@10", help="per-query measure (default nDCG@10)")
    p.add_argument("--scheme", default="cluster", help="stratum scheme: cluster or cell")
    p.add_argument("--alignment", default="exact",
                   help="J variant: exact Jaccard, or soft (embedding matching; needs the "
                        "artifact's soft cut-points and the [structure] extra)")
    p.add_argument("--n-min", type=int, default=DEFAULT_N_MIN,
                   help=f"queries a cluster needs to count in SCC (default {DEFAULT_N_MIN})")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("stratify", help="add a strata block to MTEB results JSON files",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="MTEB results JSON files")
    p.add_argument("--per-query", nargs="+", default=None,
                   help="per-query CSV(s), one per results file, in the same order")
    p.add_argument("--out", default=None,
                   help="write to this folder instead of updating the files in place")
    add_common(p)
    p.set_defaults(func=run)
    return p


def check_options(args) -> None:
    from ..core.strata import check_scheme
    from ..core.coverage import _check_n_min
    from ..report.summary import _check_alignment
    check_scheme(args.scheme)
    _check_alignment(args.alignment)
    _check_n_min(args.n_min)
    if args.resamples < 2:
        raise InputError("--resamples must be ≥ 2", fix="e.g. --resamples 2000")


_CONTEXT: dict = {}


def load_context(args):
    """(artifact, dataset, strata) for the structure and dataset given on the command line
    (cached per process, so repeated in-process calls do not re-extract query entities)."""
    key = (args.structure, args.dataset, args.split, args.alignment)
    if key not in _CONTEXT:
        _CONTEXT.clear()
        _CONTEXT[key] = _load_context(args)
    return _CONTEXT[key]


def _load_context(args):
    from ..io import bundled_path, load_beir
    from ..report import strata_for_dataset
    from ..structure.artifact import StructureArtifact
    art = (StructureArtifact.bundled("nfcorpus") if args.structure is None
           else StructureArtifact.load(args.structure))
    folder = args.dataset or bundled_path("nfcorpus")
    data = load_beir(folder, args.split)
    art.check_corpus(data.corpus, source=folder)
    return art, data, strata_for_dataset(art, data, check_corpus=False,
                                         alignment=args.alignment)


def run(args: argparse.Namespace) -> int:
    from ..report import (find_per_query, flat_strata_scores, load_results_json,
                          read_per_query_csv, stratified_summary)
    check_options(args)
    if args.per_query is not None and len(args.per_query) != len(args.results):
        raise InputError(f"{len(args.per_query)} --per-query files for {len(args.results)} "
                         "results files", fix="give one per-query CSV per results file")
    loaded = [load_results_json(p) for p in args.results]
    art, data, strata = load_context(args)
    for i, (path, res) in enumerate(zip(args.results, loaded)):
        pq = args.per_query[i] if args.per_query else find_per_query(path, res["task_name"])
        vals = read_per_query_csv(pq, args.measure, split=args.split)
        block = stratified_summary(vals, strata, art, measure=args.measure, scheme=args.scheme,
                                   n_min=args.n_min, n_resamples=args.resamples, seed=args.seed)
        res.setdefault("strata", {})[args.split] = block
        flat = flat_strata_scores(block, args.measure)
        for entry in res["scores"].get(args.split, []):
            entry.update(flat)
        target = path if args.out is None else os.path.join(args.out, os.path.basename(path))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=2, default=str)
        os.replace(tmp, target)
        post = block["estimates"]["expected"]["analytic"].get("post_stratified", {})
        print(f"{target}: {block['n_queries']} queries ({block['n_excluded']} excluded), "
              f"MSC {block['coverage']['cluster']['msc']:.3f}, "
              f"SCC {block['coverage']['cluster']['scc']:.3f}, pooled "
              f"{block['estimates']['expected']['analytic']['pooled']['estimate']:.4f}, "
              f"corpus-weighted {post.get('estimate', float('nan')):.4f}")
    return 0
