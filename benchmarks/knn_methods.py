"""The k-NN methods of :func:`knn_edges` side by side: time, edge recall and the recall check.

Two inputs, each searched exactly and by every approximate method (``exact_max=1000`` so that
all of them search approximately; k = 10):

* **real**: every distinct normalised entity name of the bundled NFCorpus artifact
  (``doc_entities.jsonl.gz``: 63,541 names; the pipeline keeps those in >= 2 documents),
  embedded with the packaged MiniLM, τ = 0.6 (the pipeline's);
* **synthetic**: the planted communities of ``bench_structure.py``, flat and with topics
  (``--n``, default 100k), τ = 0.5; HNSW left out there (see the graph module docstring).

Edge recall: the share of the exact graph's edges found (undirected: found from either end).
The check is the method's own sample estimate, in the index name.

    python benchmarks/knn_methods.py [--n 100000] [--skip-real] [--skip-synthetic]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time

import numpy as np

from _harness import print_command
from bench_structure import make_entities


def _keys(e) -> set:
    return set((e.src * e.n + e.dst).tolist())


def compare(name: str, emb: np.ndarray, threshold: float, methods) -> None:
    from mteb_stratified.structure.graph import knn_edges
    t = time.perf_counter()
    exact = knn_edges(emb, k=10, threshold=threshold, exact_max=emb.shape[0])
    print(f"{name}: n={emb.shape[0]:,} τ={threshold}: exact {time.perf_counter() - t:.1f} s, "
          f"{len(exact):,} edges", flush=True)
    truth = _keys(exact)
    for method in methods:
        t = time.perf_counter()
        e = knn_edges(emb, k=10, threshold=threshold, exact_max=1000, method=method)
        dt = time.perf_counter() - t
        print(f"  {method:<9} {dt:6.1f} s  edge recall {len(truth & _keys(e)) / len(truth):.4f}"
              f"  {e.index}", flush=True)


def real_names() -> np.ndarray:
    from mteb_stratified.io import bundled_path
    from mteb_stratified.structure.embed import embed_texts
    names = set()
    path = os.path.join(bundled_path("nfcorpus"), "structure", "doc_entities.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            names.update(json.loads(line)["entities"])
    t = time.perf_counter()
    emb = np.asarray(embed_texts(sorted(names)), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    print(f"embedded {len(names):,} NFCorpus entity names in {time.perf_counter() - t:.1f} s",
          flush=True)
    return emb


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="synthetic entities (default 100k)")
    p.add_argument("--skip-real", action="store_true")
    p.add_argument("--skip-synthetic", action="store_true")
    args = p.parse_args()
    print_command()
    import faiss  # noqa: F401  imported before any clock starts
    if not args.skip_real:
        compare("real (NFCorpus entity names, MiniLM)", real_names(), 0.6,
                ["auto", "ivf-tree", "ivf-flat", "hnsw"])
    if not args.skip_synthetic:
        for topics in (None, 50):
            emb, _ = make_entities(args.n, seed=0, topics=topics)
            label = "flat" if topics is None else f"topics ({topics} communities a topic)"
            compare(f"synthetic {label}", emb, 0.5, ["auto", "ivf-tree", "ivf-flat"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
