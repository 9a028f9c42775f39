"""Leiden side by side on one k-NN graph: the project's step against igraph, leidenalg, NetworKit.

    PYTHONPATH=. python benchmarks/bench_leiden.py --sizes 100000 300000 [--cache DIR] [--seeds 3]

The graphs (synthetic, seeded, cached in ``--cache``): ``n`` unit vectors in 384 dimensions
(MiniLM's size) in planted communities of 200 (``n / 200`` of them: 500 at 100k), each vector
``normalise(centre_c + σ·g/√d)`` with independent random centres, then their k-NN graph as the
document map builds it (:func:`mteb_stratified.structure.graph.knn_edges`, k = 10, τ = 0:
exact up to 50k vectors, above that the IVF or HNSW search its recall check picks).  Three kinds:

* ``overlapping`` (σ = 3.0): members of one community at cosine ~0.1, so a run's partition
  moves with the seed (the regime where the consensus matters, as on real corpora);
* ``separated`` (σ = 2.4): the communities are recoverable and every method agrees;
* ``duplicates`` (σ = 2.4, 30% of the vectors replaced by exact copies of others, as the 1M
  benchmark's documents repeat sentence windows): for ``n_iterations`` (2 against −1).

Rows, each timed in this process one after the other (wall seconds and CPU seconds of all
threads, ``time.process_time``: on a shared machine read the CPU column and the ratios):

* **the project's step**: :func:`mteb_stratified.structure.clustering.cluster_entities` with the
  pipeline's defaults (``StructureConfig``: consensus of ``consensus_runs`` runs of
  ``consensus_iterations`` iterations, the consensus graph clustered with ``n_iterations``, and
  the split halves that give ``quality.seed_ari``), resolution 1, every cluster kept;
* **the step before #48** (``--before``): the same with leidenalg, ``n_iterations=-1``, 10 runs;
* **one fit**: :class:`~mteb_stratified.structure.leiden.LeidenClustering` with its defaults;
* the peers as a user calls them: ``graph.community_leiden(objective_function="modularity",
  weights="weight")`` (igraph, its defaults: 2 iterations), ``leidenalg.find_partition(graph,
  leidenalg.RBConfigurationVertexPartition, weights="weight", seed=0)`` and NetworKit's
  ``networkit.community.PLM(graph, refine=True).run()`` (Louvain with refinement: the fastest
  modularity optimiser measured in the issue; skipped, and said, when NetworKit is not
  installed: it is not a dependency).

Columns: modularity (γ = 1, igraph's), ARI to the planted communities, clusters, CPU seconds
over one igraph fit.  ``--seeds S``: the seed ARI (mean over pairs of S seeds) of the step, of
one fit and of igraph.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random

import numpy as np

from _harness import print_command, timed

DIM = 384
COMMUNITY = 200
KINDS = {"overlapping": (3.0, 0.0), "separated": (2.4, 0.0), "duplicates": (2.4, 0.3)}


def make_graph(n: int, kind: str, cache: str | None):
    """``(pairs, weight, truth)`` of the ``kind`` graph with ``n`` vertices (module docstring),
    read from ``cache`` when it is there."""
    path = os.path.join(cache, f"leiden-{kind}-{n}.npz") if cache else None
    if path and os.path.exists(path):
        d = np.load(path)
        return d["pairs"], d["weight"], d["truth"]
    from mteb_stratified.structure.graph import knn_edges

    sigma, dup = KINDS[kind]
    rng = np.random.default_rng(0)
    n_comm = max(2, n // COMMUNITY)
    centres = rng.standard_normal((n_comm, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    truth = rng.integers(0, n_comm, size=n)
    emb = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, 100_000):
        e = min(n, s + 100_000)
        x = centres[truth[s:e]] + (sigma / np.sqrt(DIM)) * rng.standard_normal(
            (e - s, DIM)).astype(np.float32)
        emb[s:e] = x / np.linalg.norm(x, axis=1, keepdims=True)
    if dup:
        copies = rng.choice(n, int(dup * n), replace=False)
        source = rng.integers(0, n, copies.size)
        emb[copies], truth[copies] = emb[source], truth[source]
    edges = knn_edges(emb, k=10, threshold=0.0, seed=0)
    pairs = np.column_stack([edges.src, edges.dst]).astype(np.int64)
    if path:
        os.makedirs(cache, exist_ok=True)
        np.savez(path, pairs=pairs, weight=edges.weight, truth=truth)
    return pairs, edges.weight, truth


def igraph_of(pairs, weight, n: int):
    import igraph as ig

    g = ig.Graph(n=n, directed=False)
    g.add_edges(pairs)
    g.es["weight"] = np.asarray(weight, dtype=np.float64).tolist()
    return g


def methods(g, pairs, weight, seed: int, before: bool) -> dict:
    """Name -> function of no argument giving one label per vertex (module docstring)."""
    import igraph as ig
    import leidenalg as la

    from mteb_stratified.structure.clustering import cluster_entities
    from mteb_stratified.structure.leiden import LeidenClustering
    from mteb_stratified.structure.pipeline import StructureConfig

    now = StructureConfig(resolution=1.0, min_cluster_size=1, seed=seed)
    old = dataclasses.replace(now, leiden_backend="leidenalg", n_iterations=-1,
                              consensus_runs=10, consensus_iterations=-1)
    arrays = (pairs, np.asarray(weight, dtype=np.float64))

    def step(cfg):
        return lambda: cluster_entities(g, cfg, halves=True, edges=arrays).labels

    def igraph_fit():
        ig.set_random_number_generator(random.Random(seed))
        try:
            return g.community_leiden(objective_function="modularity", weights="weight").membership
        finally:
            ig.set_random_number_generator(random)

    out = {"the project's step": step(now)}
    if before:
        out["the step before #48 (leidenalg, -1 iterations, 10 runs)"] = step(old)
    out.update({
        "the project's one fit": lambda: LeidenClustering(seed=seed).fit(g).labels_,
        "igraph community_leiden": igraph_fit,
        "leidenalg find_partition": lambda: la.find_partition(
            g, la.RBConfigurationVertexPartition, weights="weight", seed=seed).membership})
    try:
        import networkit as nk
    except ImportError:  # not a dependency of the project: a peer, installed to compare
        print("NetworKit PLM: not measured, NetworKit is not installed (pip install networkit)")
        return out
    nk.engineering.setSeed(seed, True)
    nkg = nk.Graph(g.vcount(), weighted=True)
    nkg.addEdges((np.asarray(weight, dtype=np.float64), (pairs[:, 0], pairs[:, 1])))

    def plm():
        nk.engineering.setSeed(seed, True)
        return nk.community.PLM(nkg, refine=True).run().getPartition().getVector()

    out["NetworKit PLM"] = plm
    return out


def table(n: int, kind: str, cache, seeds: int, before: bool) -> list:
    from mteb_stratified.structure.quality import adjusted_rand

    pairs, weight, truth = make_graph(n, kind, cache)
    g = igraph_of(pairs, weight, n)
    print(f"\n## {kind}: {n:,} vertices, {len(pairs):,} edges, {np.unique(truth).size} planted "
          "communities", flush=True)
    rows, labels = [], {}
    for name, fn in methods(g, pairs, weight, 0, before).items():
        lab, wall, cpu = timed(fn)
        lab = np.asarray(lab, dtype=np.int64)
        labels[name] = lab
        rows.append({"n": n, "kind": kind, "method": name, "wall_s": wall, "cpu_s": cpu,
                     "modularity": g.modularity(lab.tolist(), weights="weight"),
                     "ari_truth": adjusted_rand(truth, lab),
                     "clusters": int(np.unique(lab).size)})
    base = next(r["cpu_s"] for r in rows if r["method"] == "igraph community_leiden")
    print("| method | wall s | CPU s | CPU / igraph fit | modularity | ARI to planted | clusters |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        r["cpu_over_igraph"] = r["cpu_s"] / base
        print(f"| {r['method']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
              f"{r['cpu_over_igraph']:.2f} | {r['modularity']:.4f} | {r['ari_truth']:.3f} | "
              f"{r['clusters']} |", flush=True)
    if seeds > 1:
        seed_table(g, pairs, weight, seeds, labels)
    return rows


def seed_table(g, pairs, weight, seeds: int, labels: dict) -> None:
    """The seed ARI of the step, one fit and igraph: mean (min) over pairs of ``seeds``."""
    from mteb_stratified.structure.quality import adjusted_rand

    names = ("the project's step", "the project's one fit", "igraph community_leiden")
    parts = {k: [labels[k]] for k in names}
    for seed in range(1, seeds):
        fns = methods(g, pairs, weight, seed, False)
        for k in names:
            parts[k].append(np.asarray(fns[k](), dtype=np.int64))
    for k in names:
        a = [adjusted_rand(p, q) for i, p in enumerate(parts[k]) for q in parts[k][i + 1:]]
        print(f"  seed ARI over {seeds} seeds, {k}: {np.mean(a):.3f} (min {min(a):.3f})")


def iterations(n: int, cache) -> None:
    """``n_iterations`` 2 against −1 on the duplicate-heavy graph, for both backends."""
    from mteb_stratified.structure.leiden import LeidenClustering

    pairs, weight, truth = make_graph(n, "duplicates", cache)
    g = igraph_of(pairs, weight, n)
    print(f"\n## iterations on the duplicates graph: {n:,} vertices, {len(pairs):,} edges")
    print("| backend | n_iterations | CPU s | modularity |")
    print("|---|---|---|---|")
    for backend in ("igraph", "leidenalg"):
        for it in (2, -1):
            est, _, cpu = timed(lambda: LeidenClustering(seed=0, n_iterations=it,
                                                         backend=backend).fit(g))
            print(f"| {backend} | {it} | {cpu:.2f} | {est.modularity_:.5f} |", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    p.add_argument("--kinds", nargs="+", default=["overlapping", "separated"],
                   choices=sorted(KINDS))
    p.add_argument("--cache", default=None, help="folder for the graphs (built once)")
    p.add_argument("--seeds", type=int, default=3, help="seeds for the seed ARI (1: none)")
    p.add_argument("--before", action="store_true",
                   help="also the step as it was before #48 (slow: ~10x the step)")
    p.add_argument("--iterations", type=int, default=100_000, metavar="N",
                   help="vertices of the duplicates graph for the iterations table (0: none)")
    args = p.parse_args(argv)
    print_command([__file__, *(argv or [])])
    for n in args.sizes:
        for kind in args.kinds:
            table(n, kind, args.cache, args.seeds, args.before)
    if args.iterations:
        iterations(args.iterations, args.cache)
    return 0


if __name__ == "__main__":
    import sys
    raise SystemExit(main(sys.argv[1:]))
