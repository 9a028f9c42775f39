"""GPU precision audit: the fp32 / bf16 / fp16 ± HPS sweep of MiniLM and a SmolLM2 reranker.

What it measures, on all 323 NFCorpus test queries:

* ``minilm``            all-MiniLM-L6-v2 as a bi-encoder over the full corpus (3,633 documents),
  under the regimes ``fp32 bf16 bf16+hps fp16 fp16+hps``;
* ``smollm2-reranker``  SmolLM2-135M-Instruct as a yes/no reranker of MiniLM's fp32 top 100 per
  query (the reranker's first stage is MiniLM's fp32 scores), same regimes, batch size 64.

Both come from one in-process call of ``mteb_stratified.cli.precision_sweep.main`` with
``--device cuda --no-plot --quiet`` and ``--out`` in a temporary folder; the script reads the
sweep's ``precision_sweep.json`` back and prints, per model, a table in the paper's style:

    regime | nDCG@10 E[M] | range | bias | MRR@10 E[M] | range | bias | distinct/q | tied@10 |
    max grp | forward s | score s | wall s

E[M], range and bias are in percent (×100). MRR@10 is RR@10 (the reciprocal rank of the first
relevant document in the top 10, averaged over queries). ``distinct/q`` is the mean number of
distinct scores per query, ``tied@10`` the share of queries whose top 10 holds a tie, ``max grp``
the largest tie group in a top 100. ``forward s`` and ``score s`` are the regime's model forward
and scoring times from the row metadata, ``wall s`` their sum. The sweep call's own wall clock,
the torch version and the GPU name are printed too, and everything (rows, settings, order flips,
timings, device) is written to ``--json`` (default ``benchmarks/results/gpu_precision_h200.json``).

Without CUDA (or without torch) the script prints a skip message and exits 0. The models load
from their installed packages; the Hugging Face hub is not contacted (``HF_HUB_OFFLINE=1``).

Run: ``python benchmarks/gpu_precision.py [--json PATH] [--max-queries N]``;
``--max-queries 10`` is a quick smoke run (the first 10 sorted query ids, for both models).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JSON = os.path.join(HERE, "results", "gpu_precision_h200.json")

QUERIES = 323  # NFCorpus test queries
REGIMES = ("fp32", "bf16", "bf16+hps", "fp16", "fp16+hps")
RERANK_DEPTH = 100
BATCH_SIZE = 64


def sweep_argv(out: str, max_queries: int | None = None, batch_size: int = BATCH_SIZE,
               rerank_depth: int = RERANK_DEPTH, device: str = "cuda",
               regimes=REGIMES) -> list[str]:
    """The ``precision-sweep`` arguments: MiniLM, then the reranker on MiniLM's top K."""
    rerank_queries = min(QUERIES, max_queries) if max_queries else QUERIES
    argv = ["--model", "minilm", "--model", "smollm2-reranker", "--task", "nfcorpus",
            "--device", device, "--regimes", *regimes,
            "--rerank-depth", str(rerank_depth), "--rerank-queries", str(rerank_queries),
            "--batch-size", str(batch_size), "--out", out, "--no-plot", "--quiet"]
    if max_queries:
        argv += ["--max-queries", str(max_queries)]
    return argv


def timing_table(rows: list[dict]) -> str:
    """Wall time per regime: the forward pass, the scoring step and their sum, in seconds."""
    lines = ["| regime | forward s | score s | wall s | peak MiB |", "|---|---|---|---|---|"]
    for r in rows:
        meta = r.get("metadata") or {}
        fwd, score = meta.get("forward_s", 0.0), meta.get("score_s", 0.0)
        lines.append(f"| {r['regime']} | {fwd:.2f} | {score:.3f} | {fwd + score:.2f} | "
                     f"{r.get('peak_memory_mib', 0.0):.0f} |")
    return "\n".join(lines)


def paper_table(rows: list[dict]) -> str:
    """The sweep's own paper-style table (E[M], range, bias in %, then the tie statistics)."""
    from mteb_stratified.adapters.precision.sweep import SweepRow, format_paper_table

    return format_paper_table([SweepRow.from_dict(r) for r in rows])


