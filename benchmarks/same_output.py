"""Do ``stratify`` and ``report`` write the same bytes as an earlier revision did?

Runs the README's two commands (``mteb-stratified stratify RUNS`` and ``mteb-stratified report
RUNS bm25=TREC -o report.html``) with an earlier git revision and with the working tree, each on
its own copy of an mteb output folder RUNS, and compares every file they write and what they
print on stdout and stderr (the copies' paths replaced by ``OUT``, the progress lines' seconds
by ``N``), showing the first lines that differ.

Two differences are made on purpose and can be left out of the comparison by name:

* ``--ignore-svg-metadata``: matplotlib's ``<metadata>`` block of each inline SVG, which held a
  timestamp (``<dc:date>``) until the report became reproducible;
* ``--ignore-figure ID``: one figure of the HTML report (e.g. ``ties``, whose two MiniLM labels
  were cut to one until they became distinct).

Run (the RUNS folder of the README's six commands, and its demo's BM25 run)::

    python benchmarks/same_output.py --before a74bb1c --runs runs \\
        --trec mteb-stratified-demo/nfcorpus-test.bm25.fp32.trec \\
        --ignore-svg-metadata --ignore-figure ties
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile

from _harness import ROOT
from before_after import check_import, export_revision


def run_commands(tree: str, runs: str, trec: str, out: str) -> None:
    """The README's stratify and report, with ``tree``'s package, on a copy of ``runs``."""
    shutil.copytree(runs, os.path.join(out, "runs"))
    env = {**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"}
    for name, argv in (("stratify", ["stratify", "runs"]),
                       ("report", ["report", "runs", f"bm25={trec}", "-o", "report.html"])):
        p = subprocess.run([sys.executable, "-m", "mteb_stratified", *argv], cwd=out, env=env,
                           capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"{name} failed with {tree}:\n{p.stderr[-3000:]}")
        with open(os.path.join(out, f"{name}.stdout"), "w", encoding="utf-8") as fh:
            fh.write(p.stdout.replace(out, "OUT"))
        with open(os.path.join(out, f"{name}.stderr"), "w", encoding="utf-8") as fh:
            fh.write(TIMING.sub(": N s", p.stderr.replace(out, "OUT")))


#: The progress lines' seconds on stderr (``label …label: 1.5 s``): the machine's, not the
#: program's output, so they are masked before the comparison.
TIMING = re.compile(r": \d+(?:\.\d+)? s$", re.M)


def changed_lines(a: str, b: str, most: int = 4) -> list:
    """The first ``most`` lines that differ between two text files, as ``-``/``+`` pairs."""
    import difflib

    lines = [d for d in difflib.unified_diff(open(a, encoding="utf-8").read().splitlines(),
                                             open(b, encoding="utf-8").read().splitlines(),
                                             lineterm="", n=0)
             if d[:1] in "-+" and not d.startswith(("---", "+++"))]
    return [line[:160] for line in lines[:2 * most]]


def normalised(path: str, args) -> bytes:
    data = open(path, "rb").read()
    if path.endswith(".html"):
        if args.ignore_svg_metadata:
            data = re.sub(rb"<metadata>.*?</metadata>", b"", data, flags=re.S)
        for fig in args.ignore_figure:
            data = re.sub(rb"<figure id='" + re.escape(fig.encode()) + rb"'>.*?</figure>",
                          b"", data, flags=re.S)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV")
    ap.add_argument("--runs", required=True, help="an mteb --output-folder (left unchanged)")
    ap.add_argument("--trec", required=True, help="the BM25 TREC run of the README's report")
    ap.add_argument("--ignore-svg-metadata", action="store_true")
    ap.add_argument("--ignore-figure", action="append", default=[], metavar="ID")
    args = ap.parse_args()
    runs, trec = os.path.abspath(args.runs), os.path.abspath(args.trec)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": export_revision(args.before, os.path.join(tmp, "tree-before")),
                 "after": ROOT}
        outs = {}
        for name, tree in trees.items():
            check_import(tree)
            outs[name] = os.path.join(tmp, name)
            os.makedirs(outs[name])
            run_commands(tree, runs, trec, outs[name])
        files = sorted(os.path.relpath(os.path.join(d, f), outs["before"])
                       for d, _, fs in os.walk(outs["before"]) for f in fs)
        after = sorted(os.path.relpath(os.path.join(d, f), outs["after"])
                       for d, _, fs in os.walk(outs["after"]) for f in fs)
        differ = [f for f in files if f in after
                  and normalised(os.path.join(outs["before"], f), args)
                  != normalised(os.path.join(outs["after"], f), args)]
        only = sorted(set(files) ^ set(after))
        same = [f for f in files if f not in differ and f in after]
        strict = [f for f in same if filecmp.cmp(os.path.join(outs["before"], f),
                                                 os.path.join(outs["after"], f), shallow=False)]
        details = {f: changed_lines(os.path.join(outs["before"], f),
                                    os.path.join(outs["after"], f)) for f in differ}
    print(f"before {args.before}, after the working tree: {len(files)} files written")
    print(f"  byte-identical: {len(strict)}")
    ignored = (["svg metadata"] * args.ignore_svg_metadata
               + [f"figure {f}" for f in args.ignore_figure])
    print(f"  identical apart from what is ignored ({', '.join(ignored) or 'nothing'}): "
          f"{len(same) - len(strict)} ({', '.join(f for f in same if f not in strict) or '-'})")
    print(f"  different: {len(differ)} ({', '.join(differ) or '-'})")
    for f in differ:
        print(f"    {f}:")
        for line in details[f]:
            print(f"      {line}")
    print(f"  written by one only: {len(only)} ({', '.join(only) or '-'})")
    return 1 if differ or only else 0


if __name__ == "__main__":
    raise SystemExit(main())
