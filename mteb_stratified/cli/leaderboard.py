"""``mteb-stratified leaderboard RESULTS_DIR``: models × tasks with tie-aware columns.

Prints the table and writes ``leaderboard.csv`` and ``leaderboard.md``; the logic lives in
:mod:`mteb_stratified.adapters.mteb.results`.  Also ``python -m mteb_stratified.cli.leaderboard``.
"""

from __future__ import annotations

import argparse
import sys

from . import summary
from ._args import add_skip_unreadable


def _configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from ..adapters.mteb.results import COLUMNS, DEFAULT_COLUMNS

    p.add_argument("results_dir", metavar="RESULTS_DIR",
                   help="the --output-folder of mteb run (its results/<model>/<revision>/ "
                        "files are read; prediction folders inside it are left alone)")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="folder for leaderboard.csv and leaderboard.md (default: RESULTS_DIR)")
    p.add_argument("--output", dest="out", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("-t", "--tasks", nargs="+", metavar="TASK", default=None,
                   help="only these tasks (default: every task with tie-aware columns)")
    p.add_argument("--columns", nargs="+", metavar="COLUMN", default=None,
                   choices=["all", *COLUMNS],
                   help="columns per task in the printed table and leaderboard.md: "
                        f"all, {', '.join(COLUMNS)} (default: {' '.join(DEFAULT_COLUMNS)}; "
                        "leaderboard.csv always holds every column)")
    p.add_argument("--digits", type=int, default=4, choices=range(0, 13), metavar="N",
                   help="decimals in the table (default: 4)")
    p.add_argument("--require-same-queries", action="store_true",
                   help="exit 2 when the results were evaluated on different query sets "
                        "(default: one table per query set, each ranked on its own)")
    add_skip_unreadable(p)
    p.set_defaults(func=run)
    return p


def add_parser(subparsers) -> argparse.ArgumentParser:
    return _configure(subparsers.add_parser(
        "leaderboard", help=summary(__name__),
        description="Models x tasks: the main metric's expected value, range and bias, and the "
                    "corpus-weighted stratified estimate when the results carry strata; sorted "
                    "by expected score; says when the ranking by the oblivious (stock MTEB) "
                    "score would differ. Results of different query sets (a quick-run subset "
                    "next to a full run) are never ranked together: one table per query set. Needs the [mteb] extra (pandas)."))


def run(args: argparse.Namespace) -> int:
    from ..adapters.mteb.results import export_leaderboard
    from ..io.outputs import output_dir

    if args.out is not None:
        output_dir(args.out, option="-o/--out")  # a file there fails before the scan
    out = export_leaderboard(args.results_dir, args.out, tasks=args.tasks, digits=args.digits,
                             columns=args.columns,
                             require_same_queries=args.require_same_queries,
                             skip_unreadable=args.skip_unreadable)
    print(out["text"], end="")
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
