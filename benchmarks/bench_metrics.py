"""Speed and memory of tie-aware evaluation against pytrec_eval, ranx, ir_measures and a sort floor.

A synthetic bf16-quantised run: Q queries x N candidates, cosine-like scores ~ Normal(0.5, 0.1)
rounded to the bfloat16 grid (so scores tie heavily, as under bf16 scoring), graded relevance
0/1/2 with ~1% relevant candidates.  Measures: nDCG, RR, R, P, AP at k in {1, 10, 100} (15).

Everything is timed in one run with interleaved repetitions: repetition r = 1..R times every
contender once, in an order rotated by r, and each ratio is computed per repetition; the table
gives the median (min-max) over R of each ratio and the absolute medians in ms.

From arrays, at each size: ours (``evaluate_matrices``: expected, min, max and oblivious at
once) against pytrec_eval (evaluator built and run on prebuilt dicts; building the dicts is not
charged), ranx through its numba kernels on numpy arrays (building its (Q, N, 2) arrays and
sorting them charged; the JIT warm-up call excluded and reported apart; one numba thread by
default, as every other contender runs on one), ir_measures (``calc_aggregate`` on the same
prebuilt dicts; the providers it picked are printed) and the floor: one ``argpartition`` plus a
sort of the top-100 window (a plain row ``argsort`` when N <= 100), the least any sort-based
evaluator must do.  Targets: <= 2x the floor where N >= 1000, <= 4x elsewhere, faster than every
peer everywhere (medians of the ratios).

From TREC files (written once per size, untimed; every contender a fresh process, interleaved):
the ``mteb-stratified evaluate`` CLI (15 measures, ``--json``) against the parses of the same
two files to columns -- pandas' C engine (``sep=r"\\s+"``, every column to numpy, ids as Python
objects), pyarrow.csv (the same, every column ``to_numpy``) and pyarrow.csv with the ids left
as Arrow strings (numbers to numpy: the bare parse, the least reading these files costs) --
and against our parse alone (``read_judgments`` + ``read_run_arrays``: both files to the padded
arrays, what the CLI does before the kernel; "the rest" is the CLI minus it, per repetition).
Each contender's wall time and CPU seconds (user + system of the subprocess, all its threads:
steadier than wall time on a shared machine) are given, and their ratios to the fastest parse.
At ``--plain-size`` also a plain pytrec_eval script as a user writes it (``line.split()``,
``float``/``int``, nested dicts, ``RelevanceEvaluator``; printed in the output).  Goals: the CLI
<= 1.5x the fastest parse at 10k x 1,000 and <= 0.3x the plain script at 5,000 x 500.
``--cli-before TREE_OR_REV`` also times another version's CLI on the same files and checks that
its output is byte-identical.  Goals checked at 10k x 1,000 and at 100k x 100 (wall).

Start-up: ``mteb-stratified --help`` and ``evaluate --help`` wall time (``--start-repeats``
fresh processes, interleaved with ``python -c pass``; goal: --help under 100 ms), and
``import mteb_stratified`` (lazy) and ``from mteb_stratified import evaluate`` over a bare
interpreter.  Also the tracemalloc peak of ``evaluate_matrices`` as a multiple of the run's
arrays (scores float32 + relevance int8), and, so that a fast wrong run cannot look good, mean
nDCG@10 (oblivious) against pytrec_eval's within 1e-9, from arrays and from the file.

Subprocesses import ``mteb_stratified`` from this tree (``PYTHONPATH``), as the script itself
does when run as documented, ``PYTHONPATH=.`` from the checkout (else it says which copy it
imports); the CLI is the ``mteb-stratified`` console script next to the interpreter.

Run: ``PYTHONPATH=. python benchmarks/bench_metrics.py [--sizes 1000x100,10000x1000,100000x100]
[--repeats 5] [--file-sizes 5000x500,10000x1000] [--plain-size 5000x500]
[--parts arrays,files,start] [--cli-before REV] [--ranx-threads 1] [--quick]
| tee benchmarks/results/bench_metrics.txt``;
the file part alone: ``--parts files,start`` (``benchmarks/results/bench_metrics_file.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from _harness import ROOT, median_spread, print_command, tracemalloc_peak
from _harness import interleaved as harness_interleaved
from mteb_stratified import evaluate_matrices
try:  # core/ranking/ since #49; before_after.py also runs this script on earlier revisions
    from mteb_stratified.core.ranking.precision import round_to_bfloat16
except ModuleNotFoundError:  # the layout before #49 (core/precision.py)
    from mteb_stratified.core.precision import round_to_bfloat16

CUTOFFS = (1, 10, 100)
MEASURES = [f"{m}@{k}" for m in ("nDCG", "RR", "R", "P", "AP") for k in CUTOFFS]
CUT = ",".join(map(str, CUTOFFS))
# pytrec_eval has no RR@k: recip_rank is uncut (which favours it: one measure fewer).
PYTREC_NAMES = {f"ndcg_cut.{CUT}", f"P.{CUT}", f"recall.{CUT}", f"map_cut.{CUT}", "recip_rank"}
RANX_METRICS = [f"{m}@{k}" for m in ("ndcg", "mrr", "recall", "precision", "map") for k in CUTOFFS]
TOL = 1e-9

PANDAS_PARSE = """
import sys, pandas as pd
for path in sys.argv[1:]:
    df = pd.read_csv(path, sep=r"\\s+", header=None, engine="c")
    cols = [df[c].to_numpy() for c in df.columns]
