"""HPS overhead on CPU, end to end, measured side by side against the same regime without HPS.

Two real models in bf16 (the regime HPS is for):

* ``minilm`` — encode a query and ``--docs`` NFCorpus documents, then score: plain bf16
  (bf16 normalisation + bf16 matmul) vs HPS (upcast to fp32, fp32 normalisation + matmul);
* ``smollm2-reranker`` — score ``--pairs`` (query, document) pairs with SmolLM2-135M as a
  yes/no reranker: plain bf16 (yes/no logits and softmax in bf16) vs HPS (fp32 logits
  recomputed from the final hidden state, fp32 softmax).

Each repetition runs both variants back to back, alternating which goes first, so machine load
hits both alike. Reported per model:

* ``e2e plain`` / ``e2e hps``: median seconds of the whole encode+score call;
* ``e2e ratio``: median(hps) / median(plain) − 1 (noisy on a busy machine: it is the difference
  of two large, jittery numbers);
* ``scoring step``: median seconds of the scoring step alone in each variant (from the same
  embeddings / hidden states), and ``overhead`` = (hps − plain scoring) / median e2e plain —
  the HPS cost as a share of encode+score time, the figure the < 1 % target is about.

Run: ``python benchmarks/bench_hps.py [--docs 64] [--pairs 8] [--repeats 5] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _harness import interleaved, load_1m, median, print_command

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _median_time(fn, repeats: int) -> float:
    return median(interleaved({"step": fn}, repeats).wall["step"])


def _side_by_side(plain, hps, repeats: int) -> tuple:
    wall = interleaved({"plain": plain, "hps": hps}, repeats).wall
    return median(wall["plain"]), median(wall["hps"])


def _report(name: str, e2e_plain: float, e2e_hps: float, step_plain: float, step_hps: float,
            extra: str) -> dict:
    ratio = e2e_hps / e2e_plain - 1
    overhead = (step_hps - step_plain) / e2e_plain
    print(f"{name} ({extra})")
    print(f"  e2e plain bf16 {e2e_plain * 1e3:10.2f} ms   e2e bf16+hps {e2e_hps * 1e3:10.2f} ms   "
          f"e2e ratio {ratio:+.2%}")
    print(f"  scoring step: plain {step_plain * 1e3:.4f} ms, hps {step_hps * 1e3:.4f} ms   "
          f"HPS overhead = {overhead:+.4%} of encode+score (target < 1%)")
    return {"model": name, "setup": extra, "e2e_plain_s": e2e_plain, "e2e_hps_s": e2e_hps,
            "e2e_ratio": ratio, "score_step_plain_s": step_plain, "score_step_hps_s": step_hps,
            "hps_overhead_share": overhead}


def bench_minilm(n_docs: int, repeats: int) -> dict:
    from mteb_stratified.adapters.precision import hps
    from mteb_stratified.adapters.precision.hooks import BiEncoderScorer
    from mteb_stratified.adapters.precision.models import load_minilm
    from mteb_stratified.io import bundled_path, load_beir

    ds = load_beir(bundled_path("nfcorpus"))
    query = ds.queries[sorted(ds.qrels)[0]]
    docs = [(d["title"] + " " + d["text"]).strip() for d in list(ds.corpus.values())[:n_docs]]
    model = load_minilm("bfloat16")
    plain, fast = BiEncoderScorer(model), hps(model)
    plain.score(query, docs[:4])  # warm-up
    e2e_p, e2e_h = _side_by_side(lambda: plain.score(query, docs), lambda: fast.score(query, docs),
                                 repeats)
    q, d = plain.embed([query], kind="query"), plain.embed(docs)
    step_p = _median_time(lambda: plain.similarity(q, d), 50)
    step_h = _median_time(lambda: fast.similarity(q, d), 50)
    return _report("minilm", e2e_p, e2e_h, step_p, step_h, f"1 query x {n_docs} docs, bf16")


def bench_reranker(n_pairs: int, repeats: int, max_length: int) -> dict:
    from mteb_stratified.adapters.precision import YesNoReranker, hps
    from mteb_stratified.adapters.precision.models import load_smollm2
    from mteb_stratified.io import bundled_path, load_beir

    ds = load_beir(bundled_path("nfcorpus"))
    query = ds.queries[sorted(ds.qrels)[0]]
    docs = [(d["title"] + " " + d["text"]).strip() for d in list(ds.corpus.values())[:n_pairs]]
    model, tok = load_smollm2("bfloat16")
    plain = YesNoReranker(model, tok, max_length=max_length)
    fast = hps(plain)
    plain.score(query, docs[:2])  # warm-up
    e2e_p, e2e_h = _side_by_side(lambda: plain.score(query, docs), lambda: fast.score(query, docs),
                                 repeats)
    h = plain.last_hidden([(query, x) for x in docs])
    step_p = _median_time(lambda: plain.scores_from_hidden(h), 50)
    step_h = _median_time(lambda: fast.scores_from_hidden(h), 50)
    return _report("smollm2-reranker", e2e_p, e2e_h, step_p, step_h,
                   f"{n_pairs} pairs, max_length {max_length}, bf16, softmax")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2-reranker"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_hps: skipped: torch is not installed (pip install mteb-stratified[mteb])")
        return 0
    print_command()
    print(f"bench_hps: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load {load_1m():.1f}, {args.repeats} side-by-side repetitions")
    out = []
    if "minilm" in args.models:
        out.append(bench_minilm(args.docs, args.repeats))
    if "smollm2-reranker" in args.models:
        out.append(bench_reranker(args.pairs, args.repeats, args.max_length))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
