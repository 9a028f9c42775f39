"""QuerySet: the digest of the evaluated queries, and grouping by it."""

import hashlib

from mteb_stratified.core.query_set import QuerySet, group_by_query_set, query_set_id


def test_digest_is_the_documented_sha256_and_ignores_order():
    ids = ["q3", "q10", "q1"]
    want = hashlib.sha256("".join(f"{q}\n" for q in sorted(ids)).encode()).hexdigest()[:12]
    assert query_set_id(ids) == want == query_set_id(reversed(ids))
    assert query_set_id(ids) != query_set_id(ids[:2])
    assert query_set_id([1, 2]) == query_set_id(["1", "2"])  # ids as text


def test_query_set_identity_and_label():
    full = QuerySet.of(["a", "b", "c"], "test")
    assert full == QuerySet.of(["c", "a", "b", "a"], "test") and full.n_queries == 3
    assert full != QuerySet.of(["a", "b", "c"], "dev")
    sub = QuerySet.of(["a", "b", "c"], "test", subset="MTEB_STRATIFIED_MAX_DOCS=100")
    assert sub != full and "subset MTEB_STRATIFIED_MAX_DOCS=100" in sub.label
    assert full.label == f"test, 3 queries (id {full.digest})"
    assert QuerySet.from_scores(full.to_keys(), "test") == full
    unknown = QuerySet.from_scores({"ndcg_at_10": 0.3}, "test")
    assert not unknown.known and unknown.label == "test, queries not recorded"
    assert not QuerySet.from_scores({"query_set_id": "x", "query_set_size": True}, "test").known


def test_groups_largest_first_in_first_seen_order():
    items = [("m1", "A"), ("m2", "B"), ("m3", "B"), ("m4", "C")]
    groups = group_by_query_set(items, key=lambda x: x[1])
    assert groups == [[("m2", "B"), ("m3", "B")], [("m1", "A")], [("m4", "C")]]
    assert group_by_query_set([], key=str) == []
