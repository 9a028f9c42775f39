"""The entity-similarity graph: faiss k-nearest neighbours, cosine threshold, igraph.

Each entity is joined to its ``k`` nearest neighbours whose cosine similarity is at least
``threshold`` (embeddings are L2-normalised, so inner product = cosine).  Edges are undirected:
the pair ``(i, j)`` keeps the larger of its two similarities, rounded to 6 decimals so that the
graph, and the Leiden run on it, do not depend on the last bits of a float sum.

The search is exact (``IndexFlatIP``, ~ n² d) up to ``exact_max`` entities.  Above, it is
approximate, by ``method``:

* ``"auto"`` (default), chosen by a *recall check*: the exact k-NN edges (≥ τ) of 500 seeded
  sample points, and the share of them that a search finds from the sampled side (a little
  under the graph's recall, which also keeps an edge found from its other end).  First the
  two-level IVF self-join below, if its lists pass the check (≥ 0.99) before any join is done;
  else the one-level one; and if that finds under 95%, HNSW as well, keeping the better of the
  two by the check.  The one-level check too is made before its join, from the sample points'
  own candidates (their list's probes, their own nearer lists, the orphans: what the join gives
  them, so the same figure up to ties); when it is under 95% HNSW runs first, and the join is
  made only if HNSW does no better (on 100k synthetic documents it scored 0.873 and HNSW
  0.983: the join, about half the one-level step's time, was made only to lose).  The index name
  records each check (``check0.985 (one-level check 0.870 before its join, two-level
  0.780)``).  Why all three: on topic-structured data the two-level lists pass
  and grow linearly; on flat random communities only the one-level lists hold up; on real
  entity names (NFCorpus's 63,541 distinct normalised names, MiniLM) both IVFs miss (edge
  recall 0.80 / 0.91 at τ = 0.6) and HNSW finds 0.986 (6.5 s in all, exact search 13.6 s;
  ``benchmarks/knn_methods.py``).
* ``"ivf"``: the two-level IVF self-join when its check passes, else the one-level one.
  ``"ivf-tree"`` and ``"ivf-flat"`` force either.
* ``"ivf-tree"``, a two-level IVF self-join with lists of a fixed size (256 points):
  spherical k-means into ``T = sqrt(n/256)`` top lists (320 sampled points a list), then, in
  each top list, k-means into ``size/256`` fine lists (40 sampled points a list; 6 iterations;
  all seeded by ``seed``).  A point goes to its nearest fine centroid among those of its 4
  nearest top lists, and each fine list is joined exactly with its ``nprobe`` nearest fine
  lists as below.  Cost per point: ~ T + 4·n/(256·T) ~ sqrt(n) centroid products for the
  assignment (a few hundred at 1M) and a constant ``nprobe``·256 for the join, so it grows
  close to linearly, *when* a coarse list can route a point, i.e. when the embeddings have
  coarse structure (topics above communities).
* ``"ivf-flat"``, the one-level IVF self-join: spherical k-means (``seed``; 40 sampled points a
  list, 6 iterations) cuts the entities into ``nlist = 4 sqrt(n)`` lists; each list is then
  joined *exactly* with the ``nprobe`` lists whose centroids are nearest its own, as one BLAS
  product per list (list members x candidates), keeping each member's ``k + 1`` best.  Two
  repairs: a point whose own 2nd/3rd nearest lists are not among those probes is also joined
  with them, and *orphans* (points whose similarity to their centroid is under half their
  list's median: communities that no centroid took, scattered over lists that do not probe
  one another) are joined once more among themselves.  Cost: k-means ~ 40·nlist²·d ~ n;
  assignment ~ n·nlist·d and join ~ n·nprobe·(n/nlist)·d, both ~ n^1.5 but BLAS-bound.  The
  kept similarities are recomputed pair by pair (``einsum``), so they do not depend on how
  BLAS splits a product between threads; the lists are joined on a thread pool, each list's
  rows written by one task, so the output does not depend on scheduling.
* ``"hnsw"``: ``IndexHNSWFlat`` (``M = 32``, ``efConstruction = 40``), then each entity's
  neighbours are searched on the bottom layer starting from the entity itself
  (``search_level_0``, ``efSearch = 16``), not from the top entry point.  Recent faiss
  (those with ``hnsw_add_vertices_deterministic``, e.g. 1.15) builds the same graph whatever
  the thread count (checked: identical with 1 and 2 threads); with an older faiss the build
  runs on one thread and the search descends from the top (``efSearch = 64``).

Measured with ``benchmarks/bench_structure.py`` (384-d, communities of 50 entities, k = 10, τ =
0.5; recall of the exact k-NN edges; 2 cores, idle machine), on two kinds of data. *Topics*
(community centres around topic directions, 50 communities a topic): ``"auto"`` takes the
two-level lists (check 1.000 / 1.000 / 0.997): k-NN 3.0 s / 9.3 s / 31 s at 100k / 300k / 1M,
growth n^1.01, recall 1.000 / 0.9999 / 0.998. *Flat* (independent random community centres):
the two-level check fails (0.83 / 0.73 / 0.57) and the one-level join runs: k-NN 4.3 s / 14.9 s
/ 69 s, recall 1.000 / 0.9998 / 0.979; the failed attempt costs 4.2 s against 3.3 s for the
one-level join alone at 100k (``benchmarks/knn_methods.py``). HNSW on flat data needs no
k-means but, with centres that are all orthogonal to one another, nothing guides its greedy
search towards a community, so its recall falls as communities multiply: self-search recall
0.994 / 0.977 / 0.929 and k-NN 9–15 s / 43–65 s / 169 s at 100k / 300k / 600k (ARI 0.999 /
0.986 / 0.961; busy machine); the usual top-down search does worse (recall@11 0.84 at 300k with
efSearch 16, 0.92 with 32). One-level IVF with a fixed list size (nlist ∝ n) scanned by faiss:
1,000 points a list, nprobe 8: 41 s / 128 s at 100k / 300k, recall@11 0.94 / 0.89; 250 a list,
nprobe 16: 28 s / 91 s, recall 0.999 / 0.997 (its k-means and assignment grow as n²). The faiss
``IndexIVFFlat`` search the self-joins replaced (per-query scans of the probed lists:
memory-bound): 302 s and 4.27 GiB for graph + Leiden at 1M.

Why flat data costs more than linear time: the community centres are independent random
directions, so nothing but a comparison with representatives tells a point which community it
is in.  A k-means centroid that averages m communities still draws their points (similarity
~ 0.82/sqrt(m), against ~ ±0.05 for unrelated centroids) only while m stays small, so a
coarse level, whose means hold hundreds of communities, cannot route (the failed check).
With one level, the cost per point is nlist (assignment) + nprobe·n/nlist (join), least at
nlist = sqrt(nprobe·n) = 4 sqrt(n): ~ 8 sqrt(n)·d flops, n^1.2–1.3 at these sizes.  No hashing
scheme does much better here: same-community pairs are at distance 0.81 and others at 1.41
(c = 1.74), and on such random instances data-dependent hashing needs n^ρ a query with
ρ = 1/(2c² − 1) = 0.20 (Andoni & Razenshteyn 2015, tight by their 2016 lower bound).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .._optional import require
from ..core.errors import InputError

__all__ = ["KnnEdges", "knn_edges", "merge_near_duplicates", "to_igraph"]


@dataclass(frozen=True)
class KnnEdges:
    """Undirected edges ``src < dst`` with cosine ``weight``, sorted by (src, dst)."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    index: str  # "flat", "ivf-join<nlist>,nprobe<p>" or "hnsw<M>,efC<c>,self-efS<e>"

    def __len__(self) -> int:
        return int(self.src.size)


