"""Speed, memory and recovery of the entity graph + Leiden on synthetic entity sets.

Synthetic entities: ``n`` unit vectors in 384 dimensions (MiniLM's size) with planted
communities of ~50 entities each: ``x = normalise(center_c + sigma * g / sqrt(d))``, so two
members of one community have cosine ~ 1 / (1 + sigma²) (0.67 at sigma = 0.7).  Two kinds of
centres: *flat* (default), independent unit random vectors, so members of different communities
are at cosine ~ 0 and nothing coarser than a community exists (the worst case for any index);
*topics* (``--topics C``), each centre drawn around one of ``n_comm / C`` random topic
directions (``normalise(topic + beta * g / sqrt(d))``, beta = 1), so sibling communities sit at
cosine ~ 0.5 and their members at ~ 0.33 (below τ): the same k-NN graph, on data with a coarse
structure.  The graph is built exactly as in the structure pipeline
(:func:`knn_edges`: faiss exact up to 50k entities, above ``--method auto``: the two-level IVF
self-join when its sample recall check passes, else the one-level one, or HNSW if that misses
more than 5%; k = 10, τ = 0.5), then
:class:`LeidenClustering` (modularity, resolution 1, seed 0, 2 iterations) runs on the igraph
graph: above 50k vertices by batches of whole connected components of at most 10k vertices
(``--leiden-batch``; ``--no-split`` runs one Leiden over the whole graph, as before).

Each size runs in its own subprocess so that its peak RSS (``ru_maxrss``) is its own.  The
growth exponent is the slope of log(time) against log(n) between consecutive sizes (1 =
linear), from wall time and from CPU time (all threads; steadier on a shared machine).
Recovery of the planted communities: adjusted Rand index (ARI).  k-NN *edge recall*: of the
exact k-NN edges (similarity >= τ) of 1,000 sampled entities, the share present in the graph
(computed after the timed part, with numpy, against all entities).

Run: ``python benchmarks/bench_structure.py [--topics 50] [--sizes 10000 100000 300000 1000000]``.

``--corpus FOLDER [--docs N] [--rev NAME=REV ...]`` instead times the ``structure`` command on a
real corpus, cold, step by step, before and after, against the floors of extraction and
embedding (:mod:`structure_corpus`).

``--compare-extractors N`` instead compares the offline extractors (spaCy noun chunks vs KeyBERT)
on the relevant documents of NFCorpus test queries (N documents at most): entities per
document, seconds per document, clusters, modularity, and *query purity*: for each query,
max_c p(c) with p(c) ∝ Σ_{d ∈ rel(q)} m_d(c), against the same figure for random document sets
of the same sizes (higher ratio = clusters follow the topics that queries ask about).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

DIM = 384
COMMUNITY = 50


def _harness():
    """The shared harness (imported when used: tests load this file by its path, without
    ``benchmarks/`` on ``sys.path``, for :func:`make_entities`)."""
    import _harness

    return _harness


def make_entities(n: int, sigma: float = 0.7, seed: int = 0, topics: int | None = None,
                  beta: float = 1.0):
    """``n`` entities in communities of ~50 (``truth``: each one's community).

    ``topics``: communities per topic, or None (flat).  Flat: community centres are independent
    random directions.  Topics: ``n_comm / topics`` random topic directions, and each community
    centre is ``normalise(topic + beta * g / sqrt(d))`` around a random topic, so sibling
    communities sit at cosine ~ 1 / (1 + beta²) (0.5 at beta = 1) and their members at ~0.33,
    below τ = 0.5: the same k-NN graph, on data with a coarse structure as real embeddings have.
    """
    rng = np.random.default_rng(seed)
    n_comm = max(2, n // COMMUNITY)
    if topics is None:
        centers = rng.standard_normal((n_comm, DIM)).astype(np.float32)
    else:
        n_topic = max(1, n_comm // topics)
        tops = rng.standard_normal((n_topic, DIM)).astype(np.float32)
        tops /= np.linalg.norm(tops, axis=1, keepdims=True)
        centers = tops[rng.integers(0, n_topic, n_comm)] + (beta / np.sqrt(DIM)) * \
            rng.standard_normal((n_comm, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    truth = rng.integers(0, n_comm, size=n)
    emb = np.empty((n, DIM), dtype=np.float32)
    step = 100_000
    for s in range(0, n, step):
        e = min(n, s + step)
        x = centers[truth[s:e]] + (sigma / np.sqrt(DIM)) * rng.standard_normal(
            (e - s, DIM)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        emb[s:e] = x
    return emb, truth


def adjusted_rand_index(a, b) -> float:
    """ARI (Hubert & Arabie 1985) from the contingency table (sparse, O(n))."""
    import scipy.sparse as sp
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    n = a.size
    table = sp.coo_matrix((np.ones(n), (a, b))).tocsr()
    comb = lambda x: x * (x - 1) / 2.0  # noqa: E731
    sum_ij = comb(table.data).sum()
    sum_a = comb(np.asarray(table.sum(axis=1)).ravel()).sum()
    sum_b = comb(np.asarray(table.sum(axis=0)).ravel()).sum()
    expected = sum_a * sum_b / comb(n)
    maximum = (sum_a + sum_b) / 2
    return float((sum_ij - expected) / (maximum - expected)) if maximum != expected else 1.0


def edge_recall(emb, edges, k: int, threshold: float, n_sample: int = 1000, seed: int = 0) -> float:
    """Share of the exact k-NN edges (>= threshold) of sampled rows present in ``edges``."""
    n = emb.shape[0]
    rng = np.random.default_rng(seed + 1)
    q = np.sort(rng.choice(n, size=min(n, n_sample), replace=False))
    kk = min(k + 1, n)
    best_s = np.full((q.size, 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((q.size, 0), dtype=np.int64)
    queries = emb[q]
    for s in range(0, n, 4_000):  # blocks of 4k columns: ~0.1 GiB at most
        sims = queries @ emb[s:s + 4_000].T
        top = np.argpartition(-sims, min(kk, sims.shape[1]) - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(sims, top, 1)], axis=1)
        cand_i = np.concatenate([best_i, top + s], axis=1)
        top = np.argpartition(-cand_s, kk - 1, axis=1)[:, :kk]
        best_s = np.take_along_axis(cand_s, top, 1)
        best_i = np.take_along_axis(cand_i, top, 1)
    rows = np.repeat(q, kk)
    cols, w = best_i.ravel(), np.round(best_s.ravel().astype(np.float64), 6)
    keep = (cols != rows) & (w >= threshold)
    lo, hi = np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]
    if lo.size == 0:
        return 1.0
    have = np.sort(edges.src * n + edges.dst)
    key = lo * n + hi
    pos = np.minimum(np.searchsorted(have, key), have.size - 1)
    return float(np.mean(have[pos] == key)) if have.size else 0.0


def run_one(n: int, k: int, threshold: float, seed: int, sigma: float = 0.7,
            method: str = "auto", split: bool = True, batch: int = 10_000,
            topics: int | None = None) -> dict:
    import faiss  # noqa: F401  imported before the clock starts: timings leave out imports
    import igraph  # noqa: F401
    import leidenalg  # noqa: F401

    from mteb_stratified.structure.graph import knn_edges, to_igraph
    from mteb_stratified.structure.leiden import LeidenClustering
    t = time.perf_counter()
    emb, truth = make_entities(n, sigma=sigma, seed=seed, topics=topics)
    t_gen = time.perf_counter() - t
    t, cpu = time.perf_counter(), time.process_time()
    edges = knn_edges(emb, k=k, threshold=threshold, seed=seed, method=method)
    t_knn = time.perf_counter() - t
    cpu_knn = time.process_time() - cpu
    recall = edge_recall(emb, edges, k, threshold, seed=seed)
    del emb
    cpu_rest = time.process_time()
    t = time.perf_counter()
    graph = to_igraph(edges.n, edges.src, edges.dst, edges.weight)
    t_ig = time.perf_counter() - t
    t = time.perf_counter()
    model = LeidenClustering(resolution=1.0, seed=seed, n_iterations=2,
                             split_above=50_000 if split else None, batch_size=batch).fit(graph)
    t_leiden = time.perf_counter() - t
    # CPU seconds of all threads (recall check left out): robust to a loaded machine
    cpu = cpu_knn + time.process_time() - cpu_rest
    return {"n": n, "edges": len(edges), "index": edges.index, "recall": recall,
            "generate_s": t_gen, "knn_cpu_s": cpu_knn,
            "knn_s": t_knn, "igraph_s": t_ig, "leiden_s": t_leiden,
            "graph_plus_leiden_s": t_knn + t_ig + t_leiden, "cpu_s": cpu,
            "clusters": model.n_clusters_, "planted": int(np.unique(truth).size),
            "leiden_runs": model.n_batches_,
            "modularity": model.modularity_, "ari": adjusted_rand_index(truth, model.labels_),
            "peak_rss_gib": _harness().ru_maxrss_bytes() / 2**30}


def bench(sizes, k, threshold, seed, timeout, sigma=0.7, method="auto", split=True,
          batch=10_000, topics=None):
    rows = []
    for n in sizes:
        cmd = [sys.executable, __file__, "--one", str(n), "--k", str(k), "--threshold",
               str(threshold), "--seed", str(seed), "--sigma", str(sigma), "--method", method,
               "--leiden-batch", str(batch)] + ([] if split else ["--no-split"]) + \
            ([] if topics is None else ["--topics", str(topics)])
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"n={n:>9,}: did not finish in {timeout} s (stopped)")
            break
        if res.returncode != 0:
            print(f"n={n:>9,}: failed\n{res.stderr[-2000:]}")
            break
        row = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"n={n:>9,} edges={row['edges']:>10,} {row['index']:<24} "
              f"recall {row['recall']:.4f} "
              f"knn {row['knn_s']:7.1f}s igraph {row['igraph_s']:6.1f}s "
              f"leiden {row['leiden_s']:7.1f}s ({row['leiden_runs']} runs) total {row['graph_plus_leiden_s']:7.1f}s "
              f"(cpu {row['cpu_s']:7.1f}s) "
              f"peak {row['peak_rss_gib']:5.2f} GiB clusters {row['clusters']:>7,} "
              f"(planted {row['planted']:,}) Q {row['modularity']:.3f} ARI {row['ari']:.3f}",
              flush=True)
    for a, b in zip(rows, rows[1:]):
        def slope(key):
            return np.log(b[key] / a[key]) / np.log(b["n"] / a["n"])
        print(f"growth exponent {a['n']:,} -> {b['n']:,}: {slope('graph_plus_leiden_s'):.2f} "
              f"wall, {slope('cpu_s'):.2f} CPU; k-NN alone {slope('knn_s'):.2f} wall, "
              f"{slope('knn_cpu_s'):.2f} CPU; Leiden alone {slope('leiden_s'):.2f} wall "
              f"(1 = linear)")
    return rows


def compare_extractors(max_docs: int, seed: int = 0) -> None:
    from mteb_stratified.io import bundled_path, load_beir
    from mteb_stratified.structure.extractors import KeyBERTExtractor, SpacyNounChunkExtractor
    from mteb_stratified.structure.pipeline import BuildReport, StructureConfig, build_structure
    data = load_beir(bundled_path("nfcorpus"), "test")
    rng = np.random.default_rng(seed)
    qids = sorted(data.qrels)
    rng.shuffle(qids)
    chosen, docs = [], set()
    for q in qids:
        rel = {d for d, g in data.qrels[q].items() if g > 0 and d in data.corpus}
        if len(rel) < 2 or len(docs | rel) > max_docs:
            continue
        chosen.append((q, rel))
        docs |= rel
    corpus = {d: data.corpus[d] for d in sorted(docs)}
    ids = sorted(corpus)
    print(f"{len(corpus)} documents, relevant to {len(chosen)} test queries")
    for extractor in (SpacyNounChunkExtractor(), KeyBERTExtractor()):
        report = BuildReport()
        art = build_structure(corpus, StructureConfig(), extractor=extractor, report=report)
        w = art.doc_cluster_weights

        def purity(rel):
            p = {}
            for d in rel:
                for c, m in w.get(d, {}).items():
                    p[c] = p.get(c, 0.0) + m
            s = sum(p.values())
            return max(p.values()) / s if s else 0.0

        real = np.mean([purity(rel) for _, rel in chosen])
        rand = np.mean([purity(set(rng.choice(ids, size=len(rel), replace=False)))
                        for _ in range(20) for _, rel in chosen])
        st = art.metadata["stats"]
        print(f"{extractor.name}: {st['raw_entity_mentions'] / len(corpus):.1f} raw "
              f"entities/doc, {np.mean([len(v) for v in art.doc_entities.values()]):.1f} "
              f"normalised/doc, extract {report.timings['extract'] / len(corpus) * 1000:.0f} "
              f"ms/doc, total {report.timings['total']:.0f}s, clusters {st['clusters']}, "
              f"modularity {st['modularity']:.3f}, docs with weights "
              f"{st['docs_with_weights']}/{len(corpus)}, query purity {real:.3f} vs random "
              f"{rand:.3f} (ratio {real / rand:.2f})", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+",
                   default=[10_000, 100_000, 300_000, 1_000_000])
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sigma", type=float, default=0.7,
                   help="noise around community centres (within-community cosine ~ 1/(1+s²))")
    p.add_argument("--method", choices=["auto", "ivf", "ivf-tree", "ivf-flat", "hnsw"],
                   default="auto", help="approximate k-NN above 50k entities (auto, as in the "
                                        "pipeline: chosen by a sample recall check)")
    p.add_argument("--topics", type=int, default=None, metavar="C",
                   help="communities per topic (coarse structure); default: flat, independent "
                        "community centres")
    p.add_argument("--no-split", action="store_true",
                   help="one Leiden run over the whole graph at every size")
    p.add_argument("--leiden-batch", type=int, default=10_000,
                   help="vertices per Leiden batch of whole components (default 10000)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per size")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--compare-extractors", type=int, default=None, metavar="N")
    c = p.add_argument_group("a real corpus (benchmarks/structure_corpus.py)")
    c.add_argument("--corpus", default=None, metavar="FOLDER",
                   help="time the structure command on this BEIR folder, step by step, cold")
    c.add_argument("--docs", type=int, default=None, metavar="N",
                   help="a corpus of N documents built from the folder")
    c.add_argument("--rev", action="append", default=None, metavar="NAME=REV",
                   help="a git revision to time (WORKTREE: this checkout); repeatable "
                        "(default: after=WORKTREE)")
    c.add_argument("--args", action="append", default=None, metavar='NAME="ARGS"',
                   help="extra structure arguments for the revision NAME; repeatable")
    c.add_argument("--json", default=None, help="write the figures here")
    c.add_argument("--keep", default=None, metavar="DIR",
                   help="keep each revision's artifact in DIR/NAME (for strata_power.py)")
    args = p.parse_args()
    if args.corpus is not None:
        from structure_corpus import main as corpus_main
        args.rev = args.rev or ["after=WORKTREE"]
        args.args = dict(a.split("=", 1) for a in args.args or [])
        raise SystemExit(corpus_main(args))
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.k, args.threshold, args.seed, args.sigma,
                                 args.method, not args.no_split, args.leiden_batch,
                                 args.topics)))
        return
    if args.compare_extractors is not None:
        compare_extractors(args.compare_extractors, args.seed)
        return
    _harness().print_command()
    print(f"cpus={os.cpu_count()} load={_harness().load_1m():.1f}")
    print(f"data: {'flat' if args.topics is None else f'{args.topics} communities a topic'}"
          f", method {args.method}")
    bench(args.sizes, args.k, args.threshold, args.seed, args.timeout, args.sigma, args.method,
          not args.no_split, args.leiden_batch, args.topics)


if __name__ == "__main__":
    main()
