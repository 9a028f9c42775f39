"""Strata at a grain that has power: the cluster tree and its cut by query counts (ours).

A fine cluster map has hundreds of clusters and a benchmark a few hundred queries, so most
query-holding clusters hold one or two queries and no test can see a gap there (measured: 59 of
75 query-holding strata of a held-out corpus held fewer than 5).  We estimate and test on a
coarser grain and keep the fine grain for coverage.

**Tree** (:class:`ClusterTree`): nested partitions of the C fine clusters at levels
ℓ = 0 … L.  Level 0 is the fine clusters themselves; ``parents[ℓ][u]`` is the level-(ℓ + 1)
unit that contains level-ℓ unit u; the top level has one unit.  The structure pipeline builds
it by cutting one Ward dendrogram of the clusters (:mod:`mteb_stratified.structure.hierarchy`)
at K_ℓ = ⌈C / 2^ℓ⌉ units, so each level roughly halves the one below.

**Cut** (:func:`cut_tree`, the evaluated strata of one query set): with n_c the queries whose
primary cluster is c and a minimum m (``min_queries``), bottom-up from level ``start``:

* pool(u) = the fine clusters of u that are in no stratum yet (at ``start``: all of u's);
* if Σ_{c ∈ pool(u)} n_c ≥ m, pool(u) becomes the stratum (ℓ, u); otherwise it is merged into
  its parent: it joins the parent's pool;
* what is still short of m at the top (fine clusters no stratum took, fewer than m queries in
  all) joins, cluster by cluster, the stratum **nearest in the tree**: among the strata under
  the cluster's lowest ancestor that holds one, the one with the most queries (then the
  smallest index); such a stratum is marked *absorbed*.  With no stratum at all (fewer than m
  queries in the whole set) the top unit is the one stratum.  With m = 1 the strata are the
  query-holding fine clusters, each cluster without queries joining its nearest one.

Every fine cluster is in exactly one stratum, so the stratum weights (the sum of the fine
clusters' weights) add up to the corpus; the fine clusters without queries inside a stratum
take its mean in a corpus-weighted estimate (collapsed strata), while MSC, SCC and the gap list
stay at the fine level.  Only the query *counts* decide the cut, never the queries' scores, so
the grain cannot be tuned to a result.  A stratum formed at level ℓ from a pool that lost some
children to their own strata is unit u "minus those", named ``u (rest)`` in reports; an
absorbed one is named with a ``+``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["ClusterTree", "TreeCut", "cut_tree", "cut_tree_even", "cut", "check_cut", "CUTS",
           "check_min_queries", "DEFAULT_MIN_QUERIES", "level_sizes"]

#: Default minimum number of queries of an evaluated stratum, chosen on NFCorpus dev with
#: ``benchmarks/strata_power.py`` over m ∈ {1, 20, 30, 40, 50, 60}: the smallest m whose paired
#: max-|z| test reached power ≥ 0.8 at d = 0.10 in strata holding 20% of the queries (document
#: map: 0.79 at m = 40, 0.83 at m = 50; docs/validity/strata-power.md).
DEFAULT_MIN_QUERIES = 50


def check_min_queries(m) -> int:
    """``m`` as an int ≥ 1, else :class:`InputError` naming the valid range."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer, float)) \
            or not float(m).is_integer() or m < 1:
        raise InputError(f"min_queries must be an integer ≥ 1, got {m!r}",
                         fix=f"e.g. min_queries={DEFAULT_MIN_QUERIES} (the default)")
    return int(m)


def level_sizes(n_clusters: int) -> list[int]:
    """K_ℓ = ⌈C / 2^ℓ⌉ for ℓ = 0, 1, … down to 1 unit: the units per level of the tree."""
    sizes = [int(n_clusters)]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // 2))
    return sizes


