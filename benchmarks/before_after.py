"""One benchmark script run against two versions of the package, side by side, in one run.

The script (the working tree's copy, so both versions run the same measurement) is run as a
fresh process with ``PYTHONPATH`` set to each version in turn, ``--repeats`` times, the order
rotated every repetition (before, after; after, before; ...) so drift of a shared machine falls
on both.  Every timing line of its output is parsed:

* ``label   1.23 s`` (``bench_stratify.py``): seconds;
* ``| ours, ms | 7.4 | 152.6 | ... |`` or ``ours ms  7.4  152.6 ...`` under a ``contender``
  header (``bench_metrics.py``): milliseconds per size;

and printed as before / after medians with the median and range of the per-repetition ratio
after / before (1.00: no change; above 1: slower now).

The "before" version (and, with ``--after``, the "after" one; else the working tree) is a git
revision of this repository, exported into a temporary folder
(``git archive``) with its compiled walk built there (``build_ext --inplace``, as ``.ci/run`` does): the
package it imports is checked to be that folder's, not an installed copy.

Run: ``python benchmarks/before_after.py --before a74bb1c [--repeats 3] -- \\
benchmarks/bench_stratify.py --queries 20000``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile

from _harness import ROOT, interleaved, median, median_spread, print_command, ratios

#: ``label   1.23 s``; not a target line (``[met] ... under 0.3 s``), which states a bound
_SECONDS = re.compile(r"^(?P<label>[^\s[].*?)\s+(?P<value>\d+(?:\.\d+)?) s$")
_OURS_MS = re.compile(r"^\|\s*ours, ms\s*\|(?P<cells>.*)\|\s*$")
_SIZES = re.compile(r"^\|\s*ours .*/ contender\s*\|(?P<cells>.*)\|\s*$")


def export_revision(rev: str, folder: str) -> str:
    """``rev`` of this repository as files in ``folder``, its C walk built in place."""
    os.makedirs(folder)
    archive = os.path.join(folder, "tree.tar")
    subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", "-o", archive, rev],
                   check=True)
    tree = os.path.join(folder, "tree")
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "build_ext",
                    "--inplace"], cwd=tree,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return tree


def _env(tree: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = tree
    return env


def check_import(tree: str) -> None:
    """The package a process with ``PYTHONPATH=tree`` imports is ``tree``'s."""
    out = subprocess.run([sys.executable, "-c", "import mteb_stratified as m; print(m.__file__)"],
                         env=_env(tree), capture_output=True, text=True, check=True, cwd=tree)
    got = os.path.realpath(out.stdout.strip())
    if not got.startswith(os.path.realpath(tree) + os.sep):
        raise SystemExit(f"PYTHONPATH={tree} imports {got}, not that tree's package")


def timings(text: str) -> dict:
    """``{label: value}`` of every timing line of a benchmark's output (module docstring)."""
    out, sizes = {}, None
    for line in text.splitlines():
        line = line.rstrip()
        words = line.split()
        if line.startswith("#"):             # a comment: the command line, a note
            continue
        if words[:1] == ["contender"]:        # bench_metrics' plain table: its sizes
            sizes = words[1:]
            continue
        if words[:2] == ["ours", "ms"]:
            for i, c in enumerate(words[2:]):
                out[f"ours, ms ({sizes[i] if sizes and i < len(sizes) else i})"] = float(c)
            continue
        if (m := _SIZES.match(line)):
            sizes = [c.strip() for c in m["cells"].split("|")]
        elif (m := _OURS_MS.match(line)):
            cells = [c.strip() for c in m["cells"].split("|")]
            for i, c in enumerate(cells):
                name = sizes[i] if sizes and i < len(sizes) else str(i)
                out[f"ours, ms ({name})"] = float(c)
        elif (m := _SECONDS.match(line.strip())):
            out[re.sub(r"\s+", " ", m["label"])] = float(m["value"])
    return out


def _contender(name: str, tree: str, script: list):
    """A contender for :func:`interleaved`: ``script`` over ``tree``'s package; its timings."""
    def run() -> dict:
        p = subprocess.run([sys.executable, *script], env=_env(tree), cwd=ROOT,
                           capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"{name} run failed ({p.returncode}):\n{p.stderr[-3000:]}")
        return timings(p.stdout)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV", help="git revision to compare")
    ap.add_argument("--after", default=None, metavar="REV",
                    help="git revision to compare it with (default: the working tree)")
    ap.add_argument("--repeats", type=int, default=3, metavar="R")
    ap.add_argument("script", nargs=argparse.REMAINDER,
                    help="-- SCRIPT [ARGS]: the benchmark and its arguments")
    args = ap.parse_args()
    script = [a for a in args.script if a != "--"] if args.script[:1] == ["--"] else args.script
    if not script or args.repeats < 1:
        ap.error("give --repeats ≥ 1 and -- SCRIPT [ARGS]")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": export_revision(args.before, os.path.join(tmp, "before")),
                 "after": (ROOT if args.after is None
                           else export_revision(args.after, os.path.join(tmp, "after")))}
        for tree in trees.values():
            check_import(tree)
        runs = {k: [] for k in trees}
        interleaved({name: _contender(name, trees[name], script) for name in trees}, args.repeats,
                    on_sample=lambda r, name, wall, cpu, got: runs[name].append(got))
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    after = args.after or f"{rev}{' + changes' if dirty else ''}"
    print_command()
    print(f"{' '.join(script)}: before {args.before}, after {after}"
          f"; {args.repeats} interleaved repetitions")
    print("| timing | before (median) | after (median) | after / before: median (range) |")
    print("|---|---|---|---|")
    for label in runs["after"][0]:
        b = [t.get(label) for t in runs["before"]]
        a = [t.get(label) for t in runs["after"]]
        if None in b:
            print(f"| {label} | – | {median(a):.3g} | – (not in before) |")
            continue
        ratio = median_spread(ratios(a, b), ".2f", "–")
        print(f"| {label} | {median(b):.3g} | {median(a):.3g} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
