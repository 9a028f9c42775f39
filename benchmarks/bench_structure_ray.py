"""Throughput of the structure pipeline's per-document steps: single machine vs Ray (1, 2 workers).

On one corpus of ``--docs`` documents (NFCorpus documents repeated with distinct ids, 20,000 by
default), side by side in one run:

* **extraction + normalisation** (documents per second): the single-machine path (this
  process: the pipeline's chunks run one after another on one core), then the Ray engine with
  1 and with 2 workers (one CPU each) on a local Ray cluster of ``--cpus`` CPUs;
* **entity embedding** (texts per second): the vocabulary of that corpus embedded as the
  pipeline does (``name: description``, batches of 64): single machine with 1 torch thread and
  with 2, then Ray with 1 and 2 workers (one torch thread each);
* the checks that the engines agree: the same rows (JSON) and the same embedding bits;
* the ratios: Ray 2 workers / Ray 1 worker (target ≥ 1.7), and Ray's overhead against the
  single-machine path with the same cores (1 worker vs 1 core; target ≤ 15 %).  Ray's times
  include its own start-up costs per step (actors that load spaCy or the model).

    python benchmarks/bench_structure_ray.py            # 20,000 documents (about 30 min here)
    python benchmarks/bench_structure_ray.py --docs 2000 --json

Needs the [structure] and [ray] extras.  The graph and Leiden steps are not timed here (they run
on the driver with either engine: benchmarks/bench_structure.py times them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _harness import print_command


def repeated_corpus(n_docs: int) -> dict:
    """``n_docs`` NFCorpus documents, the corpus repeated with ids ``<id>#<copy>``."""
    from mteb_stratified.io import bundled_path, load_beir
    from mteb_stratified.io.corpus_text import doc_text
    corpus = load_beir(bundled_path("nfcorpus"), "test").corpus
    ids = sorted(corpus)
    return {f"{ids[i % len(ids)]}#{i // len(ids)}": doc_text(corpus[ids[i % len(ids)]])
            for i in range(n_docs)}


def timed_extract(engine, texts: dict, extractor, cfg) -> tuple[float, dict]:
    ids = sorted(texts)
    chunks = [ids[s:s + cfg.chunk_size] for s in range(0, len(ids), cfg.chunk_size)]
    t0 = time.perf_counter()
    rows = {}
    for batch in engine.extract(chunks, texts, extractor, cfg):
        for row in batch:
            rows[row["doc_id"]] = row
    return time.perf_counter() - t0, rows


def timed_embed(engine, inputs: list) -> tuple[float, object]:
    t0 = time.perf_counter()
    emb = engine.embed(inputs, None, 64)
    return time.perf_counter() - t0, emb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20_000, help="documents (default: 20000)")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster, >= 2 "
                    "(default: 2)")
    ap.add_argument("--max-texts", type=int, default=None,
                    help="embed at most this many vocabulary texts (default: all)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    if args.cpus < 2:
        ap.error("--cpus must be at least 2 (1 worker is compared with --cpus workers)")

    import numpy as np
    import ray
    import torch

    from mteb_stratified.adapters.ray_engine import RayEngine
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.pipeline import StructureConfig
    from mteb_stratified.structure.registry import make_extractor
    from mteb_stratified.structure.vocabulary import build_vocabulary, embedding_inputs

    cfg = StructureConfig()
    texts = repeated_corpus(args.docs)
    extractor = make_extractor("offline")
    extractor.params()  # spaCy loaded before the clock starts, as a Ray actor's constructor
    print_command()
    print(f"corpus: {len(texts)} documents (NFCorpus repeated), chunks of {cfg.chunk_size}; "
          f"{os.cpu_count()} cores here", flush=True)

    res: dict = {"docs": len(texts), "cpus": args.cpus, "extract": {}, "embed": {}}
    t_local, rows_local = timed_extract(LocalEngine(), texts, extractor, cfg)
    res["extract"]["single machine (1 core)"] = t_local
    print(f"extract, single machine: {t_local:.1f} s", flush=True)

    vocab = build_vocabulary(texts, rows_local, cfg)
    inputs = embedding_inputs(vocab.names, vocab.description, cfg.entity_context)
    if args.max_texts:
        inputs = inputs[:args.max_texts]
    res["embed_texts"] = len(inputs)
    threads = torch.get_num_threads()
    emb_local = None
    for n in (1, args.cpus):
        torch.set_num_threads(n)
        t, emb = timed_embed(LocalEngine(), inputs)
        res["embed"][f"single machine ({n} thread{'s' if n > 1 else ''})"] = t
        print(f"embed {len(inputs)} texts, single machine, {n} threads: {t:.1f} s", flush=True)
        emb_local = emb if emb_local is None else emb_local
        if not np.array_equal(emb, emb_local):
            print("  (the thread count changed the embedding bits)")
    torch.set_num_threads(threads)

    ray.init(num_cpus=args.cpus, include_dashboard=False, configure_logging=False)
    same_rows = same_emb = True
    for workers in (1, args.cpus):
        engine = RayEngine(workers=workers, progress=False)
        t, rows = timed_extract(engine, texts, extractor, cfg)
        res["extract"][f"Ray, {workers} worker{'s' if workers > 1 else ''}"] = t
        same_rows &= json.dumps(rows, sort_keys=True) == json.dumps(rows_local, sort_keys=True)
        print(f"extract, Ray {workers} workers: {t:.1f} s", flush=True)
        t, emb = timed_embed(engine, inputs)
        res["embed"][f"Ray, {workers} worker{'s' if workers > 1 else ''}"] = t
        same_emb &= bool(np.array_equal(emb, emb_local))
        print(f"embed, Ray {workers} workers: {t:.1f} s", flush=True)
    ray.shutdown()
    res["identical_rows"], res["identical_embeddings"] = same_rows, same_emb

    w = args.cpus
    print(f"\n| step | path | seconds | per second |\n|---|---|---:|---:|")
    for step, unit, n in (("extract", "docs", len(texts)), ("embed", "texts", len(inputs))):
        for path, t in res[step].items():
            print(f"| {step} | {path} | {t:.1f} | {n / t:.1f} {unit} |")
    ex, em = res["extract"], res["embed"]
    ratios = {
        "extract: Ray 2 workers / Ray 1 worker": ex["Ray, 1 worker"] / ex[f"Ray, {w} workers"],
        "embed: Ray 2 workers / Ray 1 worker": em["Ray, 1 worker"] / em[f"Ray, {w} workers"],
        "extract: Ray overhead, 1 worker vs 1 core":
            ex["Ray, 1 worker"] / ex["single machine (1 core)"] - 1,
        "embed: Ray overhead, 1 worker vs 1 thread":
            em["Ray, 1 worker"] / em["single machine (1 thread)"] - 1,
        "embed: Ray 2 workers vs single machine 2 threads (speed-up)":
            em[f"single machine ({w} threads)"] / em[f"Ray, {w} workers"],
        "extract: Ray 2 workers vs single machine (speed-up)":
            ex["single machine (1 core)"] / ex[f"Ray, {w} workers"],
    }
    res["ratios"] = ratios
    print()
    for k, v in ratios.items():
        print(f"{k}: {v:+.1%}" if "overhead" in k else f"{k}: {v:.2f}x")
    print(f"same rows as the single machine: {same_rows}; same embedding bits: {same_emb}")
    if args.json:
        print(json.dumps(res, indent=2))
    return 0 if same_rows and same_emb else 1


if __name__ == "__main__":
    sys.exit(main())
