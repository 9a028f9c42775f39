"""One spec per measure family, down to C: the codes Python hands to ``_walk.c`` are the values
of the C enums of the same names (parsed from the source), the ``WalkArgs`` structure lists the
fields of the C ``walk_args`` struct in the same order with the same types, each checker finds
a mismatch planted in a copy of the source, and the numpy path stands in when the compiled walk
is missing."""

from __future__ import annotations

import ctypes
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from mteb_stratified.core import InputError, evaluate_arrays, from_matrices
from mteb_stratified.core.ranking import walk
from mteb_stratified.core.ranking.kernels import (GAIN_KERNEL, deterministic_contributions,
                                                  discount,
                                          expected_contributions)
from mteb_stratified.core.ranking.measures import FAMILIES, WALK_KINDS, WalkKind, walk_code
from mteb_stratified.core.ranking.results import ARRANGEMENT_KEYS
from mteb_stratified.core.ranking.ties import tie_groups

SOURCE = Path(walk.__file__).with_name("_walk.c").read_text(encoding="utf-8")
# results.py's arrangement keys -> the enumerators of enum walk_arrangement
ARRANGEMENT_NAMES = {"expected": "E", "min": "MIN", "max": "MAX", "oblivious": "OBL"}
I64 = ctypes.c_int64.__name__  # c_long on LP64 platforms
C_SCALARS = {"int64_t": ctypes.c_int64, "int": ctypes.c_int, "double": ctypes.c_double}


def _without_comments(source: str) -> str:
    return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", source, flags=re.S))


def c_enums(source: str) -> dict[str, dict[str, int]]:
    """Every named enum of a C source: ``{enum name: {enumerator: value}}`` (an enumerator
    without ``= value`` is the previous value + 1, as in C)."""
    out: dict[str, dict[str, int]] = {}
    for name, body in re.findall(r"enum\s+(\w+)\s*\{([^{}]*)\}", _without_comments(source)):
        members, value = {}, -1
        for item in filter(None, (part.strip() for part in body.split(","))):
            key, _, text = (s.strip() for s in item.partition("="))
            value = int(text, 0) if text else value + 1
            members[key] = value
        out[name] = members
    return out


def c_struct(source: str, name: str) -> list[tuple[str, object]]:
    """The fields of ``typedef struct { ... } name;``: (field, ctypes type), pointers as
    ``c_void_p``; a declaration it cannot read gives the type ``None``."""
    match = re.search(r"typedef\s+struct\s*\{([^{}]*)\}\s*" + name + r"\s*;",
                      _without_comments(source))
    if match is None:
        return []
    fields = []
    for decl in filter(None, (d.strip() for d in match.group(1).split(";"))):
        parts = re.fullmatch(r"(?:const\s+)?(\w+)\s*(\*?)\s*(\w+)", " ".join(decl.split()))
        if parts is None:
            fields.append((decl, None))
            continue
        base, star, field = parts.groups()
        fields.append((field, ctypes.c_void_p if star else C_SCALARS.get(base)))
    return fields


def code_mismatches(source: str) -> list[str]:
    """Every code Python hands to the C walk that differs from the C enumerator of its name:
    the families' kinds, the normalisations, the grade types and the arrangements' order."""
    enums = c_enums(source)
    wanted = {"walk_kind": {k.name: k.code for f in FAMILIES.values() for k in f.walk_kinds()},
              "walk_norm": {"NORM_" + key.upper(): code for key, code in walk.NORMS.items()},
              "grade_type": {f"G_{dt.kind.upper()}{dt.itemsize * 8}": code
                             for dt, code in walk._GRADE_TYPES.items()},
              "walk_arrangement": {ARRANGEMENT_NAMES[key]: i
                                   for i, key in enumerate(ARRANGEMENT_KEYS)}}
    out = []
    for enum, codes in wanted.items():
        members = enums.get(enum)
        if members is None:
            out.append(f"enum {enum} not found in _walk.c")
            continue
        for name, code in codes.items():
            if members.get(name) != code:
                out.append(f"{enum}: Python's {name} = {code}, C's {members.get(name)}")
    return out


