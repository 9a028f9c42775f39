"""JSON that is always valid JSON: non-finite floats become ``null``.

Python's ``json`` writes ``NaN`` and ``Infinity``, which are not JSON (``jq``, JavaScript's
``JSON.parse`` and most parsers refuse them). Every JSON the package prints or writes goes
through :func:`dumps_json`: NaN and ±inf (Python's or numpy's) become ``null``, numpy scalars
and arrays become plain numbers and lists, and ``allow_nan=False`` guarantees the rest.

Frozen results hold their JSON-like parts read-only: :func:`frozen_json` copies them into
:class:`ReadOnlyDict` / :class:`ReadOnlyList` (a dict and a list that refuse changes, so JSON,
equality, copies and pickles work as for plain ones), or into the containers a caller names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

__all__ = ["json_safe", "dumps_json", "frozen_json", "ReadOnlyDict", "ReadOnlyList"]


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


_SCALARS = (str, int, float, type(None))


def _read_only(*_args, **_kwargs):
    raise TypeError("read-only data: make a changed copy instead (a structure artifact: "
                    "StructureArtifact.with_bins)")


class ReadOnlyDict(dict):
    """A dict that refuses changes (still a dict: JSON, equality and copies work as for one)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self):
        return type(self), (dict(self),)


class ReadOnlyList(list):
    """A list that refuses changes (still a list)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self):
        return type(self), (list(self),)


def frozen_json(value, *, mapping=ReadOnlyDict, sequence=ReadOnlyList):
    """A read-only deep copy of JSON-like ``value`` (mappings, lists, tuples, sets, scalars).

    Each mapping becomes ``mapping(dict)`` (:class:`ReadOnlyDict`, or e.g.
    ``types.MappingProxyType``), each list ``sequence(iterable)`` (:class:`ReadOnlyList`, or
    ``tuple``); tuples stay tuples, sets become frozensets, and anything else is returned as
    it is.  Already frozen data is copied again (a frozen copy of a frozen copy is equal).
    """
    pairs = isinstance(mapping, type) and issubclass(mapping, dict)  # else it needs a dict

    def freeze(v):
        if isinstance(v, _SCALARS):
            return v
        if isinstance(v, dict) or isinstance(v, Mapping):
            items = ((k, freeze(x)) for k, x in v.items())
            return mapping(items) if pairs else mapping(dict(items))
        if isinstance(v, list):
            return sequence(freeze(x) for x in v)
        if isinstance(v, tuple):
            return tuple(freeze(x) for x in v)
        if isinstance(v, (set, frozenset)):
            return frozenset(v)
        return v

    return freeze(value)
