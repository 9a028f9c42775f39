"""The one number grammar of every reader: TREC runs, qrels, BEIR qrels, per-query CSVs,
JSON runs and qrels, and the command line's numeric options and environment variables.

Text numbers
------------
:func:`parse_number` reads :data:`NUMBER`,
``[+-]?(digits[.[digits]]|.digits)([eE][+-]?digits)?``: what C's ``atof`` (trec_eval's score
reader) reads in full, so trec_eval reads the same value.  Python-only spellings are refused:
``1_000``, ``0.4_5``, non-ASCII digits, surrounding blanks, ``nan``, ``inf``, ``infinity``,
hex.  The value must be finite: ``1e400`` overflows and is refused.

:func:`parse_grade` reads ``[+-]?digits(.0*)?``: an integer, optionally with a zero fraction
(``1.0`` is 1), within ``±MAX_GRADE``.  trec_eval reads grades with ``atol``, which stops at
the first other character, so an exponent or a fraction is refused rather than read
differently (``1e1`` is 1 to trec_eval).

:func:`parse_integer` reads :data:`INTEGER`, ``[+-]?digits``, within given bounds (the
command line's integer options and the environment variables that hold counts).

JSON numbers
------------
:func:`json_number` takes a value JSON already parsed: a score is any finite number (kept as
given), a grade any integral number within ``±MAX_GRADE`` however JSON spells it (``1``,
``1.0``, ``1e3`` are 1, 1 and 1000, returned as ints); ``true``/``false``, strings, ``NaN``,
``Infinity`` and integers beyond the float range are refused.

Every refusal is an :class:`~mteb_stratified.core.errors.InputError` with the source, the line
and the fix.
"""

from __future__ import annotations

import math
import re

from ..core.options import MAX_GRADE
from ..core.errors import InputError

__all__ = ["NUMBER", "INTEGER", "NUMBER_FIX", "parse_number", "parse_grade", "parse_integer",
           "integer_value", "shown_integer", "json_number"]

#: Scores (and the command line's numbers): ASCII only, what C's ``atof`` reads in full.
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: ASCII integers (the command line's integer options; the digits of a grade).
INTEGER = re.compile(r"[+-]?[0-9]+")
#: Grades in text files: an integer, optionally with a zero fraction (C's ``atol`` reads all of
#: it and so gets the same value).
GRADE = re.compile(INTEGER.pattern + r"(?:\.0*)?")
NUMBER_BYTES = re.compile(NUMBER.pattern.encode())
NUMBER_FIX = "write a plain decimal number such as 3, -0.25 or 1.5e-3 (ASCII digits only)"
_SHOWN = 40


def parse_number(text: str, what: str, *, source: str | None = None, line: int | None = None,
                 fix: str = NUMBER_FIX) -> float:
    """``text`` read by :data:`NUMBER` as a finite float, else an :class:`InputError` naming
    ``what`` (``score``, ``expected``, ...) at ``source:line``."""
    if NUMBER.fullmatch(text) is None:
        if text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):
            raise InputError(f"{what} is {text[:_SHOWN]}: NaN and infinity are not accepted",
                             source=source, line=line,
                             fix="replace it by a finite number (or drop the line)")
        raise InputError(f"{what} {text[:_SHOWN]!r} is not a number", source=source, line=line,
                         fix=fix)
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"{what} {text[:_SHOWN]!r} overflows", source=source, line=line,
                         fix="write numbers within ±1.7e308")
    return value


def parse_grade(text: str, *, source: str | None = None, line: int | None = None) -> int:
    """A text grade (module docstring) as an int within ``±MAX_GRADE``."""
    if GRADE.fullmatch(text) is None:
        if NUMBER.fullmatch(text) is None:  # not a number at all: say so
            parse_number(text, "relevance", source=source, line=line)
        raise InputError(f"relevance {text[:_SHOWN]!r} is not an integer", source=source,
                         line=line,
                         fix="write grades as plain integers such as 0, 1, 2 (no exponent, no "
                             "fraction: trec_eval would read only the digits before them)")
    digits = text.partition(".")[0]
    if len(digits.lstrip("+-0")) > len(str(MAX_GRADE)) or abs(int(digits)) > MAX_GRADE:
        raise InputError(f"relevance {text[:_SHOWN]!r} is beyond the bound ±{MAX_GRADE}",
                         source=source, line=line, fix=f"use integer grades within ±{MAX_GRADE}")
    return int(digits)


def parse_integer(text: str, what: str, low: int, high: int, *, source: str | None = None,
                  line: int | None = None, fix: str | None = None) -> int:
    """``text`` read by :data:`INTEGER` as an int in ``[low, high]``; the digits are counted
    before Python converts them, so a thousand-digit value costs nothing."""
    if INTEGER.fullmatch(text) is None:
        raise InputError(f"{what} {text[:_SHOWN]!r} is not an integer", source=source, line=line,
                         fix=fix or f"write an integer in [{low}, {high}] (ASCII digits only)")
    value = integer_value(text)
    if not low <= value <= high:
        raise InputError(f"{what} {shown_integer(text)} is out of range [{low}, {high}]",
                         source=source, line=line, fix=fix or f"give an integer in [{low}, {high}]")
    return value


def integer_value(text: str) -> int:
    """The value of an :data:`INTEGER` text, with anything beyond 19 digits read as ±10**19
    (beyond every bound here), so a thousand-digit text costs nothing and never overflows."""
    digits = text.lstrip("+-").lstrip("0")
    return int(text, 10) if len(digits) <= 19 else (-1 if text.startswith("-") else 1) * 10**19


def shown_integer(text: str) -> str:
    """An integer text as a message shows it: whole when short, else its head and length."""
    digits = text.lstrip("+-").lstrip("0")
    return text if len(text) <= _SHOWN else f"{text[:12]}... ({len(digits)} digits)"


def json_number(value, kind: str, where: str, *, source: str | None = None):
    """A JSON ``score`` (a finite number, kept as given) or ``grade`` (an integral number
    within ``±MAX_GRADE``, returned as an int); ``where`` names the value in the message."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{kind} of {where} is not a number: {str(value)[:_SHOWN]!r}",
                         source=source, fix=f"every {kind} must be a number")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        finite = False
    shown = f"{kind} {str(value)[:_SHOWN]} of {where}"
    if kind != "grade":
        if not finite:
            raise InputError(f"{shown} is not a finite number", source=source,
                             fix="replace NaN/inf or overflowing numbers by finite numbers")
        return value
    if not (finite and abs(value) <= MAX_GRADE):
        raise InputError(f"{shown} is not a finite grade within ±{MAX_GRADE}", source=source,
                         fix=f"use integer grades within ±{MAX_GRADE}")
    if value != int(value):
        raise InputError(f"{shown} is not an integer", source=source,
                         fix="use integer grades such as 0, 1, 2")
    return int(value)
