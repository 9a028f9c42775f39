"""Coverage-aware generation on NFCorpus with a real local LLM: MSC/SCC before and after, counts
by rejection reason, accepted queries in their target cell, calls, tokens and wall time.

Start an OpenAI-compatible server first, e.g. the packaged SmolLM2-135M-Instruct:

    MODEL=$(python tests/structure/_smollm.py)      # dequantises the GGUF once, prints the folder
    transformers serve "$MODEL" --host 127.0.0.1 --port 8765 --device cpu &

then run (the README figures: ``--budget 150 --seed 0``):

    python benchmarks/generate_nfcorpus.py --base-url http://127.0.0.1:8765/v1 \
        --model "$MODEL" --budget 150 --out /tmp/gen-nf

It runs ``mteb-stratified generate --dataset nfcorpus --structure bundled`` and prints
``coverage.md``.  Rerunning with the same ``--out`` answers every call from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="gen-nfcorpus")
    args = ap.parse_args()
    from mteb_stratified.cli.main import main as cli
    t0 = time.perf_counter()
    code = cli(["generate", "--dataset", "nfcorpus", "--structure", "bundled", "--budget",
                str(args.budget), "--seed", str(args.seed), "--base-url", args.base_url,
                "--model", args.model, "--api-key", "none", "--out", args.out, "--no-progress"])
    if code:
        return code
    wall = time.perf_counter() - t0
    print(open(os.path.join(args.out, "coverage.md")).read())
    report = json.load(open(os.path.join(args.out, "coverage.json")))
    u = report["usage"]
    print(f"wall {wall:.0f} s; {u['paid_calls']} calls sent "
          f"({wall / max(u['paid_calls'], 1):.1f} s per call incl. start-up), "
          f"{len(report['infeasible_cells'])} cells skipped as infeasible")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
