"""Does memory locality explain Leiden's superlinear growth?  One planted k-NN graph (as in
``bench_structure.py``: 384-d, communities of ~50, k = 10, τ = 0.5), then leidenalg (modularity,
seed 0, 2 iterations) on it as one run over the whole graph with three node numberings: as
generated, sorted by planted community (the best locality possible), and a random permutation;
then as :class:`LeidenClustering` runs it above 50k vertices: by batches of whole connected
components of at most 10k vertices (each batch small enough to stay in cache).

    python benchmarks/leiden_node_order.py 100000
    python benchmarks/leiden_node_order.py 1000000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _harness import print_command
from bench_structure import make_entities


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("n", type=int, nargs="?", default=100_000,
                   help="entities of the planted graph (default 100000)")
    n = p.parse_args(argv).n
    print_command()

    from mteb_stratified.structure.graph import knn_edges, to_igraph
    from mteb_stratified.structure.leiden import LeidenClustering

    emb, truth = make_entities(n, seed=0)
    t = time.perf_counter()
    e = knn_edges(emb, k=10, threshold=0.5, seed=0)
    print(f"n {n}: k-NN {time.perf_counter() - t:.1f} s, {len(e)} edges", flush=True)
    del emb
    by_community = np.empty(n, dtype=np.int64)
    by_community[np.argsort(truth, kind="stable")] = np.arange(n)
    orders = {"as generated": np.arange(n), "by community": by_community,
              "random": np.random.default_rng(1).permutation(n)}
    for name, relabel in orders.items():
        graph = to_igraph(n, relabel[e.src], relabel[e.dst], e.weight)
        t = time.perf_counter()
        model = LeidenClustering(resolution=1.0, seed=0, n_iterations=2,
                                 split_above=None).fit(graph)
        print(f"  Leiden, nodes {name}: {time.perf_counter() - t:.1f} s, "
              f"{model.n_clusters_} clusters, modularity {model.modularity_:.4f}", flush=True)
    graph = to_igraph(n, e.src, e.dst, e.weight)
    t = time.perf_counter()
    model = LeidenClustering(resolution=1.0, seed=0, n_iterations=2, split_above=0,
                             batch_size=10_000).fit(graph)
    print(f"  Leiden by batches of components (10k vertices), nodes as generated: "
          f"{time.perf_counter() - t:.1f} s, {model.n_batches_} runs, {model.n_clusters_} "
          f"clusters, modularity {model.modularity_:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
