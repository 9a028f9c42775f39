"""``benchmarks/_harness.py``: interleaved timing, its summaries, peak memory, the command line.

The harness is imported as the scripts import it: with ``benchmarks/`` first on ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import _harness

    return _harness


def test_interleaved_rotates_the_order_each_repetition(harness):
    calls = []
    names = ["a", "b", "c"]
    got = harness.interleaved({k: (lambda k=k: calls.append(k) or k.upper()) for k in names}, 4)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert {k: len(v) for k, v in got.wall.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(x >= 0 for v in (*got.wall.values(), *got.cpu.values()) for x in v)
    assert got.results == {"a": "A", "b": "B", "c": "C"}


def test_interleaved_prepares_untimed_and_reports_each_sample(harness):
    seen = []
    got = harness.interleaved({"x": lambda arg: arg * 2}, 2, prepare={"x": lambda: 21},
                              on_sample=lambda r, name, wall, cpu, res: seen.append((r, res)))
    assert seen == [(0, 42), (1, 42)] and got.results["x"] == 42


def test_interleaved_counts_the_cpu_of_subprocesses(harness):
    busy = [sys.executable, "-c", "s = 0\nfor i in range(3_000_000): s += i"]
    got = harness.interleaved({"child": lambda: subprocess.run(busy, check=True)}, 1)
    assert got.children_cpu["child"][0] > 0.01


def test_summaries(harness):
    assert harness.median([3.0, 1.0, 2.0, 10.0]) == 2.5
    assert harness.spread([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert harness.ratios([2.0, 3.0, 4.0], [1.0, 0.0, 2.0]) == [2.0, 2.0]
    assert harness.median_spread([1.0, 1.5, 3.0]) == "1.50 (1.00-3.00)"
    assert harness.median_spread([1.0, 3.0], ".1f", "–") == "2.0 (1.0–3.0)"
    assert harness.median_spread([]) == "–"


def test_peak_memory_ways(harness):
    assert harness.ru_maxrss_bytes() > 1 << 20
    assert harness.vm_hwm_bytes() >= harness.vm_rss_bytes() > 1 << 20
    _, peak = harness.tracemalloc_peak(bytearray, 8 << 20)
    assert 8 << 20 <= peak < 9 << 20


def test_machine_load(harness):
    load = harness.machine_load()
    assert set(load) <= {"loadavg_1m", "cpu_pressure_some_avg60"}
    assert harness.load_1m() >= 0 or harness.load_1m() != harness.load_1m()


def test_the_command_line_has_no_machine_path(harness):
    script = str(ROOT / "benchmarks" / "x.py")
    tmp = os.path.join(tempfile.gettempdir(), "run1", "a.trec")
    argv = [script, "--data", str(ROOT / "mteb_stratified" / "data" / "nfcorpus"),
            "--run", f"A={tmp}", "--corpus", "/somewhere/else/nfcorpus", "two words"]
    assert harness.command_line(argv) == (
        "python benchmarks/x.py --data mteb_stratified/data/nfcorpus --run A=CACHE/run1/a.trec "
        "--corpus PATH/nfcorpus 'two words'")


def test_print_command_prints_the_command_as_run():
    """As ``python gap_variation.py --reps 3`` run from ``benchmarks/`` would print it."""
    code = ("import sys; sys.argv = ['gap_variation.py', '--reps', '3']; "
            "import _harness; _harness.print_command()")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "benchmarks",
                         capture_output=True, text=True, timeout=60)
    assert out.stdout == "# command: python benchmarks/gap_variation.py --reps 3\n", out.stderr
