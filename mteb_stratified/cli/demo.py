"""mteb-stratified demo: BM25 on the bundled NFCorpus test split, evaluated tie-aware.

It writes two runs (TREC format, about 11 MB) into --out and prints the tie-aware table twice:
with BM25's own float32 scores, and with the same scores cast to bfloat16, which shows what
low-precision scoring does to the ranking's ties. Queries where BM25 matches no document (no
stemming) are scored 0, as trec_eval -c, so every one of the 323 test queries counts.
Needs the [bm25] extra.
"""

from __future__ import annotations

import argparse
import os
import time

from . import summary
from ._args import HelpFormatter, int_at_least

DEMO_MEASURES = ("nDCG@10", "RR@10", "R@100", "P@10", "AP@100")

LEGEND = ("expected = mean over every order of the tied documents; min / max = the worst / "
          "best order; oblivious = what trec_eval, pytrec_eval and MTEB report (ties broken by "
          "doc id); range = max - min; bias = oblivious - expected.")


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("demo", help=summary(__name__),
                              description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("-o", "--out", default="mteb-stratified-demo", metavar="DIR",
                   help="folder for the two run files (default: mteb-stratified-demo)")
    p.add_argument("--depth", type=int_at_least(1), default=1000, metavar="K",
                   help="documents per query (default: 1000)")
    p.add_argument("--measures", nargs="+", default=list(DEMO_MEASURES), metavar="MEASURE",
                   help=f"measures to report (default: {' '.join(DEMO_MEASURES)})")
    p.set_defaults(func=run)
    return p


def takeaway(fp32, bf16, measure: str = "nDCG@10", k: int = 10) -> str:
    """One sentence: what the bfloat16 cast did to ties and to the stock figure."""
    a, b = fp32[measure], bf16[measure]
    ta, tb = fp32.tie_stats(k)["tied_query_share"], bf16.tie_stats(k)["tied_query_share"]
    return (f"Takeaway: casting the scores to bfloat16 puts a tie in the top {k} of "
            f"{100 * tb:.1f}% of queries ({100 * ta:.1f}% in float32) and widens the {measure} "
            f"range from {a.range:.4f} to {b.range:.4f}; the stock tie-oblivious {measure} "
            f"({b.oblivious:.4f}) sits {b.bias:+.4f} from the expected {b.expected:.4f} through "
            "tie-breaking alone.")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..adapters.bm25 import bm25_run
    from ..api import evaluate
    from ..core import parse_measures
    from ..core.ranking.precision import round_to_bfloat16
    from ..io import bundled_path, load_beir, write_run
    from ..io.outputs import output_dir

    output_dir(args.out, option="-o/--out")  # a file there (or above) fails before BM25 runs
    measures = list(dict.fromkeys(["nDCG@10", *args.measures]))
    parse_measures(measures)  # an unknown name fails before BM25 runs
    t0 = time.perf_counter()
    data = load_beir(bundled_path("nfcorpus"), "test")
    run_fp32, info = bm25_run(data.corpus, data.queries, depth=args.depth)
    t1 = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    path32 = os.path.join(args.out, "nfcorpus-test.bm25.fp32.trec")
    write_run(run_fp32, path32, tag="bm25-fp32")
    run_bf16 = {q: dict(zip(d, round_to_bfloat16(np.fromiter(d.values(), np.float32)).tolist()))
                for q, d in run_fp32.items()}
    path16 = os.path.join(args.out, "nfcorpus-test.bm25.bf16.trec")
    write_run(run_bf16, path16, tag="bm25-bf16")
    qrels_path = os.path.join(bundled_path("nfcorpus"), "qrels", "test.tsv")
    print(f"NFCorpus test: {len(data.queries)} queries, {len(data.corpus)} documents; "
          f"BM25 (bm25s) in {t1 - t0:.1f}s; {info['queries_widened_at_depth']} queries kept "
          f"extra documents tied at depth {args.depth}")
    print(LEGEND)
    results = {}
    for label, path in (("BM25, float32 scores", path32), ("BM25, scores cast to bfloat16", path16)):
        result = evaluate(qrels_path, path, measures, missing="zero")
        results[label] = result
        print(f"\n== {label}: {path}\n")
        print(result.table())
    fp32, bf16 = results.values()
    size = sum(os.path.getsize(p) for p in (path32, path16)) / 2**20
    print("\n" + takeaway(fp32, bf16))
    print(f"\nwrote the two runs ({size:.0f} MB) to {os.path.abspath(args.out)}"
          " (choose the folder with -o/--out)")
    print(f"re-run one with: mteb-stratified evaluate --qrels nfcorpus:test --run "
          f"{os.path.abspath(path16)} -c")
    return 0