HNSW_M = 32
HNSW_EF_CONSTRUCTION = 40
HNSW_EF_SEARCH = 16          # bottom-layer walk from the point itself
HNSW_EF_SEARCH_TOP = 64      # fallback: descent from the top entry point (older faiss)
IVF_TRAIN_PER_LIST = 40      # k-means sample: points per list
IVF_NITER = 6
IVF_OWN_PROBES = 3           # a point's own nearest lists, joined when its list misses them
IVF_ORPHAN_RATIO = 0.5       # orphan: similarity to its centroid < ratio x its list's median
IVF_ORPHAN_EXACT_MAX = 50_000
TREE_LIST_SIZE = 256         # two-level IVF: points a (fine) list
TREE_TOP_TRAIN_PER_LIST = 320
TREE_BEAM = 4                # top lists searched for a point's fine list
TREE_CHECK_SAMPLE = 500      # points whose exact k-NN checks the two-level lists
TREE_MIN_RECALL = 0.99       # below: the one-level IVF self-join instead
HNSW_TRY_BELOW = 0.95        # "auto": one-level check below this, HNSW is tried as well
METHODS = ("auto", "ivf", "ivf-tree", "ivf-flat", "hnsw")


def _flat(faiss, emb: np.ndarray, kk: int):
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    sims, ids = index.search(emb, kk)
    return sims, ids, "flat"


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _keep_best(sims, ids, rows, new_sims, new_ids, kk: int, distinct: bool = False) -> None:
    """``sims/ids[rows]`` := the best ``kk`` of their entries and the new ones (ids unique).

    ``distinct``: the new ids are known to be absent from ``ids[rows]`` (no duplicate check).
    """
    both_s = np.concatenate([sims[rows], new_sims], axis=1)
    both_i = np.concatenate([ids[rows], new_ids], axis=1)
    if not distinct:
        by_id = np.argsort(both_i, axis=1, kind="stable")
        sorted_i = np.take_along_axis(both_i, by_id, axis=1)
        dup = np.zeros(both_i.shape, dtype=bool)           # a second copy of an id
        np.put_along_axis(dup, by_id[:, 1:], sorted_i[:, 1:] == sorted_i[:, :-1], axis=1)
        both_s[dup] = -np.inf
    best = np.argpartition(both_s, both_s.shape[1] - kk, axis=1)[:, -kk:]
    sims[rows] = np.take_along_axis(both_s, best, axis=1)
    ids[rows] = np.take_along_axis(both_i, best, axis=1)


