"""The one number grammar (``io/numbers.py``): what it reads, what it refuses, and that every
reader and option uses it."""

from __future__ import annotations

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.io.numbers import (integer_value, json_number, parse_grade, parse_integer,
                                        parse_number)


@pytest.mark.parametrize("text, value", [("3", 3.0), ("-0.25", -0.25), ("1.5e-3", 1.5e-3),
                                         (".5", 0.5), ("5.", 5.0), ("+1E2", 100.0)])
def test_numbers_atof_reads_in_full(text, value):
    assert parse_number(text, "score") == value


@pytest.mark.parametrize("text, says", [
    ("0.4_5", "not a number"), ("1_000", "not a number"), ("\u0664", "not a number"),
    (" 1", "not a number"), ("0x10", "not a number"), ("nan", "NaN and infinity"),
    ("-Infinity", "NaN and infinity"), ("1e400", "overflows"), ("", "not a number")])
def test_numbers_python_only_spellings_are_refused(text, says):
    with pytest.raises(InputError, match=says) as err:
        parse_number(text, "expected", source="f.csv", line=7)
    assert str(err.value).startswith("f.csv:7: expected")


@pytest.mark.parametrize("text, value", [("2", 2), ("1.0", 1), ("-1", -1), ("1000", 1000)])
def test_grades(text, value):
    assert parse_grade(text) == value


@pytest.mark.parametrize("text, says", [("1e1", "not an integer"), ("1e400", "not an integer"),
                                        ("0.5", "not an integer"), ("1001", "beyond"),
                                        ("9" * 400, "beyond"), ("x", "not a number")])
def test_grades_refused(text, says):
    with pytest.raises(InputError, match=says):
        parse_grade(text, source="q", line=1)


def test_integers_are_bounded_before_they_are_converted():
    assert parse_integer("42", "n", 1, 100) == 42
    assert integer_value("9" * 5000) == 10**19  # no int() of 5,000 digits (Python refuses it)
    with pytest.raises(InputError, match=r"out of range \[1, 100\]"):
        parse_integer("0", "n", 1, 100)
    with pytest.raises(InputError, match=r"\(5000 digits\) is out of range"):
        parse_integer("9" * 5000, "n", 1, 100)
    for bad in ("1_0", "1.0", "", "+", "\u0661"):
        with pytest.raises(InputError, match="not an integer"):
            parse_integer(bad, "n", 1, 100)


@pytest.mark.parametrize("value, kind, ok", [
    (1, "grade", 1), (1.0, "grade", 1), (1e3, "grade", 1000), (0.25, "score", 0.25),
    (10**400, "score", None), (float("nan"), "score", None), (True, "score", None),
    ("1", "score", None), (0.5, "grade", None), (2000, "grade", None)])
def test_json_numbers(value, kind, ok):
    if ok is None:
        with pytest.raises(InputError):
            json_number(value, kind, "document 'd' for query 'q'", source="r.json")
    else:
        got = json_number(value, kind, "document 'd' for query 'q'")
        assert got == ok and type(got) is type(ok)


def test_environment_counts_use_the_grammar(monkeypatch):
    """``MTEB_STRATIFIED_MAX_QUERIES=-5`` silently dropped the last five queries
    (``sorted(qrels)[:-5]``); ``1_0`` was read as 10."""
    from mteb_stratified.adapters.mteb.tasks import MAX_QUERIES_ENV, _subset

    for bad in ("-5", "0", "1_0", "5x"):
        monkeypatch.setenv(MAX_QUERIES_ENV, bad)
        with pytest.raises(InputError, match=MAX_QUERIES_ENV):
            _subset(None, "test", "StratifiedNFCorpus")
