"""Type I error, power and minimum detectable effect of every strata test, on real per-query
scores (issue #28).

    python benchmarks/strata_power.py --data mteb_stratified/data/nfcorpus --structure bundled \
        --split test --run BM25=bm25.test.trec --run MiniLM=minilm.test.trec --json OUT.json

For each grain (``--min-queries``, default ``50``, the default evaluated grain; 1 is the fine
clusters, where the split-half tests over 200 halves of some 80 strata take hours: give
``--split-half-draws 0`` there) the strata are the artifact's cluster tree cut
at that many queries (:mod:`mteb_stratified.stratification.grain`), and every test the strata
block reports is simulated on the runs' per-query nDCG@10 (:mod:`mteb_stratified.core.stats.power`),
for each pair of the two or more ``--run`` given (A given before B): the one-system
heterogeneity (omnibus and Westfall–Young max-|z| per stratum) and split-half tests (on B;
Type I also on A), and for the pair the max-|z| and omnibus paired heterogeneity tests, the
flip test, split-half of the differences and the per-stratum sign-flip tests.  k runs make
k(k-1)/2 studies (about 5 minutes each for NFCorpus test at the default draws on this 2-core
machine).  Run it with the package of this tree on the path (``PYTHONPATH=.``) to measure this
tree rather than an installed copy.

* Type I error: the share of ``--draws`` null draws (strata labels permuted among the queries)
  called significant at α = 0.05;
* power: the share of planted draws called significant, with a gap d = 0.05, 0.10, 0.20
  planted in B's scores in random strata holding 20% ± 5% (and 10% ± 2.5%) of the queries,
  redrawn per draw.  ``--planting headroom`` (the default) moves every planted query the same
  share of the way to the end of its range, so the realised gap is d and no score leaves
  [0, 1]; ``--planting clip`` adds d and clips at 1 (the harness before issue #45: the
  realised gap is smaller where queries sit at 1).  Each setting prints its realised gap;
* MDE: the gap at which power reaches 0.8, interpolated on d ∈ {0.025, 0.05, 0.075, 0.10,
  0.15, 0.20, 0.30, 0.40} (the points off the three effects with ``--grid-draws`` draws), in
  nominal and in realised units;
* the split-half tests average 200 random halves per labelling (as the report does), which
  costs 10× the other tests: they run ``--split-half-draws`` draws (default 400: a standard
  error of 0.011 on a Type I error near 0.05) at the three effects only, their MDE
  interpolated on those three points;
* ``--cut``: the evaluated strata's cut of the tree, ``even`` (the default: the most even
  strata of ≥ M queries the tree allows) or ``greedy`` (the bottom-up cut before issue #45).

``--structure bundled`` is the NFCorpus artifact shipped in the package (its test queries'
entities are bundled; other splits are extracted with the artifact's extractor).  The JSON
holds, per grain and test, ``type1_error``, ``power`` keyed by share then effect, and ``mde``
keyed by share: for the first pair at the top level (``a``, ``b``, ``grains``), and with three
or more runs for every pair under ``pairs``.  The runs of ``benchmarks/nfcorpus_runs.py`` are
the ones measured in the README.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from _harness import print_command


def _fmt(x, nd=3) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def load_strata(data_dir: str, structure: str, split: str):
    """(artifact, dataset, strata) for a BEIR folder and an artifact folder or ``bundled``."""
    from mteb_stratified.io import load_beir
    from mteb_stratified.stratification import strata_for_dataset
    from mteb_stratified.structure.artifact import StructureArtifact

    data = load_beir(data_dir, split)
    if structure == "bundled":
        from mteb_stratified.stratification.bundled import (load_query_entities,
                                                            query_entities_path)
        art = StructureArtifact.bundled("nfcorpus")
        art.check_corpus(data.corpus, source=data_dir)
        path = query_entities_path("nfcorpus", split)
        import os
        entities = load_query_entities(path) if os.path.exists(path) else None
        return art, data, strata_for_dataset(art, data, check_corpus=False,
                                             query_entities=entities)
    art = StructureArtifact.load(structure, corpus=data.corpus)
    return art, data, strata_for_dataset(art, data, check_corpus=False)


def parse_runs(specs, *, pair: str | None = None) -> list | None:
    """``[(name, path), ...]`` of two or more ``--run NAME=TREC`` options with distinct names
    (None: an error was printed).  ``pair``: exactly two are needed, and this says why."""
    runs = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            print(f"--run {spec!r}: give NAME=TREC_FILE", file=sys.stderr)
            return None
        if name in dict(runs):
            print(f"--run {name}: that name is given twice", file=sys.stderr)
            return None
        runs.append((name, path))
    if pair is not None and len(runs) != 2:
        print(f"give exactly two --run NAME=TREC_FILE (A, then B), not {len(runs)}: {pair}",
              file=sys.stderr)
        return None
    if len(runs) < 2:
        print("give two or more --run NAME=TREC_FILE (each pair is studied: gaps are planted "
              "in the later one)", file=sys.stderr)
        return None
    return runs


def per_query(data, strata, runs: list, measure: str) -> dict:
    from mteb_stratified.core import InputError
    from mteb_stratified.report import per_query_from_run

    out = {}
    qids = list(strata.queries)
    for name, path in runs:
        pq = per_query_from_run(data.qrels, path, measure)
        missing = [q for q in qids if q not in pq.queries]
        if missing:
            raise InputError(f"{len(missing)} stratified queries are not in the run's "
                             f"evaluation (e.g. {missing[:3]})", source=path,
                             fix="evaluate the run on the same split")
        out[name] = np.asarray(pq.subset(qids).column("expected"), dtype=np.float64)
    return out


def _grains(text: str) -> list[int]:
    """``--min-queries M[,M...]``: integers >= 1 (argparse's exit 2 with the range)."""
    try:
        grains = [int(m) for m in text.split(",")]
    except ValueError:
        grains = []
    if not grains or min(grains) < 1:
        raise argparse.ArgumentTypeError(f"give integers >= 1, comma-separated, got {text!r}")
    return grains


def _tests(text: str) -> tuple:
    """``--tests T[,T...]``: names of :data:`mteb_stratified.core.stats.power.TESTS`."""
    from mteb_stratified.core.stats.power import TESTS

    tests = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in tests if t not in TESTS]
    if not tests or bad:
        raise argparse.ArgumentTypeError(f"unknown test {bad[0] if bad else text!r}: use "
                                         f"{', '.join(TESTS)}")
    return tests


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus, queries, qrels)")
    ap.add_argument("--structure", default="bundled", help="artifact folder, or bundled")
    ap.add_argument("--split", default="test", help="evaluated split (default: test)")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=TREC",
                    help="a run; give two or more: every pair (A given before B) is studied, "
                         "gaps planted in B")
    ap.add_argument("--min-queries", type=_grains, default="50", metavar="M[,M...]",
                    help="grains: the tree cut at these minimum stratum sizes (default: 50; "
                         "at 1, the fine grain, add --split-half-draws 0: split-half over "
                         "200 halves of 80 strata takes hours)")
    ap.add_argument("--measure", default="nDCG@10")
    ap.add_argument("--draws", type=int, default=1000, help="draws per setting (default 1000)")
    ap.add_argument("--grid-draws", type=int, default=300,
                    help="draws per MDE grid point off the three effects (default 300)")
    ap.add_argument("--resamples", type=int, default=499,
                    help="permutations per test (default 499)")
    ap.add_argument("--split-half-draws", type=int, default=400,
                    help="draws of the split-half tests, at the three effects (default 400)")
    ap.add_argument("--planting", choices=("headroom", "clip"), default="headroom",
                    help="how a gap is planted (default headroom)")
    ap.add_argument("--direction", choices=("auto", "up", "down"), default="auto",
                    help="which way gaps are planted (default auto: where B has more room)")
    ap.add_argument("--cut", choices=("even", "greedy"), default="even",
                    help="the evaluated strata's cut of the tree (default even)")
    ap.add_argument("--tests", type=_tests, default=None, metavar="T[,T...]",
                    help="only these tests (default: all; e.g. paired_max_z)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)

    from mteb_stratified.core import InputError
    from mteb_stratified.stratification import evaluated_strata

    t0 = time.perf_counter()
    runs = parse_runs(args.run)
    if runs is None:
        return 2
    try:
        art, data, strata = load_strata(args.data, args.structure, args.split)
        vals = per_query(data, strata, runs, args.measure)
        labels = {m: evaluated_strata(strata, art, min_queries=m, cut=args.cut)
                  for m in args.min_queries}
        pairs = [(runs[i][0], runs[j][0]) for i in range(len(runs))
                 for j in range(i + 1, len(runs))]
        studies = [study_pair(vals, a, b, labels, args) for a, b in pairs]
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # the first pair at the top level (the JSON of two runs); every pair under "pairs"
    at_ends = {name: {"at_0": float(np.mean(v == 0.0)), "at_1": float(np.mean(v == 1.0)),
                      "mean": float(v.mean())} for name, v in vals.items()}
    out = {"data": args.data, "split": args.split, "structure": args.structure,
           "measure": args.measure, "runs": [name for name, _ in runs],
           "n_queries": strata.n_queries, "draws": args.draws, "grid_draws": args.grid_draws,
           "split_half_draws": args.split_half_draws, "resamples": args.resamples,
           "planting": args.planting, "cut": args.cut, "at_ends": at_ends, **studies[0],
           "pairs": studies if len(studies) > 1 else None,
           "seconds": round(time.perf_counter() - t0, 1)}
    print_command()
    print(f"# strata power: {args.data} {args.split}, {strata.n_queries} queries, "
          f"{len(runs)} runs ({len(pairs)} pairs), {args.draws} draws ({args.grid_draws} off "
          f"the three effects; split-half {args.split_half_draws}), {args.resamples} "
          f"permutations; gaps planted by {args.planting}; the {args.cut} cut")
    print("scores at the ends of [0, 1]: " + "; ".join(
        f"{n} {100 * e['at_0']:.1f}% at 0, {100 * e['at_1']:.1f}% at 1 (mean {e['mean']:.3f})"
        for n, e in at_ends.items()))
    for study in studies:
        print_pair(study)
    print(f"\n({out['seconds']} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


def study_pair(vals: dict, a_name: str, b_name: str, evaluated: dict, args) -> dict:
    """The power study of one pair at each grain: ``{"a", "b", "grains": {m: ...}}`` (the
    split-half tests with ``--split-half-draws`` draws at the three effects)."""
    from mteb_stratified.core.stats.power import TESTS, power_study

    split = ("split_half", "split_half_difference")
    chosen = args.tests or tuple(TESTS)
    out = {"a": a_name, "b": b_name, "grains": {}}
    for m, ev in evaluated.items():
        t = time.perf_counter()
        common = dict(n_resamples=args.resamples, seed=args.seed, planting=args.planting,
                      direction=args.direction)
        labels = ev.strata.primary.tolist()
        g = power_study(vals[a_name], vals[b_name], labels,
                        tests=tuple(x for x in chosen if x not in split),
                        n_draws=args.draws, grid_draws=args.grid_draws, **common).to_dict()
        halving = tuple(x for x in chosen if x in split)
        if args.split_half_draws and halving:
            halves = power_study(vals[a_name], vals[b_name], labels, tests=halving, grid=(),
                                 n_draws=args.split_half_draws, **common).to_dict()
            for name in halving:
                g["tests"][name] = dict(halves["tests"][name], draws=args.split_half_draws)
        g["tests"] = {name: g["tests"][name] for name in TESTS if name in g["tests"]}
        g["min_queries"] = m
        g["strata"] = [(s["name"], s["n"]) for s in ev.describe()["strata"]]
        g["seconds"] = round(time.perf_counter() - t, 1)
        out["grains"][str(m)] = g
    return out


def print_pair(study: dict) -> None:
    """One pair's table per grain: power at the nominal d with the realised gap beside it."""
    print(f"\n# A = {study['a']}, B = {study['b']} (gaps planted in B)")
    for m, g in study["grains"].items():
        sizes = g["strata_sizes"]
        print(f"\n## --min-queries {m}: {g['n_strata']} strata with queries (sizes "
              f"{sizes[:8]}{' …' if len(sizes) > 8 else ''}; {g['seconds']} s; gaps planted "
              f"{g['direction']})")
        print(f"{'test':<23} {'Type I':>7} {'(A)':>6}  power at nominal d = 0.05 / 0.10 / 0.20 "
              "(realised gap), 20% | 10% of queries;  MDE 20% / 10%, nominal (realised)")
        for t, r in g["tests"].items():
            cells = []
            for share in ("0.2", "0.1"):
                p, gap = r["power"][share], r["realised"].get(share, {})
                cells.append(" / ".join(f"{_fmt(p[e], 2)} ({_fmt(gap.get(e), 3)})"
                                        for e in ("0.05", "0.1", "0.2")))
            mde = " / ".join(f"{_fmt(r['mde'][s])} ({_fmt(r['mde_realised'].get(s))})"
                             for s in ("0.2", "0.1"))
            print(f"{t:<23} {r['type1_error']:7.3f} {_fmt(r['type1_error_a']):>6}  "
                  f"{cells[0]} | {cells[1]};  {mde}")


if __name__ == "__main__":
    raise SystemExit(main())