def _best_among(emb: np.ndarray, rows: np.ndarray, cand: np.ndarray, kk: int):
    """Exact best ``kk`` of each row among ``cand`` (one BLAS product): (sims, ids), padded
    with (-inf, -1) where there are fewer than ``kk`` candidates."""
    q, c = emb[rows], emb[cand]
    block = q @ c.T
    m = min(kk, cand.size)
    top = np.argpartition(block, cand.size - m, axis=1)[:, cand.size - m:]
    sims = np.full((rows.size, kk), -np.inf, dtype=np.float32)
    ids = np.full((rows.size, kk), -1, dtype=np.int64)
    # the kept similarities again, pair by pair: BLAS sums in an order that can depend on
    # the thread count, einsum (no BLAS) does not
    sims[:, :m] = np.einsum("id,ikd->ik", q, c[top])
    ids[:, :m] = cand[top]
    return sims, ids


def _workers(faiss) -> int:
    return max(1, min(faiss.omp_get_max_threads(), os.cpu_count() or 1))


def _group(labels: np.ndarray, n_groups: int):
    """Indices grouped by label (ascending within a group) and the group bounds."""
    order = np.argsort(labels, kind="stable")
    return order, np.searchsorted(labels[order], np.arange(n_groups + 1))


def _nearest_lists(faiss, centroids: np.ndarray, nprobe: int) -> np.ndarray:
    """Each list's ``nprobe`` nearest lists by centroid (itself always among them)."""
    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(centroids)
    nlist = centroids.shape[0]
    _, near = index.search(centroids, min(int(nprobe), nlist))
    own = np.arange(nlist)
    missing = ~(near == own[:, None]).any(axis=1)
    near[missing, -1] = own[missing]
    return near


