"""``mteb-stratified``: a thin front end. Each subcommand lives in its own module.

Bad input (:class:`InputError`, a missing file, a missing optional extra) and a server that did
not answer (:class:`EndpointError`: down, overloaded, refusing) print one clear message and
exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..core.errors import EndpointError, InputError

#: Subcommand modules; each defines ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS = ("evaluate", "demo", "precision_sweep", "mteb_wrapper", "leaderboard",
               "structure", "stratify", "report", "generate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mteb-stratified",
        description="Tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"mteb-stratified {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{name}":
                continue  # subcommand not shipped in this build
            raise
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
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


if __name__ == "__main__":
    sys.exit(main())
