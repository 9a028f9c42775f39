"""The validity gate of the three query sources on the bundled NFCorpus, side by side: real
queries selected from dev, the entity-template writer, and an LLM (the packaged
SmolLM2-135M-Instruct under ``transformers serve``, started here; or ``--base-url``).

    python benchmarks/gate_nfcorpus.py --out /tmp/gate-nf [--budget 100] [--max-candidates 10]

Each source is one ``mteb-stratified generate --dataset nfcorpus --structure bundled
--target-msc 1 --target-scc 0.95`` in a fresh process (the default targets are already met by
the test queries on the document map), into ``OUT/<source>``; the corpus embeddings of the
gate's MiniLM panel are computed by the first run and copied into the others' ``.work``.
Prints, per source, what the gate wrote to ``coverage.json``: the system means and
BM25 − MiniLM with p, Kendall τ, the judge's κ / precision / recall against the qrels, the
share of queries whose BM25 rank 1 is relevant, SCC after next to the trivial baseline, the
verdict and the wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _harness import ROOT, tests_helper


def _run(out: str, extra: list, seed_cache: str | None) -> float:
    shutil.rmtree(out, ignore_errors=True)
    if seed_cache:
        os.makedirs(os.path.join(out, ".work"), exist_ok=True)
        for f in os.listdir(seed_cache):
            if f.startswith("gate-doc-emb-"):
                shutil.copy(os.path.join(seed_cache, f), os.path.join(out, ".work"))
    cmd = [sys.executable, "-m", "mteb_stratified", "generate", "--dataset", "nfcorpus",
           "--structure", "bundled", "--out", out, "--target-msc", "1", "--target-scc", "0.95",
           "--no-progress", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if done.returncode:
        raise SystemExit(f"generate failed ({done.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - t0


def _row(name: str, out: str, wall: float) -> str:
    cov = json.load(open(os.path.join(out, "coverage.json"), encoding="utf-8"))
    g = cov["gate"]
    so, j, lb, b = g["system_order"], g["judge"], g["lexical_bias"], g["trivial_baseline"]
    parts = [f"{name:<9} added {g['added_queries']:>3}"]
    if so:
        p = so["pairs"][0]
        parts.append(f"BM25/MiniLM {so['mean_added']['BM25']:.3f}/"
                     f"{so['mean_added']['MiniLM']:.3f} (real {so['mean_real']['BM25']:.3f}/"
                     f"{so['mean_real']['MiniLM']:.3f}); BM25−MiniLM "
                     f"{p['added']['difference']:+.3f} (p {p['added']['p_value']:.2g}); "
                     f"τ {so['kendall_tau']:+.2f}")
    parts.append(f"κ {j['kappa']:.2f} (P {j['precision'] or 0:.2f}, R {j['recall'] or 0:.2f}, "
                 f"{j['pairs']} pairs)" if j.get("measured") else f"judge: {j['why']}")
    if lb["added"]:
        parts.append(f"BM25 rank 1 relevant {lb['added']['rank1_relevant']:.0%} (real "
                     f"{lb['original']['rank1_relevant']:.0%})")
    parts.append(f"SCC {cov['after']['cluster']['scc']:.3f} / baseline {b['scc']:.3f}")
    parts.append(f"{'passes' if g['passed'] else 'FAILS'}; {wall:.0f} s")
    return "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="root of the three output folders")
    ap.add_argument("--budget", type=int, default=100, help="LLM calls (default: 100)")
    ap.add_argument("--max-candidates", type=int, default=10,
                    help="LLM candidates, leaving budget for the gate's judge (default: 10)")
    ap.add_argument("--base-url", default=None, help="a running OpenAI-compatible server "
                    "(default: start the packaged SmolLM2)")
    ap.add_argument("--model", default=None, help="its model (with --base-url)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows, seed = [], None
    for name, extra in (("selected", []), ("template", ["--writer", "template"])):
        out = os.path.join(args.out, name)
        wall = _run(out, extra, seed)
        seed = seed or os.path.join(out, ".work")
        rows.append(_row(name, out, wall))
    with contextlib.ExitStack() as stack:
        if args.base_url is None:
            _smollm = tests_helper("structure/_smollm.py")  # the tests' SmolLM2 server
            logs = stack.enter_context(tempfile.TemporaryDirectory())
            url, model = stack.enter_context(_smollm.running_server(logs))
            url += "/v1"
        else:
            url, model = args.base_url, args.model
        out = os.path.join(args.out, "llm")
        wall = _run(out, ["--base-url", url, "--model", model, "--api-key", "none",
                          "--budget", str(args.budget), "--max-candidates",
                          str(args.max_candidates), "--max-pool", "4", "--pool-bm25", "2",
                          "--pool-dense", "0", "--timeout", "900"], seed)
        rows.append(_row("llm", out, wall))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
