"""mkdocs hook: the CLI reference, generated from the argparse parsers at build time, and the
benchmark figures, served from benchmarks/results/.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces it
with one section per subcommand, in the order of :data:`mteb_stratified.cli.COMMANDS`, each
with the command's one-line summary and its ``--help`` text (``format_help()`` of the parser
that ``mteb-stratified`` itself builds).  So the page cannot drift from the code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
#: Figures that benchmarks write under benchmarks/results/, served at these docs paths (so the
#: docs show the file the benchmark wrote, never a copy that could go stale).
FIGURES = {
    "img/report_nfcorpus.png": "benchmarks/results/report_nfcorpus/report.png",
    "img/precision_sweep.png": "benchmarks/results/precision_sweep/precision_sweep.png",
}
ROOT = Path(__file__).resolve().parents[2]


def _parsers():
    """The top-level summary parser and ``(name, summary, parser)`` for every subcommand."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from mteb_stratified.cli import COMMANDS
    from mteb_stratified.cli.main import build_parser, summary_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = [(name, summary, action.choices[name]) for name, summary in COMMANDS.values()
                if name in action.choices]
    return summary_parser(), commands


def render() -> str:
    """The Markdown of the CLI reference (the top-level help, then every subcommand)."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps at $COLUMNS: a fixed width, a stable page
    try:
        top, commands = _parsers()
        parts = ["## mteb-stratified", "", "```text", top.format_help().rstrip(), "```", ""]
        for name, summary, parser in commands:
            parts += [f"## {name}", "", f"{summary[0].upper()}{summary[1:]}.", "",
                      "```text", parser.format_help().rstrip(), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def on_page_markdown(markdown, page, config, files):  # mkdocs hook
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown


def on_files(files, config):  # mkdocs hook
    from mkdocs.structure.files import File

    for uri, source in FIGURES.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / source)))
    return files
