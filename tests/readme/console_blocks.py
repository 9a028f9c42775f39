"""The docs' console blocks, and whether a command still prints what a block shows.

A console block (a fenced ``console`` block in the README or a page of ``docs/``) holds
``$ command`` lines, each followed by the output the docs claim it prints.  A test that runs a
command (the quick start and the small-subset MTEB pipeline, in a fresh virtual environment)
compares that output with every block that shows the same command: see
:func:`compare_output` for the rules.  A block whose command the test does not run is not
checked; the full-split figures are therefore ``text`` blocks that name their command and date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

#: A number as printed: optional sign, digits, optional decimals.
_NUMBER = re.compile(r"([-+]?\d+(?:\.\d+)?)")
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")


@dataclass(frozen=True)
class Shown:
    """One ``$ command`` of a console block and the output lines shown under it."""

    source: str       # file name, relative to the repository
    line: int         # 1-based line of the ``$`` line
    command: str      # as written, continuation lines joined with a newline
    output: tuple     # the lines shown under it, up to the next ``$`` line or the fence

    @property
    def key(self) -> str:
        return command_key(self.command)


def command_key(command: str) -> str:
    """What makes two commands the same: whitespace and line continuations collapsed, leading
    ``NAME=value`` environment assignments dropped (the test sets the subset itself)."""
    flat = " ".join(command.replace("\\\n", " ").split())
    return _ENV.sub("", flat)


def console_blocks(text: str, source: str) -> list[Shown]:
    """Every ``$ command`` of the ``console`` blocks of ``text`` with the lines under it."""
    out: list[Shown] = []
    lines = text.splitlines()
    i, fence = 0, None
    while i < len(lines):
        line = lines[i]
        if fence is None:
            m = re.match(r"^```(\w+)?\s*$", line)
            fence = (m.group(1) or "") if m else None
            i += 1
            continue
        if line.startswith("```"):
            fence = None
            i += 1
            continue
        if fence != "console" or not line.startswith("$ "):
            i += 1
            continue
        start, cmd = i + 1, line[2:]
        while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd += "\n" + lines[i]
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith(("$ ", "```")):
            shown.append(lines[i])
            i += 1
        while shown and not shown[-1].strip():
            shown.pop()
        out.append(Shown(source, start, cmd.strip(), tuple(shown)))
    return out


def docs_console_blocks(repo: Path) -> list[Shown]:
    """The console blocks of README.md and of every page under docs/."""
    files = [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]
    return [s for f in files if f.exists()
            for s in console_blocks(f.read_text(encoding="utf-8"), str(f.relative_to(repo)))]


def _same_number(shown: str, actual: str) -> bool:
    """``actual`` printed with ``shown``'s decimals is ``shown`` (either rounding rule)."""
    try:
        s, a = Decimal(shown), Decimal(actual)
    except InvalidOperation:
        return shown == actual
    quantum = Decimal(1).scaleb(s.as_tuple().exponent)
    return any(a.quantize(quantum, rounding=r) == s for r in (ROUND_HALF_EVEN, ROUND_HALF_UP))


def _line_mismatch(shown: str, actual: str) -> str | None:
    """Why the printed line ``actual`` is not the shown ``shown``, or None: the text between
    numbers equal up to runs of spaces (column alignment), each number equal to the shown one
    at the shown one's digits."""
    ps, pa = _NUMBER.split(shown), _NUMBER.split(actual)
    if len(ps) != len(pa):
        return "different text"
    for k, (s, a) in enumerate(zip(ps, pa)):
        if k % 2:
            if not _same_number(s, a):
                return f"{s} shown, {a} printed"
        elif " ".join(s.split()) != " ".join(a.split()) and not (
                k in (0, len(ps) - 1) and s.strip() == a.strip()):
            return "different text"
    return None


def compare_output(shown: Shown, printed: str) -> str | None:
    """None when ``printed`` (what the command wrote, stdout and stderr in order) shows what
    the block shows; else a message that names the file, the line and the difference.

    Rules: trailing blank lines and trailing spaces are ignored; a shown line ``...`` stands for
    any number of printed lines; a number must equal the printed one rounded to the shown
    digits (0.3064 matches a printed 0.30644, not 0.3065); all other text must be the same,
    up to runs of spaces.  Printed lines with a carriage return (progress bars) are left out.
    """
    got = [ln.rstrip() for ln in printed.split("\n") if "\r" not in ln]
    while got and not got[-1]:
        got.pop()
    want = [ln.rstrip() for ln in shown.output]
    where = f"{shown.source}:{shown.line}"
    j = 0
    for k, line in enumerate(want):
        if line.strip() == "...":
            nxt = want[k + 1] if k + 1 < len(want) else None
            if nxt is None:
                return None
            while j < len(got) and _line_mismatch(nxt, got[j]) is not None:
                j += 1
            continue
        if j >= len(got):
            return f"{where}: `{shown.key}` printed no line for the shown line {k + 1}: {line!r}"
        why = _line_mismatch(line, got[j])
        if why is not None:
            return (f"{where}: `{shown.key}`, shown line {k + 1} ({why}):\n"
                    f"  shown:   {line}\n  printed: {got[j]}")
        j += 1
    if j < len(got):
        return (f"{where}: `{shown.key}` printed {len(got) - j} more line(s) than shown, "
                f"from: {got[j]!r}")
    return None
