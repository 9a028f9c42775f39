"""``mteb-stratified evaluate``: tie-aware evaluation of a run file against qrels."""

from __future__ import annotations

import argparse

from ..core.options import DEFAULT_MEASURES, IDEALS, MAX_GRADE, OBLIVIOUS_ORDERS
from . import summary
from ._args import int_at_least, print_json


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "evaluate", help=summary(__name__),
        description="Expected, min, max, oblivious, range and bias of each measure over all "
                    "orders of tied scores. Files: TREC run / TREC qrels / BEIR qrels TSV / "
                    "JSON dicts, optionally gzip-compressed.")
    p.add_argument("--qrels", required=True,
                   help="qrels file (TREC, BEIR TSV or JSON), or NAME:SPLIT for a bundled "
                        "dataset's (nfcorpus:test), from any folder")
    p.add_argument("--run", required=True, help="run file (TREC or JSON)")
    p.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES), metavar="MEASURE",
                   help="ir_measures-style names, e.g. nDCG@10 RR@10 R@100 P(rel=2)@10 "
                        f"(default: {' '.join(DEFAULT_MEASURES)})")
    p.add_argument("--per-query", action="store_true", help="also report every query")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--relevance-level", type=int_at_least(-MAX_GRADE, MAX_GRADE), default=1,
                   metavar="N", help="minimum grade of a relevant document (trec_eval -l), "
                                     f"|N| <= {MAX_GRADE} (default: 1)")
    p.add_argument("--oblivious", choices=OBLIVIOUS_ORDERS, default="trec_eval",
                   help="tie-oblivious order to compare with: trec_eval (score, then doc id "
                        "descending) or input (file order) (default: trec_eval)")
    p.add_argument("--ideal", choices=IDEALS, default="qrels",
                   help="IDCG from all judged documents (qrels, as trec_eval) or from the "
                        "retrieved candidates (default: qrels)")
    p.add_argument("-c", "--missing-as-zero", action="store_true",
                   help="score qrels queries missing from the run as 0 (trec_eval -c)")
    p.add_argument("--depth", type=int_at_least(1), default=None, metavar="K",
                   help="retrieval depth for the truncated-tie flag (default: the longest "
                        "list)")
    p.add_argument("--whole-list-audit", action="store_true",
                   help="also audit ties over whole lists (distinct scores per query): a sort "
                        "of every whole list, so off unless asked for")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..api import evaluate  # numpy and the readers load here, after the arguments parsed
    from ..core import parse_measures
    from ..io.beir import qrels_file

    parse_measures(args.measures)  # a wrong name fails before any file is read
    result = evaluate(qrels_file(args.qrels), args.run, args.measures, relevance_level=args.relevance_level,
                      oblivious=args.oblivious, ideal=args.ideal,
                      missing="zero" if args.missing_as_zero else "skip", depth=args.depth,
                      whole_list_audit=args.whole_list_audit)
    if args.json:
        print_json(result.to_dict(per_query=args.per_query))
        return 0
    print(result.table())
    if args.per_query:
        from ..core.ranking.results import VALUE_KEYS
        from ..io.markdown import term_cell  # a query id from the file: no escape sequence

        frame = result.to_dict(per_query=True)["per_query"]
        print("\n" + "\t".join(("qid", "measure", *VALUE_KEYS)))
        for qid, row in frame.items():
            for name, v in row.items():
                print(f"{term_cell(qid)}\t{name}\t"
                      + "\t".join(f"{v[k]:.6f}" for k in VALUE_KEYS))
    return 0
