"""What the renderers read (:mod:`mteb_stratified.report.model`): the frozen report model, the
systems grouped by query set and the accessors over the typed results."""

from dataclasses import FrozenInstanceError

import pytest

from mteb_stratified.report.model import (ReportModel, build_report, pair_of, pairs_note,
                                          pairs_of, same_set, set_groups, stabilities, value_of)


def test_the_model_is_frozen_and_its_mappings_read_only(report):
    assert isinstance(report, ReportModel) and report.query_sets is None
    with pytest.raises(FrozenInstanceError):
        report.title = "other"
    with pytest.raises(TypeError):
        report.systems["C"] = next(iter(report.systems.values()))
    assert report.title == f"Stratified evaluation ({next(iter(report.systems.values())).measure})"


def test_systems_are_grouped_by_query_set_the_largest_first(report):
    names = list(report.systems)
    assert set_groups(report) == [(None, names)] and same_set(report) == names
    first = report.systems[names[0]]
    mixed = build_report({"x": first, "y": first, "z": first},
                         query_sets={"x": "300 queries", "y": "200 queries", "z": "300 queries"})
    assert set_groups(mixed) == [("300 queries", ["x", "z"]), ("200 queries", ["y"])]
    assert same_set(mixed) == ["x", "z"]
    with pytest.raises(TypeError):
        mixed.query_sets["x"] = "other"
    one_set = build_report({"x": first, "y": first}, query_sets={"x": "a", "y": "a"})
    assert one_set.query_sets is None  # one query set: nothing to keep apart


def test_the_accessors_read_the_typed_results(report):
    pairs = pairs_of(report)
    assert len(pairs) == 1 and pairs_note(report) is None
    a, b = pairs[0].a, pairs[0].b
    assert pair_of(report, a, b) is pairs[0] and pair_of(report, b, a) is pairs[0]
    assert pair_of(report, a, "nobody") is None
    [(label, st)] = stabilities(report)
    assert label is None and st is report.stability
    summary = report.systems[a]
    assert value_of(summary, "expected") == summary.pooled.estimate
    assert value_of(summary, "no such value") is None
    bare = build_report({a: summary})
    assert pairs_of(bare) == () and pairs_note(bare) is None and stabilities(bare) == []
