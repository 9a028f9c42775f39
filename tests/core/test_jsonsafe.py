"""JSON output is always valid JSON: NaN and ±inf become null."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mteb_stratified.core.jsonsafe import dumps_json, json_safe


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