@dataclass(frozen=True, eq=False)
class ClusterTree:
    """Nested partitions of C fine clusters (module docstring).

    ``parents[ℓ]`` (int64 array, one entry per level-ℓ unit) names the level-(ℓ + 1) unit that
    holds it; level 0's units are the fine clusters 0 … C − 1 and the last level has one unit.
    """

    n_clusters: int
    parents: tuple

    def __post_init__(self) -> None:
        C = int(self.n_clusters)
        if C < 1:
            raise InputError("a cluster tree needs at least one cluster",
                             fix="build the structure of a corpus with clusters")
        parents = tuple(np.asarray(p, dtype=np.int64) for p in self.parents)
        size = C
        for level, p in enumerate(parents):
            if p.ndim != 1 or p.size != size:
                raise InputError(f"cluster tree level {level} has {p.size} units, expected "
                                 f"{size}", fix="rebuild the structure artifact")
            n_next = int(p.max()) + 1 if p.size else 0
            if p.size and (p.min() < 0 or np.unique(p).size != n_next):
                raise InputError(f"cluster tree level {level + 1} is not numbered 0..n-1 or "
                                 "has empty units", fix="rebuild the structure artifact")
            size = n_next
        if size != 1:
            raise InputError(f"the top level of the cluster tree has {size} units, not 1",
                             fix="rebuild the structure artifact")
        object.__setattr__(self, "n_clusters", C)
        object.__setattr__(self, "parents", parents)

    @classmethod
    def flat(cls, n_clusters: int) -> "ClusterTree":
        """A tree with no levels between the clusters and the whole corpus."""
        return cls(n_clusters, () if n_clusters == 1 else (np.zeros(n_clusters, np.int64),))

    @property
    def n_levels(self) -> int:
        """Levels, the fine one included (L + 1)."""
        return len(self.parents) + 1

    def n_units(self, level: int) -> int:
        self.check_level(level)
        return self.n_clusters if level == 0 else int(self.parents[level - 1].max()) + 1

    def check_level(self, level) -> int:
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) \
                or not 0 <= level < self.n_levels:
            raise InputError(f"level {level!r} is not a level of this cluster tree (it has "
                             f"levels 0..{self.n_levels - 1})",
                             fix=f"give a level in 0..{self.n_levels - 1} (0: the fine "
                                 f"clusters, {self.n_levels - 1}: the whole corpus)")
        return int(level)

    def ancestors(self, level: int) -> np.ndarray:
        """(C,) the level-``level`` unit of every fine cluster."""
        self.check_level(level)
        out = np.arange(self.n_clusters, dtype=np.int64)
        for p in self.parents[:level]:
            out = p[out]
        return out

    def to_dict(self) -> dict:
        return {"n_clusters": self.n_clusters, "parents": [p.tolist() for p in self.parents]}


@dataclass(frozen=True, eq=False)
class TreeCut:
    """The evaluated strata of one query set (module docstring).

    ``stratum`` (C,): each fine cluster's stratum index; ``nodes[s]`` = (level, unit) of
    stratum s; ``rest[s]``: True when a child of that unit formed a stratum of its own, so the
    stratum is the unit minus those; ``absorbed[s]``: True when it also took in clusters left
    over at the top; ``n_queries[s]``; ``min_queries`` and ``start`` the rule's settings;
    ``short``: True when the whole query set holds fewer than ``min_queries``.
    """

    stratum: np.ndarray
    nodes: tuple
    rest: tuple
    n_queries: np.ndarray
    min_queries: int
    start: int
    short: bool
    absorbed: tuple = ()

    @property
    def n_strata(self) -> int:
        return len(self.nodes)

    def levels(self) -> list[int]:
        return [lvl for lvl, _ in self.nodes]

    def to_dict(self) -> dict:
        return {"min_queries": self.min_queries, "start_level": self.start,
                "n_strata": self.n_strata, "short": self.short,
                "strata": [{"level": lvl, "unit": u, "rest": r, "n_queries": int(n),
                            "absorbed": bool(self.absorbed[s]) if self.absorbed else False,
                            "clusters": np.flatnonzero(self.stratum == s).tolist()}
                           for s, ((lvl, u), r, n) in enumerate(zip(self.nodes, self.rest,
                                                                    self.n_queries))]}


def _check_cut(tree: ClusterTree, counts, min_queries, start) -> tuple:
    """``(m, start, counts)`` checked for a cut, else :class:`InputError`."""
    m = check_min_queries(min_queries)
    start = tree.check_level(start)
    counts = np.asarray(counts)
    if counts.shape != (tree.n_clusters,) or counts.dtype.kind not in "iu" \
            or (counts.size and counts.min() < 0):
        raise InputError(f"counts must be {tree.n_clusters} non-negative integers (queries per "
                         "fine cluster)", fix="count the queries of each primary cluster")
    return m, start, counts


