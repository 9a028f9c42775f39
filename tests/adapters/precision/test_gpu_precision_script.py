"""benchmarks/gpu_precision.py: a clean skip without CUDA, and a --help that needs no model."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join("benchmarks", "gpu_precision.py")


@pytest.mark.cpu_only
def test_gpu_precision_benchmark_skips_cleanly_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the benchmark would run")
    default_json = os.path.join(ROOT, "benchmarks", "results", "gpu_precision_h200.json")
    before = os.stat(default_json).st_mtime_ns if os.path.exists(default_json) else None
    out = subprocess.run([sys.executable, SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "skipped" in out.stdout
    after = os.stat(default_json).st_mtime_ns if os.path.exists(default_json) else None
    assert after == before  # a skip writes no results


def test_gpu_precision_benchmark_help():
    out = subprocess.run([sys.executable, SCRIPT, "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "--json" in out.stdout
    assert "--max-queries" in out.stdout


def test_gpu_precision_tables_format_a_sweep_row():
    """The paper-style and timing tables, on a row of the sweep's JSON (no GPU needed)."""
    import dataclasses
    import importlib.util

    from mteb_stratified.adapters.precision.sweep import SweepRow

    spec = importlib.util.spec_from_file_location("gpu_precision", os.path.join(ROOT, SCRIPT))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    values = {f.name: 0.0 for f in dataclasses.fields(SweepRow)}
    values.update(model="m", regime="bf16+hps", queries=3, ndcg10_expected=0.31631,
                  ndcg10_range=0.000827, ndcg10_bias=-0.000366, rr10_expected=0.5058,
                  rr10_range=0.0036, rr10_bias=-0.0018, distinct_scores_per_query=3592.79,
                  tied_share_at_10=0.13, max_tie_group_at_100=2, peak_memory_mib=812.0,
                  metadata={"forward_s": 1.5, "score_s": 0.25})
    header, _, line = mod.paper_table([values]).splitlines()
    assert "nDCG@10 E[M] (%)" in header and "MRR@10 E[M] (%)" in header
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:8] == ["bf16+hps", "31.63", "0.08", "-0.04", "50.58", "0.36", "-0.18",
                         "3592.8"]
    timing = mod.timing_table([values]).splitlines()
    assert timing[2] == "| bf16+hps | 1.50 | 0.250 | 1.75 | 812 |"
    argv = mod.sweep_argv("OUT", max_queries=10)
    assert argv[argv.index("--rerank-queries") + 1] == "10"
    assert argv[argv.index("--max-queries") + 1] == "10"
    assert "--no-plot" in argv and "--quiet" in argv and "cuda" in argv