def struct_mismatches(source: str) -> list[str]:
    """Where ``WalkArgs._fields_`` and C's ``walk_args`` differ: names, order, types, count."""
    ours = [(field, ctype) for field, ctype in walk.WalkArgs._fields_]
    theirs = c_struct(source, "walk_args")
    out = [f"field {i}: Python's {a[0]} ({a[1].__name__}), C's {b[0]} "
           f"({getattr(b[1], '__name__', 'unreadable')})"
           for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    if len(ours) != len(theirs):
        out.append(f"Python has {len(ours)} fields, C {len(theirs)}")
    return out


def test_every_code_equals_the_c_enumerator_of_its_name():
    assert code_mismatches(SOURCE) == []
    # what was compared: every family's kind, the four norms, the seven grade types
    assert {k.name for f in FAMILIES.values() for k in f.walk_kinds()} == set(WALK_KINDS)
    assert set(c_enums(SOURCE)["walk_kind"]) == set(WALK_KINDS)


@pytest.mark.parametrize("old, new, expected", [
    ("HITS = 2", "HITS = 7", "walk_kind: Python's HITS = 2, C's 7"),
    ("FIRST = 5", "SUCCESS = 5", "walk_kind: Python's FIRST = 5, C's None"),
    ("NORM_K = 2, NORM_REL = 3", "NORM_REL = 2, NORM_K = 3", "walk_norm: Python's NORM_K = 2"),
    ("G_I8 = 2", "G_I8 = 9", "grade_type: Python's G_I8 = 2, C's 9"),
    ("MIN = 1, MAX = 2", "MAX = 1, MIN = 2", "walk_arrangement: Python's MIN = 1, C's 2"),
    ("enum walk_kind {", "enum kinds {", "enum walk_kind not found"),
])
def test_a_planted_code_mismatch_is_found(old, new, expected):
    assert SOURCE.count(old) == 1
    found = code_mismatches(SOURCE.replace(old, new))
    assert any(line.startswith(expected) for line in found), found


def test_the_struct_matches_the_c_definition():
    assert struct_mismatches(SOURCE) == []
    fields = c_struct(SOURCE, "walk_args")
    assert len(fields) == len(walk.WalkArgs._fields_) > 30
    assert ctypes.sizeof(walk.WalkArgs) == 8 * len(fields)  # all 8-byte fields: no padding


@pytest.mark.parametrize("old, new, expected", [
    ("    int64_t nf;", "    int64_t nfam;",
     f"field 15: Python's nf ({I64}), C's nfam ({I64})"),
    ("    int64_t depth;", "    int depth;",
     f"field 12: Python's depth ({I64}), C's depth (c_int)"),
    ("    double *nrel;", "    double nrel;", "field 37: Python's nrel (c_void_p), C's nrel"),
    ("    const int64_t *mcut;\n", "", "field 30: Python's mcut"),
    ("    int64_t q;                /* rows */\n    int64_t n;",
     "    int64_t n;\n    int64_t q;", "field 0: Python's q"),
    ("    uint8_t *trunc;", "    uint8_t *trunc;\n    double *extra;",
     "Python has 38 fields, C 39"),
])
def test_a_planted_struct_mismatch_is_found(old, new, expected):
    assert SOURCE.count(old) == 1
    found = struct_mismatches(SOURCE.replace(old, new))
    assert any(line.startswith(expected) for line in found), found


def test_families_that_share_a_kernel_share_its_codes_and_kernels_differ():
    by_kernel: dict[str, set] = {}
    for family in FAMILIES.values():
        by_kernel.setdefault(family.kernel, set()).add(family.walk_kinds())
    assert all(len(kinds) == 1 for kinds in by_kernel.values()), by_kernel
    codes = [k.code for kinds in by_kernel.values() for k in next(iter(kinds))]
    assert len(codes) == len(set(codes)) == len(WALK_KINDS)


def test_walk_code_reads_the_family_spec():
    nDCG = FAMILIES["nDCG"]
    for gain in nDCG.params["dcg"]:
        assert walk_code(GAIN_KERNEL, gain) == nDCG.walk[gain].code
    assert walk_code("hits", 2) == FAMILIES["P"].walk.code == FAMILIES["R"].walk.code
    assert walk_code("first", 1) == WALK_KINDS["FIRST"].code
    assert isinstance(FAMILIES["AP"].walk, WalkKind)
    with pytest.raises(KeyError):
        walk_code(GAIN_KERNEL, "exp")


def test_every_family_kernel_is_computed_by_the_numpy_kernels():
    grades = np.array([[2.0, 0.0, 1.0, 1.0, -np.inf]])
    groups = tie_groups(np.array([[3.0, 2.0, 2.0, 1.0, -np.inf]]))
    for family in FAMILIES.values():
        variants = family.params.get(family.variant) or (1,)
        keys = {(family.kernel, v) for v in variants}
        assert keys <= set(deterministic_contributions(grades, keys, discount(5)))
        assert keys <= set(expected_contributions(grades, groups, keys, discount(5)))


def _arrays():
    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=(20, 15)), 1)
    grades = rng.integers(0, 3, size=(20, 15))
    return from_matrices(scores, grades)


