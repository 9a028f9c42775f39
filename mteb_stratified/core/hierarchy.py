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

from .errors import InputError

__all__ = ["ClusterTree", "TreeCut", "cut_tree", "check_min_queries", "DEFAULT_MIN_QUERIES",
           "level_sizes"]

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


def cut_tree(tree: ClusterTree, counts, min_queries: int, *, start: int = 0) -> TreeCut:
    """The evaluated strata for fine-cluster query ``counts`` (module docstring)."""
    m = check_min_queries(min_queries)
    start = tree.check_level(start)
    counts = np.asarray(counts)
    if counts.shape != (tree.n_clusters,) or counts.dtype.kind not in "iu" \
            or (counts.size and counts.min() < 0):
        raise InputError(f"counts must be {tree.n_clusters} non-negative integers (queries per "
                         "fine cluster)", fix="count the queries of each primary cluster")
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
