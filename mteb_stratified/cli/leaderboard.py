"""``mteb-stratified leaderboard RESULTS_DIR``: models × tasks with tie-aware columns.

Prints the table and writes ``leaderboard.csv`` and ``leaderboard.md``; the logic lives in
:mod:`mteb_stratified.adapters.mteb.results`.  Also ``python -m mteb_stratified.cli.leaderboard``.
"""

from __future__ import annotations

import argparse
import sys


def _configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("results_dir", metavar="RESULTS_DIR",
                   help="folder written by `mteb run --output-folder` (holds results/<model>/...)")
    p.add_argument("-o", "--output", metavar="DIR", default=None,
                   help="where to write leaderboard.csv and leaderboard.md (default: RESULTS_DIR)")
    p.add_argument("-t", "--tasks", nargs="+", metavar="TASK", default=None,
                   help="only these tasks (default: every task with tie-aware columns)")
    p.add_argument("--digits", type=int, default=4, help="decimals in the Markdown table")
    p.set_defaults(func=run)
    return p


def add_parser(subparsers) -> argparse.ArgumentParser:
    return _configure(subparsers.add_parser(
        "leaderboard", help="tie-aware leaderboard (CSV + Markdown) from an MTEB results folder",
        description="Models × tasks: main score expected, range, bias, share of queries with "
                    "ties (and stratified estimates when present), sorted by expected score; "
                    "says when the ranking by the oblivious (stock MTEB) score would differ."))


def run(args: argparse.Namespace) -> int:
    from ..adapters.mteb.results import export_leaderboard

    out = export_leaderboard(args.results_dir, args.output, tasks=args.tasks, digits=args.digits)
    print(out["markdown"], end="")
    print(f"\nwrote {out['csv']} and {out['md']}")
    return 0


def main(argv=None) -> int:
    from ..core.errors import InputError

    parser = _configure(argparse.ArgumentParser(prog="python -m mteb_stratified.cli.leaderboard"))
    args = parser.parse_args(argv)
    try:
        return run(args)
    except InputError as exc:
        print(f"leaderboard: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