MEASURES = ["nDCG@5", "nDCG(dcg=exp-log2)@10", "RR@10", "R@5", "P@3", "AP", "Success@2"]


def test_without_the_compiled_walk_auto_is_the_numpy_path(monkeypatch):
    arrays = _arrays()
    numpy_path = evaluate_arrays(arrays, MEASURES, kernel="numpy")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setattr(walk, "_compiled", None)
    assert not walk.compiled_available()
    auto = evaluate_arrays(arrays, MEASURES, kernel="auto")
    for m in numpy_path:
        for key in ARRANGEMENT_KEYS:
            assert np.array_equal(auto[m].values[key], numpy_path[m].values[key]), (m, key)
    with pytest.raises(InputError, match="compiled walk is not built"):
        evaluate_arrays(arrays, MEASURES, kernel="compiled")


def test_a_library_without_the_walk_is_not_loaded(monkeypatch):
    other = importlib.util.find_spec("_json")  # an extension module without evaluate_rows
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: other)
    assert walk._open_compiled()[0] is None


def test_a_build_of_another_struct_is_not_called(monkeypatch):
    """A stale build (``walk_args_size()`` differs from ``sizeof(WalkArgs)``) is not called:
    the numpy path stands in."""
    class Longer(walk.WalkArgs):
        _fields_ = [("extra", ctypes.c_int64)]

    fn, why = walk._open_compiled()
    assert fn is not None and why is None
    monkeypatch.setattr(walk, "WalkArgs", Longer)
    assert walk._open_compiled() == (None, "stale")


def test_a_build_with_the_same_size_but_another_field_order_is_not_called(monkeypatch):
    """Two 8-byte fields swapped keep the size: the layout string tells the builds apart, and
    kernel='compiled' then says the build is stale."""
    fields = list(walk.WalkArgs._fields_)
    monkeypatch.setattr(walk, "_LAYOUT", ",".join(
        name for name, _ in [fields[1], fields[0]] + fields[2:]))
    assert walk._open_compiled() == (None, "stale")
    monkeypatch.setattr(walk, "_compiled", None)
    with pytest.raises(InputError, match="stale build"):
        evaluate_arrays(_arrays(), MEASURES, kernel="compiled")


def test_the_layout_string_lists_the_struct_fields():
    """``walk_layout()``'s literal in _walk.c is the struct's field list (so the loader's check
    compares what the struct really is)."""
    import re
    literal = re.search(r"WALK_LAYOUT\[\] =\s*((?:\"[^\"]*\"\s*)+);", SOURCE).group(1)
    text = "".join(re.findall(r'"([^"]*)"', literal))
    assert text.split(",") == [name for name, _ in c_struct(SOURCE, "walk_args")]


def test_the_compiled_path_through_the_struct_matches_numpy():
    arrays = _arrays()
    a = evaluate_arrays(arrays, MEASURES, kernel="compiled")
    b = evaluate_arrays(arrays, MEASURES, kernel="numpy")
    for m in a:
        assert np.array_equal(a[m].values["oblivious"], b[m].values["oblivious"]), m
        for key in ("expected", "min", "max"):
            np.testing.assert_allclose(a[m].values[key], b[m].values[key], rtol=0, atol=1e-12)
