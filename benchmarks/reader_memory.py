"""Peak memory of reading a large TREC run: streaming evaluate vs the dict path vs pytrec_eval.

Generates a run of ``--lines`` lines (``--docs`` per query, random scores rounded to 3
decimals so there are ties) and its qrels (10 judgments per query) in a temp folder, then runs
each job in its own subprocess and reports its peak RSS (``ru_maxrss`` after the job) minus the
peak of a baseline process with the same imports:

* ``stream-read``: ``read_run_arrays(run, qrels)`` (the streaming reader, into RankingArrays);
* ``stream-evaluate``: ``mteb_stratified.evaluate(qrels, run, ["nDCG@10"])`` from the files;
* ``stream-unsorted``: the same on the run with its first line moved to the end (one line out
  of order: its queries are no longer grouped, #46);
* ``dicts``: the old path, ``from_dicts(qrels, read_run(run))``;
* ``pytrec_eval``: the usual script, a plain Python parse into dicts and
  ``RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run)``;
* ``floor``: a plain numpy parse of the score and query columns (16 bytes a line).

Ratios are given against the size of the arrays (scores, grades, tie-break, qrels grades) and
against the file size.  Usage: ``python benchmarks/reader_memory.py [--lines 20000000]
[--jobs stream-evaluate,stream-unsorted]``.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from _harness import print_command, ru_maxrss_bytes

JOBS = ("baseline", "floor", "stream-read", "stream-evaluate", "stream-unsorted", "dicts",
        "pytrec_eval")


def generate(folder: str, lines: int, docs: int, seed: int = 0) -> tuple[str, str]:
    """A TREC run grouped by query (ties from 3-decimal scores) and its TREC qrels."""
    rng = np.random.default_rng(seed)
    queries = max(1, lines // docs)
    run, qrels = os.path.join(folder, "run.trec"), os.path.join(folder, "qrels.txt")
    with open(run, "w") as out, open(qrels, "w") as judged:
        for q in range(queries):
            ids = rng.choice(1_000_000, size=docs, replace=False)
            scores = np.sort(np.round(rng.random(docs), 3))[::-1]
            out.write("".join(f"q{q} Q0 d{d} {r} {s:.3f} bench\n"
                              for r, (d, s) in enumerate(zip(ids.tolist(), scores.tolist()), 1)))
            for d in ids[rng.choice(docs, size=10, replace=False)].tolist():
                judged.write(f"q{q} 0 d{d} {int(rng.integers(0, 3))}\n")
    return run, qrels


def job(name: str, run: str, qrels: str) -> dict:
    """Run one job in this process; return its own numbers."""
    import pytrec_eval

    import mteb_stratified
    from mteb_stratified.core import from_dicts
    from mteb_stratified.io import read_qrels, read_run
    from mteb_stratified.io.files import read_run_arrays

    out: dict = {}
    start = time.perf_counter()
    if name == "floor":
        codes: dict = {}
        qcol, scol = array.array("q"), array.array("d")
        with open(run, "rb") as fh:
            for line in fh:
                parts = line.split()
                qcol.append(codes.setdefault(parts[0], len(codes)))
                scol.append(float(parts[4]))
        q, s = np.frombuffer(qcol, dtype=np.int64), np.frombuffer(scol, dtype=np.float64)
        out["parsed"] = int(q.nbytes + s.nbytes)
    elif name == "stream-read":
        arrays, _ = read_run_arrays(run, read_qrels(qrels))
        out["arrays"] = int(sum(a.nbytes for a in (arrays.scores, arrays.grades, arrays.tiebreak,
                                                    arrays.n_candidates, arrays.qrels_grades)))
    elif name == "stream-evaluate":
        out["nDCG@10"] = mteb_stratified.evaluate(qrels, run, ["nDCG@10"])["nDCG@10"].expected
    elif name == "stream-unsorted":
        unsorted = run + ".unsorted"
        out["nDCG@10"] = mteb_stratified.evaluate(qrels, unsorted,
                                                  ["nDCG@10"])["nDCG@10"].expected
    elif name == "dicts":
        arrays, _ = from_dicts(read_qrels(qrels), read_run(run))
    elif name == "pytrec_eval":
        q_dict: dict = {}
        with open(qrels) as fh:
            for line in fh:
                qid, _, doc, grade = line.split()
                q_dict.setdefault(qid, {})[doc] = int(grade)
        r_dict: dict = {}
        with open(run) as fh:
            for line in fh:
                qid, _, doc, _, score, _ = line.split()
                r_dict.setdefault(qid, {})[doc] = float(score)
        pytrec_eval.RelevanceEvaluator(q_dict, {"ndcg_cut"}).evaluate(r_dict)
    out["wall_s"] = time.perf_counter() - start
    out["peak_bytes"] = ru_maxrss_bytes()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=20_000_000)
    p.add_argument("--docs", type=int, default=1000, help="documents per query")
    p.add_argument("--jobs", default=",".join(JOBS[1:]),
                   help="the jobs to run, comma-separated (default: all)")
    p.add_argument("--job", choices=JOBS, help=argparse.SUPPRESS)
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--qrels", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        print(json.dumps(job(args.job, args.run, args.qrels)))
        return
    print_command()
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        run, qrels = generate(folder, args.lines, args.docs)
        with open(run, "rb") as src, open(run + ".unsorted", "wb") as dst:
            first = src.readline()
            shutil.copyfileobj(src, dst)  # streamed: this process's peak is the children's
            dst.write(first)  # one line out of order (ru_maxrss carries over an exec)
        print(f"generated {args.lines:,} lines in {time.perf_counter() - t0:.0f} s")
        res = {}
        jobs = ["baseline"] + [j for j in args.jobs.split(",") if j in JOBS[1:]]
        for name in jobs:
            proc = subprocess.run([sys.executable, __file__, "--job", name, "--run", run,
                                   "--qrels", qrels], capture_output=True, text=True, check=True)
            res[name] = json.loads(proc.stdout)
        size = os.path.getsize(run)
    base = res["baseline"]["peak_bytes"]
    arrays = res.get("stream-read", {}).get("arrays", float("nan"))
    gib = 2.0**30
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}; {args.lines:,} lines, "
          f"{args.docs} docs/query")
    print(f"run file  {size / gib:7.3f} GiB")
    print(f"arrays    {arrays / gib:7.3f} GiB  (scores, grades, tie-break, qrels grades)")
    print(f"baseline  {base / gib:7.3f} GiB  (same imports, subtracted below)")
    if "stream-evaluate" in res and "stream-unsorted" in res:
        same = res["stream-evaluate"]["nDCG@10"] == res["stream-unsorted"]["nDCG@10"]
        print(f"nDCG@10 sorted and unsorted: {'the same' if same else 'DIFFERENT'}")
    print(f"\n{'job':<16}{'peak GiB':>10}{'peak/arrays':>13}{'peak/file':>11}{'wall s':>9}")
    for name in jobs[1:]:
        peak = res[name]["peak_bytes"] - base
        print(f"{name:<16}{peak / gib:10.3f}{peak / arrays:13.2f}{peak / size:11.2f}"
              f"{res[name]['wall_s']:9.1f}")


if __name__ == "__main__":
    main()