def _join_lists(emb, order, bounds, near, kk: int, workers: int):
    """Each list's members against the members of its ``near`` lists, exactly (BLAS)."""
    n, nlist = emb.shape[0], near.shape[0]
    sims = np.full((n, kk), -np.inf, dtype=np.float32)
    ids = np.full((n, kk), -1, dtype=np.int64)

    def join(first: int, last: int) -> None:  # lists first..last-1; rows disjoint across calls
        for j in range(first, last):
            rows = order[bounds[j]:bounds[j + 1]]
            if rows.size == 0:
                continue
            cand = np.concatenate([order[bounds[m]:bounds[m + 1]] for m in near[j]])
            sims[rows], ids[rows] = _best_among(emb, rows, cand, kk)

    # Many small products: one BLAS thread each, lists spread over a thread pool (a
    # multi-threaded BLAS on blocks this small mostly waits, badly so on a busy machine).
    step = max(1, -(-nlist // (8 * workers)))
    with _one_blas_thread(), ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda a: join(a, min(nlist, a + step)), range(0, nlist, step)))
    return sims, ids


def _kmeans(faiss, x: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Spherical k-means centroids (unit rows); ``k == 1``: the normalised mean."""
    if k <= 1:
        c = x.astype(np.float64).sum(axis=0, keepdims=True)
        return (c / max(np.linalg.norm(c), 1e-12)).astype(np.float32)
    km = faiss.Kmeans(x.shape[1], int(k), niter=IVF_NITER, seed=int(seed), spherical=True,
                      min_points_per_centroid=1)
    km.train(np.ascontiguousarray(x))
    return km.centroids


def _sample(rng, members: np.ndarray, size: int) -> np.ndarray:
    return members if members.size <= size else np.sort(rng.choice(members, size, replace=False))


def _tree_join(faiss, emb: np.ndarray, kk: int, nprobe: int, seed: int, check: _RecallCheck,
               require: bool = True):
    """Two-level IVF self-join (see the module docstring).

    Returns ``((sims, ids, kind), recall)``, ``recall`` the sample estimate; ``(None, recall)``
    when ``require`` is on and the estimate is under ``TREE_MIN_RECALL`` (nothing joined)."""
    n, dim = emb.shape
    rng = np.random.default_rng([seed, 7])
    nlist_target = max(1, n // TREE_LIST_SIZE)
    n_top = max(1, int(round(np.sqrt(nlist_target))))
    top = _kmeans(faiss, emb[_sample(rng, np.arange(n), TREE_TOP_TRAIN_PER_LIST * n_top)],
                  n_top, seed)
    top_index = faiss.IndexFlatIP(dim)
    top_index.add(top)
    beam = min(TREE_BEAM, n_top)
    _, top_of = top_index.search(emb, beam)              # each point's nearest top lists
    t_order, t_bounds = _group(top_of[:, 0], n_top)
    fine, fine_top = [], []
    for t in range(n_top):                               # fine lists inside each top list
        members = t_order[t_bounds[t]:t_bounds[t + 1]]
        if members.size == 0:
            continue
        k_t = max(1, int(round(members.size / TREE_LIST_SIZE)))
        train = _sample(rng, members, IVF_TRAIN_PER_LIST * k_t)
        fine.append(_kmeans(faiss, emb[train], k_t, seed + 1 + t))
        fine_top.append(np.full(k_t, t, dtype=np.int64))
    fine = np.ascontiguousarray(np.concatenate(fine), dtype=np.float32)
    fine_top = np.concatenate(fine_top)
    nlist = fine.shape[0]
    f_order, f_bounds = _group(fine_top, n_top)          # fine lists of each top list
    # each point's list: its best fine centroid among those of its `beam` nearest top lists
    best = np.full(n, -np.inf, dtype=np.float32)
    lists = np.zeros(n, dtype=np.int64)
    with _one_blas_thread():
        for r in range(beam):
            order_r, bounds_r = _group(top_of[:, r], n_top)
            for t in range(n_top):
                rows = order_r[bounds_r[t]:bounds_r[t + 1]]
                cand = f_order[f_bounds[t]:f_bounds[t + 1]]
                if rows.size == 0 or cand.size == 0:
                    continue
                block = emb[rows] @ fine[cand].T
                arg = np.argmax(block, axis=1)
                val = block[np.arange(rows.size), arg]
                better = val > best[rows]
                best[rows[better]] = val[better]
                lists[rows[better]] = cand[arg[better]]
    near = _nearest_lists(faiss, fine, nprobe)
    order, bounds = _group(lists, nlist)
    recall = check.of_lists(emb, kk, order, bounds, near, lists)
    if require and recall < TREE_MIN_RECALL:
        return None, recall
    sims, ids = _join_lists(emb, order, bounds, near, kk, _workers(faiss))
    return (sims, ids, f"ivf-tree{n_top}x{nlist},nprobe{near.shape[1]},"
                       f"check{recall:.3f}"), recall


class _RecallCheck:
    """The exact k-NN edges (>= threshold) of ``TREE_CHECK_SAMPLE`` seeded sample points, to
    score an approximate search by the share of them it finds (from the sampled side)."""

    def __init__(self, faiss, emb: np.ndarray, kk: int, threshold: float, seed: int) -> None:
        n = emb.shape[0]
        rng = np.random.default_rng([seed, 11])
        self.rows = np.sort(rng.choice(n, size=min(n, TREE_CHECK_SAMPLE), replace=False))
        index = faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        sims, ids = index.search(emb[self.rows], kk)
        self.want = [{int(j) for v, j in zip(srow.tolist(), irow.tolist())
                      if j != r and j >= 0 and round(v, 6) >= threshold}
                     for r, srow, irow in zip(self.rows.tolist(), sims, ids)]
        self.total = sum(len(w) for w in self.want)

    def score(self, found_ids) -> float:
        """Recall of ``found_ids`` (one row of neighbour ids per sample point)."""
        if not self.total:
            return 1.0
        hits = sum(len(w & set(np.asarray(row).tolist())) for w, row in zip(self.want, found_ids))
        return hits / self.total

    def of_ivf(self, emb, kk: int, plan: _IvfPlan) -> float:
        """Recall of the one-level self-join (:func:`_ivf_join`) from the sample points'
        own candidates alone, before the join: the lists their list probes, their own nearer
        lists it misses, and for an orphan the other orphans (the same candidates as the
        join gives them; exact among the orphans, which the join is up to 50,000 of them)."""
        n = emb.shape[0]
        lists = plan.assign[:, 0]
        orphan = np.zeros(n, dtype=bool)
        if 1 < plan.orphans.size <= n // 2:
            orphan[plan.orphans] = True
        found = []
        for r in self.rows.tolist():
            near = plan.near[lists[r]]
            extra = [j for j in plan.assign[r, 1:].tolist() if j >= 0 and j not in near]
            cand = np.concatenate([plan.order[plan.bounds[m]:plan.bounds[m + 1]]
                                   for m in list(near) + extra])
            sims, ids = _best_among(emb, np.array([r]), cand, kk)
            found.append((sims[0], ids[0]))
        rows = np.flatnonzero(orphan[self.rows])
        if rows.size:  # the orphans among the sample, against every orphan at once
            o_sims, o_ids = _best_among(emb, self.rows[rows], plan.orphans, kk)
            for i, r in enumerate(rows.tolist()):
                s = np.concatenate([found[r][0], o_sims[i]])
                ids = np.concatenate([found[r][1], o_ids[i]])
                _, first = np.unique(ids, return_index=True)
                s, ids = s[first], ids[first]
                found[r] = (None, ids[np.argsort(-s, kind="stable")[:kk]])
        return self.score([f[1] for f in found])

    def of_lists(self, emb, kk: int, order, bounds, near, lists) -> float:
        """Recall of a list join, from the sample points' own joins alone (before the join)."""
        found = []
        for r in self.rows.tolist():
            cand = np.concatenate([order[bounds[m]:bounds[m + 1]] for m in near[lists[r]]])
            found.append(_best_among(emb, np.array([r]), cand, kk)[1][0])
        return self.score(found)


@dataclass(frozen=True)
class _IvfPlan:
    """The one-level IVF lists of :func:`_ivf_join`, before any join: each point's nearest
    ``own_probe`` lists and its similarity to them, each list's probed lists, the points
    grouped by list, and the orphans (see there)."""

    nlist: int
    to_own: np.ndarray
    assign: np.ndarray
    near: np.ndarray
    order: np.ndarray
    bounds: np.ndarray
    orphans: np.ndarray


def _ivf_plan(faiss, emb: np.ndarray, nprobe: int, seed: int) -> _IvfPlan:
    """The lists of :func:`_ivf_join` (k-means, assignment, probes, orphans), no join."""
    n, dim = emb.shape
    nlist = int(max(1, min(65536, 4 * round(np.sqrt(n)), n // 4)))
    rng = np.random.default_rng(seed)
    n_train = min(n, IVF_TRAIN_PER_LIST * nlist)
    train = emb[np.sort(rng.choice(n, size=n_train, replace=False))] if n_train < n else emb
    cents = _kmeans(faiss, train, nlist, seed)
    centroids = faiss.IndexFlatIP(dim)
    centroids.add(cents)
    to_own, assign = centroids.search(emb, min(IVF_OWN_PROBES, nlist))  # nearest lists
    near = _nearest_lists(faiss, cents, nprobe)
    lists = assign[:, 0]
    order, bounds = _group(lists, nlist)
    # Orphans: points much farther from their list's centroid than the list's median point
    # (in the planted data, communities that no centroid took, scattered over many lists,
    # none of which probes the others).  They are joined once more among themselves.
    to_centroid = to_own[order, 0]                       # grouped by list
    median = np.zeros(nlist, dtype=np.float32)
    for j in np.nonzero(bounds[1:] > bounds[:-1])[0]:
        seg = to_centroid[bounds[j]:bounds[j + 1]]
        median[j] = np.partition(seg, seg.size // 2)[seg.size // 2]
    orphans = np.nonzero(to_own[:, 0] < IVF_ORPHAN_RATIO * median[lists])[0]
    return _IvfPlan(nlist, to_own, assign, near, order, bounds, orphans)


def _ivf_join(faiss, emb: np.ndarray, kk: int, nprobe: int, seed: int, depth: int = 0,
              plan: _IvfPlan | None = None):
    """IVF partition (``plan``, made here when not given), then an exact self-join of each
    list with its nearest lists (BLAS)."""
    n = emb.shape[0]
    plan = plan if plan is not None else _ivf_plan(faiss, emb, nprobe, seed)
    nlist, assign, near, order, bounds = (plan.nlist, plan.assign, plan.near, plan.order,
                                          plan.bounds)
    own_probe, probe = assign.shape[1], near.shape[1]
    lists = assign[:, 0]
    workers = _workers(faiss)
    sims, ids = _join_lists(emb, order, bounds, near, kk, workers)

    # A point whose own 2nd..own_probe-th nearest lists are not among those its list probes
    # (a point far from its list's centroid) is also joined with those lists, and keeps the
    # best kk of both.  One rank r at a time, so that a point comes up in one list only: the
    # lists are joined on the pool, then merged in one step, rows in order (memory locality).
    # The new candidates come from a list that the point's own list did not probe, so they
    # cannot repeat one it has.
    for r in range(1, own_probe):
        other = assign[:, r]
        xr = np.nonzero((other >= 0) & ~(near[lists] == other[:, None]).any(axis=1))[0]
        xl = other[xr]
        o = np.argsort(xl, kind="stable")
        xr, xl = xr[o], xl[o]
        xb = np.searchsorted(xl, np.arange(nlist + 1))
        todo = [j for j in np.unique(xl).tolist() if bounds[j + 1] > bounds[j]]
        if not todo:
            continue
        with _one_blas_thread(), ThreadPoolExecutor(workers) as pool:
            found = list(pool.map(lambda j: _best_among(emb, xr[xb[j]:xb[j + 1]],
                                                        order[bounds[j]:bounds[j + 1]], kk),
                                  todo))
        rows = np.concatenate([xr[xb[j]:xb[j + 1]] for j in todo])
        o = np.argsort(rows)
        _keep_best(sims, ids, rows[o], np.concatenate([f[0] for f in found])[o],
                   np.concatenate([f[1] for f in found])[o], kk, distinct=True)

    orphans = plan.orphans                               # joined among themselves
    if 1 < orphans.size <= n // 2 and depth < 3:
        sub = np.ascontiguousarray(emb[orphans])
        sub_kk = min(kk, orphans.size)
        if orphans.size <= IVF_ORPHAN_EXACT_MAX:
            _, sub_ids, _ = _flat(faiss, sub, sub_kk)
        else:
            _, sub_ids, _ = _ivf_join(faiss, sub, sub_kk, nprobe, seed + 1, depth + 1)
        sub_ids = np.where(sub_ids >= 0, orphans[np.maximum(sub_ids, 0)], -1)
        sub_sims = np.einsum("id,ikd->ik", sub, emb[np.maximum(sub_ids, 0)])
        sub_sims[sub_ids < 0] = -np.inf
        _keep_best(sims, ids, orphans, sub_sims, sub_ids, kk)
    return sims, ids, f"ivf-join{nlist},nprobe{probe}"


def _hnsw(faiss, emb: np.ndarray, kk: int, deterministic_build: bool | None = None):
    """HNSW k-NN of the indexed points themselves (see the module docstring)."""
    n, dim = emb.shape
    if deterministic_build is None:
        deterministic_build = hasattr(faiss, "hnsw_add_vertices_deterministic")
    index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    if deterministic_build:
        index.add(emb)
    else:
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            index.add(emb)
        finally:
            faiss.omp_set_num_threads(threads)
    kind = f"hnsw{HNSW_M},efC{HNSW_EF_CONSTRUCTION}"
    if not deterministic_build:
        index.hnsw.efSearch = max(HNSW_EF_SEARCH_TOP, kk)
        sims, ids = index.search(emb, kk)
        return sims, ids, f"{kind},efS{index.hnsw.efSearch}"
    ef = max(HNSW_EF_SEARCH, kk)
    index.hnsw.efSearch = ef
    start = np.arange(n, dtype=np.int32).reshape(n, 1)      # each point starts from itself
    start_sim = np.ones((n, 1), dtype=np.float32)            # its similarity to itself
    sims = np.empty((n, kk), dtype=np.float32)
    ids = np.empty((n, kk), dtype=np.int64)
    index.search_level_0(n, faiss.swig_ptr(emb), kk, faiss.swig_ptr(start),
                         faiss.swig_ptr(start_sim), faiss.swig_ptr(sims), faiss.swig_ptr(ids),
                         1, 1)
    return sims, ids, f"{kind},self-efS{ef}"


def _search(emb: np.ndarray, k: int, *, exact_max: int, nprobe: int, seed: int,
            method: str = "auto", threshold: float = -1.0):
    faiss = require("faiss", "structure")
    n = emb.shape[0]
    kk = min(k + 1, n)
    if n <= exact_max:
        return _flat(faiss, emb, kk)
    if method == "hnsw":
        return _hnsw(faiss, emb, kk)
    if method == "ivf-flat":
        return _ivf_join(faiss, emb, kk, nprobe, seed)
    check = _RecallCheck(faiss, emb, kk, threshold, seed)
    tree, r_tree = _tree_join(faiss, emb, kk, nprobe, seed, check, require=method != "ivf-tree")
    if tree is not None:
        return tree
    plan = _ivf_plan(faiss, emb, nprobe, seed)
    hnsw = None
    if method == "auto":
        # the one-level check from the sample's own candidates, before the join: when it is
        # under HNSW_TRY_BELOW and HNSW does better, the join would be made only to lose
        r_est = check.of_ivf(emb, kk, plan)
        if r_est < HNSW_TRY_BELOW:
            h_sims, h_ids, h_kind = _hnsw(faiss, emb, kk)
            hnsw = h_sims, h_ids, h_kind, check.score(h_ids[check.rows])
            if hnsw[3] > r_est:
                return h_sims, h_ids, (f"{h_kind},check{hnsw[3]:.3f} (one-level check "
                                       f"{r_est:.3f} before its join, two-level {r_tree:.3f})")
    sims, ids, kind = _ivf_join(faiss, emb, kk, nprobe, seed, plan=plan)
    r_flat = check.score(ids[check.rows])
    kind = f"{kind},check{r_flat:.3f}"
    if method == "ivf" or r_flat >= HNSW_TRY_BELOW:
        return sims, ids, f"{kind} (two-level check {r_tree:.3f})"
    if hnsw is None:                                    # "auto": one-level lists miss too much
        h_sims, h_ids, h_kind = _hnsw(faiss, emb, kk)
        hnsw = h_sims, h_ids, h_kind, check.score(h_ids[check.rows])
    h_sims, h_ids, h_kind, r_hnsw = hnsw
    if r_hnsw > r_flat:
        return h_sims, h_ids, (f"{h_kind},check{r_hnsw:.3f} (one-level check {r_flat:.3f}, "
                               f"two-level {r_tree:.3f})")
    return sims, ids, f"{kind} (two-level check {r_tree:.3f}, hnsw {r_hnsw:.3f})"


def knn_edges(emb: np.ndarray, *, k: int = 10, threshold: float = 0.6, exact_max: int = 50_000,
              nprobe: int = 16, seed: int = 0, method: str = "auto") -> KnnEdges:
    """The k-NN graph of the rows of ``emb`` (L2-normalised float32) above ``threshold``.

    Exact up to ``exact_max`` rows, else approximate by ``method``: ``"auto"`` (default; the
    two-level IVF lists when a sample recall check passes, else the one-level ones, and HNSW too
    when those miss more than 5%: the better by the check), ``"ivf"`` (two-level, else
    one-level), ``"ivf-tree"``/``"ivf-flat"`` (either IVF, forced) or ``"hnsw"``; ``nprobe``
    lists probed per list, k-means seeded by ``seed`` (see the module docstring).
    """
    if method not in METHODS:
        raise InputError(f"unknown k-NN method {method!r}",
                         fix=f"choose one of: {', '.join(METHODS)}")
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    n = emb.shape[0]
    if n < 2:
        e = np.zeros(0, dtype=np.int64)
        return KnnEdges(n, e, e.copy(), np.zeros(0, dtype=np.float64), "none")
    sims, ids, kind = _search(emb, k, exact_max=exact_max, nprobe=nprobe, seed=seed,
                              method=method, threshold=threshold)
    # few temporaries at once (a million rows hold 11M candidate pairs: 88 MB per array)
    rows = np.repeat(np.arange(n, dtype=np.int64), ids.shape[1])
    cols = ids.reshape(-1).astype(np.int64)
    del ids
    w = np.round(sims.reshape(-1).astype(np.float64), 6)
    del sims
    keep = (cols >= 0) & (cols != rows) & (w >= threshold)
    rows, cols, w = rows[keep], cols[keep], w[keep]
    del keep
    lo = np.minimum(rows, cols)
    hi = np.maximum(rows, cols, out=rows)
    del rows, cols
    key = lo * n + hi
    # keep the largest weight per pair: sort by key, then weight descending
    order = np.lexsort((-w, key))
    key = key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    del key
    order = order[first]
    return KnnEdges(n, lo[order], hi[order], w[order], kind)


def merge_near_duplicates(edges: KnnEdges, threshold: float, rank: np.ndarray) -> np.ndarray:
    """Union entities joined by an edge of similarity >= ``threshold``.

    Returns ``canon`` with ``canon[i]`` the representative of ``i``'s group: the member with the
    smallest ``rank`` (e.g. by doc frequency descending, then name).
    """
    parent = np.arange(edges.n, dtype=np.int64)

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    strong = edges.weight >= threshold
    for a, b in zip(edges.src[strong].tolist(), edges.dst[strong].tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            if rank[ra] <= rank[rb]:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return np.array([find(i) for i in range(edges.n)], dtype=np.int64)


def to_igraph(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray):
    """An undirected weighted igraph Graph (edge attribute ``weight``)."""
    ig = require("igraph", "structure")
    g = ig.Graph(n=int(n), directed=False)
    g.add_edges(np.column_stack([np.asarray(src, dtype=np.int64),
                                 np.asarray(dst, dtype=np.int64)]))   # numpy: no tuple list
    g.es["weight"] = np.asarray(weight, dtype=np.float64).tolist()
    return g
