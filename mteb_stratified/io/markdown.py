"""A user string made safe in Markdown (the report, the leaderboard, coverage.md)."""

from __future__ import annotations

import html as _html
import re

__all__ = ["md_cell"]

#: Markdown's inline syntax: links and images (``[``, ``]``, ``!``), emphasis and code
#: (``*``, ``_``, ``~``, backticks), headings (``#``), the escape itself, and table cells (``|``).
_MD_SPECIAL = re.compile(r"([\\`*_~\[\]!#|])")


def md_cell(text) -> str:
    """A user string made safe in Markdown: its Markdown syntax backslash-escaped (no link, no
    image, no emphasis; ``|`` keeps a table's columns), HTML escaped (no tag, no script
    survives), one line."""
    text = _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\r", " ").replace("\n", " ")
    return _html.escape(text, quote=False)
