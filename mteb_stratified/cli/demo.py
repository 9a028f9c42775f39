"""``mteb-stratified demo``: BM25 on the bundled NFCorpus test split, evaluated tie-aware.

It writes the run (TREC format) and prints the tie-aware table twice: with BM25's own float32
scores, and with the same scores cast to bfloat16, which shows what low-precision scoring does
to the ranking's ties.  Queries where BM25 matches no document (no stemming) are scored 0, as
``trec_eval -c``, so every one of the 323 test queries counts.
"""

from __future__ import annotations

import argparse
import os
import time

from ..api import DEFAULT_MEASURES, evaluate
from ..core.precision import round_to_bfloat16


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("demo", help="BM25 on bundled NFCorpus, tie-aware table",
                              description=__doc__)
    p.add_argument("--out", default="mteb-stratified-demo", help="folder for the run files")
    p.add_argument("--depth", type=int, default=1000, help="documents per query (default 1000)")
    p.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES), metavar="MEASURE")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..adapters.bm25 import bm25_run
    from ..io import bundled_path, load_beir, write_run

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
    for label, path in (("BM25, float32 scores", path32), ("BM25, scores cast to bfloat16", path16)):
        result = evaluate(qrels_path, path, args.measures, missing="zero")
        print(f"\n== {label}: {path}\n")
        print(result.table())
    print(f"\nRe-run any of these with: mteb-stratified evaluate --qrels {qrels_path} "
          f"--run {path16} -c --json")
    return 0
