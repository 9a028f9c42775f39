"""How much the gap between two runs varies across topics, and whether the bound on it holds
(issue #45): τ, the between-topic SD of the paired per-query gap, with its 95% upper bound
(:mod:`mteb_stratified.stratification.variation`), and the bound's coverage by simulation.

    python benchmarks/gap_variation.py --data mteb_stratified/data/nfcorpus --split test \
        --run BM25=bm25.test.trec --run MiniLM=minilm.test.trec --json OUT.json

For each grain (``--grains``: ``topics``, the map's level-1 units; ``strata``, the evaluated
strata at ``--min-queries``; ``leaves``) it fits the random-effects model to the real
per-query differences d = A − B of nDCG@10 and prints τ̂, the bound τ_u, σ̂ and μ̂.  Then the
coverage simulation, ``--reps`` draws per planted τ (``--taus``, default 0, 0.05, 0.10): the
group labels permuted among the queries (the real differences keep their non-normal,
bounded shape; the real between-group spread is broken up), u_g ~ N(0, τ²) drawn per group
and added to every difference of group g, the model refitted; coverage = the share of draws
whose bound τ_u ≥ τ (goal 0.93–0.97 at τ > 0; at τ = 0 every bound covers, so it is 1 by
construction and the mean bound is the figure to read).  The runs of
``benchmarks/nfcorpus_runs.py`` are the ones measured in docs/validity/strata-power.md.
About 0.4 s a draw at the topics grain, 0.07 s at the strata grain, on this 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from _harness import print_command


def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        vals = []
    if not vals or min(vals) < 0:
        raise argparse.ArgumentTypeError(f"give numbers >= 0, comma-separated, got {text!r}")
    return vals


def _grains(text: str) -> list[str]:
    grains = [g.strip() for g in text.split(",") if g.strip()]
    bad = [g for g in grains if g not in ("topics", "strata", "leaves")]
    if not grains or bad:
        raise argparse.ArgumentTypeError(f"give topics, strata and/or leaves, got {text!r}")
    return grains


def groups_of(grain: str, ev, artifact) -> np.ndarray:
    """Each evaluated query's group at ``grain`` (the evaluated order of ``ev``)."""
    from mteb_stratified.stratification.variation import topic_level

    if grain == "strata":
        return np.asarray(ev.strata.primary)
    if grain == "leaves":
        return np.asarray(ev.fine.primary)
    level = topic_level(artifact.cluster_tree)
    return artifact.cluster_tree.ancestors(level)[np.asarray(ev.fine.primary)]


def coverage(d: np.ndarray, groups: np.ndarray, taus, reps: int, seed: int) -> list[dict]:
    """The coverage simulation of the module docstring, one row per planted τ."""
    from mteb_stratified.stratification.variation import gap_variation

    rng = np.random.default_rng(seed)
    k = int(groups.max()) + 1
    rows = []
    for tau in taus:
        t0 = time.perf_counter()
        bounds, estimates, missing = [], [], 0
        for _ in range(reps):
            g = rng.permutation(groups)
            fit = gap_variation(d + rng.normal(0.0, tau, k)[g], g)
            if not fit.estimable or fit.tau_upper is None:
                missing += 1
                continue
            bounds.append(fit.tau_upper)
            estimates.append(fit.tau)
        b = np.asarray(bounds)
        rows.append({"tau": tau, "reps": reps, "not_estimable": missing,
                     "coverage": float(np.mean(b >= tau)) if b.size else None,
                     "coverage_se": float(np.sqrt(np.mean(b >= tau) * (1 - np.mean(b >= tau))
                                                  / b.size)) if b.size else None,
                     "mean_bound": float(b.mean()) if b.size else None,
                     "median_tau_hat": float(np.median(estimates)) if estimates else None,
                     "share_tau_hat_zero": float(np.mean(np.asarray(estimates) == 0))
                     if estimates else None,
                     "seconds": round(time.perf_counter() - t0, 1)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus, queries, qrels)")
    ap.add_argument("--structure", default="bundled", help="artifact folder, or bundled")
    ap.add_argument("--split", default="test", help="evaluated split (default: test)")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=TREC",
                    help="two runs: the gap is A − B (the first given minus the second)")
    ap.add_argument("--grains", type=_grains, default="topics,strata",
                    help="topics, strata and/or leaves (default: topics,strata)")
    ap.add_argument("--min-queries", type=int, default=50,
                    help="the evaluated strata's minimum size (default 50)")
    ap.add_argument("--measure", default="nDCG@10")
    ap.add_argument("--taus", type=_floats, default="0,0.05,0.10",
                    help="planted between-group SDs (default 0,0.05,0.10)")
    ap.add_argument("--reps", type=int, default=200, help="draws per planted τ (default 200: a "
                         "standard error of 0.015 on a coverage near 0.95)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)

    from strata_power import load_strata, parse_runs, per_query

    from mteb_stratified.core import InputError
    from mteb_stratified.stratification import evaluated_strata
    from mteb_stratified.stratification.variation import gap_variation

    t0 = time.perf_counter()
    runs = parse_runs(args.run, pair="the gap is the first minus the second")
    if runs is None:
        return 2
    try:
        art, data, strata = load_strata(args.data, args.structure, args.split)
        vals = per_query(data, strata, runs, args.measure)
        ev = evaluated_strata(strata, art, min_queries=args.min_queries)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    (a, _), (b, _) = runs
    d = vals[a] - vals[b]
    print_command()
    print(f"# gap variation: {args.data} {args.split}, {d.size} queries, {a} − {b} in "
          f"{args.measure} (mean {d.mean():+.4f})")
    out = {"data": args.data, "split": args.split, "structure": args.structure,
           "measure": args.measure, "a": a, "b": b, "n_queries": int(d.size),
           "reps": args.reps, "seed": args.seed, "grains": {}}
    for grain in args.grains:
        groups = groups_of(grain, ev, art)
        fit = gap_variation(d, groups)
        sizes = np.bincount(groups)
        sizes = sorted(sizes[sizes > 0].tolist(), reverse=True)
        print(f"\n## {grain}: {fit.n_groups} groups (sizes {sizes[:10]}"
              f"{' …' if len(sizes) > 10 else ''})")
        if not fit.estimable:
            print(f"not estimable: {fit.why}")
        else:
            bound = "none" if fit.tau_upper is None else f"{fit.tau_upper:.4f}"
            print(f"τ̂ = {fit.tau:.4f}, 95% upper bound {bound}; σ̂ = {fit.sigma:.4f}, "
                  f"μ̂ = {fit.mean:+.4f} (SE {fit.mean_se:.4f})"
                  + (f"; {fit.note or fit.why}" if fit.note or fit.why else ""))
        rows = coverage(d, groups, args.taus, args.reps, args.seed) if args.reps else []
        if rows:
            print(f"{'planted τ':>9} {'coverage':>9} {'(SE)':>7} {'mean bound':>11} "
                  f"{'median τ̂':>9} {'τ̂ = 0':>7} {'n/a':>4} {'s':>6}")
        for r in rows:
            if r["coverage"] is None:
                print(f"{r['tau']:9.3f}  no estimable draw of {r['reps']}")
                continue
            print(f"{r['tau']:9.3f} {r['coverage']:9.3f} {r['coverage_se']:7.3f} "
                  f"{r['mean_bound']:11.4f} {r['median_tau_hat']:9.4f} "
                  f"{r['share_tau_hat_zero']:7.2f} {r['not_estimable']:4d} {r['seconds']:6.1f}")
        out["grains"][grain] = {"fit": fit.to_dict(), "coverage": rows}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"\n({out['seconds']} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
