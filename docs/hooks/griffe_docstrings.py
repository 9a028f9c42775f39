"""griffe extension: the project's docstrings rendered by mkdocstrings as the reader expects.

The docstrings are numpy-style (``Parameters`` / ``Attributes`` / ``Returns`` under a dashed
rule), with three habits mkdocstrings' numpy parser does not read; each is rewritten before
parsing, the source is left alone:

* Sphinx roles (``:func:`~pkg.mod.name```, ``:class:``, ``:mod:``, ``:data:``, ``:meth:``,
  ``:attr:``, ``:exc:``) become code spans (``name``; the ``~`` form keeps the last part);
* reST simple tables (columns under ``====  ====`` rules) become Markdown tables;
* a section item written ``name : what it is`` on one line becomes ``name`` with its
  description indented under it (numpy's ``name : type`` would show the text as a type).

mkdocs.yml loads it: ``plugins.mkdocstrings.handlers.python.options.extensions``.
"""

from __future__ import annotations

import re

from griffe import Extension

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(~?)([^`<]+?)"
                   r"(?:\s*<[^>]+>)?`")
_RULE = re.compile(r"^(\s*)(=+)((?:\s+=+)+)\s*$")
_SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields")
_ITEM = re.compile(r"^(\s*)([A-Za-z_*][\w*]*(?:\s*,\s*[A-Za-z_*][\w*]*)*) : (\S.*)$")


def sphinx_roles(text: str) -> str:
    """``:func:`~a.b.c``` → ```c```, ``:class:`a.B``` → ```a.B```."""
    return _ROLE.sub(lambda m: "`" + (m.group(2).rsplit(".", 1)[-1] if m.group(1)
                                      else m.group(2)) + "`", text)


def _columns(rule: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"=+", rule)]


def simple_tables(text: str) -> str:
    """reST simple tables (top rule, header, rule, rows, bottom rule) as Markdown tables; a
    row whose first cell is empty continues the row above."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _RULE.match(lines[i])
        rules = [j for j in range(i, len(lines)) if _RULE.match(lines[j])][:3] if m else []
        if len(rules) < 3 or rules[0] != i or any(not lines[j].strip()
                                                   for j in range(i, rules[2])):
            out.append(lines[i])
            i += 1
            continue
        indent = m.group(1)
        cols = _columns(lines[i])

        def cells(line: str) -> list[str]:
            bounds = [(a, cols[k + 1][0] if k + 1 < len(cols) else len(line))
                      for k, (a, _) in enumerate(cols)]
            return [line[a:b].strip() for a, b in bounds]

        header = [" ".join(c) for c in zip(*(cells(ln) for ln in lines[i + 1:rules[1]]))]
        rows: list[list[str]] = []
        for ln in lines[rules[1] + 1:rules[2]]:
            row = cells(ln)
            if rows and not row[0]:
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], row)]
            else:
                rows.append(row)
        out.append(indent + "| " + " | ".join(header) + " |")
        out.append(indent + "|" + "---|" * len(header))
        out += [indent + "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"
                for r in rows]
        i = rules[2] + 1
    return "\n".join(out)


def section_items(text: str) -> str:
    """In numpy sections, ``name : description`` → ``name`` + the description indented."""
    lines = text.split("\n")
    out, section = [], None
    for k, line in enumerate(lines):
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if line.strip() in _SECTIONS and set(nxt.strip()) == {"-"}:
            section = (len(line) - len(line.lstrip()))
            out.append(line)
            continue
        if section is not None and line.strip() and len(line) - len(line.lstrip()) < section:
            section = None
        m = _ITEM.match(line) if section is not None else None
        if m and len(m.group(1)) == section:
            out += [m.group(1) + m.group(2), m.group(1) + "    " + m.group(3)]
        else:
            out.append(line)
    return "\n".join(out)


def rewrite(text: str) -> str:
    """The three rewrites of the module docstring, in order."""
    return section_items(simple_tables(sphinx_roles(text)))


class ProjectDocstrings(Extension):
    """Rewrite every docstring before mkdocstrings parses it (:func:`rewrite`)."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
