"""The two runs that `strata_validity.py` and `strata_power.py` were measured with.

    python benchmarks/nfcorpus_runs.py --data mteb_stratified/data/nfcorpus --splits dev,test --out DIR

Writes ``DIR/bm25.<split>.trec`` (bm25s over ``title text``, every document scored, depth 1000,
as ``mteb-stratified demo``) and ``DIR/minilm.<split>.trec`` (the packaged all-MiniLM-L6-v2,
fp32, cosine over the whole corpus, top 1000), and ``DIR/doc_embeddings.npy`` (the document
embeddings, reused by a rerun).  On NFCorpus test the MiniLM run
gives the published nDCG@10, 0.3159 tie-oblivious.  About 9 minutes on 2 cores, mostly the
corpus embedding.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _harness import print_command


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder")
    ap.add_argument("--splits", default="dev,test", help="judged splits (default: dev,test)")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args(argv)
    print_command()

    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io import load_beir, write_run
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.structure.embed import embed_texts

    t0 = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    datasets = {s: load_beir(args.data, s) for s in splits}
    corpus = datasets[splits[0]].corpus
    ids = sorted(corpus)
    emb_path = os.path.join(args.out, "doc_embeddings.npy")
    if os.path.exists(emb_path):
        docs = np.load(emb_path)
    else:
        docs = embed_texts([doc_text(corpus[d], style="beir") for d in ids], None,
                           batch_size=64)
        np.save(emb_path, docs)
    for split, ds in datasets.items():
        queries = {q: ds.queries[q] for q in ds.qrels if q in ds.queries}
        run, _ = bm25_run(ds.corpus, queries, depth=1000)
        write_run(run, os.path.join(args.out, f"bm25.{split}.trec"), tag="bm25")
        qids = list(queries)
        sims = (embed_texts([queries[q] for q in qids], None) @ docs.T).astype(np.float32)
        dense = {}
        for i, q in enumerate(qids):
            top = np.argsort(-sims[i], kind="stable")[:1000]
            dense[q] = {ids[j]: float(sims[i, j]) for j in top}
        write_run(dense, os.path.join(args.out, f"minilm.{split}.trec"), tag="minilm")
        print(f"{split}: {len(qids)} queries, bm25.{split}.trec and minilm.{split}.trec")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
