"""``mteb-stratified``: a thin front end. Each subcommand lives in its own module; a command
imports only its own module (a fast start), ``--help`` all of them.

Bad input (:class:`InputError`, a missing file, a missing optional extra) and a server that did
not answer (:class:`EndpointError`: down, overloaded, refusing) print one clear message and
exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from ..core.errors import EndpointError, InputError, InputWarning

#: Subcommand modules; each defines ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS = ("evaluate", "demo", "precision_sweep", "mteb_wrapper", "leaderboard",
               "structure", "stratify", "report", "generate")
#: Commands whose module is not the command's name with ``_`` for ``-``.
_MODULE_OF = {"mteb": "mteb_wrapper"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``command`` when that names one: a command
    then starts without importing the other subcommands' modules."""
    parser = argparse.ArgumentParser(
        prog="mteb-stratified",
        description="Tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"mteb-stratified {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
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
