"""Do the strata carry signal, and is the map coherent?  The figures of issue #28 for a BEIR
folder, a structure artifact and two runs.

    python benchmarks/strata_validity.py --data mteb_stratified/data/nfcorpus --split dev \
        --structure DIR --run BM25=bm25.dev.trec --run MiniLM=minilm.dev.trec [--json OUT]

Prints, for the map: weighted NPMI of the clusters' top entities over the corpus documents,
the grab-bag mass share (clusters whose top entities co-occur no more than chance, NPMI ≤ 0),
the same for the cluster tree's level units, the seed ARI stored at build and the generic mass
share (0 by construction when generic phrases are not clustered); for the query set: MSC and
SCC with their ceiling and a random-document baseline, and the assignment reliability (entity
bootstrap; entity map only); at the evaluated grain (``--min-queries``, the tree cut): the
heterogeneity permutation test and split-half reliability of each run's nDCG@10 and of the
difference A − B (max-|z| and omnibus), against random strata of the same sizes; and J against
lexical containment: the partial Spearman correlation of J with each run's nDCG@10 given |rel|
and given |rel| and lexical containment, for J over entity names (exact) and over concepts
(entities matched at MiniLM cosine ≥ 0.8, the soft J).  ``--structure bundled`` is the
artifact in the package.  Structure build excluded; about a minute on NFCorpus on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from _harness import print_command


def _fmt(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus, queries, qrels)")
    ap.add_argument("--split", default="dev", help="evaluated split (default: dev)")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=TREC",
                    help="a run; give exactly two (A, then B)")
    ap.add_argument("--structure", default="bundled", help="artifact folder (default: bundled)")
    ap.add_argument("--min-queries", type=int, default=None,
                    help="the evaluated grain (default: the product's default)")
    ap.add_argument("--resamples", type=int, default=2000, help="permutations (default: 2000)")
    ap.add_argument("--bootstrap", type=int, default=20,
                    help="entity-bootstrap replicates (default: 20)")
    ap.add_argument("--n-min", type=int, default=5, help="SCC's n_min (default: 5)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    ap.add_argument("--json", default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)

    from strata_power import load_strata, parse_runs, per_query

    from mteb_stratified.core import Bins, InputError
    from mteb_stratified.core.stats.chance import (heterogeneity_test, paired_heterogeneity_test,
                                             split_half_reliability)
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.stratification import (DEFAULT_MIN_QUERIES, evaluated_strata,
                                                strata_for_dataset)
    from mteb_stratified.stratification.lexical import partial_spearman
    from mteb_stratified.stratification.validity import (assignment_reliability,
                                                         coverage_baselines)
    from mteb_stratified.stratification import cluster_weights
    from mteb_stratified.structure.quality import cluster_quality
    from mteb_stratified.structure.terms import term_counts

    t0 = time.perf_counter()
    # the figures are of one pair: refused rather than a pair picked
    runs = parse_runs(args.run, pair="the figures are of one pair; strata_power.py studies "
                                     "every pair of more")
    if runs is None:
        return 2
    m = DEFAULT_MIN_QUERIES if args.min_queries is None else args.min_queries
    try:
        art, data, strata = load_strata(args.data, args.structure, args.split)
        vals = per_query(data, strata, runs, "nDCG@10")
        ev = evaluated_strata(strata, art, min_queries=m)
        soft = strata_for_dataset(art, data, check_corpus=False, alignment="soft",
                                  bins=Bins(), query_entities=None if args.structure != "bundled"
                                  else _bundled_entities(args.split))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    weights = cluster_weights(art, data.corpus)
    mass = np.asarray([art.cluster_mass[c] for c in range(art.n_clusters)])
    texts = {d: doc_text(data.corpus[d]) for d in data.corpus}
    quality = cluster_quality(art.clusters, art.entities, art.doc_entities, texts,
                              term_counts=term_counts(texts), levels=art.cluster_levels)
    quality["seed_ari"] = art.metadata.get("quality", {}).get("seed_ari")
    quality.pop("heaviest", None)
    kind = art.metadata.get("clusters", "entities")
    reliability = (assignment_reliability(art, strata, data.qrels, weights,
                                          n_resamples=args.bootstrap, seed=args.seed)
                   if kind == "entities" else None)
    coverage = coverage_baselines(strata, weights, mass, n_min=args.n_min, seed=args.seed)
    labels = ev.strata.primary.tolist()
    (a_name, _), (b_name, _) = runs
    a, b = vals[a_name], vals[b_name]
    chance = {}
    for name, y in ((a_name, a), (b_name, b), (f"{a_name} − {b_name}", a - b)):
        het = heterogeneity_test(y, labels, n_resamples=args.resamples, seed=args.seed)
        sh = split_half_reliability(y, labels, seed=args.seed)
        chance[name] = {"omnibus_p": het.pvalue, "eta_squared": het.eta_squared,
                        "null_eta_squared": het.null_eta_squared, "split_half": sh.to_dict()}
    paired = paired_heterogeneity_test(a, b, labels, n_resamples=args.resamples, seed=args.seed)
    chance[f"{a_name} − {b_name}"]["max_z_p"] = paired.pvalue
    if list(soft.queries) != list(strata.queries):
        raise RuntimeError("the exact and soft strata stratified different queries")
    alignment = {}
    for jname, J in (("names", strata.alignment), ("concepts", soft.alignment)):
        alignment[jname] = {}
        for name, y in ((a_name, a), (b_name, b)):
            alignment[jname][name] = {
                "given_rel": partial_spearman(J, y, [strata.n_relevant]),
                "given_rel_and_lexical": partial_spearman(J, y, [strata.n_relevant,
                                                                 strata.lexical])}
    lexical = {name: partial_spearman(strata.lexical, y, [strata.n_relevant])
               for name, y in ((a_name, a), (b_name, b))}
    out = {"data": args.data, "split": args.split, "structure": args.structure, "map": kind,
           "n_queries": strata.n_queries, "n_clusters": art.n_clusters,
           "tree_levels": art.cluster_tree.n_levels, "min_queries": m,
           "grain": {"n_strata": ev.n_strata, "strata": [(s["name"], s["n"], s["label"])
                                                         for s in ev.describe()["strata"]]},
           "quality": quality, "assignment_reliability": reliability, "coverage": coverage,
           "chance": chance, "alignment_vs_lexical": alignment, "lexical": lexical,
           "seconds": round(time.perf_counter() - t0, 1)}

    print_command()
    print(f"# strata validity: {args.data} {args.split}, {strata.n_queries} queries, "
          f"{kind} map, {art.n_clusters} clusters, tree of {out['tree_levels']} levels")
    print(f"NPMI (weighted) {_fmt(quality['npmi_weighted'])}  grab-bag mass share "
          f"{_fmt(quality['grab_bag_mass_share'])}  seed ARI {_fmt(quality['seed_ari'])}  "
          f"generic mass share {_fmt(quality['generic_mass_share'])} (0 by construction when "
          "generic phrases are not clustered)")
    print("tree levels (units: NPMI weighted, grab-bag share): " + "; ".join(
        f"L{lvl} ({q['n_units']}): {_fmt(q['npmi_weighted'], 2)}, "
        f"{_fmt(q['grab_bag_mass_share'], 2)}" for lvl, q in quality["levels"].items()))
    if reliability:
        print(f"assignment reliability: cluster {_fmt(reliability['cluster'])} "
              f"({reliability['n_resamples']} entity bootstraps)")
    c = coverage
    print(f"MSC {_fmt(c['msc'])} (ceiling {_fmt(c['ceiling_msc'])}, random docs "
          f"{_fmt(c['random_msc'])})  SCC {_fmt(c['scc'])} (ceiling {_fmt(c['ceiling_scc'])}, "
          f"random docs {_fmt(c['random_scc'])})")
    print(f"evaluated grain: --min-queries {m}: {ev.n_strata} strata: " + "; ".join(
        f"{n} (n={k}) {lab}" for n, k, lab in out["grain"]["strata"]))
    for name, r in chance.items():
        sh = r["split_half"]
        extra = f"  max-|z| p={_fmt(r['max_z_p'])}" if "max_z_p" in r else ""
        print(f"{name:>16} nDCG@10 heterogeneity p={_fmt(r['omnibus_p'])}{extra}  split-half r "
              f"{_fmt(sh['r'])} vs random {_fmt(sh['null_r'])} p={_fmt(sh['p_value'])}")
    print("J against lexical containment: partial Spearman ρ with nDCG@10 given |rel| / given "
          "|rel| and lexical containment (p):")
    for jname, table in alignment.items():
        for name, r in table.items():
            g1, g2 = r["given_rel"], r["given_rel_and_lexical"]
            print(f"  J over {jname:<9} {name:>8}: {_fmt(g1['partial'], 2)} / "
                  f"{_fmt(g2['partial'], 2)} (p={_fmt(g2['p'], 4)}, n={g2['n']})")
    for name, r in lexical.items():
        print(f"  lexical containment {name:>8}: partial ρ given |rel| {_fmt(r['partial'], 2)}")
    print(f"({out['seconds']} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, default=float)
    return 0


def _bundled_entities(split: str):
    import os

    from mteb_stratified.stratification.bundled import load_query_entities, query_entities_path
    path = query_entities_path("nfcorpus", split)
    return load_query_entities(path) if os.path.exists(path) else None


if __name__ == "__main__":
    raise SystemExit(main())