def cut_tree(tree: ClusterTree, counts, min_queries: int, *, start: int = 0) -> TreeCut:
    """The evaluated strata for fine-cluster query ``counts`` (module docstring)."""
    m, start, counts = _check_cut(tree, counts, min_queries, start)
    C = tree.n_clusters
    stratum = np.full(C, -1, dtype=np.int64)
    nodes: list = []
    rest: list = []
    n_q: list = []
    # pools at the start level: every fine cluster in its level-`start` unit
    unit = tree.ancestors(start)
    n_units = tree.n_units(start)
    for level in range(start, tree.n_levels):
        free = stratum < 0
        pool_count = np.bincount(unit, weights=counts * free, minlength=n_units)
        has_pool = np.bincount(unit, weights=free, minlength=n_units) > 0
        taken = np.bincount(unit, weights=~free, minlength=n_units) > 0
        for u in np.flatnonzero(has_pool & (pool_count >= m)).tolist():
            stratum[(unit == u) & free] = len(nodes)
            nodes.append((level, u))
            rest.append(bool(taken[u]))
            n_q.append(int(round(pool_count[u])))
        if level == tree.n_levels - 1:
            break
        unit = tree.parents[level][unit]
        n_units = tree.n_units(level + 1)
    left = stratum < 0
    short = not nodes
    if short:
        stratum[:] = 0
        nodes.append((tree.n_levels - 1, 0))
        rest.append(False)
        n_q.append(int(counts.sum()))
    absorbed = [False] * len(nodes)
    if not short and left.any():
        taken = stratum.copy()
        for c in np.flatnonzero(left).tolist():
            s = _nearest_stratum(tree, taken, c, start, n_q)
            stratum[c] = s
            n_q[s] += int(counts[c])
            absorbed[s] = True
    return TreeCut(stratum, tuple(nodes), tuple(rest), np.asarray(n_q, dtype=np.int64), m,
                   start, short, tuple(absorbed))


def _nearest_stratum(tree: ClusterTree, taken: np.ndarray, c: int, start: int, n_q) -> int:
    """The stratum nearest to cluster c in the tree: among the strata under c's lowest
    ancestor that holds one, the one with the most queries (then the smallest index)."""
    for level in range(start, tree.n_levels):
        anc = tree.ancestors(level)
        near = np.unique(taken[(anc == anc[c]) & (taken >= 0)])
        if near.size:
            return int(min(near.tolist(), key=lambda s: (-n_q[s], s)))
    raise RuntimeError("no stratum under the top unit")  # pragma: no cover - nodes is not empty


#: The cuts of :func:`cut`: the most even (default) and the bottom-up greedy rule.
CUTS = ("even", "greedy")


def check_cut(cut) -> str:
    """``cut`` if it names a rule of :data:`CUTS`, else :class:`InputError`."""
    if cut not in CUTS:
        raise InputError(f"unknown cut {cut!r}", fix=f"use {' or '.join(CUTS)}")
    return cut


def cut(tree: ClusterTree, counts, min_queries: int, *, start: int = 0,
        rule: str = "even") -> TreeCut:
    """The evaluated strata by ``rule``: :func:`cut_tree_even` or :func:`cut_tree`."""
    return (cut_tree_even if check_cut(rule) == "even" else cut_tree)(
        tree, counts, min_queries, start=start)


def cut_tree_even(tree: ClusterTree, counts, min_queries: int, *, start: int = 0) -> TreeCut:
    """The most even evaluated strata the tree allows, every one holding ≥ ``min_queries``
    queries (ours; issue #45).

    The candidates are the cuts the greedy rule (:func:`cut_tree`) draws from: a stratum is
    a pool formed at a unit of the tree, its fine clusters those no stratum below took.  Where
    the greedy rule closes every pool as soon as it holds m queries, this one may pass a pool
    up to merge with its siblings' leftovers, and chooses, over all such cuts, the one with
    the smallest Σ_s n_s², the most even sizes (the largest effective number of strata
    Q² / Σ n_s²).  Exact by dynamic programming over the tree: for each unit u and each pool
    size r it could pass up, the least Σ n_s² of the strata formed inside u,

        T_u = min-plus convolution of its children's T  (the pools merge),
        T_u[0] ← min(T_u[0], min_{r ≥ m} T_u[r] + r²)   (the pool becomes a stratum),

    and at the top the pool must close or be empty, so nothing with queries is absorbed;
    fine clusters without queries that no stratum took join their nearest stratum as in
    :func:`cut_tree`.  Pools passed up hold at most 4m queries (a bound on the work: every
    larger pool closes where it forms), unless no such cut exists (a unit with many small
    children), when every size is allowed.  Only the query counts decide the cut, never the
    scores.
    """
    m, start, counts = _check_cut(tree, counts, min_queries, start)
    total = int(counts.sum())
    if total < m:
        return cut_tree(tree, counts, m, start=start)   # one short stratum, as the greedy rule
    plan = _EvenPlan(tree, counts, m, start, min(total, 4 * m))
    if not np.isfinite(plan.table((tree.n_levels - 1, 0))[0]):
        # no cut with pools under 4m (a unit with many small children): every pool size
        plan = _EvenPlan(tree, counts, m, start, total)
    return plan.cut()


