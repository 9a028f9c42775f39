"""JSON that is always valid JSON: non-finite floats become ``null``.

Python's ``json`` writes ``NaN`` and ``Infinity``, which are not JSON (``jq``, JavaScript's
``JSON.parse`` and most parsers refuse them). Every JSON the package prints or writes goes
through :func:`dumps_json`: NaN and ±inf (Python's or numpy's) become ``null``, numpy scalars
and arrays become plain numbers and lists, and ``allow_nan=False`` guarantees the rest.
"""

from __future__ import annotations

import json
import math

__all__ = ["json_safe", "dumps_json"]


def json_safe(value):
    """``value`` with non-finite floats as None and numpy types as plain Python ones."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if tolist is not None:
        return json_safe(tolist())
    return value


def dumps_json(value, **kwargs) -> str:
    """``json.dumps`` of :func:`json_safe` ``(value)``; never emits NaN or Infinity."""
    return json.dumps(json_safe(value), allow_nan=False, **kwargs)
