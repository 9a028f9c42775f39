"""Offline coverage-aware generation on NFCorpus: one command, no server, no API key.

Runs ``mteb-stratified generate --dataset nfcorpus --structure bundled --out OUT --writer
template`` (the offline writer, judge and verifier; ``--seed``) in a fresh process and prints:

* MSC and SCC before and after (cluster level, the stratum rule), with the ceiling and targets;
* candidates, accepted and rejected counts by reason, and the wall time in minutes;
* ``--show`` accepted queries per J level, drawn with ``random.Random(--pick-seed)`` (not chosen
  by hand), as a Markdown table for the README.

    python benchmarks/generate_offline.py --out /tmp/gen-offline

The output folder is removed first unless ``--keep`` (its ``.work`` cache of name embeddings
makes a rerun faster; a fresh run is what the README reports).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

from _harness import ROOT, print_command


def picked(queries_path: str, k: int, seed: int) -> dict:
    """``{J level: [query rows]}``: ``k`` accepted queries per J level, drawn at random."""
    rows = [json.loads(line) for line in open(queries_path, encoding="utf-8")]
    by: dict = {}
    for r in rows:
        if r["origin"] == "generated":
            by.setdefault(r["metadata"]["target"][2], []).append(r)
    rng = random.Random(seed)
    return {j: rng.sample(v, min(k, len(v))) for j, v in sorted(by.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="gen-offline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--pick-seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--dataset", default="nfcorpus")
    ap.add_argument("--structure", default="bundled")
    args = ap.parse_args()
    if not args.keep and os.path.isdir(args.out):
        shutil.rmtree(args.out)
    cmd = [sys.executable, "-m", "mteb_stratified", "generate", "--dataset", args.dataset,
           "--structure", args.structure, "--out", args.out, "--seed", str(args.seed),
           "--writer", "template", "--no-progress"]
    print_command()
    print("$", " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT)
    wall = time.perf_counter() - t0
    if done.returncode:
        return done.returncode
    report = json.load(open(os.path.join(args.out, "coverage.json"), encoding="utf-8"))
    b, a, t = report["before"]["cluster"], report["after"]["cluster"], report["targets"]
    n = report["counts"]
    print(f"\nwall {wall / 60:.1f} min ({wall:.0f} s, start-up and name embeddings included)")
    print(f"MSC {b['msc']:.3f} → {a['msc']:.3f} ({a['covered']} of {a['weighted_units']} clusters; "
          f"ceiling {t['ceiling_msc']:.3f}, so {a['msc'] / t['ceiling_msc']:.3f} of it; target "
          f"{t['msc']:.3f})")
    print(f"SCC {b['scc']:.3f} → {a['scc']:.3f} (target {t['scc']:.3f}; every document a "
          f"query: {t['ceiling_scc_documents']:.3f})")
    print(f"candidates {n['generated']}: accepted {n['accepted']} "
          f"({n['accepted_in_target_cell']} in their target cell), rejected {n['rejected']} "
          f"{n['rejected_by_reason']}; stop: {report['stop_reason']}")
    print(f"\n{args.show} accepted queries per J level, random.Random({args.pick_seed}):\n")
    print("| J | query | target cell (cluster label, Δ) | seeds | qrels (rule) |")
    print("|---|---|---|---|---|")
    for j, rows in picked(os.path.join(args.out, "queries.jsonl"), args.show,
                          args.pick_seed).items():
        for r in rows:
            m = r["metadata"]
            rules = ", ".join(f"{d} ({rule})" for d, rule in sorted(m["qrel_rules"].items()))
            print(f"| {j} | {r['text']} | {m['target'][0]} {m['target_label']}, "
                  f"{m['target'][1]} | {len(m['seed_docs'])} | {rules} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
