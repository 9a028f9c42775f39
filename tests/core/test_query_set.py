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


def test_same_query_sets_groups_names_and_says_the_sets_apart():
    """The one "same query set" rule: grouped by query set, the largest first, each group
    named by its query set's label; one group is not mixed."""
    from mteb_stratified.core.query_set import same_query_sets

    full, five = QuerySet.of("abc", "test"), QuerySet.of("ab", "test")
    items = [("m1", five), ("m2", full), ("m3", full)]
    out = same_query_sets(items, lambda i: i[1], lambda i: i[0])
    assert out.mixed and out.groups == ((items[1], items[2]), (items[0],))
    assert list(out) == list(out.groups) and len(out) == 2  # iterates as the old list did
    assert out.labels == (full.label, five.label) and out.names == (("m2", "m3"), ("m1",))
    assert out.text() == f"{full.label} [m2, m3]; {five.label} [m1]"
    assert out.note() == ("the results were evaluated on 2 different query sets, so their "
                          f"figures are not comparable across sets: {out.text()}")
    assert out.note(so="each set is ranked on its own").startswith(
        "the results were evaluated on 2 different query sets, so each set is ranked on its own:")
    assert out.note(str.upper).endswith(out.text().upper())
    one = same_query_sets(items[1:], lambda i: i[1], lambda i: i[0], require_same=True)
    assert not one.mixed and one.names == (("m2", "m3"),)
    assert same_query_sets([], lambda i: i, str).groups == ()


def test_same_query_sets_refuses_with_one_wording():
    """``require_same``: an InputError, the same message wherever the rule is applied."""
    import pytest

    from mteb_stratified.core.errors import InputError
    from mteb_stratified.core.query_set import same_query_sets

    items = [("m1", QuerySet.of("ab", "test")), ("m2", QuerySet.of("abc", "test"))]
    groups = same_query_sets(items, lambda i: i[1], lambda i: i[0])
    with pytest.raises(InputError) as err:
        same_query_sets(items, lambda i: i[1], lambda i: i[0], require_same=True)
    assert str(err.value) == str(groups.refusal())
    assert err.value.message == ("the results were evaluated on 2 different query sets, so "
                                 f"they cannot be compared: {groups.text()}")
    assert "--require-same-queries" in err.value.fix


def test_same_query_sets_across_tasks():
    """With tasks: one group when each task's results share one set (a model that skipped a
    task still belongs); else one group per (task, set), labelled with the task."""
    from mteb_stratified.core.query_set import same_query_sets

    a, b = QuerySet.of("ab", "test"), QuerySet.of("abc", "test")
    rows = [("m1", "T1", a), ("m2", "T1", a), ("m1", "T2", b)]
    key = {"query_set": lambda r: r[2], "name": lambda r: r[0]}
    one = same_query_sets(rows, **key, task=lambda r: r[1])
    assert not one.mixed and one.groups == (tuple(rows),)
    two = same_query_sets(rows + [("m3", "T2", a)], **key, task=lambda r: r[1])
    assert two.labels == (f"T1: {a.label}", f"T2: {b.label}", f"T2: {a.label}")
    assert two.names == (("m1", "m2"), ("m1",), ("m3",))
