"""``mteb-stratified``: a thin front end. Each subcommand lives in its own module; a command
imports only its own module (a fast start), and ``--help``, ``--version`` and a usage error
without a command import none (the summaries come from :data:`~.COMMANDS`).

Bad input (:class:`InputError`, a missing file, a missing optional extra) and a server that did
not answer (:class:`EndpointError`: down, overloaded, refusing) print one clear message and
exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import warnings

from ..core.errors import EndpointError, InputError, InputWarning
from . import COMMANDS

#: Subcommand modules; each defines ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS = ("evaluate", "demo", "precision_sweep", "mteb_wrapper", "leaderboard",
               "structure", "stratify", "report", "generate")
#: Commands whose module is not the command's name with ``_`` for ``-``.
_MODULE_OF = {"mteb": "mteb_wrapper"}


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(
        prog="mteb-stratified",
        description="Tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"mteb-stratified {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``command`` when that names one: a command
    then starts without importing the other subcommands' modules."""
    parser, sub = _top_parser()
    module = None if command is None else _MODULE_OF.get(command, command.replace("-", "_"))
    only = module in SUBCOMMANDS
    for name in (module,) if only else SUBCOMMANDS:
        try:
            loaded = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{name}":
                continue  # subcommand not shipped in this build
            raise
        loaded.add_parser(sub)
    if only and command not in sub.choices:  # e.g. precision_sweep: the usage error lists all
        return build_parser()
    return parser


def summary_parser() -> argparse.ArgumentParser:
    """The top-level parser with each subcommand's name and summary only: what ``--help``,
    ``--version`` and a usage error without a command need, with no subcommand module imported
    (``format_help`` is :func:`build_parser`'s, tests/cli/test_main_imports.py checks it)."""
    parser, sub = _top_parser()
    for name in SUBCOMMANDS:
        if importlib.util.find_spec(f"{__package__}.{name}") is not None:  # shipped in this build
            sub.add_parser(COMMANDS[name][0], help=COMMANDS[name][1])
    return parser


def _parser_for(argv: list) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: its command's alone, every command's when a command comes
    later (``--x evaluate``: the usage error is the full parser's), else the summaries."""
    names = {command for command, _ in COMMANDS.values()}
    if argv and argv[0] in names:
        return build_parser(argv[0])
    if any(arg in names for arg in argv):
        return build_parser()
    return summary_parser()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser_for(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():  # restored on return: nothing changes for the caller
            warnings.simplefilter("always", InputWarning)  # every file's warning, every call
            warnings.showwarning = _show_input_warnings(args.command, warnings.showwarning)
            return int(args.func(args) or 0)
    except (InputError, EndpointError) as exc:  # bad input / a server that did not answer
        print(f"mteb-stratified {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if "pip install" not in str(exc):
            raise  # a real bug, not a missing optional extra
        print(f"mteb-stratified {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0


def _show_input_warnings(command: str, show):
    """A ``warnings.showwarning`` that prints an :class:`InputWarning` as one plain line (as an
    error is printed) and hands every other warning to ``show``."""
    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, InputWarning):
            print(f"mteb-stratified {command}: warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)
    return showwarning


if __name__ == "__main__":
    sys.exit(main())