"""
ARROW_PARSE = """
import sys
from pyarrow import csv
for path in sys.argv[1:]:
    t = csv.read_csv(path, read_options=csv.ReadOptions(autogenerate_column_names=True),
                     parse_options=csv.ParseOptions(delimiter=" "))
    cols = [c.to_numpy() for c in t.columns]
"""
# The bare parse: pyarrow's multi-threaded C reader, numbers to numpy, the ids left as Arrow
# strings (no Python object per id): the least a parse of these files to columns costs.
ARROW_COLUMNS = """
import sys
import pyarrow as pa
from pyarrow import csv
for path in sys.argv[1:]:
    t = csv.read_csv(path, read_options=csv.ReadOptions(autogenerate_column_names=True),
                     parse_options=csv.ParseOptions(delimiter=" "))
    cols = [c.to_numpy() for c in t.columns if not pa.types.is_string(c.type)]
"""
# What the CLI does before the kernel: both files parsed and joined into the padded arrays.
OUR_PARSE = """
import sys
from mteb_stratified.io.files import read_judgments, read_run_arrays
arrays, left_out = read_run_arrays(sys.argv[1], read_judgments(sys.argv[2]))
"""
# The reference script as a user writes it: line.split(), float/int, nested dicts, then
# pytrec_eval's RelevanceEvaluator with the measures named in a set literal.
PLAIN_PYTREC = """
import sys
import pytrec_eval

