"""The plain document-clustering baseline for the strata, on the same figures as the entity map.

    python benchmarks/doc_cluster_baseline.py --data ../shared/data/nfcorpus --split dev \
        --run BM25=bm25.dev.trec --run MiniLM=minilm.dev.trec [--cache DIR]

Each document is embedded with the packaged all-MiniLM-L6-v2 (``title. text``), linked to its
10 nearest documents (exact cosine), and the graph is clustered by the same consensus Leiden as
the entity map (10 runs, co-membership ≥ 0.5, then Leiden; :mod:`mteb_stratified.structure
.clustering`).  A document's stratum is its cluster; a query's, the cluster holding most of
its relevant documents (ties by the hash rule).  Printed: clusters, seed ARI (seed 0 against
seed 1), generic mass share and NPMI of each cluster's 10 most frequent entities (from the
bundled artifact's document entities, generic phrases left out, as the entity map leaves them
out), and for each run the heterogeneity permutation test and split-half reliability against
random strata.  The document embeddings are cached in ``--cache`` (8 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder")
    ap.add_argument("--split", default="dev", help="judged split (default: dev)")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=TREC")
    ap.add_argument("--cache", default="doc-baseline-cache", help="embedding cache folder")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args(argv)

    from mteb_stratified.core import ClusterWeights, stratify
    from mteb_stratified.core.chance import heterogeneity_test, split_half_reliability
    from mteb_stratified.io import load_beir
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.report import per_query_from_run
    from mteb_stratified.structure.artifact import StructureArtifact
    from mteb_stratified.structure.clustering import consensus_graph
    from mteb_stratified.structure.embed import embed_texts
    from mteb_stratified.structure.graph import knn_edges, to_igraph
    from mteb_stratified.structure.leiden import LeidenClustering
    from mteb_stratified.structure.quality import GENERIC_SHARE, adjusted_rand, npmi
    from mteb_stratified.structure.specificity import GenericTest, WordStats

    t0 = time.perf_counter()
    data = load_beir(args.data, args.split)
    ids = sorted(data.corpus)
    os.makedirs(args.cache, exist_ok=True)
    path = os.path.join(args.cache, "doc_embeddings.npy")
    if os.path.exists(path):
        emb = np.load(path)
    else:
        emb = embed_texts([doc_text(data.corpus[d], style="beir") for d in ids], None,
                          batch_size=64)
        np.save(path, emb)
    edges = knn_edges(np.ascontiguousarray(emb, dtype=np.float32), k=10, threshold=-1.0)
    graph = to_igraph(len(ids), edges.src, edges.dst, edges.weight)

    def consensus(seed: int) -> np.ndarray:
        runs = [LeidenClustering(seed=seed * 10 + i).fit(graph).labels_ for i in range(10)]
        return LeidenClustering(seed=seed).fit(consensus_graph(graph, runs, 0.5)).labels_

    lab0, lab1 = consensus(0), consensus(1)
    ari = adjusted_rand(lab0, lab1)
    art = StructureArtifact.bundled("nfcorpus")
    texts = {d: doc_text(data.corpus[d]) for d in ids}
    test = GenericTest(WordStats.of_texts(texts[d] for d in ids))
    generic = set(art.metadata.get("generic_phrases", {}).get("most_frequent", []))
    doc_sets: dict = {}
    for d in ids:
        for e in art.doc_entities.get(d, ()):
            doc_sets.setdefault(e, set()).add(d)
    n_docs = len(ids)
    C = int(lab0.max()) + 1
    rows = []
    for c in range(C):
        members = [d for d, lab in zip(ids, lab0) if lab == c]
        counts = Counter(e for d in members for e in art.doc_entities.get(d, ())
                         if e not in generic and not test.is_generic(e))
        top = [e for e, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]]
        share = float(np.mean([test.is_generic(e) for e in top])) if top else 0.0
        rows.append((len(members) / n_docs, npmi(top, doc_sets, n_docs), share, top[:3]))
    mass = sum(r[0] for r in rows)
    gen = sum(r[0] for r in rows if r[2] >= GENERIC_SHARE) / mass
    coh = sum(r[0] * r[1] for r in rows if np.isfinite(r[1])) / mass
    print(f"# document-clustering baseline: {args.data} {args.split}: {C} clusters, seed ARI "
          f"{ari:.3f}, generic mass share {gen:.3f}, NPMI (weighted) {coh:.3f}")
    weights = ClusterWeights.from_dict({d: {int(c): 1.0} for d, c in zip(ids, lab0)}, C)
    strata = stratify(data.qrels, weights, unknown_docs="skip")
    for spec in args.run:
        name, _, trec = spec.partition("=")
        pq = per_query_from_run(data.qrels, trec, "nDCG@10")
        qids = [q for q in strata.queries if q in pq.queries]
        idx = {q: i for i, q in enumerate(strata.queries)}
        y = np.asarray(pq.subset(qids).column("expected"))
        labels = strata.primary[[idx[q] for q in qids]].tolist()
        het = heterogeneity_test(y, labels, n_resamples=args.resamples, seed=0)
        sh = split_half_reliability(y, labels, seed=0)
        print(f"{name:>8} nDCG@10 η² {het.eta_squared:.3f} vs random {het.null_eta_squared:.3f} "
              f"p={het.p_value:.3f}  split-half r {sh.r:.3f} vs random {sh.null_r:.3f} "
              f"p={sh.p_value:.3f}  ({len(set(labels))} strata)")
    print("heaviest clusters (share of documents, NPMI, label):")
    for r in sorted(rows, key=lambda r: -r[0])[:15]:
        print(f"  {r[0]:.3f}  {r[1]:5.2f}  {' / '.join(r[3])}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
