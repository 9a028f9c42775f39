"""Speed of stratification and the stratified bootstrap at benchmark scale.

A synthetic corpus of D documents (default 200,000) over 1.1·C clusters (C = 1,000 by default),
each document with 1–3 clusters (Gamma-distributed cluster masses) and 2–6 entities from a
50,000-entity vocabulary; Q queries (default 100,000) with 1–5 relevant documents drawn mostly
from one of the first C clusters (Zipf-skewed, so query counts per stratum range from 1 to tens
of thousands; the extra 10 % of clusters get no query: uncovered strata), 1–3 entities each.
Timed, one after another:

(a) stratify: primary cluster, membership, Δ and exact J of every query (``stratify``);
(b) design + analytic estimates: the cluster-scheme design with corpus-mass weights, then
    pooled / macro / post-stratified with SEs and t intervals (``stratified_estimates``);
(c) the Rao–Wu stratified bootstrap with R resamples (default 2,000) (``stratified_bootstrap``);
(d) coverage (MSC/SCC/gaps, ``strata_coverage``);
(e) apart from the total: the whole strata block of one system (median of 3) on the bundled NFCorpus test
    queries (``stratified_summary``: estimates, bootstrap, coverage, chance tests, minimum
    detectable effect), what ``mteb-stratified stratify`` computes per results file.

Run: ``python benchmarks/bench_stratify.py [--queries Q] [--clusters C] [--resamples R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _harness import interleaved, median, print_command
# the core package's own names (not its module paths): before_after.py runs this script
# against revisions on either side of the core's split into core.ranking and core.stats
from mteb_stratified.core import (Bins, ClusterWeights, StratifiedDesign, document_dispersion,
                                  strata_coverage, stratified_bootstrap, stratified_estimates,
                                  stratify)


def make_corpus(n_docs: int, n_clusters: int, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_query_clusters, n_clusters = n_clusters, n_clusters + n_clusters // 10
    k = rng.integers(1, 4, size=n_docs)
    home = rng.integers(0, n_clusters, size=n_docs)
    indptr = np.concatenate([[0], np.cumsum(k)])
    # the first cluster of each doc is its home cluster; the others are neighbours (no duplicates)
    offs = np.arange(indptr[-1]) - np.repeat(indptr[:-1], k)
    indices = (np.repeat(home, k) + offs * 7) % n_clusters
    data = rng.gamma(1.0, size=indptr[-1])
    data /= np.repeat(np.add.reduceat(data, indptr[:-1]), k)
    doc_ids = [f"d{i}" for i in range(n_docs)]
    weights = ClusterWeights(tuple(doc_ids), indptr, indices, data, n_clusters)
    vocab = np.array([f"e{i}" for i in range(50_000)])
    ents = rng.integers(0, len(vocab), size=(n_docs, 6))
    n_ent = rng.integers(2, 7, size=n_docs)
    doc_entities = {d: set(vocab[ents[i, :n_ent[i]]].tolist()) for i, d in enumerate(doc_ids)}
    # queries: relevant docs mostly from one cluster's documents
    by_cluster = np.argsort(home, kind="stable")
    starts = np.searchsorted(home[by_cluster], np.arange(n_clusters))
    counts = np.bincount(home, minlength=n_clusters)
    qrels, query_entities = {}, {}
    n_rel = rng.integers(1, 6, size=n_queries)
    # Zipf-skewed over the first n_clusters clusters; the extra 10 % get no queries (uncovered)
    q_cluster = rng.zipf(1.3, size=n_queries) % n_query_clusters
    for i in range(n_queries):
        c = int(q_cluster[i])
        if counts[c] == 0:
            c = int(home[rng.integers(0, n_docs)])
        picks = by_cluster[starts[c] + rng.integers(0, counts[c], size=n_rel[i])]
        if n_rel[i] > 2 and rng.random() < 0.3:
            picks[-1] = rng.integers(0, n_docs)            # one relevant doc from anywhere
        qid = f"q{i}"
        qrels[qid] = {doc_ids[j]: int(rng.integers(1, 3)) for j in picks}
        first = doc_entities[doc_ids[picks[0]]]
        query_entities[qid] = set(list(first)[:2]) | {str(vocab[rng.integers(0, len(vocab))])}
    return weights, doc_entities, qrels, query_entities


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--clusters", type=int, default=1_000)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--resamples", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print_command()

    t = time.perf_counter()
    weights, doc_entities, qrels, query_entities = make_corpus(args.docs, args.clusters,
                                                               args.queries, args.seed)
    print(f"synthetic corpus: {args.docs:,} docs, {weights.n_clusters:,} clusters, "
          f"{args.queries:,} queries ({time.perf_counter() - t:.1f} s to build, not timed)")
    bins = Bins.from_reference(dispersion=document_dispersion(weights), source="documents")

    t0 = time.perf_counter()
    strata = stratify(qrels, weights, query_entities=query_entities, doc_entities=doc_entities,
                      bins=bins)
    t1 = time.perf_counter()
    mass = weights.corpus_mass()
    design = StratifiedDesign.from_strata(strata, mass, scheme="cluster")
    values = np.random.default_rng(1).beta(2, 3, size=strata.n_queries)
    est = stratified_estimates(values, design)
    t2 = time.perf_counter()
    boot = stratified_bootstrap(values, design, n_resamples=args.resamples, seed=2)
    t3 = time.perf_counter()
    cov = strata_coverage(strata, mass, n_min=5)
    t4 = time.perf_counter()

    post, bpost = est["post_stratified"], boot["post_stratified"]
    print(f"strata with queries: {design.n_covered:,} of {len(design.labels):,} "
          f"(uncovered weight {design.uncovered_weight:.3f}); excluded queries: "
          f"{len(strata.excluded)}; singleton strata: {post.singleton_strata}")
    print(f"MSC {cov.msc:.3f}  SCC {cov.scc:.3f}  (n_min 5)")
    print(f"post-stratified {post.estimate:.4f}  SE analytic {post.standard_error:.5f}  "
          f"SE bootstrap {bpost.standard_error:.5f}")
    print(f"(a) stratify (primary, membership, Δ, J)   {t1 - t0:6.2f} s")
    print(f"(b) design + analytic estimates            {t2 - t1:6.2f} s")
    print(f"(c) Rao–Wu bootstrap, {args.resamples:,} resamples      {t3 - t2:6.2f} s")
    print(f"(d) coverage                               {t4 - t3:6.2f} s")
    print(f"total                                      {t4 - t0:6.2f} s")
    print(f"(e) strata block, NFCorpus test (median)   {_nfcorpus_block(args):6.2f} s")


def _nfcorpus_block(args, repeats: int = 3) -> float:
    """Median seconds of ``repeats`` calls of ``stratified_summary`` on the bundled NFCorpus
    test queries, up to its JSON block (per-query values drawn from Beta(2, 3); loading the
    structure is not timed)."""
    from mteb_stratified.stratification import stratified_summary
    from mteb_stratified.stratification.bundled import bundled_strata

    artifact, strata = bundled_strata("nfcorpus", "test")
    rng = np.random.default_rng(args.seed)
    values = {q: float(v) for q, v in zip(strata.queries, rng.beta(2, 3, strata.n_queries))}

    def block():
        summary = stratified_summary(values, strata, artifact, n_resamples=args.resamples,
                                     seed=args.seed)
        # the JSON block stratify writes (a version of the package before the typed result
        # returned that dict itself)
        return getattr(summary, "to_dict", lambda: summary)()

    return median(interleaved({"block": block}, repeats).wall["block"])


if __name__ == "__main__":
    main()
