"""The catalogue of bad inputs: each one the CLI must meet with the correct number or a clear
error, never a traceback and never a silently wrong number.

Every case writes its files into a fresh folder, runs ``mteb-stratified`` in-process and
classifies what happened (:func:`run_case`):

* ``clear`` — exit 2, and the message names the file (with its line when the fault is on a
  line) or the option, and says how to fix it;
* ``correct`` — exit 0 and the number equals pytrec_eval's on what the file means (the oracle
  is the clean dicts written next to the case, never a stored figure);
* ``unclear`` — exit 2 without the file, the line or the fix;
* ``traceback`` — an exception escaped ``main``;
* ``wrong`` — exit 0 where an error was due, or a number that differs from the oracle's.

``tests/cli/test_bad_inputs.py`` asserts every case is ``clear`` or ``correct``;
``benchmarks/reliability.py`` prints the tally for the README.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, field

__all__ = ["Case", "Error", "Value", "Works", "CASES", "run_case", "Bounded", "BOUNDED",
           "run_bounded"]


@dataclass(frozen=True)
class Error:
    """An exit 2 naming ``file`` (a key of the case's files; or, starting with ``-`` or ``=``,
    an option such as ``--depth`` or the literal text after ``=``), at ``line`` when given,
    with ``says`` (a regex) in the message."""
    file: str
    line: int | None = None
    says: str = ""


@dataclass(frozen=True)
class Value:
    """Exit 0 and ``measure`` (ours, pytrec_eval's name) equal to pytrec_eval on the clean
    ``qrels`` / ``run`` dicts that the files mean."""
    measure: str
    trec_measure: str
    qrels: dict
    run: dict


@dataclass(frozen=True)
class Works:
    """Exit 0, and ``check(paths, stdout)`` finds nothing wrong (returns None, else the
    problem)."""
    check: object


@dataclass(frozen=True)
class Case:
    id: str
    finding: str
    files: dict = field(default_factory=dict)   # name -> str or bytes
    argv: tuple = ()                            # "{name}" is replaced by the file's path
    expect: object = None


_Q = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1}}
_R = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1, "d9": 0.05}, "q2": {"d4": 0.3, "d5": 0.7}}


def _trec_run(run=_R, *, sep=" ", extra="") -> str:
    lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), start=1):
            lines.append(sep.join([q, "Q0", d, str(rank), repr(s), "tag"]) + extra)
    return "\n".join(lines) + "\n"


def _trec_qrels(qrels=_Q) -> str:
    return "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())


def _beir_qrels(qrels=_Q, header=True) -> str:
    head = "query-id\tcorpus-id\tscore\n" if header else ""
    return head + "".join(f"{q}\t{d}\t{g}\n" for q, docs in qrels.items()
                          for d, g in docs.items())


def _gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


def _corrupt_deflate(text: str) -> bytes:
    data = bytearray(_gz(text * 50))
    data[20:40] = b"\xff" * 20
    return bytes(data)


def _value(measure="nDCG@10", trec="ndcg_cut_10", qrels=_Q, run=_R) -> Value:
    return Value(measure, trec, qrels, run)


def _eval(run="run", qrels="qrels", *extra) -> tuple:
    return ("evaluate", "--qrels", "{%s}" % qrels, "--run", "{%s}" % run, *extra)


_GOOD = {"run": _trec_run(), "qrels": _trec_qrels()}
_FAR = "".join(f"q1 Q0 x{i} {i} {1.0 / (i + 1)!r} tag\n" for i in range(400))


def _evaluate_cases() -> list[Case]:
    c: list[Case] = []
    add = c.append
    # -- the byte-order mark, line endings --------------------------------------------------
    add(Case("run-bom", "BOM kept in the first qid", {"run": "\ufeff" + _trec_run(),
             "qrels": _trec_qrels()}, _eval(), _value()))
    add(Case("qrels-bom", "BOM in qrels drops the first judgment",
             {"run": _trec_run(), "qrels": "\ufeff" + _trec_qrels()}, _eval(), _value()))
    add(Case("beir-bom-header", "BOM before the BEIR header",
             {"run": _trec_run(), "qrels": "\ufeff" + _beir_qrels()}, _eval(), _value()))
    add(Case("crlf", "Windows line endings", {"run": _trec_run().replace("\n", "\r\n"),
             "qrels": _trec_qrels().replace("\n", "\r\n")}, _eval(), _value()))
    add(Case("run-gzip", "gzip-compressed run", {"run": _gz(_trec_run()),
             "qrels": _trec_qrels()}, _eval(), _value()))
    add(Case("tabs-in-run", "tab-separated run columns", {"run": _trec_run(sep="\t"),
             "qrels": _trec_qrels()}, _eval(), _value()))
    # -- trec_eval's own test files ----------------------------------------------------------
    add(Case("run-extra-fields", "text after the run tag (trec_eval's results.trunc)",
             {"run": _trec_run(extra=" trailing words ignored"), "qrels": _trec_qrels()},
             _eval(), _value()))
    add(Case("qrels-comments", "# comment lines in qrels (qrels.test.with-comments)",
             {"run": _trec_run(), "qrels": "# judged by x\n" + _trec_qrels().replace(
                 "q2 0", "# a note\nq2 0")}, _eval(), _value()))
    # -- format sniffing ---------------------------------------------------------------------
    brace = {"{q1": _R["q1"], "q2": _R["q2"]}
    add(Case("qid-starts-with-brace", "a first qid starting with { switched the file to JSON",
             {"run": _trec_run(brace), "qrels": _trec_qrels({"{q1": _Q["q1"], "q2": _Q["q2"]})},
             _eval(), _value(qrels={"{q1": _Q["q1"], "q2": _Q["q2"]}, run=brace)))
    add(Case("tab-in-first-trec-qrels-line", "a tab in the first TREC qrels line switched it "
             "to BEIR", {"run": _trec_run(), "qrels": _trec_qrels().replace(" ", "\t", 1)},
             _eval(), _value()))
    add(Case("beir-no-header", "BEIR qrels without their header",
             {"run": _trec_run(), "qrels": _beir_qrels(header=False)}, _eval(), _value()))
    add(Case("json-run", "a JSON run", {"run": json.dumps(_R), "qrels": _trec_qrels()},
             _eval(), _value()))
    add(Case("json-qrels", "JSON qrels", {"run": _trec_run(), "qrels": json.dumps(_Q)},
             _eval(), _value()))
    # -- number grammar ----------------------------------------------------------------------
    for name, text in [("underscore", "1_000"), ("arabic-indic", "\u0661\u0660"),
                       ("fullwidth", "\uff11"), ("nan", "nan"), ("inf", "inf"),
                       ("neg-infinity", "-Infinity"), ("hex-float", "0x1p3"),
                       ("overflow", "1e400"), ("comma-decimal", "0,5"), ("empty-ish", "-"),
                       ("trailing-junk", "0.5x")]:
        add(Case(f"run-score-{name}", "Python-only number forms accepted as scores",
                 {"run": _trec_run().replace("0.8", text, 1), "qrels": _trec_qrels()},
                 _eval(), Error("run", 2, "score")))
    for name, text, line in [("1e308", "1e308", 1), ("2000", "2000", 1), ("half", "1.5", 1),
                             ("arabic-indic", "\u0661", 1), ("underscore", "1_0", 1),
                             ("nan", "nan", 1), ("inf", "inf", 1), ("word", "yes", 1)]:
        add(Case(f"qrels-grade-{name}", "grades must be integers within the documented bound",
                 {"run": _trec_run(), "qrels": _trec_qrels().replace("q1 0 d1 1",
                                                                     f"q1 0 d1 {text}")},
                 _eval(), Error("qrels", line, "relevance|grade")))
    add(Case("qrels-grade-2000-exp-log2", "grade 2000 with exp-log2 gave NaN",
             {"run": _trec_run(), "qrels": _trec_qrels().replace("q1 0 d3 2", "q1 0 d3 2000")},
             _eval("run", "qrels", "--measures", "nDCG(dcg=exp-log2)@10"),
             Error("qrels", 3, "relevance|grade")))
    add(Case("qrels-grade-1.0", "an integer-valued decimal grade is read as trec_eval does",
             {"run": _trec_run(), "qrels": _trec_qrels().replace("q1 0 d1 1", "q1 0 d1 1.0")},
             _eval(), _value()))
    add(Case("qrels-grade-negative", "a negative grade is non-relevant",
             {"run": _trec_run(), "qrels": _trec_qrels().replace("q1 0 d2 0", "q1 0 d2 -1")},
             _eval(), _value(qrels={"q1": {"d1": 1, "d2": -1, "d3": 2}, "q2": {"d4": 1}})))
    # -- JSON values -------------------------------------------------------------------------
    for name, text in [("1e400", "1e400"), ("NaN", "NaN"), ("Infinity", "Infinity"),
                       ("400-digits", "1" * 400), ("string", '"1"'), ("true", "true"),
                       ("null", "null"), ("list", "[1]")]:
        add(Case(f"json-run-score-{name}", "JSON scores that are not finite numbers",
                 {"run": '{"q1": {"d1": %s, "d2": 0.5}}' % text, "qrels": _trec_qrels()},
                 _eval(), Error("run", None, "score|number")))
        add(Case(f"json-qrels-grade-{name}", "JSON grades that are not bounded integers",
                 {"run": _trec_run(), "qrels": '{"q1": {"d1": %s, "d2": 0}}' % text},
                 _eval(), Error("qrels", None, "grade|number|integer")))
    add(Case("json-deeply-nested", "deeply nested JSON", {"run": "{" + '"a": [' * 100_000,
             "qrels": _trec_qrels()}, _eval(), Error("run", None)))
    add(Case("json-malformed", "malformed JSON", {"run": '{"q1": {"d1": 0.5,}}',
             "qrels": _trec_qrels()}, _eval(), Error("run", 1, "JSON")))
    add(Case("json-not-an-object", "a JSON list", {"run": "[1, 2]", "qrels": _trec_qrels()},
             _eval(), Error("run", None)))
    add(Case("json-query-not-an-object", "a query mapping to a number",
             {"run": '{"q1": 3}', "qrels": _trec_qrels()}, _eval(), Error("run", None)))
    add(Case("json-empty-object", "an empty JSON object", {"run": "{}", "qrels": _trec_qrels()},
             _eval(), Error("run", None)))
    # -- columns and lines -------------------------------------------------------------------
    add(Case("run-five-columns", "a short run line", {"run": _trec_run() + "q2 Q0 d6 3 0.1\n",
             "qrels": _trec_qrels()}, _eval(), Error("run", 7, "column")))
    add(Case("run-one-column", "a one-word run line",
             {"run": _trec_run().replace("q2 Q0 d5", "garbage\nq2 Q0 d5"),
              "qrels": _trec_qrels()}, _eval(), Error("run", 5, "column")))
    add(Case("run-duplicate", "a (query, document) listed twice",
             {"run": _trec_run() + "q1 Q0 d1 9 0.01 tag\n", "qrels": _trec_qrels()},
             _eval(), Error("run", 7, "twice")))
    add(Case("qrels-duplicate", "a (query, document) judged twice",
             {"run": _trec_run(), "qrels": _trec_qrels() + "q1 0 d1 0\n"},
             _eval(), Error("qrels", 5, "twice")))
    add(Case("qrels-three-columns", "TREC qrels with a missing column",
             {"run": _trec_run(), "qrels": _trec_qrels() + "q3 d7 1\n"},
             _eval(), Error("qrels", 5, "column")))
    add(Case("qrels-five-columns", "TREC qrels with an extra column",
             {"run": _trec_run(), "qrels": _trec_qrels() + "q3 0 d7 1 extra\n"},
             _eval(), Error("qrels", 5, "column")))
    add(Case("beir-short-row", "a BEIR row with two columns",
             {"run": _trec_run(), "qrels": _beir_qrels() + "q3\td7\n"},
             _eval(), Error("qrels", 6, "column")))
    add(Case("beir-header-only", "BEIR qrels with only the header",
             {"run": _trec_run(), "qrels": "query-id\tcorpus-id\tscore\n"},
             _eval(), Error("qrels", None, "judgment")))
    # -- encodings and compression -----------------------------------------------------------
    add(Case("run-latin1", "invalid UTF-8 on line 1", {"run": _trec_run().replace(
        "d1", "d\xe9", 1).encode("latin-1"), "qrels": _trec_qrels()}, _eval(),
        Error("run", 1, "UTF-8")))
    far = _FAR.encode() + b"q1 Q0 \xff\xfe 401 0.0 tag\n"
    add(Case("run-bad-utf8-past-8kb", "past 8 KB the byte offset and line were wrong",
             {"run": far, "qrels": _trec_qrels()}, _eval(), Error("run", 401, "UTF-8")))
    add(Case("gzip-bad-utf8-past-8kb", "invalid UTF-8 inside a gzip, past 8 KB",
             {"run": gzip.compress(far, mtime=0), "qrels": _trec_qrels()}, _eval(),
             Error("run", 401, "UTF-8")))
    add(Case("gzip-corrupt-deflate", "a corrupt deflate stream (zlib.error)",
             {"run": _corrupt_deflate(_trec_run()), "qrels": _trec_qrels()}, _eval(),
             Error("run", None, "gzip|compress|corrupt")))
    add(Case("gzip-truncated", "a truncated gzip archive",
             {"run": _gz(_FAR)[:-30], "qrels": _trec_qrels()}, _eval(),
             Error("run", None, "gzip|truncat|corrupt")))
    add(Case("gzip-only-magic", "two magic bytes and nothing else",
             {"run": b"\x1f\x8b", "qrels": _trec_qrels()}, _eval(), Error("run", None)))
    add(Case("raw-zlib-not-gzip", "a zlib stream is not text", {"run": zlib.compress(
        _trec_run().encode()), "qrels": _trec_qrels()}, _eval(), Error("run", 1)))
    add(Case("utf16", "a UTF-16 file", {"run": _trec_run().encode("utf-16"),
             "qrels": _trec_qrels()}, _eval(), Error("run", 1, "UTF-8")))
    add(Case("nul-bytes", "NUL bytes in a line", {"run": _trec_run().replace("tag", "t\0g", 1),
             "qrels": _trec_qrels()}, _eval(), _value()))
    add(Case("empty-run", "an empty run file", {"run": "", "qrels": _trec_qrels()}, _eval(),
             Error("run", None, "empty")))
    add(Case("blank-run", "a run of blank lines", {"run": "\n \n\t\n", "qrels": _trec_qrels()},
             _eval(), Error("run", None, "empty")))
    add(Case("empty-qrels", "an empty qrels file", {"run": _trec_run(), "qrels": ""}, _eval(),
             Error("qrels", None, "empty")))
    add(Case("missing-run", "a run path that does not exist", {"qrels": _trec_qrels()},
             ("evaluate", "--qrels", "{qrels}", "--run", "{missing}"),
             Error("missing", None, "not found")))
    add(Case("run-is-a-folder", "a folder given as the run", {"qrels": _trec_qrels(),
             "folder/": ""}, ("evaluate", "--qrels", "{qrels}", "--run", "{folder/}"),
             Error("folder/", None, "folder")))
    add(Case("no-common-query", "run and qrels share no query",
             {"run": _trec_run({"zz": {"a": 1.0}}), "qrels": _trec_qrels()}, _eval(),
             Error("run", None, "quer")))
    # -- options -----------------------------------------------------------------------------
    for opt, text in [("--depth", "-3"), ("--depth", "0"), ("--depth", "1_000"),
                      ("--depth", "\u0661"), ("--relevance-level", "abc"),
                      ("--relevance-level", "1_0"), ("--relevance-level", "99999")]:
        add(Case(f"option{opt}={text}", "every numeric CLI option is range-checked", _GOOD,
                 _eval("run", "qrels", opt, text), Error(opt, None, "must be")))
    for name, named in [("P@0", "P@0"), ("P@-1", "P@-1"), ("nDCG@abc", "nDCG@abc"),
                        ("nDCG@1_0", "nDCG@1_0"), ("Banana@10", "Banana@10"),
                        ("P(rel=x)@10", "P(rel='x')")]:
        add(Case(f"measure-{name}", "a bad measure name", _GOOD,
                 _eval("run", "qrels", "--measures", name), Error("=" + named, None)))
    add(Case("measure-P@2000000000", "a cutoff of 2e9 tried a 29.8 GiB allocation", _GOOD,
             _eval("run", "qrels", "--measures", "P@2000000000"),
             _value("P@2000000000", "P_2000000000")))
    return c


def _option_cases() -> list[Case]:
    """Numeric options of the other commands, refused by argparse before any work."""
    c = []
    for cmd, opt, text in [
            ("structure", "--limit", "-5"), ("structure", "--limit", "0"),
            ("structure", "--resolution", "-1"), ("structure", "--seed", "-2"),
            ("structure", "--consensus-runs", "0"),
            ("generate", "--max-pool", "0"), ("generate", "--pool-bm25", "-3"),
            ("generate", "--budget", "-1"), ("generate", "--pool-dense", "-1"),
            ("stratify", "--resamples", "0"), ("stratify", "--n-min", "-1"),
            ("stratify", "--seed", "nan"), ("precision-sweep", "--max-queries", "0")]:
        required = {"structure": ("--corpus", "{run}", "--out", "{o}/"),
                    "generate": ("--structure", "{run}", "--dataset", "{run}", "--out", "{o}/"),
                    "stratify": ("{run}",), "precision-sweep": ()}[cmd]
        c.append(Case(f"{cmd}{opt}={text}", "every numeric CLI option is range-checked",
                      {"run": "x"}, (cmd, *required, opt, text), Error(opt, None, "must be")))
    for cmd, argv, what in [
            ("report", ("report", "{run}", "--out", "{o/}"), "folder"),
            ("stratify", ("stratify", "{run}", "--out", "{run}"), "file"),
            ("structure", ("structure", "--corpus", "{o/}", "--out", "{run}"), "file")]:
        c.append(Case(f"{cmd}-out-wrong-kind", "--out pointing at the wrong kind of path",
                      {"run": _trec_run(), "o/": ""}, argv,
                      Error("--out", None, what)))
    return c


def _per_query_csv(qids, *, rows=None, bom=False) -> str:
    """A tie-aware task's per-query CSV: nDCG@10 of query i is (i % 10) / 10."""
    head = "hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias\n"
    body = rows if rows is not None else [
        f"default,test,{q},nDCG@10,{v},{v},{v},{v},0.0,0.0\n"
        for q, v in ((q, (i % 10) / 10) for i, q in enumerate(qids))]
    return ("\ufeff" if bom else "") + head + "".join(body)


def _results_json(qids, task="StratifiedNFCorpus") -> str:
    mean = sum((i % 10) / 10 for i in range(len(qids))) / len(qids)
    return json.dumps({"task_name": task, "dataset_revision": "x", "mteb_version": "2",
                       "scores": {"test": [{"ndcg_at_10": mean, "main_score": mean,
                                            "hf_subset": "default"}]}})


def _strata_block_has(n):
    def check(paths, stdout):
        block = json.load(open(paths["res/StratifiedNFCorpus.json"]))["strata"]["test"]
        return None if block["n_queries"] == n else f"{block['n_queries']} queries, not {n}"
    return check


def _stratify_cases() -> list[Case]:
    """The MTEB results file and the per-query CSV that ``stratify`` and ``report`` read."""
    from mteb_stratified.io import bundled_path, load_beir

    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    res, pq = "res/StratifiedNFCorpus.json", "res/StratifiedNFCorpus_per_query.csv"
    good = {res: _results_json(qids), pq: _per_query_csv(qids)}
    argv = ("stratify", "{%s}" % res, "--resamples", "10")
    c = [Case("stratify-good", "the baseline the cases below vary", good, argv,
              Works(_strata_block_has(30))),
         Case("per-query-bom", "a BOM before the CSV header", {
             res: _results_json(qids), pq: _per_query_csv(qids, bom=True)}, argv,
             Works(_strata_block_has(30)))]
    decoy = {"decoy/StratifiedNFCorpus_per_query.csv": _per_query_csv(qids)}
    for name, task in [("dotdot", "../decoy/StratifiedNFCorpus"),
                       ("absolute", "{ROOT}/decoy/StratifiedNFCorpus"),
                       ("separator", "sub/StratifiedNFCorpus")]:
        c.append(Case(f"results-task-name-{name}", "a task_name that is a path read another "
                      "file's per-query CSV", {res: _results_json(qids, task), **decoy}, argv,
                      Error(res, None, "task")))
    bad_json = [("malformed", '{"task_name": "StratifiedNFCorpus", "scores": {', 1),
                ("list", "[1, 2, 3]", None), ("no-scores", '{"task_name": "T"}', None),
                ("scores-not-object", '{"task_name": "StratifiedNFCorpus", "scores": 3}', None),
                ("task-name-number", '{"task_name": 7, "scores": {}}', None),
                ("empty", "", None), ("latin1", b'{"task_name": "Stratifi\xe9d"}', 1)]
    for name, text, line in bad_json:
        c.append(Case(f"results-json-{name}", "malformed results JSON", {res: text, pq:
                      _per_query_csv(qids)}, argv, Error(res, line)))
    rows = _per_query_csv(qids).splitlines(keepends=True)[1:]
    bad_rows = [("short-row", rows[:4] + ["default,test,PLAIN-X,nDCG@10,0.5\n"] + rows[4:], 6),
                ("nan", rows[:2] + [rows[2].replace(",0.2,", ",nan,", 1)] + rows[3:], 4),
                ("word", rows[:2] + [rows[2].replace(",0.2,", ",high,", 1)] + rows[3:], 4),
                ("duplicate", rows + rows[:1], len(rows) + 2),
                ("latin1", rows[:3] + ["default,test,PLAIN-\udce9,nDCG@10,0,0,0,0,0,0\n"]
                 + rows[3:], 5)]
    for name, body, line in bad_rows:
        text = _per_query_csv(qids, rows=body)
        content = (text.encode("utf-8", "surrogateescape") if "\udce9" in text else text)
        c.append(Case(f"per-query-{name}", "a malformed per-query CSV",
                      {res: _results_json(qids), pq: content}, argv, Error(pq, line)))
    c.append(Case("per-query-header-only", "a per-query CSV with no rows",
                  {res: _results_json(qids), pq: _per_query_csv([], rows=[])}, argv,
                  Error(pq, None)))
    c.append(Case("per-query-empty", "an empty per-query CSV",
                  {res: _results_json(qids), pq: ""}, argv, Error(pq, None)))
    c.append(Case("per-query-other-run", "a CSV whose mean is not the results file's score",
                  {res: _results_json(qids),
                   pq: _per_query_csv(qids, rows=[r.replace(",0.0,0.0", ",0.0,0.0")
                                                  .replace("nDCG@10,0.", "nDCG@10,0.9")
                                                  for r in rows])}, argv, Error(pq, None)))
    c.append(Case("report-corrupt-results", "report over a malformed results JSON",
                  {res: '{"task_name": ', pq: _per_query_csv(qids)},
                  ("report", "{%s}" % res, "--out", "{o}/r.html"), Error(res, 1)))
    return c


def _grammar_cases() -> list[Case]:
    """One number grammar for every file, a bounded cutoff, and judgments given twice."""
    from mteb_stratified.io import bundled_path, load_beir

    c = [Case("measure-P@1e20", "a 20-digit cutoff overflowed a C long", _GOOD,
              _eval("run", "qrels", "--measures", "P@99999999999999999999"),
              Error("=P@99999999999999999999", None, "not an integer in")),
         Case("measure-P(rel=1e20)", "a 20-digit relevance level", _GOOD,
              _eval("run", "qrels", "--measures", "P(rel=99999999999999999999)@10"),
              Error("=P(rel=99999999999999999999)", None, "grade bound"))]
    dup = _trec_qrels() + "q1 0 d3 2\n"  # line 5 repeats line 3 exactly
    c.append(Case("qrels-identical-duplicate", "an identical qrels line twice (trec_eval keeps "
                  "it)", {"run": _trec_run(), "qrels": dup}, _eval(), _value()))
    c.append(Case("beir-qrels-identical-duplicate", "an identical BEIR qrels line twice",
                  {"run": _trec_run(), "qrels": _beir_qrels() + "q2\td4\t1\n"}, _eval(),
                  _value()))
    c.append(Case("qrels-conflicting-duplicate", "a judgment twice with two grades",
                  {"run": _trec_run(), "qrels": _trec_qrels() + "q1 0 d3 1\n"}, _eval(),
                  Error("qrels", 5, "different grades")))
    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    res, pq = "res/StratifiedNFCorpus.json", "res/StratifiedNFCorpus_per_query.csv"
    argv = ("stratify", "{%s}" % res, "--resamples", "10")
    rows = _per_query_csv(qids).splitlines(keepends=True)[1:]
    for name, old, new in [("underscore", ",0.4,0.4,", ",0.4_0,0.4,"),
                           ("arabic-digit", ",0.4,0.4,", ",0.\u0664,0.4,"),
                           ("blank-padded", ",0.4,0.4,", ", 0.4,0.4,"),
                           ("overflow", ",0.4,0.4,0.4,", ",0.4,0.4,1e400,")]:
        body = rows[:4] + [rows[4].replace(old, new, 1)] + rows[5:]
        c.append(Case(f"per-query-number-{name}", "a per-query value Python reads but the "
                      "TREC grammar refuses (0.4_5 was read as 0.45)",
                      {res: _results_json(qids), pq: _per_query_csv(qids, rows=body)}, argv,
                      Error(pq, 6)))
    return c


def _bundled() -> tuple[dict, list]:
    """The bundled artifact's files (name -> bytes) and 30 test query ids."""
    from mteb_stratified.io import bundled_path, load_beir

    folder = os.path.join(bundled_path("nfcorpus"), "structure")
    files = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl.gz") or name == "metadata.json":
            with open(os.path.join(folder, name), "rb") as fh:
                files[name] = fh.read()
    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    return files, qids


def _structure_cases() -> list[Case]:
    """A tampered structure artifact (the bundled one, copied) given to ``stratify``: its
    metadata against the schema, its tables' ids, and a spaCy model it names (issue #30)."""
    tables, qids = _bundled()
    res, pq = "res/StratifiedNFCorpus.json", "res/StratifiedNFCorpus_per_query.csv"
    argv = ("stratify", "{%s}" % res, "--structure", "{art/}", "--resamples", "10",
            "--alignment", "exact")

    def art(change=None, **table_bytes) -> dict:
        meta = json.loads(tables["metadata.json"])
        if change:
            change(meta)
        files = {res: _results_json(qids), pq: _per_query_csv(qids), "art/": ""}
        files.update({f"art/{n}": b for n, b in tables.items()})
        files["art/metadata.json"] = json.dumps(meta)
        files.update({f"art/{t}.jsonl.gz": b for t, b in table_bytes.items()})
        return files

    entity = json.loads(gzip.decompress(tables["entities.jsonl.gz"]).split(b"\n", 1)[0])
    return [
        Case("structure-n-docs-1e308", "corpus.n_docs = 1e308 was accepted",
             art(lambda m: m["corpus"].update(n_docs=1e308)), argv,
             Error("art/metadata.json", None, r"corpus\.n_docs is 1e\+308")),
        Case("structure-bins-nan", "NaN bin cut-points were accepted",
             art(lambda m: m["bins"].update(dispersion=[float("nan"), 0.8])), argv,
             Error("art/metadata.json", None, r"bins\.dispersion is \[NaN")),
        Case("structure-entity-id-10^400", "an entity id of 10^400 was accepted",
             art(entities=_gz(json.dumps({**entity, "id": 10**400}) + "\n")), argv,
             Error("art/entities.jsonl.gz", 1, "'id'")),
        # soft alignment loads the recorded model: a recorded folder is opened only when the
        # user gives it (--embedding-model); with exact alignment it is never used
        Case("structure-embedding-model-path", "a recorded embedding model path was accepted",
             art(lambda m: m["parameters"].update(embedding_model="/tmp/their-model")),
             argv[:-1] + ("soft",),
             Error("art/metadata.json", None, "embedding model '/tmp/their-model', a path: a "
                                               "structure artifact never chooses a file")),
        Case("structure-clusters-empty", "an empty clusters table named no file",
             art(clusters=_gz("")), argv,
             Error("art/clusters.jsonl.gz", None, "clusters table is empty")),
        Case("structure-spacy-model-not-installed", "a recorded spaCy model was looked up as "
             "./NAME and, missing, said to install .[structure]",
             art(lambda m: m["extractor"].update(init_params={"model": "evilmodel"})), argv,
             Error("art/metadata.json", None, r"init_params\.model.*not an installed package")),
    ]


def _sibling_cases() -> list[Case]:
    """The cases kept beside this file, one module per area (``cases_*.py``, each with a
    ``cases()`` that returns its list), loaded in name order."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    found: list[Case] = []
    for name in sorted(os.listdir(here)):
        if name.startswith("cases_") and name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(here, name))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found += module.cases()
    return found


CASES: list[Case] = (_evaluate_cases() + _option_cases() + _stratify_cases() + _grammar_cases()
                     + _structure_cases() + _sibling_cases())


# -- running a case ---------------------------------------------------------------------------

def _materialise(case: Case, folder: str) -> dict:
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for name, content in case.files.items():
        path = os.path.join(folder, name.rstrip("/"))
        if name.endswith("/"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if isinstance(content, str):
                content = content.replace("{ROOT}", folder)
            with open(path, "wb") as fh:
                fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
        paths[name] = path
    paths.setdefault("missing", os.path.join(folder, "missing"))
    paths.setdefault("o", os.path.join(folder, "o"))
    return paths


def _argv(case: Case, paths: dict) -> list:
    def sub(arg):
        return re.sub(r"\{([^}]+)\}", lambda m: paths.get(m.group(1), m.group(0)), arg)
    return [sub(a) for a in case.argv]


def _oracle(value: Value) -> float:
    import pytrec_eval
    per_q = pytrec_eval.RelevanceEvaluator(value.qrels, {value.trec_measure.rsplit("_", 1)[0]
                                                         + "." + value.trec_measure.rsplit(
                                                             "_", 1)[1]}).evaluate(value.run)
    vals = [row[value.trec_measure] for row in per_q.values()]
    return sum(vals) / len(vals)


def run_case(case: Case, folder: str) -> tuple[str, str]:
    """``(outcome, detail)`` of one case run in ``folder`` (see the module docstring)."""
    from mteb_stratified.cli.main import main

    paths = _materialise(case, folder)
    argv = _argv(case, paths)
    if isinstance(case.expect, Value):
        argv += ["--measures", case.expect.measure, "--json"] if "--measures" not in argv \
            else ["--json"]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except BaseException as exc:  # noqa: BLE001 - any escape is the finding
        return "traceback", f"{type(exc).__name__}: {exc}"[:300]
    message = err.getvalue()
    exp = case.expect
    if isinstance(exp, Works):
        if rc != 0:
            return "wrong", f"exit {rc} on valid input: {message[-300:]}"
        problem = exp.check(paths, out.getvalue())
        return ("wrong", problem) if problem else ("correct", "exit 0, output checked")
    if isinstance(exp, Value):
        if rc != 0:
            return "wrong", f"exit {rc} where the number {exp.measure} was due: {message[-300:]}"
        got = json.loads(out.getvalue())["measures"][exp.measure]["expected"]
        want = _oracle(exp)
        if abs(got - want) > 1e-12:
            return "wrong", f"{exp.measure} = {got}, pytrec_eval on the clean input {want}"
        return "correct", f"{exp.measure} = {got:.4f} (pytrec_eval {want:.4f})"
    if rc == 0:
        return "wrong", "exit 0 where an error was due: " + out.getvalue()[-200:]
    if rc != 2:
        return "unclear", f"exit {rc}: {message[-300:]}"
    literal = exp.file.startswith(("-", "="))
    where = exp.file.lstrip("=") if literal else paths.get(exp.file, exp.file).rstrip("/")
    if exp.line is not None:
        where = f"{where}:{exp.line}:"
    problems = []
    if where not in message:
        problems.append(f"does not name {where!r}")
    if exp.says and not re.search(exp.says, message, re.I):
        problems.append(f"does not say /{exp.says}/")
    if not literal and "fix:" not in message:
        problems.append("gives no fix")
    if "Traceback" in message:
        problems.append("prints a traceback")
    if problems:
        return "unclear", "; ".join(problems) + ": " + message.strip()[-300:]
    return "clear", message.strip().splitlines()[0][:200]


# -- inputs that must be refused fast and small: run in a child process, timed ---------------

@dataclass(frozen=True)
class Bounded:
    """A bad input refused by exit 2 with ``says`` (a regex) and the file's name, within
    ``seconds`` of wall time and ``rss_mib`` of peak memory, measured in a child process
    (``make(folder)`` writes the files and returns ``{name: path}`` for ``argv``)."""
    id: str
    finding: str
    make: object
    argv: tuple
    says: str
    file: str = "run"  # the key of the file the message must name
    seconds: float = 5.0
    rss_mib: float = 200.0


def _members(path: str, block: bytes, size: int, count: int) -> str:
    """A gzip file of ``count`` members, each ``size`` bytes of ``block`` repeated (gzip
    readers read members one after another: a 5 GiB stream costs 80 compressions of 64 MiB
    made once)."""
    member = gzip.compress(block * (size // len(block)), compresslevel=9, mtime=0)
    with open(path, "wb") as fh:
        for _ in range(count):
            fh.write(member)
    return path


def _files(**made):
    def make(folder):
        paths = {"qrels": os.path.join(folder, "qrels.txt")}
        with open(paths["qrels"], "w") as fh:
            fh.write(_trec_qrels())
        for name, build in made.items():
            paths[name] = build(os.path.join(folder, name))
        return paths
    return make


def _fifo(path: str) -> str:
    os.mkfifo(path)
    return path


def _one_line(path: str, size: int = 64 << 20) -> str:
    with open(path, "wb") as fh:
        fh.write(b"x" * size)  # no line ending at all
    return path


def _csv_one_line(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(b"hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias\n")
        fh.write(b"default,test," + b"q" * (64 << 20))
    return path


def _results(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(_results_json(["q1"]))
    return path


_ZEROS = (b"\0", 64 << 20, 80)            # 5 GiB of zeros, no newline: 5.2 MB of gzip
_LINES = (b"q1 Q0 d1 1 0.5 t\n", 64 << 20, 5)  # 320 MiB of one line repeated: 0.8 MB


def _bounded_cases() -> list[Bounded]:
    run = ("evaluate", "--qrels", "{qrels}", "--run", "{run}")
    res = "res/StratifiedNFCorpus.json"
    return [
        Bounded("run-dev-zero", "evaluate --run /dev/zero hung, RSS growing",
                _files(run=lambda p: "/dev/zero"), run, "character device"),
        Bounded("run-fifo", "a FIFO as --run blocked forever", _files(run=_fifo), run,
                "named pipe"),
        Bounded("qrels-fifo", "a FIFO as --qrels", _files(run=_one_line, fifo=_fifo),
                ("evaluate", "--qrels", "{fifo}", "--run", "{run}"), "named pipe", "fifo"),
        Bounded("run-gzip-bomb-zeros", "5.2 MB of gzip, 5 GiB of zeros: refused after 60-72 s "
                "at 1.05 GiB", _files(run=lambda p: _members(p + ".gz", *_ZEROS)), run,
                "decompression bomb"),
        Bounded("run-gzip-bomb-lines", "0.6 MB of gzip, 300 MiB of one repeated line: 27 s at "
                "903 MB", _files(run=lambda p: _members(p + ".gz", *_LINES)), run,
                "listed twice|decompression bomb"),
        Bounded("qrels-gzip-bomb", "a gzip bomb as qrels",
                _files(run=_one_line, bomb=lambda p: _members(p + ".gz", *_ZEROS)),
                ("evaluate", "--qrels", "{bomb}", "--run", "{run}"), "decompression bomb", "bomb"),
        Bounded("run-one-long-line", "64 MiB without a line ending read as one line",
                _files(run=_one_line), run, "longer than 16 MiB"),
        Bounded("per-query-one-long-line", "a per-query CSV of one 64 MiB line",
                _files(**{res: _results,
                          "pq": lambda p: _csv_one_line(os.path.join(
                              os.path.dirname(p), "res", "StratifiedNFCorpus_per_query.csv"))}),
                ("stratify", "{%s}" % res), "longer than 16 MiB", "pq"),
    ]


BOUNDED: list[Bounded] = _bounded_cases()

# The child's own peak: VmHWM belongs to the process image exec made (ru_maxrss would carry the
# forking parent's peak across exec on Linux).
_PROBE = ("import resource, sys\n"
          "from mteb_stratified.cli.main import main\n"
          "code = main(sys.argv[1:])\n"
          "try:\n"
          "    kib = next(int(l.split()[1]) for l in open('/proc/self/status')\n"
          "               if l.startswith('VmHWM:'))\n"
          "except OSError:\n"
          "    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
          "print('peak-rss-kib', kib, file=sys.stderr)\n"
          "sys.exit(code)\n")


def run_bounded(case: Bounded, folder: str) -> tuple[str, str, float, float]:
    """``(outcome, detail, seconds, peak MiB)``: ``clear`` when refused as the case says within
    its bounds; ``hang`` past 10 times its seconds; ``slow``/``large`` past a bound;
    ``unclear`` for another exit or message."""
    os.makedirs(folder, exist_ok=True)
    paths = case.make(folder)
    argv = [re.sub(r"\{([^}]+)\}", lambda m: paths.get(m.group(1), m.group(0)), a)
            for a in case.argv]
    env = dict(os.environ, MTEB_STRATIFIED_MAX_GZIP_RATIO="")
    env.pop("MTEB_STRATIFIED_MAX_GZIP_RATIO")
    # the child runs this tree's package (not an installed copy): the code the tests test
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                              text=True, timeout=10 * case.seconds, env=env, cwd=folder)
    except subprocess.TimeoutExpired:
        return "hang", f"no answer in {10 * case.seconds:g} s", 10 * case.seconds, float("nan")
    seconds = time.perf_counter() - t0
    err = proc.stderr
    found = re.search(r"peak-rss-kib (\d+)", err)
    rss = int(found.group(1)) / 1024 if found else float("nan")
    message = err[:found.start()] if found else err
    named = paths[case.file] in message
    if proc.returncode != 2 or not re.search(case.says, message) or not named \
            or "Traceback" in message:
        return "unclear", f"exit {proc.returncode}: {message.strip()[-300:]}", seconds, rss
    if seconds > case.seconds:
        return "slow", f"{seconds:.1f} s > {case.seconds:g} s", seconds, rss
    if not rss <= case.rss_mib:
        return "large", f"peak {rss:.0f} MiB > {case.rss_mib:g} MiB", seconds, rss
    return "clear", message.strip().splitlines()[0][:200], seconds, rss
