"""Hand-made cases and brute-force references shared by the tests of
:mod:`mteb_stratified.core.stats.strata`'s parts."""

from __future__ import annotations

from mteb_stratified.core.stats.strata import tie_hash


WEIGHTS = {
    "d1": {0: 1.0},
    "d2": {1: 0.5, 2: 0.5},
    "d3": {0: 0.25, 1: 0.75},
    "d4": {},                       # a document without entities
    "d7": {0: 0.3},
    "d8": {1: 0.1},
    "d9": {1: 0.2},
}
QRELS = {
    "q1": {"d1": 1},
    "q2": {"d2": 2},
    "q3": {"d1": 1, "d3": 1, "d2": 0},   # d2 judged non-relevant
    "q4": {"d4": 1},                    # relevant docs carry no cluster mass
    "q5": {"d1": 0},                    # no relevant documents
    "q6": {"d2": 1, "d3": 1},
    "q7": {"d7": 1, "d8": 1, "d9": 1},  # 0.3 vs 0.1 + 0.2: a tie up to rounding
}
DOC_ENTS = {"d1": {"a", "b"}, "d2": {"c"}, "d3": {"b", "d"}, "d7": {"x"}, "d8": set(), "d9": {"y"}}
QUERY_ENTS = {"q1": {"a", "z"}, "q2": {"c"}, "q3": set(), "q6": {"e"}, "q7": {"x", "y"}}


def tv(a, b):
    return 0.5 * sum(abs(a.get(c, 0.0) - b.get(c, 0.0)) for c in set(a) | set(b))


def pairwise_delta(profiles):
    """Brute force: the mean TV distance over every unordered pair of profiles (NaN below 2)."""
    n = len(profiles)
    if n < 2:
        return float("nan")
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return sum(tv(profiles[i], profiles[j]) for i, j in pairs) / len(pairs)


def containment(q, docs):
    if not q:
        return float("nan")
    return sum(len(q & d) / len(q) for d in docs) / len(docs)


def hashed_argmax(prof, key):
    top = max(prof.values())
    tied = [c for c, w in prof.items() if w >= top * (1 - 1e-12)]
    return min(tied, key=lambda c: tie_hash(key, c))
