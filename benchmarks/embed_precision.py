"""How close each precision of the structure's document embedding stays to float32, and its
speed, on the same abstracts in one run.

For ``--docs N`` NFCorpus abstracts (``title. text``, the document map's own inputs, the first N
by id) this embeds with every ``--precision`` through :func:`mteb_stratified.structure.embed.
embed_texts` in the document map's batches (``DOCUMENT_BATCH``; int8 its own ``INT8_BATCH``),
``--repeats`` times interleaved (the order rotated each repetition: float32, bf16, int8; bf16,
int8, float32; ...), and prints for each: the
best and median wall time, float32's best over its best (speed-up), the cosine of each abstract's embedding to
its float32 one (mean and minimum) and how many of its 10 nearest neighbours (cosine, among the
N) float32's embedding shares.  The model is loaded before the first timed pass.

    python benchmarks/embed_precision.py --data mteb_stratified/data/nfcorpus --docs 400
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _harness import interleaved, load_1m, median, portable_path, print_command


def knn(emb: np.ndarray, k: int = 10) -> np.ndarray:
    sim = emb @ emb.T
    np.fill_diagonal(sim, -np.inf)
    return np.argsort(-sim, axis=1)[:, :k]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a BEIR folder")
    p.add_argument("--docs", type=int, default=400)
    p.add_argument("--precision", nargs="+", default=["float32", "bf16", "int8"],
                   choices=["float32", "bf16", "int8"])
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    from mteb_stratified.io import load_beir
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.structure.embed import DOCUMENT_BATCH, INT8_BATCH, embed_texts
    from mteb_stratified.structure.sentence_model import cpu_bf16_native

    corpus = load_beir(args.data, "test").corpus
    texts = [doc_text(corpus[d]) for d in sorted(corpus)[:args.docs]]
    precisions = ["float32"] + [x for x in args.precision if x != "float32"]
    for x in precisions:  # load (and quantise) each model before timing
        embed_texts(texts[:2], precision=x)
    batch = {x: INT8_BATCH if x == "int8" else DOCUMENT_BATCH for x in precisions}
    got = interleaved({x: (lambda x=x: embed_texts(texts, batch_size=batch[x], precision=x))
                       for x in precisions}, args.repeats)
    times, emb = got.wall, got.results
    print_command()
    print(f"# embed_precision --data {portable_path(args.data)} --docs {len(texts)} "
          f"--repeats {args.repeats}  "
          f"({time.strftime('%Y-%m-%d')}, cpus {os.cpu_count()}, load "
          f"{load_1m():.1f}, CPU bfloat16 instructions: {cpu_bf16_native()})")
    print(f"{'precision':10s} {'best s':>8s} {'median s':>9s} {'speed-up':>10s} "
          f"{'cos mean':>10s} {'cos min':>10s} {'kNN@10 kept':>12s}")
    base, base_knn = emb["float32"], knn(emb["float32"])
    for x in precisions:
        cos = (emb[x] * base).sum(1)
        kept = np.mean([len(set(a) & set(b)) for a, b in zip(knn(emb[x]), base_knn)])
        print(f"{x:10s} {min(times[x]):8.1f} {median(times[x]):9.1f} "
              f"{min(times['float32']) / min(times[x]):9.2f}x {cos.mean():10.6f} "
              f"{cos.min():10.6f} {kept:9.2f}/10")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