run, qrels = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, {MEASURES})
res = evaluator.evaluate(run)
print(repr(sum(v["ndcg_cut_10"] for v in res.values()) / len(res)))
""".replace("{MEASURES}", "{" + ", ".join(map(repr, sorted(PYTREC_NAMES))) + "}")


def make_run(q: int, n: int, seed: int = 0):
    """Scores on the bf16 grid (heavy ties) and int8 grades 0/1/2 with ~1% relevant."""
    rng = np.random.default_rng(seed)
    scores = round_to_bfloat16(rng.normal(0.5, 0.1, size=(q, n)).astype(np.float32))
    relevant = rng.random((q, n)) < 0.01
    grades = np.where(relevant, rng.integers(1, 3, size=(q, n)), 0).astype(np.int8)
    return scores, grades


def doc_ids(n: int) -> list[str]:
    """Zero-padded ids: their string order is the column order, so trec_eval's doc-id tie-break
    (descending) is the column-index rule ``evaluate_matrices`` uses without ``doc_ids``."""
    return [f"d{j:0{len(str(n - 1))}d}" for j in range(n)]


def to_dicts(scores, grades):
    """pytrec_eval dicts; a query without relevant documents gets one grade-0 judgment."""
    ids = doc_ids(scores.shape[1])
    run, qrels = {}, {}
    for i in range(scores.shape[0]):
        run[f"q{i}"] = dict(zip(ids, scores[i].tolist()))
        rel = np.flatnonzero(grades[i])
        qrels[f"q{i}"] = {ids[j]: int(grades[i, j]) for j in rel} or {ids[0]: 0}
    return run, qrels


# --- contenders from arrays: each takes the data dict and returns its result --------------------
def ours(d):
    return evaluate_matrices(d["scores"], d["grades"], MEASURES)


def pytrec(d):
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(d["qrels"], PYTREC_NAMES).evaluate(d["run"])


def ranx_numpy(d):
    """ranx's numba kernels on numpy: the run as (Q, N, [doc, score]), the qrels padded to
    (Q, M, [doc, grade]), both sorted descending by ranx's own kernel as ``ranx.evaluate`` wants."""
    import numba
    import ranx
    from ranx.utils import descending_sort_parallel

    scores, grades = d["scores"], d["grades"]
    q, n = scores.shape
    run = np.empty((q, n, 2))
    run[:, :, 0] = np.arange(n)
    run[:, :, 1] = scores
    rows, cols = np.nonzero(grades)
    counts = np.bincount(rows, minlength=q)
    pos = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    qrels = np.zeros((q, max(int(counts.max(initial=0)), 1), 2))
    qrels[:, :, 0] = -1
    qrels[rows, pos, 0] = cols
    qrels[rows, pos, 1] = grades[rows, cols]
    return ranx.evaluate(descending_sort_parallel(qrels), descending_sort_parallel(run),
                         RANX_METRICS, threads=numba.get_num_threads())


def ir_measures_calc(d):
    import ir_measures

    return ir_measures.calc_aggregate(d["irm"], d["qrels"], d["run"])


def sort_floor(d):
    scores = d["scores"]
    n = scores.shape[1]
    if n <= 100:
        return np.argsort(scores, axis=1)
    part = np.argpartition(scores, n - 100, axis=1)[:, n - 100:]
    return np.take_along_axis(part, np.argsort(np.take_along_axis(scores, part, 1), 1), 1)


def ir_measures_providers(measures) -> str:
    """Which ir_measures provider serves which measures (its fallback order, as it picks them)."""
    import ir_measures

    left, used = list(measures), []
    for provider in ir_measures.DefaultPipeline.providers:
        if left and provider.is_available():
            mine = [m for m in left if provider.supports(m)]
            left = [m for m in left if m not in mine]
            used += [f"{provider.NAME} ({len(mine)})"] if mine else []
    return ", ".join(used)


# --- timing ------------------------------------------------------------------------------------
def interleaved(contenders: dict, repeats: int, cpu: dict | None = None):
    """Seconds per contender per repetition (:func:`_harness.interleaved`, garbage collected
    before each call); last results.  With ``cpu`` (a dict), also the CPU seconds (user +
    system) of the subprocesses each contender ran (``RUSAGE_CHILDREN``), per repetition, into
    ``cpu``."""
    got = harness_interleaved(contenders, repeats, collect=True)
    if cpu is not None:
        cpu.update({k: np.array(v) for k, v in got.children_cpu.items()})
    return {k: np.array(v) for k, v in got.wall.items()}, got.results


def run_checked(cmd, env=None) -> subprocess.CompletedProcess:
    """Run ``cmd``; a failure stops the benchmark with the command and its stderr's tail."""
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd[:3])} ...\n{done.stderr[-2000:]}")
    return done


def subprocess_timer(cmd, env=None):
    """A contender that runs ``cmd`` in a fresh interpreter and returns its stdout."""
    return lambda: run_checked(cmd, env).stdout


