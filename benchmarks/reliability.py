"""The reliability tally for the README: bad inputs tried, and what the CLI made of each.

Runs every case of the bad-input catalogue (``tests/cli/bad_inputs.py``: malformed and
adversarial runs, qrels, JSON, gzip, MTEB results files, per-query CSVs, option values and
output paths) through ``mteb-stratified`` in-process, and classifies each outcome:

* clear error: exit 2, naming the file (and line) or the option, with a fix;
* correct: exit 0 and the number pytrec_eval gives on what the file means;
* unclear error, traceback, silently wrong: the failures (the test suite asserts there are none).

Each case's wall time and its peak memory above what the process held when it started (the
peak is reset before each case) are measured; the slowest refusal and the largest are printed.

Then the bounded cases (``BOUNDED``: ``/dev/zero``, FIFOs, gzip bombs, a line without end),
each run in a child process with its wall time and peak RSS printed next to its bounds (5 s,
200 MiB): a case is ``clear`` only within both.

Then the fault-injection suites (``--faults``, on by default): the test modules that inject
faults into the LLM endpoint, the answer cache, the output-folder lock and interrupted jobs,
and (#46) kill a save at every file operation, plant links in output folders, race writers on
one file (a row or strata block lost fails them), make folders unreadable and disks full, run
with pytest; a passed test is a fault survived.

Run: ``python benchmarks/reliability.py [--verbose] [--no-faults]``.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

from _harness import ROOT, print_command, reset_peak, vm_hwm_bytes, vm_rss_bytes

#: Test modules whose tests each inject one fault (a server error, a damaged file, a kill).
FAULT_SUITES = ("tests/llm/test_faults.py", "tests/llm/test_endpoint.py",
                "tests/llm/test_cache_damage.py", "tests/io/test_lock.py",
                "tests/structure/test_llm.py",
                # #46: kills at every file operation, planted links, racing writers (a lost
                # row or strata block fails them), unreadable folders, OS errors
                "tests/structure/test_artifact_atomic.py", "tests/io/test_outputs.py",
                "tests/io/test_nofollow.py", "tests/adapters/test_shared_writers.py",
                "tests/io/test_unreadable.py", "tests/cli/test_os_errors.py",
                "tests/io/test_unsorted_runs.py", "tests/io/test_one_reading.py")


def _catalogue():
    path = os.path.join(ROOT, "tests", "cli", "bad_inputs.py")
    spec = importlib.util.spec_from_file_location("bad_inputs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bad_inputs"] = module
    spec.loader.exec_module(module)
    return module


def run_catalogue(verbose: bool) -> collections.Counter:
    """Every case in this process; each one's wall time and its peak memory above the memory
    held when it started (the peak is reset before each case)."""
    cat = _catalogue()
    tally: collections.Counter = collections.Counter()
    by_finding: dict = collections.defaultdict(collections.Counter)
    worst: dict = {}  # "refusal" / "any" -> ((seconds, id), (MiB, id))
    t0 = time.perf_counter()
    for case in cat.CASES:
        reset_peak()
        before, t1 = vm_rss_bytes() / 2**20, time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            outcome, detail = cat.run_case(case, folder)
        seconds, rise = time.perf_counter() - t1, vm_hwm_bytes() / 2**20 - before
        for kind in ("refusal", "any") if outcome == "clear" else ("any",):
            (slow, big) = worst.get(kind, ((0.0, ""), (0.0, "")))
            worst[kind] = (max(slow, (seconds, case.id)), max(big, (rise, case.id)))
        tally[outcome] += 1
        by_finding[case.finding][outcome] += 1
        if verbose or outcome not in ("clear", "correct"):
            print(f"  {outcome:9s} {case.id}: {detail} ({seconds:.2f} s, +{rise:.0f} MiB)")
    print(f"bad inputs tried: {sum(tally.values())} ({time.perf_counter() - t0:.1f} s)")
    for name in ("clear", "correct", "unclear", "traceback", "wrong"):
        print(f"  {name:9s} {tally[name]}")
    for kind, label in (("refusal", "the slowest refusal"), ("any", "the slowest case")):
        if kind in worst:
            (seconds, slow), (mib, big) = worst[kind]
            print(f"  {label}: {slow} {seconds:.2f} s; the largest peak above the memory "
                  f"held before it: {big} +{mib:.0f} MiB")
    print("  (goal: every refusal < 5 s and < 200 MiB; the bounded cases below are measured "
          "in a child process, whole)")
    print("by finding:")
    for finding, counts in by_finding.items():
        print(f"  {sum(counts.values()):3d}  {finding}: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return tally


def run_bounded() -> collections.Counter:
    cat = _catalogue()
    tally: collections.Counter = collections.Counter()
    print("refused fast and small (child process: wall time, peak RSS; bounds per case):")
    for case in cat.BOUNDED:
        with tempfile.TemporaryDirectory() as folder:
            outcome, detail, seconds, rss = cat.run_bounded(case, folder)
        tally[outcome] += 1
        print(f"  {outcome:7s} {case.id:26s} {seconds:6.2f} s (<= {case.seconds:g}) "
              f"{rss:6.0f} MiB (<= {case.rss_mib:g})  was: {case.finding}")
        if outcome != "clear":
            print(f"          {detail}")
    return tally


def run_faults() -> None:
    print("faults injected (a passed test is a fault survived):")
    for suite in FAULT_SUITES:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--no-header", suite], cwd=ROOT, capture_output=True, text=True)
        last = [line for line in proc.stdout.splitlines() if line.strip()][-1:]
        print(f"  {suite}: {last[0] if last else proc.stderr[-300:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print every case")
    ap.add_argument("--no-faults", action="store_true", help="skip the fault-injection suites")
    args = ap.parse_args()
    print_command()
    # as CI runs it (.ci/run): a model missing from the local cache is not looked for online
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    tally = run_catalogue(args.verbose)
    bounded = run_bounded()
    if not args.no_faults:
        run_faults()
    bad = tally["unclear"] + tally["traceback"] + tally["wrong"]
    return 0 if bad == 0 and set(bounded) <= {"clear"} else 1


if __name__ == "__main__":
    sys.exit(main())
