"""Speed and memory of the tie-aware core against pytrec_eval and TRM, side by side in one run.

A synthetic bf16-quantised run: Q queries × N candidates (default 10,000 × 1,000), cosine-like
scores ~ Normal(0.5, 0.1) rounded to the bfloat16 grid (so scores tie heavily, as under bf16
scoring), graded relevance 0/1/2 with ~1% relevant candidates.  Measures: nDCG, RR, R, P, AP at
k ∈ {1, 10, 100} (15 measures).

(a) ours: full tie-aware evaluation (expected, min, max, oblivious) from the arrays;
(b) pytrec_eval: tie-oblivious evaluation of ndcg_cut, P, recall, map_cut at the same cutoffs
    plus recip_rank (uncut: pytrec_eval has no RR@k, which favours it), from prebuilt dicts —
    the dict building is timed separately and not charged to pytrec_eval;
(c) TRM (tie-aware-retrieval-metrics, pure Python) on a 2% subsample, scaled to all queries;
(d) ours from pytrec_eval's very dicts, parsing into arrays included.

Peak memory of (a) is measured with tracemalloc (numpy reports its buffers to it) in a separate
pass, and compared with the run's own arrays (scores float32 + relevance int8).

Run: ``python benchmarks/bench_metrics.py [--queries Q] [--candidates N]``.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np

from mteb_stratified.core import evaluate_matrices
from mteb_stratified.core.precision import round_to_bfloat16

CUTOFFS = (1, 10, 100)
MEASURES = [f"{m}@{k}" for m in ("nDCG", "RR", "R", "P", "AP") for k in CUTOFFS]


def make_run(q: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = round_to_bfloat16(rng.normal(0.5, 0.1, size=(q, n)).astype(np.float32))
    relevant = rng.random((q, n)) < 0.01
    grades = np.where(relevant, rng.integers(1, 3, size=(q, n)), 0).astype(np.int8)
    return scores, grades


def to_dicts(scores, grades):
    ids = [f"d{j}" for j in range(scores.shape[1])]
    run, qrels = {}, {}
    for i in range(scores.shape[0]):
        qid = f"q{i}"
        run[qid] = dict(zip(ids, scores[i].tolist()))
        rel = np.flatnonzero(grades[i])
        qrels[qid] = {ids[j]: int(grades[i, j]) for j in rel} or {ids[0]: 0}
    return run, qrels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--candidates", type=int, default=1_000)
    ap.add_argument("--trm-share", type=float, default=0.02)
    args = ap.parse_args()
    q, n = args.queries, args.candidates
    scores, grades = make_run(q, n)
    own_bytes = scores.nbytes + grades.nbytes
    print(f"run: {q} queries x {n} candidates, bf16 grid; {len(MEASURES)} measures "
          f"({', '.join(MEASURES)})")
    print(f"distinct scores per query (mean): "
          f"{np.mean([len(np.unique(r)) for r in scores[:200]]):.1f} of {n}")

    # (a) ours
    t = time.perf_counter()
    ours = evaluate_matrices(scores, grades, MEASURES)
    t_ours = time.perf_counter() - t
    gc.collect()
    tracemalloc.start()
    evaluate_matrices(scores, grades, MEASURES)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    # (b) pytrec_eval
    import pytrec_eval

    t = time.perf_counter()
    run, qrels = to_dicts(scores, grades)
    t_dicts = time.perf_counter() - t
    names = {"ndcg_cut." + ",".join(map(str, CUTOFFS)), "P." + ",".join(map(str, CUTOFFS)),
             "recall." + ",".join(map(str, CUTOFFS)), "map_cut." + ",".join(map(str, CUTOFFS)),
             "recip_rank"}
    t = time.perf_counter()
    ref = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    t_pytrec = time.perf_counter() - t
    # (d) ours from the very same dicts (parsing into arrays included)
    from mteb_stratified.core import evaluate_dicts

    t = time.perf_counter()
    evaluate_dicts(qrels, run, MEASURES)
    t_ours_dicts = time.perf_counter() - t
    del run, qrels


    # (c) TRM on a subsample
    import trm

    m = max(1, int(round(q * args.trm_share)))
    t = time.perf_counter()
    trm.evaluate(scores[:m].tolist(), (grades[:m] > 0).tolist(),
                 metrics=["ndcg", "mrr", "map", "recall", "precision"], k_list=list(CUTOFFS))
    t_trm = (time.perf_counter() - t) * q / m

    print(f"\n(a) mteb-stratified tie-aware (expected+min+max+oblivious): {t_ours:8.2f} s")
    print(f"(b) pytrec_eval tie-oblivious (evaluate call only):         {t_pytrec:8.2f} s "
          f"(+ {t_dicts:.2f} s to build its dicts)")
    print(f"(c) TRM tie-aware, {m} queries scaled x{q / m:.0f}:                 {t_trm:8.2f} s")
    print(f"(d) mteb-stratified tie-aware from pytrec_eval's dicts:     {t_ours_dicts:8.2f} s "
          f"(dict parsing included)")
    print(f"\nratio (a)/(b) = {t_ours / t_pytrec:.3f}   (target <= 1.0, stretch 0.3)")
    print(f"ratio (c)/(a) = {t_trm / t_ours:.1f}   (target >= 50)")
    print(f"ratio (d)/(b) = {t_ours_dicts / t_pytrec:.3f}   (both from dicts)")
    print(f"peak memory of (a): {peak / 2**20:.1f} MiB = {peak / own_bytes:.2f} x the run's own "
          f"arrays ({own_bytes / 2**20:.1f} MiB: scores float32 + relevance int8; target <= 3x)")
    print(f"\nmean nDCG@10: expected {ours['nDCG@10'].expected:.4f}, range "
          f"{ours['nDCG@10'].range:.4f}; pytrec_eval (doc-id tie-break) "
          f"{np.mean([v['ndcg_cut_10'] for v in ref.values()]):.4f}")


if __name__ == "__main__":
    main()