def cell(ratios) -> str:
    return median_spread(ratios, ".2f", "-")


def table(title, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(title, *rows)]
    for line in (title, ["-" * w for w in widths], *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())


def parse_size(text: str) -> tuple[int, int]:
    q, n = text.lower().replace("_", "").replace("k", "000").split("x")
    return int(q), int(n)


# --- the three parts ---------------------------------------------------------------------------
def bench_arrays(sizes, repeats, ranx_threads):
    import ir_measures
    import numba

    numba.set_num_threads(ranx_threads or numba.config.NUMBA_NUM_THREADS)
    irm = [ir_measures.parse_measure(m) for m in MEASURES]
    print(f"ir_measures providers: {ir_measures_providers(irm)}; "
          f"ranx on {numba.get_num_threads()} numba thread(s)")
    peers = {"pytrec_eval": pytrec, "ranx (numpy)": ranx_numpy, "ir_measures": ir_measures_calc,
             "floor": sort_floor}
    out = []
    for q, n in sizes:
        scores, grades = make_run(q, n)
        t = time.perf_counter()
        run, qrels = to_dicts(scores, grades)
        d = {"scores": scores, "grades": grades, "run": run, "qrels": qrels, "irm": irm}
        t_dicts = time.perf_counter() - t
        t = time.perf_counter()
        ranx_numpy(d)
        t_jit = time.perf_counter() - t
        times, res = interleaved({k: partial(f, d) for k, f in {"ours": ours, **peers}.items()},
                                 repeats)
        del run, qrels, d["run"], d["qrels"]
        _, peak = tracemalloc_peak(evaluate_matrices, scores, grades, MEASURES)
        peak /= scores.nbytes + grades.nbytes
        ref = np.mean([v["ndcg_cut_10"] for v in res["pytrec_eval"].values()])
        diff = abs(res["ours"]["nDCG@10"].oblivious - ref)
        out.append({"size": f"{q}x{n}", "n": n, "times": times, "dicts": t_dicts, "jit": t_jit,
                    "peak": peak, "diff": diff,
                    "ratios": {k: times["ours"] / times[k] for k in peers}})
        print(f"  {q}x{n}: done ({np.mean([len(np.unique(r)) for r in scores[:200]]):.0f} "
              f"distinct scores per query of {n})", flush=True)
    return out


def write_trec(scores, grades, folder: Path):
    """The run as TREC ``qid Q0 docid rank score tag`` (descending score) and its qrels."""
    ids = doc_ids(scores.shape[1])
    order = np.argsort(-scores, axis=1, kind="stable")
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    with open(run_path, "w") as f:
        for i, row in enumerate(order):
            f.writelines(f"q{i} Q0 {ids[j]} {r} {float(scores[i, j])!r} bench\n"
                         for r, j in enumerate(row.tolist(), 1))
    with open(qrels_path, "w") as f:
        for i in range(len(grades)):
            rel = np.flatnonzero(grades[i]).tolist() or [0]
            f.writelines(f"q{i} 0 {ids[j]} {int(grades[i, j])}\n" for j in rel)
    return str(run_path), str(qrels_path)


def tree_of(spec: str | None) -> str | None:
    """A source tree for ``--cli-before``: a folder as it is, else a git revision of this
    repository exported and built (as before_after.py does)."""
    if spec is None or os.path.isdir(spec):
        return spec
    from before_after import export_revision

    return export_revision(spec, tempfile.mkdtemp(prefix="bench-before-") + "/rev")


