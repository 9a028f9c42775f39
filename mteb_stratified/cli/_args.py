"""Shared argparse pieces: range-checked number types and the help formatter.

A bad number is refused by argparse itself (``error: argument --depth: must be an integer >= 1,
got -3``, exit 2), before anything is loaded.
"""

from __future__ import annotations

import argparse
import math
import sys

# The numbers the options accept are the file readers' grammar: ASCII decimal only (no
# ``1_000``, no non-ASCII digits, no hex, no ``nan``/``inf``).
from ..io.numbers import INTEGER, NUMBER, integer_value, shown_integer
from ..io.outputs import dumps_json

__all__ = ["int_at_least", "float_in", "HelpFormatter", "add_llm_endpoint", "print_json",
           "MAX_INT_OPTION", "add_skip_unreadable"]

#: The bound of an integer option that names none of its own: every count, depth and size is
#: finite, so a typo of twenty digits is refused, never an overflow or an endless allocation.
MAX_INT_OPTION = 10**9


def int_at_least(low: int, high: int = MAX_INT_OPTION):
    """An argparse ``type``: an integer in ``[low, high]`` (the readers' integer grammar)."""
    def parse(text: str) -> int:
        text = text.strip()
        if not INTEGER.fullmatch(text):
            # the valid range too, unless the only bound is the typo guard
            bound = f" >= {low}" if high == MAX_INT_OPTION else f" in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be an integer{bound}, got {text[:40]!r}")
        value = integer_value(text)
        if not low <= value <= high:
            bound = (f">= {low}" if value < low and high == MAX_INT_OPTION
                     else f"in [{low}, {high}]")
            raise argparse.ArgumentTypeError(f"must be an integer {bound}, got "
                                             f"{shown_integer(text)}")
        return value

    parse.__name__ = "integer"
    return parse


def float_in(low: float, high: float | None = None, *, low_open: bool = False):
    """An argparse ``type``: a finite number in ``[low, high]`` (``(low, high]`` with
    ``low_open``)."""
    def parse(text: str) -> float:
        lo = "(" if low_open else "["
        bound = f"> {low:g}" if low_open and high is None else (
            f">= {low:g}" if high is None else f"in {lo}{low:g}, {high:g}]")
        if not NUMBER.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"must be a number {bound}, got {text!r}")
        value = float(text)
        bad_low = value <= low if low_open else value < low
        if not math.isfinite(value) or bad_low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be a number {bound}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks (examples, lists) and wraps option help."""


def add_llm_endpoint(group, *, cache_name: str, cache_folder: str = "OUT",
                     base_url_help: str | None = None) -> None:
    """The options of an OpenAI-compatible endpoint (``structure``, ``generate``, and the query
    entities of ``stratify``/``report``); the cache defaults to ``cache_folder/cache_name``."""
    group.add_argument("--base-url", default=None,
                       help=base_url_help or "OpenAI-compatible endpoint (default: "
                                             "$OPENAI_BASE_URL)")
    group.add_argument("--model", default=None, help="model name (default: $OPENAI_MODEL)")
    group.add_argument("--api-key", default=None,
                       help="API key (default: $OPENAI_API_KEY; any value, e.g. 'none', for "
                            "a local server)")
    group.add_argument("--timeout", type=float_in(0, low_open=True), default=60.0, metavar="S",
                       help="request timeout in seconds (default: 60)")
    group.add_argument("--max-retries", type=int_at_least(0, 100), default=5, metavar="N",
                       help="retries per request (default: 5)")
    group.add_argument("--max-answer-mib", type=int_at_least(1, 4096), default=8, metavar="MIB",
                       help="largest answer body read, in MiB; a larger one stops the run "
                            "(default: 8)")
    group.add_argument("--cache", default=None, metavar="FILE",
                       help=f"SQLite answer cache (default: {cache_folder}/{cache_name})")
    group.add_argument("--price-in", type=float_in(0), default=0.0, metavar="USD",
                       help="USD per 1M prompt tokens, for the cost line (default: 0)")
    group.add_argument("--price-out", type=float_in(0), default=0.0, metavar="USD",
                       help="USD per 1M completion tokens (default: 0)")


def _cache_folder(text: str) -> str:
    """An argparse ``type``: a folder or ``off``, never an empty string (which would be the
    working directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a folder, or off for no cache; got an empty "
                                         "string")
    return text


def add_embedding_cache(p) -> None:
    """``--embedding-cache``, for every command that embeds a corpus (``structure``,
    ``generate``): where the embedding cache is (mteb_stratified/io/embedding_cache.py)."""
    p.add_argument("--embedding-cache", default=None, metavar="DIR|off", type=_cache_folder,
                   help="the embedding cache folder: a corpus embedded once by a model in one "
                        "precision is reused by every later command (off: none, the corpus is "
                        "embedded again) (default: $MTEB_STRATIFIED_EMBEDDING_CACHE, else "
                        "~/.cache/mteb_stratified/embeddings)")


def add_skip_unreadable(p) -> None:
    """``--skip-unreadable``, for every command that walks results folders (``leaderboard``,
    ``stratify``, ``report``): what cannot be read is listed, exit 2, unless it is given."""
    p.add_argument("--skip-unreadable", action="store_true",
                   help="leave out, each named in a warning, the folders and files under a "
                        "results folder that cannot be read (permissions, a broken link) "
                        "(default: exit 2, listing each with its reason)")


def print_json(value) -> None:
    """Print ``value`` as one line of valid JSON (NaN/inf as null) for ``--json``."""
    sys.stdout.write(dumps_json(value) + "\n")