def _import_sweep():
    """``precision_sweep`` of the ``mteb_stratified`` the environment imports (a checkout's with
    ``PYTHONPATH=.``, else the installed package's)."""
    from mteb_stratified.cli import precision_sweep

    return precision_sweep


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=DEFAULT_JSON, metavar="PATH",
                        help="write rows, settings, timings and device here "
                             "(default: benchmarks/results/gpu_precision_h200.json)")
    parser.add_argument("--max-queries", type=int, default=None, metavar="N",
                        help="first N test queries only, for both models: a quick smoke run "
                             f"(default: all {QUERIES})")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, metavar="N",
                        help=f"sweep batch size (default: {BATCH_SIZE})")
    parser.add_argument("--rerank-depth", type=int, default=RERANK_DEPTH, metavar="K",
                        help=f"reranker candidates per query (default: {RERANK_DEPTH})")
    parser.add_argument("--regimes", nargs="+", default=list(REGIMES), metavar="REGIME",
                        help=f"regimes (default: {' '.join(REGIMES)})")
    parser.add_argument("--device", default="cuda",
                        help="torch device (default: cuda; without CUDA the script skips). "
                             "--device cpu with --max-queries is a smoke test of the script")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="keep the sweep's own files (JSON, Markdown, CSV) in DIR "
                             "(default: a temporary folder, removed afterwards)")
    args = parser.parse_args(argv)
    if args.max_queries is not None and args.max_queries < 1:
        parser.error("--max-queries must be at least 1")
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    try:
        import torch
    except ImportError:
        print("gpu_precision: skipped: torch is not installed (pip install mteb-stratified[mteb])")
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_precision: skipped: no CUDA device (this benchmark runs the precision sweep "
              "on a GPU; run it on a machine with one)")
        return 0

    os.environ["HF_HUB_OFFLINE"] = "1"
    precision_sweep = _import_sweep()
    name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else args.device
    from _harness import print_command  # here: tests load this file by its path for its tables

    print_command()
    print(f"gpu_precision: {name}, torch {torch.__version__} (CUDA {torch.version.cuda})")

    t_start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        out = args.out or stack.enter_context(tempfile.TemporaryDirectory(prefix="gpu_precision_"))
        sweep_args = sweep_argv(out, args.max_queries, args.batch_size, args.rerank_depth,
                                args.device, args.regimes)
        print("precision-sweep " + " ".join(sweep_args))
        captured = io.StringIO()
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(captured):
                rc = precision_sweep.main(sweep_args)
        except BaseException:
            print(captured.getvalue())
            raise
        wall = time.perf_counter() - t0
        if rc != 0:
            print(captured.getvalue())
            print(f"gpu_precision: the sweep failed with exit status {rc}", file=sys.stderr)
            return rc
        with open(os.path.join(out, "precision_sweep.json")) as f:
            sweep = json.load(f)
    total = time.perf_counter() - t_start

    for res in sweep["results"]:
        s = res.get("settings", {})
        cand = s.get("candidates_per_query")
        cand = f", {cand:.0f} candidates per query" if isinstance(cand, (int, float)) else ""
        print(f"\n{res['model']} on {res['task']}: {s.get('queries', '?')} queries{cand} "
              f"(E[M], range, bias in %)")
        print(paper_table(res["rows"]))
        print("\nwall time per regime (the forward pass is shared by regimes of one model "
              "dtype and counted in full in each):")
        print(timing_table(res["rows"]))
    flips = sweep.get("order_flips") or []
    if flips:
        n = sum(bool(f.get("flip")) for f in flips)
        print(f"\norder flips (oblivious vs expected, {flips[0].get('queries', '?')} common "
              f"queries): {n} of {len(flips)} (regime, measure) comparisons")
    print(f"\nsweep wall clock: {wall:.1f} s (both models); total: {total:.1f} s")

    record = {
        "device": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "sweep_argv": ["precision-sweep", *sweep_args],
        "max_queries": args.max_queries,
        "timings": {"invocations": [{"models": [r["model"] for r in sweep["results"]],
                                     "wall_s": wall}],
                    "total_wall_s": total},
        "results": sweep["results"],
        "order_flips": flips,
        "sweep_stdout": captured.getvalue(),
    }
    if args.json:
        parent = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(parent, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)
        print(f"saved: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