def env_with(tree: str) -> dict:
    """The environment of a subprocess that imports ``mteb_stratified`` from ``tree``, its
    bytecode cached as an installed package's is (``PYTHONDONTWRITEBYTECODE`` dropped: else
    every run would compile the package anew, tens of ms)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def bench_file(size, repeats, plain: bool, before: str | None):
    """The CLI on a TREC run and its qrels against the parses of the same files, our parse
    alone (the CLI's arrays before the kernel) and, with ``plain``, the plain pytrec_eval
    script; every contender a fresh process, interleaved."""
    cli = str(Path(sys.executable).with_name("mteb-stratified"))
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        run, qrels = write_trec(*make_run(*size), Path(tmp))
        mib = os.path.getsize(run) / 2**20
        args = ["evaluate", "--qrels", qrels, "--run", run, "--measures", *MEASURES, "--json"]
        fns = {"cli": subprocess_timer([cli, *args], env_with(ROOT)),
               "our parse": subprocess_timer([py, "-c", OUR_PARSE, run, qrels], env_with(ROOT)),
               "pandas C": subprocess_timer([py, "-c", PANDAS_PARSE, run, qrels]),
               "pyarrow.csv": subprocess_timer([py, "-c", ARROW_PARSE, run, qrels]),
               "pyarrow.csv, ids as Arrow": subprocess_timer([py, "-c", ARROW_COLUMNS, run,
                                                              qrels])}
        if before:
            fns["cli before"] = subprocess_timer([cli, *args], env_with(before))
        if plain:
            fns["plain pytrec_eval"] = subprocess_timer([py, "-c", PLAIN_PYTREC, run, qrels])
        for fn in fns.values():  # untimed: the files in the page cache, bytecode compiled
            fn()
        cpu: dict = {}
        times, res = interleaved(fns, repeats, cpu)
    ours = json.loads(res["cli"])["measures"]["nDCG@10"]["oblivious"]
    diff = abs(ours - float(res["plain pytrec_eval"])) if plain else None
    same = before is None or res["cli before"] == res["cli"]
    times["the rest"] = times["cli"] - times["our parse"]
    cpu["the rest"] = cpu["cli"] - cpu["our parse"]
    return {"size": f"{size[0]}x{size[1]}", "times": times, "cpu": cpu, "diff": diff,
            "mib": mib, "same": same}


def bench_start(repeats: int, before: str | None):
    """Wall time of ``mteb-stratified --help`` and ``evaluate --help`` (fresh processes,
    interleaved with a bare ``python -c pass``), now and, with ``before``, before."""
    cli = str(Path(sys.executable).with_name("mteb-stratified"))
    fns = {"mteb-stratified --help": subprocess_timer([cli, "--help"], env_with(ROOT)),
           "mteb-stratified evaluate --help": subprocess_timer([cli, "evaluate", "--help"],
                                                               env_with(ROOT)),
           "python -c pass": subprocess_timer([sys.executable, "-c", "pass"])}
    if before:
        fns["before: mteb-stratified --help"] = subprocess_timer([cli, "--help"],
                                                                 env_with(before))
        fns["before: mteb-stratified evaluate --help"] = subprocess_timer(
            [cli, "evaluate", "--help"], env_with(before))
    for fn in fns.values():  # untimed: bytecode compiled and cached
        fn()
    times, _ = interleaved(fns, repeats)
    return times


def bench_import(repeats):
    """``import mteb_stratified`` (lazy: nothing loads) and ``from mteb_stratified import
    evaluate`` (numpy and the evaluation code), each over a bare interpreter."""
    env = env_with(ROOT)
    fns = {"import": subprocess_timer([sys.executable, "-c", "import mteb_stratified"], env),
           "evaluate": subprocess_timer([sys.executable, "-c",
                                         "from mteb_stratified import evaluate"], env),
           "pass": subprocess_timer([sys.executable, "-c", "pass"])}
    times, _ = interleaved(fns, max(repeats, 5))
    err = run_checked([sys.executable, "-X", "importtime", "-c",
                       "from mteb_stratified import evaluate"], env).stderr
    rows = [line.split("|") for line in err.splitlines() if line.startswith("import time:")][1:]
    top = sorted((int(r[0].split(":")[1]), r[2].strip()) for r in rows)[-5:][::-1]
    return (np.median(times["import"] - times["pass"]),
            np.median(times["evaluate"] - times["pass"]), top)


def print_file_table(f: dict, r: int) -> str:
    """One file size's table (wall and CPU seconds); returns the fastest parse (by wall)."""
    t, c = f["times"], f["cpu"]
    parses = ("pandas C", "pyarrow.csv", "pyarrow.csv, ids as Arrow")
    fastest = min(parses, key=lambda k: np.median(t[k]))
    print(f"\nfrom TREC files, {f['size']} (run file {f['mib']:.0f} MiB; subprocess wall "
          f"time and CPU seconds (user + system, all threads), median of R = {r}; ratios: "
          f"median (min-max) of the per-repetition ratio)")
    ours = ("cli", "our parse", "the rest", "cli before")
    rows = []
    for k, v in t.items():
        rows.append([k, f"{np.median(v) * 1e3:.0f}",
                     "" if k in ("cli", "the rest") else cell(t["cli"] / v),
                     cell(v / t[fastest]) if k in ours else "",
                     f"{np.median(c[k]) * 1e3:.0f}",
                     cell(c[k] / c[fastest]) if k in ours else ""])
    table(["contender", "wall ms", "cli / contender", "/ fastest parse", "CPU ms",
           "CPU / fastest parse's"], rows)
    print(f"  fastest parse: {fastest}; our parse = read_judgments + read_run_arrays (both "
          f"files to the padded arrays), the rest = cli - our parse (start, kernel, JSON)")
    return fastest


def print_files(files: list, start, r: int) -> list:
    """The file tables, the --help times and the checks of the file goals."""
    checks = []
    for f in files:
        t = f["times"]
        fastest = print_file_table(f, r)
        if not f["same"]:
            print("  !! the CLI's output differs from the --cli-before version's")
        if f["size"] in ("10000x1000", "100000x100"):
            checks.append((f"CLI <= 1.5x the fastest parse ({fastest}) at {f['size']} (wall)",
                           np.median(t["cli"] / t[fastest]) <= 1.5))
        if f["diff"] is not None:
            checks += [(f"CLI <= 0.3x the plain pytrec_eval script at {f['size']}",
                        np.median(t["cli"] / t["plain pytrec_eval"]) <= 0.3),
                       (f"CLI nDCG@10 oblivious = plain pytrec_eval's within {TOL:g} at "
                        f"{f['size']}", f["diff"] <= TOL)]
        if "cli before" in t:
            checks.append((f"CLI output unchanged from --cli-before at {f['size']}", f["same"]))
    if start is not None:
        runs = len(start["python -c pass"])
        print(f"\nstart-up (fresh processes, interleaved, median of {runs})")
        table(["command", "median ms", "min ms"],
              [[k, f"{np.median(v) * 1e3:.0f}", f"{v.min() * 1e3:.0f}"] for k, v in start.items()])
        checks.append(("mteb-stratified --help under 100 ms",
                       np.median(start["mteb-stratified --help"]) < 0.1))
    return checks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000x100,10000x1000,100000x100",
                    help="comma-separated QxN sizes (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved repetitions R")
    ap.add_argument("--file-sizes", default="5000x500,10000x1000",
                    help="QxN of the TREC file runs (default: %(default)s)")
    ap.add_argument("--plain-size", default="5000x500",
                    help="the file size at which the plain pytrec_eval script runs too "
                         "(default: %(default)s)")
    ap.add_argument("--parts", default="arrays,files,start",
                    help="what to run: arrays, files, start (default: %(default)s)")
    ap.add_argument("--cli-before", default=None, metavar="TREE_OR_REV",
                    help="also time the CLI of this source tree or git revision (and check "
                         "that its output is the same)")
    ap.add_argument("--start-repeats", type=int, default=20,
                    help="repetitions of the --help timing (default: %(default)s)")
    ap.add_argument("--ranx-threads", type=int, default=1,
                    help="numba threads for ranx (0: all cores; default 1, like the others)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: sizes 300x100,1000x1000,3000x100, file 500x200, R=3")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.file_sizes, args.repeats = "300x100,1000x1000,3000x100", "500x200", 3
        args.plain_size, args.start_repeats = "500x200", 5
    parts = set(args.parts.split(","))
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    r = args.repeats
    before = tree_of(args.cli_before)
    print_command()
    print(f"{len(MEASURES)} measures ({', '.join(MEASURES)}); bf16-grid scores; R = {r} "
          f"interleaved repetitions; cells: median (min-max) over R of the per-repetition ratio")
    import mteb_stratified

    here = os.path.realpath(mteb_stratified.__file__).startswith(os.path.realpath(ROOT) + os.sep)
    print(f"mteb_stratified from {'this tree' if here else mteb_stratified.__file__}" + (
        f"; --cli-before: {args.cli_before}" + (
            "" if os.path.isdir(args.cli_before) else " (exported and built in a temporary folder)")
        if before else ""))
    checks = []
    if "arrays" in parts:
        checks += print_arrays(bench_arrays(sizes, r, args.ranx_threads))
    if "files" in parts or "start" in parts:
        files = [bench_file(parse_size(s), r, parse_size(s) == parse_size(args.plain_size),
                            before) for s in args.file_sizes.split(",")] if "files" in parts else []
        start = bench_start(args.start_repeats, before) if "start" in parts else None
        if any(f["diff"] is not None for f in files):
            print("\nthe plain pytrec_eval script, as a user writes it:" +
                  "".join(f"\n    {line}" for line in PLAIN_PYTREC.strip().splitlines()))
        checks += print_files(files, start, r)
    imp, imp_eval, top = bench_import(r)
    print(f"\nimport mteb_stratified: {imp * 1e3:.0f} ms over a bare interpreter (lazy); from "
          f"mteb_stratified import evaluate: {imp_eval * 1e3:.0f} ms; largest self times (us): "
          + ", ".join(f"{name} {us}" for us, name in top))
    checks.append(("from mteb_stratified import evaluate under 0.3 s", imp_eval < 0.3))

    print("\ntargets")
    for text, ok in checks:
        print(f"  [{'met' if ok else 'NOT met'}] {text}")


