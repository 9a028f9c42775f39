"""One reading of every byte (#46.2) and unsorted runs (#46.11): the fast (pyarrow) and line
readers of runs and qrels share one definition of byte-order marks, comments, blank lines and
whitespace (:mod:`mteb_stratified.io._text`), so a trailing comment line, which sends a file
from one reader to the other, never changes a number.

A file that starts with two byte-order marks is refused at line 1, by both readers (the fast
reader dropped the second mark, the line reader kept it in the first id: nDCG@10 1.0 against
0.631).  A line whose id starts with U+FEFF at the start of one of the fast reader's blocks
keeps it (pyarrow dropped it there).  A run with one line out of order gives the sorted run's
number (the fast path now groups it; its memory is checked in tests/io/test_unsorted_runs.py).
"""

from __future__ import annotations

import gzip

from bad_inputs import Case, Error, _eval, _trec_qrels, _trec_run, _value

_BOMS = "\ufeff\ufeff"
_SAYS = "2 byte-order marks"


def _block_start_files() -> tuple:
    """A run whose line of query ``\\ufeffz`` begins before byte 65,536 and ends after it, so
    it starts the fast reader's second block (the first is 64 KiB of whole lines), and qrels
    that judge that query; the dicts the files mean."""
    width, count = 48, 65536 // 48  # 1365 lines of 48 bytes: 65,520 bytes
    filler = {f"d{i:05d}": float(count - i) for i in range(count)}
    lines = []
    for rank, (doc, score) in enumerate(filler.items(), start=1):
        head = f"q1 Q0 {doc} {rank} {score!r} "
        lines.append(head + "t" * (width - 1 - len(head)) + "\n")
    lines += ["\ufeffz Q0 a 1 0.25 tag\n", "\ufeffz Q0 b 2 0.75 tag\n"]
    run = {"q1": filler, "\ufeffz": {"a": 0.25, "b": 0.75}}
    qrels = {"q1": {"d00003": 1}, "\ufeffz": {"a": 2}}
    return "".join(lines), "q1 0 d00003 1\n\ufeffz 0 a 2\n", run, qrels


def _out_of_order() -> str:
    """The stock run with its first line moved to the end (one line out of order)."""
    lines = _trec_run().splitlines(keepends=True)
    return "".join(lines[1:] + lines[:1])


def cases() -> list[Case]:
    run_text, qrels_text, run, qrels = _block_start_files()
    return [
        Case("readers-run-double-bom", "#46.2 a run starting with two BOMs: nDCG@10 1.0 (fast "
             "reader) against 0.631 (line reader)",
             {"run": _BOMS + _trec_run(), "qrels": _trec_qrels()}, _eval(),
             Error("run", 1, _SAYS)),
        Case("readers-run-double-bom-comment", "#46.2 the same run and a trailing comment line "
             "(the line reader's reading)",
             {"run": _BOMS + _trec_run() + "# end\n", "qrels": _trec_qrels()}, _eval(),
             Error("run", 1, _SAYS)),
        Case("readers-qrels-double-bom", "#46.2 qrels starting with two BOMs: the fast reader "
             "dropped both, the line reader kept one in the first query",
             {"run": _trec_run(), "qrels": _BOMS + _trec_qrels()}, _eval(),
             Error("qrels", 1, _SAYS)),
        Case("readers-qrels-double-bom-comment", "#46.2 the same qrels and a trailing comment",
             {"run": _trec_run(), "qrels": _BOMS + _trec_qrels() + "# end\n"}, _eval(),
             Error("qrels", 1, _SAYS)),
        Case("readers-beir-double-bom", "#46.2 BEIR qrels TSV starting with two BOMs",
             {"run": _trec_run(),
              "qrels": _BOMS + "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td3\t2\nq2\td4\t1\n"},
             _eval(), Error("qrels", 1, _SAYS)),
        Case("readers-run-triple-bom-gzip", "#46.2 three BOMs, gzip-compressed",
             {"run": gzip.compress((_BOMS + "\ufeff" + _trec_run()).encode(), mtime=0),
              "qrels": _trec_qrels()}, _eval(), Error("run", 1, "3 byte-order marks")),
        Case("readers-run-bom-at-block-start", "#46.2 a query id starting with U+FEFF at the "
             "start of the fast reader's second block lost its U+FEFF there (pyarrow drops a "
             "BOM at the start of every buffer), not on the line reader",
             {"run": run_text, "qrels": qrels_text}, _eval(),
             _value(qrels=qrels, run=run)),
        Case("readers-run-one-line-out-of-order", "#46.11 one line out of order: the sorted "
             "run's number, now read on the fast path (grouped), not through the dict path",
             {"run": _out_of_order(), "qrels": _trec_qrels()}, _eval(), _value()),
    ]
