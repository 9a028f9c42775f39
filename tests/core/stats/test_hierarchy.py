"""The cluster tree and its cut by query counts: against a brute-force reading of the rule."""

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.hierarchy import (ClusterTree, check_min_queries, cut, cut_tree,
                                            cut_tree_even, level_sizes)


def _tree():
    # 6 clusters -> 3 units {0,1} {2,3} {4,5} -> 2 units {0,1,2,3} {4,5} -> 1
    return ClusterTree(6, ([0, 0, 1, 1, 2, 2], [0, 0, 1], [0, 0]))


def test_levels_and_ancestors():
    t = _tree()
    assert t.n_levels == 4 and [t.n_units(lvl) for lvl in range(4)] == [6, 3, 2, 1]
    assert t.ancestors(0).tolist() == list(range(6))
    assert t.ancestors(2).tolist() == [0, 0, 0, 0, 1, 1]
    assert t.ancestors(3).tolist() == [0] * 6
    assert level_sizes(311) == [311, 156, 78, 39, 20, 10, 5, 3, 2, 1]


def test_cut_merges_small_clusters_into_their_parent():
    t = _tree()
    cut = cut_tree(t, np.array([10, 1, 0, 2, 1, 30]), 5)
    # c0 and c5 stand; c1 joins its level-1 parent's pool ({0, 1}: c0 is taken, so 1 query),
    # which passes up with {2, 3} (2 queries): 3 at level 2 unit 0 — still short; {4}
    # (1 query) passes to level 2 unit 1 (1): short; at the top each leftover joins its
    # nearest stratum in the tree: c1 (sibling of c0) and c2, c3 (under level-2 unit 0) join
    # c0's, c4 (sibling of c5) joins c5's
    assert cut.nodes == ((0, 0), (0, 5)) and cut.absorbed == (True, True)
    assert cut.stratum.tolist() == [0, 0, 0, 0, 1, 1]
    assert cut.n_queries.sum() == 44
    for s, n in enumerate(cut.n_queries):
        assert n == np.array([10, 1, 0, 2, 1, 30])[cut.stratum == s].sum()


def test_every_stratum_holds_at_least_min_queries_and_the_counts_add_up():
    rng = np.random.default_rng(0)
    from mteb_stratified.structure.hierarchy import tree_from_merges, ward_merges

    for trial in range(30):
        C = int(rng.integers(2, 60))
        tree = tree_from_merges(ward_merges(rng.normal(size=(C, 4)), np.ones(C)), C)
        counts = rng.poisson(rng.choice([0.3, 2.0, 6.0]), C).astype(np.int64)
        m = int(rng.integers(1, 30))
        cut = cut_tree(tree, counts, m)
        assert (cut.stratum >= 0).all() and cut.n_queries.sum() == counts.sum()
        per = np.bincount(cut.stratum, weights=counts, minlength=cut.n_strata)
        assert per.tolist() == cut.n_queries.tolist()
        if counts.sum() >= m:
            assert not cut.short and (cut.n_queries >= m).all()
        else:
            assert cut.short and cut.n_strata == 1
        # a stratum lies inside its unit, unless the top's leftovers joined it
        for s, (lvl, u) in enumerate(cut.nodes):
            inside = (tree.ancestors(lvl)[cut.stratum == s] == u).all()
            assert inside or cut.absorbed[s]


def test_min_queries_one_gives_every_query_holding_cluster_its_own_stratum():
    t = _tree()
    counts = np.array([3, 0, 1, 0, 0, 2])
    cut = cut_tree(t, counts, 1)
    holding = [c for c in range(6) if counts[c]]
    assert len({int(cut.stratum[c]) for c in holding}) == len(holding) == cut.n_strata
    # each empty cluster joins its nearest query-holding one: c1 -> c0, c3 -> c2, c4 -> c5
    s = cut.stratum
    assert s[1] == s[0] and s[3] == s[2] and s[4] == s[5]


def test_bad_input_names_the_valid_range():
    t = _tree()
    for m in (0, -1, 2.5, True, "3"):
        with pytest.raises(InputError, match="integer ≥ 1"):
            check_min_queries(m)
    with pytest.raises(InputError, match=r"levels 0\.\.3"):
        cut_tree(t, np.zeros(6, dtype=np.int64), 5, start=4)
    with pytest.raises(InputError, match="6 non-negative integers"):
        cut_tree(t, np.zeros(5, dtype=np.int64), 5)
    with pytest.raises(InputError, match="top level"):
        ClusterTree(3, ([0, 1, 1],))
    with pytest.raises(InputError, match="numbered"):
        ClusterTree(3, ([0, 2, 2], [0, 0, 0]))


