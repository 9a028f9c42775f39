"""``mteb-stratified precision-sweep``: the fp32 / bf16 / fp16 ± HPS audit table.

Also runs standalone: ``python -m mteb_stratified.cli.precision_sweep --model minilm``.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..core.errors import InputError
from ._args import int_at_least

MODELS = ("minilm", "smollm2-reranker")
REGIME_HELP = "fp32, bf16, fp16, bf16+hps, fp16+hps, scores-bf16"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "precision-sweep", help="audit what each precision regime (fp32/bf16/fp16 ± HPS) costs",
        description="Scores a task under each precision regime and prints one table, a row per "
                    "regime: tie-aware E[nDCG@10], oblivious nDCG@10, range and bias (also for "
                    "RR@10 and R@100), tie statistics, Spearman/Kendall correlation with fp32, "
                    "time per query and peak memory. Saves CSV, JSON, Markdown and a PNG of the "
                    "ranges. With two models it says whether their order flips between the "
                    "oblivious and the expected value.")
    p.add_argument("--model", action="append", choices=MODELS, metavar="MODEL",
                   help=f"model to audit ({', '.join(MODELS)}); repeat for two "
                        "(default: minilm)")
    p.add_argument("--task", default="nfcorpus",
                   help="task (default: nfcorpus, its test split)")
    p.add_argument("--regimes", nargs="+", default=None, metavar="REGIME",
                   help=f"regimes, space- or comma-separated (default: all: {REGIME_HELP})")
    p.add_argument("--max-queries", type=int_at_least(1), default=None, metavar="N",
                   help="first N judged queries (sorted ids) (default: all)")
    p.add_argument("--rerank-queries", type=int_at_least(1), default=20, metavar="N",
                   help="smollm2-reranker scores only the first N of those queries; its "
                        "forward pass is an LM call per pair (default: 20)")
    p.add_argument("--rerank-depth", type=int_at_least(1), default=10, metavar="K",
                   help="candidates per query for smollm2-reranker (default: 10)")
    p.add_argument("--max-length", type=int_at_least(16), default=256, metavar="T",
                   help="prompt tokens per pair for smollm2-reranker (default: 256)")
    p.add_argument("--activation", choices=("softmax", "sigmoid"), default="softmax",
                   help="reranker score: softmax over yes/no, or sigmoid of the yes-no margin "
                        "(default: softmax)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("-o", "--out", default="runs/precision_sweep", metavar="DIR",
                   help="output folder (default: runs/precision_sweep)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines or bars on stderr")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..adapters.precision.regimes import parse_regimes
    from ..adapters.precision.sweep import (describe_flips, order_flips, run_sweep,
                                            save_results)

    from ..io.outputs import output_dir

    output_dir(args.out, option="-o/--out")  # a file there (or above) fails before any model
    regimes = parse_regimes(args.regimes)  # unknown names fail here, before any model loads
    models = list(dict.fromkeys(args.model or ["minilm"]))
    if len(models) > 2:
        raise InputError(f"{len(models)} models given", fix="give one or two --model")
    if "minilm" in models:  # the reranker's first stage comes from the MiniLM sweep
        models.sort(key=lambda m: m != "minilm")
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)

    results = []
    for name in models:
        limit = args.max_queries
        first = None
        if name == "smollm2-reranker":
            limit = min(limit or args.rerank_queries, args.rerank_queries)
            if results:  # the MiniLM sweep's fp32 scores of the same (sorted) queries
                first = results[0].reference_scores[:limit]
        results.append(run_sweep(name, args.task, regimes, max_queries=limit,
                                 device=args.device, rerank_depth=args.rerank_depth,
                                 max_length=args.max_length, activation=args.activation,
                                 first_stage=first, progress=say,
                                 progress_bars=not args.quiet))
    flips = order_flips(results[0], results[1]) if len(results) == 2 else []
    for res in results:
        print(f"\n{res.model} on {res.task}: {res.settings['queries']} queries, "
              f"{res.settings['candidates_per_query']:.0f} candidates per query")
        print(res.table())
    if flips:
        print(f"\nOrder of the two models on their {flips[0]['queries']} common queries, "
              "oblivious vs expected:")
        print(describe_flips(flips))
        n = sum(f["flip"] for f in flips)
        print(f"{n} of {len(flips)} (regime, measure) comparisons flip.")
    paths = save_results(results, args.out, flips, plot=not args.no_plot)
    print("\nsaved: " + ", ".join(paths.values()))
    for res in results:
        print(sweep_summary_line(res))
    return 0


def sweep_summary_line(res) -> str:
    """One line per model: the nDCG@10 range of each regime (the audit's main figure)."""
    cells = ", ".join(f"{r.regime} {r.ndcg10_range:.4f}" for r in res.rows)
    return f"{res.model} on {res.task}: nDCG@10 range by regime: {cells}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="mteb-stratified")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "precision-sweep":
        argv = ["precision-sweep", *argv]
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"mteb-stratified precision-sweep: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if "pip install" not in str(exc):
            raise
        print(f"mteb-stratified precision-sweep: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
