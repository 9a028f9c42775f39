"""JSON output is always valid JSON: NaN and ±inf become null; frozen JSON-like data is a
read-only copy that still dumps, compares, copies and pickles as plain data."""

from __future__ import annotations

import copy
import json
import pickle
from types import MappingProxyType

import numpy as np
import pytest

from mteb_stratified.core.jsonsafe import (ReadOnlyDict, ReadOnlyList, dumps_json, frozen_json,
                                           json_safe)


def _strict(text):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_values_become_null_everywhere():
    value = {"a": float("nan"), "b": [np.inf, -np.inf, 1.5], "c": np.float32("nan"),
             "d": np.arange(3), "e": {"f": (np.int64(7), True, None, "x")}}
    out = _strict(dumps_json(value))
    assert out == {"a": None, "b": [None, None, 1.5], "c": None, "d": [0, 1, 2],
                   "e": {"f": [7, True, None, "x"]}}
    assert json_safe(np.array([1.0, np.nan])) == [1.0, None]


def test_plain_json_dumps_would_not_be_json():
    with pytest.raises(ValueError):
        _strict(json.dumps({"x": float("nan")}))


def _data():
    return {"a": [1, {"b": [2.5, "x"]}], "t": (1, [2]), "s": {3, 4}, "n": None,
            "m": MappingProxyType({"k": [5]})}


def test_frozen_json_is_a_read_only_copy_that_acts_as_plain_data():
    data = _data()
    frozen = frozen_json(data)
    assert type(frozen) is ReadOnlyDict and type(frozen["a"]) is ReadOnlyList
    assert type(frozen["a"][1]) is ReadOnlyDict and type(frozen["t"]) is tuple
    assert type(frozen["t"][1]) is ReadOnlyList and frozen["s"] == frozenset({3, 4})
    assert type(frozen["m"]) is ReadOnlyDict and frozen["m"] == {"k": [5]}
    data["a"][1]["b"].append(9)  # a copy: the source can change, the frozen data does not
    assert frozen["a"][1]["b"] == [2.5, "x"]
    plain = {"a": [1, {"b": [2.5, "x"]}], "t": (1, [2]), "n": None, "m": {"k": [5]}}
    assert {k: v for k, v in frozen.items() if k != "s"} == plain
    assert json.loads(json.dumps({k: v for k, v in frozen.items() if k != "s"})) == {
        **plain, "t": [1, [2]]}
    for twin in (pickle.loads(pickle.dumps(frozen)), copy.deepcopy(frozen), frozen_json(frozen)):
        assert twin == frozen and type(twin["a"]) is ReadOnlyList
        with pytest.raises(TypeError, match="read-only"):
            twin["a"].append(0)


@pytest.mark.parametrize("change", [
    lambda d: d.__setitem__("x", 1), lambda d: d.pop("n"), lambda d: d.update(x=1),
    lambda d: d.setdefault("x", 1), lambda d: d.clear(), lambda d: d["a"].append(0),
    lambda d: d["a"].extend([0]), lambda d: d["a"].__setitem__(0, 0), lambda d: d["a"].sort(),
    lambda d: d["a"].__delitem__(0), lambda d: d.__delitem__("a")])
def test_frozen_json_refuses_every_change(change):
    frozen = frozen_json(_data())
    with pytest.raises(TypeError, match="read-only"):
        change(frozen)
    assert frozen == frozen_json(_data())


def test_frozen_json_into_named_containers():
    """A proxy and tuples (a result's fields): not a dict, not a list, still equal as data."""
    frozen = frozen_json({"a": [1, {"b": [2]}], "t": (3,)}, mapping=MappingProxyType,
                         sequence=tuple)
    assert type(frozen) is MappingProxyType and frozen["a"] == (1, {"b": (2,)})
    assert type(frozen["a"][1]) is MappingProxyType and frozen["t"] == (3,)
    with pytest.raises(TypeError):
        frozen["a"][1]["b"] = 0
    with pytest.raises(AttributeError):
        frozen["a"].append(0)
    assert frozen_json([1, [2]], sequence=tuple) == (1, (2,))
    assert frozen_json(7) == 7 and frozen_json("s") == "s"
