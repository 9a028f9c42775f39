"""One cold ``mteb-stratified structure`` build of a corpus, its wall time and its steps' times.

    python benchmarks/structure_time.py --corpus ../shared/data/nfcorpus

Runs the command line's ``structure --corpus CORPUS -o TMP --no-progress --json`` in this
process (the package on ``PYTHONPATH``: run it under ``benchmarks/before_after.py`` to compare
two versions side by side, rotated), in a fresh temporary folder, so nothing is reused:
extraction, embeddings, Leiden, the tables and the quality figures all run.  Prints
``structure wall  T s`` and one ``step NAME  T s`` line per step of the build's own timings.

    python benchmarks/before_after.py --before d0ad057 --repeats 2 -- \\
        benchmarks/structure_time.py --corpus ../shared/data/nfcorpus
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time

from _harness import print_command


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True)
    args = p.parse_args(argv)
    from mteb_stratified.cli.main import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        out = io.StringIO()
        t = time.perf_counter()
        with contextlib.redirect_stdout(out):
            rc = cli(["structure", "--corpus", args.corpus, "-o", f"{tmp}/art",
                      "--no-progress", "--json"])
        wall = time.perf_counter() - t
    if rc:
        print(out.getvalue(), file=sys.stderr)
        return rc
    summary = json.loads(out.getvalue())
    print_command()
    print(f"structure wall  {wall:.2f} s")
    for step, seconds in summary["timings_s"].items():
        print(f"step {step}  {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