# -- the even cut (issue #45) -----------------------------------------------------------------
def _random_tree(rng, n_leaves: int) -> ClusterTree:
    """A random nested tree: each level groups the units below into about half as many."""
    parents, size = [], n_leaves
    while size > 1:
        k = max(1, size // 2)
        p = np.concatenate([np.arange(k), rng.integers(0, k, size - k)])
        rng.shuffle(p)
        parents.append(p)
        size = k
    return ClusterTree(n_leaves, tuple(parents))


def _brute_even(tree: ClusterTree, counts, m: int) -> float:
    """The least Σ n_s² over every set of units that close their pools (the candidates of
    cut_tree_even), by enumeration; inf when none is valid."""
    nodes = [(lvl, u) for lvl in range(tree.n_levels) for u in range(tree.n_units(lvl))]
    best = np.inf
    for mask in range(1 << len(nodes)):
        closing = {nodes[i] for i in range(len(nodes)) if mask >> i & 1}
        pool = {(0, c): int(counts[c]) for c in range(tree.n_clusters)}
        cost, ok = 0.0, True
        for lvl in range(tree.n_levels):
            if lvl > 0:
                for child, parent in enumerate(tree.parents[lvl - 1].tolist()):
                    pool[(lvl, parent)] = pool.get((lvl, parent), 0) + pool[(lvl - 1, child)]
            for u in range(tree.n_units(lvl)):
                if (lvl, u) in closing:
                    if pool[(lvl, u)] < m:
                        ok = False
                        break
                    cost += pool[(lvl, u)] ** 2
                    pool[(lvl, u)] = 0
            if not ok:
                break
        if ok and pool[(tree.n_levels - 1, 0)] == 0:
            best = min(best, cost)
    return best


def test_the_even_cut_is_the_most_even_the_tree_allows_by_brute_force():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(40):
        tree = _random_tree(rng, int(rng.integers(3, 7)))
        counts = rng.integers(0, 25, tree.n_clusters).astype(np.int64)
        m = int(rng.integers(5, 30))
        if counts.sum() < m:
            continue
        even = cut_tree_even(tree, counts, m)
        got = float(np.sum(even.n_queries.astype(float) ** 2))
        assert got == _brute_even(tree, counts, m)
        # and never less even than the greedy rule, which is one of the candidates
        greedy = cut_tree(tree, counts, m)
        if not any(greedy.absorbed):
            assert got <= float(np.sum(greedy.n_queries.astype(float) ** 2))
        checked += 1
    assert checked >= 30


def test_the_even_cut_keeps_every_rule_of_a_cut():
    rng = np.random.default_rng(1)
    for _ in range(30):
        tree = _random_tree(rng, int(rng.integers(8, 40)))
        counts = rng.integers(0, 30, tree.n_clusters).astype(np.int64)
        m = int(rng.integers(10, 60))
        if counts.sum() < m:
            continue
        c = cut_tree_even(tree, counts, m)
        assert (c.stratum >= 0).all() and c.n_queries.min() >= m
        assert np.array_equal(np.bincount(c.stratum, weights=counts,
                                          minlength=c.n_strata).astype(np.int64), c.n_queries)
        for s, (lvl, u) in enumerate(c.nodes):   # nested: a stratum lies under its unit
            assert np.all(tree.ancestors(lvl)[c.stratum == s] == u)
        # nothing that holds queries is absorbed
        for s in np.flatnonzero(c.absorbed):
            lvl, u = c.nodes[s]
            outside = (c.stratum == s) & (tree.ancestors(lvl) != u)
            assert counts[outside].sum() == 0


def test_cut_rules_and_a_short_query_set():
    tree = ClusterTree(4, (np.array([0, 0, 1, 1]), np.array([0, 0])))
    counts = np.array([3, 2, 1, 1], dtype=np.int64)
    assert cut_tree_even(tree, counts, 10).short     # fewer than m queries: one stratum
    assert cut(tree, counts, 2, rule="greedy").n_strata == cut_tree(tree, counts, 2).n_strata
    with pytest.raises(InputError, match="unknown cut"):
        cut(tree, counts, 2, rule="balanced")
