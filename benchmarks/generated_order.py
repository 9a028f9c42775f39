"""The system order on real, selected and generated queries: BM25 and the packaged MiniLM
(nDCG@10, tie-aware expected) on each query source of ``generate`` outputs, side by side.

    mteb-stratified generate --dataset nfcorpus --structure bundled --out /tmp/sel \\
        --target-msc 1 --target-scc 0.95
    mteb-stratified generate --dataset nfcorpus --structure bundled --out /tmp/tpl \\
        --writer template --target-msc 1 --target-scc 0.95
    python benchmarks/generated_order.py --source selected=/tmp/sel:selected \\
        --source template=/tmp/tpl:generated [--cache /tmp/order-cache]

The real source is the first output's ``test`` split (the original qrels, byte for byte).
Each row: a system's mean on each source; then BM25 − MiniLM on each source with its paired
95% t interval and p.  Everything is recomputed here from the written folders (not read from
coverage.json), with the same BM25 (bm25s) and MiniLM (cosine, top 100) as the gate.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats

from _harness import print_command


def _paired(d: np.ndarray) -> tuple:
    n = d.size
    se = d.std(ddof=1) / math.sqrt(n)
    t = stats.t.ppf(0.975, n - 1)
    p = 2 * stats.t.sf(abs(d.mean() / se), n - 1) if se > 0 else 1.0
    return d.mean(), d.mean() - t * se, d.mean() + t * se, p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", required=True, metavar="NAME=DIR:SPLIT",
                    help="a generate output folder and the split of its added queries")
    ap.add_argument("--real-split", default="test", help="the original split (default: test)")
    ap.add_argument("--cache", default=None, help="folder for the corpus embeddings")
    args = ap.parse_args(argv)

    from mteb_stratified import evaluate
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.generation.gate import dense_runs
    from mteb_stratified.io import load_beir

    t0 = time.perf_counter()
    sources = []
    for spec in args.source:
        name, _, rest = spec.partition("=")
        folder, _, split = rest.rpartition(":")
        if not name or not folder or not split:
            print(f"--source {spec!r}: expected NAME=DIR:SPLIT", file=sys.stderr)
            return 2
        sources.append((name, folder, split))
    first = sources[0][1]
    sets = {"real": load_beir(first, args.real_split)}
    for name, folder, split in sources:
        sets[name] = load_beir(folder, split, corpus=False)
    corpus = sets["real"].corpus
    scores: dict = {}
    for name, ds in sets.items():
        queries = {q: ds.queries[q] for q in ds.qrels}
        bm, _ = bm25_run(corpus, queries, depth=100)
        dense = dense_runs(corpus, {"x": queries}, None, args.cache)["x"]
        for system, run in (("BM25", bm), ("MiniLM", dense)):
            res = evaluate(ds.qrels, run, ["nDCG@10"], missing="zero")
            scores[(system, name)] = res["nDCG@10"].per_query()
    names = list(sets)
    print_command()
    print("system   " + "".join(f"{n + f' ({len(sets[n].qrels)})':>22}" for n in names))
    for system in ("BM25", "MiniLM"):
        print(f"{system:<9}" + "".join(f"{np.mean(list(scores[(system, n)].values())):>22.3f}"
                                       for n in names))
    row = "BM25−MiniLM"
    for n in names:
        qs = sorted(scores[("BM25", n)])
        d = np.array([scores[("BM25", n)][q] - scores[("MiniLM", n)][q] for q in qs])
        m, lo, hi, p = _paired(d)
        row += f"  {m:+.3f} [{lo:+.3f},{hi:+.3f}] p={p:.2g}"
    print(row)
    order = {n: ("BM25" if np.mean(list(scores[("BM25", n)].values()))
                 > np.mean(list(scores[("MiniLM", n)].values())) else "MiniLM") for n in names}
    print("first: " + ", ".join(f"{n}: {order[n]}" for n in names))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
