"""A user string made safe in Markdown (the report, the leaderboard, coverage.md), or in a
terminal (:func:`term_cell`: the same text printed, with no Markdown escapes)."""

from __future__ import annotations

import html as _html
import re

__all__ = ["md_cell", "term_cell"]

#: Markdown's inline syntax: links and images (``[``, ``]``, ``!``), emphasis and code
#: (``*``, ``_``, ``~``, backticks), headings (``#``), the escape itself, and table cells (``|``).
_MD_SPECIAL = re.compile(r"([\\`*_~\[\]!#|])")


def md_cell(text) -> str:
    """A user string made safe in Markdown: its Markdown syntax backslash-escaped (no link, no
    image, no emphasis; ``|`` keeps a table's columns), HTML escaped (no tag, no script
    survives), one line."""
    text = _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\r", " ").replace("\n", " ")
    return _html.escape(text, quote=False)


def term_cell(text) -> str:
    """A user string made safe to print in a terminal: one line, every character that is not
    printable (escape sequences, carriage returns, bidi controls) shown as its Python escape
    (``\\x1b``), so a name from a data file can neither move the cursor nor recolour the
    screen.  No Markdown escapes: a person reads ``ndcg_at_10``, not ``ndcg\\_at\\_10``."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))