def print_arrays(arrays: list) -> list:
    """The from-arrays table and the checks of its targets."""
    print("\nfrom arrays: ours / contender (< 1: ours faster); pytrec_eval and ir_measures from "
          "prebuilt dicts (dict building not charged), ranx charged its array build + sort")
    cols = [a["size"] for a in arrays]
    rows = [[f"ours / {k}", *[cell(a["ratios"][k]) for a in arrays]] for k in arrays[0]["ratios"]]
    rows += [[f"{k} ms", *[f"{np.median(a['times'][k]) * 1e3:.1f}" for a in arrays]]
             for k in arrays[0]["times"]]
    rows += [["dict building ms (not charged)", *[f"{a['dicts'] * 1e3:.0f}" for a in arrays]],
             ["ranx JIT warm-up call ms (excluded)", *[f"{a['jit'] * 1e3:.0f}" for a in arrays]],
             ["peak memory / run arrays", *[f"{a['peak']:.3f}" for a in arrays]],
             ["|nDCG@10 ours obl. - pytrec_eval|", *[f"{a['diff']:.1e}" for a in arrays]]]
    table(["contender", *cols], rows)
    checks = []
    for a in arrays:
        limit = 2 if a["n"] >= 1000 else 4
        checks.append((f"from arrays <= {limit}x the floor at {a['size']}",
                       np.median(a["ratios"]["floor"]) <= limit))
        checks.append((f"from arrays faster than every peer at {a['size']}",
                       all(np.median(a["ratios"][k]) < 1 for k in a["ratios"] if k != "floor")))
        checks.append((f"peak memory <= 0.41x the run's arrays at {a['size']}", a["peak"] <= 0.41))
        checks.append((f"nDCG@10 oblivious = pytrec_eval's within {TOL:g} at {a['size']}",
                       a["diff"] <= TOL))
    return checks


if __name__ == "__main__":
    main()
