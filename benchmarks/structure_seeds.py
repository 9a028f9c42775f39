"""The document map's quality figures under each document embedding, over several Leiden seeds.

One build's NPMI and seed ARI move from seed to seed, so comparing two embeddings on one seed
each compares noise.  For each ``--method`` (``--document-embedding``: model, bf16, int8, static) and
seed 0 … S−1 this runs

    python -m mteb_stratified structure --corpus CORPUS -o WORK/METHOD-SEED --keep-work \\
        --no-progress --json --document-embedding METHOD --seed SEED

(seed 0 builds; each later seed starts from a copy of the previous one's work folder, so the
extraction checkpoint and the document embeddings are reused and only the clustering and what
follows it run again) and prints, per method, the mean and range over the seeds of the
artifact's clusters, weighted and median NPMI, grab-bag mass share and seed ARI (the artifact's
own, split-half), and the adjusted Rand index of the documents' partitions (each document's
heaviest cluster) between the seeds of the method (its own noise) and against every seed of the
first method (how far the embedding moves the map, to read against that noise), over all pairs
of seeds and at the same seed.  Then, for each method after the first, the differences from
the first paired by seed (method − first: each seed's value, their mean, SD and standard
error) and the ARI means unrounded (a rule that compares them needs more than three digits).

    python benchmarks/structure_seeds.py --corpus mteb_stratified/data/nfcorpus \\
        --method model bf16 int8 static --seeds 5 --work /tmp/seeds [--docs 5000]

``--docs N``: the corpus of ``bench_structure.py --docs N`` (:func:`structure_corpus.make_slice`).
Artifacts already in WORK are read, not rebuilt (delete WORK to start over).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from _harness import ROOT, portable_path, print_command
from structure_corpus import make_slice, partition_ari

KEYS = ("npmi_weighted", "npmi_median", "grab_bag_mass_share", "seed_ari")


def build(corpus: str, out: str, method: str, seed: int, previous: str | None) -> None:
    """One artifact in ``out`` (module docstring); nothing to do when it is there."""
    if os.path.exists(os.path.join(out, "metadata.json")):
        return
    if previous is not None and not os.path.exists(os.path.join(out, ".work")):
        shutil.copytree(os.path.join(previous, ".work"), os.path.join(out, ".work"))
    cmd = [sys.executable, "-m", "mteb_stratified", "structure", "--corpus", corpus, "-o", out,
           "--keep-work", "--no-progress", "--json", "--document-embedding", method,
           "--seed", str(seed)]
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"structure failed ({proc.returncode}): {proc.stderr[-2000:]}")


def quality(out: str) -> dict:
    with open(os.path.join(out, "metadata.json"), encoding="utf-8") as fh:
        return json.load(fh)["quality"]


def span(values) -> str:
    return f"{np.mean(values):+.3f} [{min(values):+.3f}, {max(values):+.3f}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="a BEIR folder")
    p.add_argument("--docs", type=int, default=None, metavar="N")
    p.add_argument("--method", nargs="+", default=["model", "int8", "static"],
                   choices=["model", "bf16", "int8", "static"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--work", required=True, help="where the artifacts are built and kept")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    corpus = make_slice(os.path.abspath(args.corpus), args.docs, os.path.join(args.work, "corpus"))
    seeds = range(args.seeds)
    print_command()
    print(f"# structure_seeds --corpus {portable_path(args.corpus)}"
          + (f" --docs {args.docs}" if args.docs else "")
          + f" --seeds {args.seeds}  ({time.strftime('%Y-%m-%d')}, cpus {os.cpu_count()})")
    print("mean [min, max] over the seeds; seed_ari: the artifact's own (split-half); ARI: of "
          "the documents' partitions")
    print(f"{'method':8s} {'clusters':>14s} " + " ".join(f"{k:>26s}" for k in KEYS)
          + f"   {'ARI between its seeds':>26s}   {'ARI with ' + args.method[0] + ', all pairs':>26s}"
          + "   same seed")
    first = args.method[0]
    paired = []
    for method in args.method:
        outs = [os.path.join(args.work, f"{method}-{s}") for s in seeds]
        for s, out in zip(seeds, outs):
            build(corpus, out, method, s, outs[s - 1] if s else None)
        q = [quality(o) for o in outs]
        within = [partition_ari(outs[a], outs[b])[0]
                  for a, b in itertools.combinations(range(len(outs)), 2)]
        across = same = ""
        if method != first:
            pairs = {(a, b): partition_ari(os.path.join(args.work, f"{first}-{a}"), o)[0]
                     for a in seeds for b, o in zip(seeds, outs)}
            across = span(list(pairs.values()))
            same = span([pairs[s, s] for s in seeds])
            paired.append((method, q, within, list(pairs.values())))
        clusters = [x["clusters"] for x in q]
        print(f"{method:8s} {np.mean(clusters):5.1f} [{min(clusters)}, {max(clusters)}] "
              + " ".join(f"{span([x[k] for x in q]):>26s}" for k in KEYS)
              + f"   {span(within) if within else 'n/a':>26s}   {across:>26s}   {same}")
        if method == first:
            base_q, base_within = q, within
    for method, q, within, across in paired:
        print(f"\n{method} - {first}, paired by seed (seeds 0-{len(q) - 1}): each seed, mean, SD, SE")
        for k in KEYS + ("clusters",):
            d = np.array([x[k] - b[k] for x, b in zip(q, base_q)], dtype=float)
            sd = d.std(ddof=1) if len(d) > 1 else float("nan")
            print(f"  {k:20s} {np.round(d, 3).tolist()}  mean {d.mean():+.4f}  SD {sd:.4f}  "
                  f"SE {sd / np.sqrt(len(d)):.4f}")
        print(f"  ARI means: {first} between its seeds {np.mean(base_within):.5f}; {method} "
              f"with {first}, all pairs {np.mean(across):.5f}; {method} between its seeds "
              f"{np.mean(within):.5f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