class _EvenPlan:
    """The dynamic programme of :func:`cut_tree_even` and its reconstruction."""

    def __init__(self, tree: ClusterTree, counts: np.ndarray, m: int, start: int,
                 R: int) -> None:
        self.tree, self.m, self.start, self.R = tree, m, start, int(R)
        self.unit = tree.ancestors(start)
        self.leaf_counts = np.bincount(self.unit, weights=counts,
                                       minlength=tree.n_units(start)).astype(np.int64)
        self.counts = counts
        self.children = {}
        for level in range(start + 1, tree.n_levels):
            parents = tree.parents[level - 1]
            for child, parent in enumerate(parents.tolist()):
                self.children.setdefault((level, parent), []).append((level - 1, child))
        self.tables: dict = {}
        self.splits: dict = {}
        self.closes: dict = {}

    def _leaf(self, v: int) -> np.ndarray:
        c = int(self.leaf_counts[v])
        t = np.full(min(self.R, c) + 1, np.inf)  # a pool never holds more than is under it
        if c <= self.R:
            t[c] = 0.0
        if c >= self.m:
            t[0] = min(t[0], float(c) ** 2)
            self.closes[(self.start, v)] = c
        return t

    def table(self, node) -> np.ndarray:
        level, u = node
        if node in self.tables:
            return self.tables[node]
        if level == self.start:
            t = self._leaf(u)
        else:
            t, chain = None, []
            for child in self.children[node]:
                tc = self.table(child)
                if t is None:
                    t = tc.copy()
                    chain.append(None)
                    continue
                t, arg = _min_plus(t, tc, self.R)
                chain.append(arg)
            self.splits[node] = chain
            closing = t[self.m:] + np.arange(self.m, t.size, dtype=np.float64) ** 2
            j = int(np.argmin(closing)) if closing.size else -1
            if j >= 0 and closing[j] < t[0]:
                t = t.copy()
                t[0] = closing[j]
                self.closes[node] = self.m + j
            else:
                self.closes.pop(node, None)
        self.tables[node] = t
        return t

    def cut(self) -> TreeCut:
        tree = self.tree
        top = (tree.n_levels - 1, 0)
        t = self.table(top)
        if not np.isfinite(t[0]):   # pragma: no cover - the whole pool can always close
            raise RuntimeError("no even cut")
        owner = np.full(tree.n_units(self.start), -1, dtype=np.int64)
        nodes: list = []
        self._assign(top, 0, None, owner, nodes)
        nodes_sorted = sorted(set(nodes))
        index = {n: i for i, n in enumerate(nodes_sorted)}
        leaf_stratum = np.array([index[nodes[o]] if o >= 0 else -1 for o in owner.tolist()],
                                dtype=np.int64)
        stratum = leaf_stratum[self.unit]
        n_q = np.bincount(stratum[stratum >= 0], weights=self.counts[stratum >= 0],
                          minlength=len(nodes_sorted)).astype(np.int64)
        rest = []
        for (level, u) in nodes_sorted:
            under = tree.ancestors(level) == u
            rest.append(bool(np.any(stratum[under] != index[(level, u)])))
        absorbed = [False] * len(nodes_sorted)
        left = stratum < 0
        if left.any():
            taken = stratum.copy()
            for c in np.flatnonzero(left).tolist():
                s = _nearest_stratum(tree, taken, c, self.start, n_q.tolist())
                stratum[c] = s
                absorbed[s] = True
        return TreeCut(stratum, tuple(nodes_sorted), tuple(rest), n_q, self.m, self.start,
                       False, tuple(absorbed))

    def _assign(self, node, r_out: int, closing, owner, nodes) -> None:
        """Walk down: ``node`` passes a pool of ``r_out`` queries up to ``closing``."""
        level, u = node
        pool = r_out
        if r_out == 0 and node in self.closes:
            pool, closing = self.closes[node], len(nodes)
            nodes.append(node)
        if level == self.start:
            owner[u] = closing if closing is not None else -1
            return
        kids = self.children[node]
        wants = [0] * len(kids)
        r = pool
        for i in range(len(kids) - 1, 0, -1):   # undo the convolution chain, last child first
            r_before = int(self.splits[node][i][r])
            wants[i] = r - r_before
            r = r_before
        wants[0] = r
        for child, want in zip(kids, wants):
            self._assign(child, want, closing, owner, nodes)


def _min_plus(a: np.ndarray, b: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """(c, arg): c[r] = min_{i ≤ r} a[i] + b[r − i] for r ≤ min(R, |a| + |b| − 2) and the
    minimising i (a's share; ties: the smallest).  The tables are as long as the pools the
    subtrees can pass up (never more than the queries under them), so the work is
    Σ (finite entries of a) × |b|, not R² per merge."""
    n = min(int(R), a.size + b.size - 2) + 1
    c = np.full(n, np.inf)
    arg = np.zeros(n, dtype=np.int64)
    for i in np.flatnonzero(np.isfinite(a[:n])).tolist():
        hi = min(n, i + b.size)
        cand = a[i] + b[:hi - i]
        seg = c[i:hi]
        better = cand < seg
        seg[better] = cand[better]
        arg[i:hi][better] = i
    return c, arg
