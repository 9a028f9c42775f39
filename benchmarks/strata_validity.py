"""Do the strata carry signal?  Every figure of issue #14 for a BEIR folder and two runs.

    python benchmarks/strata_validity.py --data ../shared/data/nfcorpus --split test \
        --run BM25=bm25.test.trec --run MiniLM=minilm.test.trec [--structure DIR] [--json OUT]

Prints, for the structure: generic mass share, NPMI, seed ARI (stored at build), the 15
heaviest clusters; for the query set: assignment reliability (entity bootstrap), MSC and SCC
with their ceiling and random-document baseline; for each run and measure (nDCG@10, R@100):
the heterogeneity permutation test (η² against random strata of the same sizes), the split-half
reliability of the stratum means against random strata, per-stratum Holm-significant strata;
the flip test of the two runs against random strata; and the partial Spearman correlations of
Δ, J and lexical overlap with each measure given |rel|.  Structure build excluded, it finishes in
a few minutes on NFCorpus on 2 cores.  ``--structure`` defaults to the bundled NFCorpus artifact
(with its bundled test-query entities); any other folder extracts the query entities with the
artifact's own extractor.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _fmt(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def _load_legacy(folder: str):
    """A previous-format artifact, read as-is (its format line aside) for the before column."""
    import json as _json
    import os
    import shutil
    import tempfile

    from mteb_stratified.structure.artifact import ARTIFACT_FORMAT, StructureArtifact

    tmp = tempfile.mkdtemp(prefix="legacy-structure-")
    for name in os.listdir(folder):
        if name.endswith(".gz"):
            shutil.copyfile(os.path.join(folder, name), os.path.join(tmp, name))
    with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as fh:
        meta = _json.load(fh)
    meta["format"] = ARTIFACT_FORMAT
    meta["bins"] = {}
    with open(os.path.join(tmp, "metadata.json"), "w", encoding="utf-8") as fh:
        _json.dump(meta, fh)
    return StructureArtifact.load(tmp)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus, queries, qrels)")
    ap.add_argument("--split", default="test", help="evaluated split (default: test)")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=TREC",
                    help="a run to evaluate; give two")
    ap.add_argument("--structure", default=None, help="artifact folder (default: bundled)")
    ap.add_argument("--legacy", action="store_true",
                    help="--structure is an artifact of the previous format (1), read for a "
                         "before/after comparison: its clusters and stored weights are used, its "
                         "stored Δ/J cut-points (of the previous definitions) are not")
    ap.add_argument("--seed-structure", default=None, metavar="DIR",
                    help="the same corpus built with another seed: the seed ARI of the documents' "
                         "own strata is computed against it (default: the ARI stored at build)")
    ap.add_argument("--resamples", type=int, default=2000, help="permutations (default: 2000)")
    ap.add_argument("--bootstrap", type=int, default=50,
                    help="entity-bootstrap replicates (default: 50)")
    ap.add_argument("--n-min", type=int, default=5, help="SCC's n_min (default: 5)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    ap.add_argument("--json", default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)

    from mteb_stratified.core import InputError
    from mteb_stratified.core.chance import flip_test, heterogeneity_test, split_half_reliability
    from mteb_stratified.io import load_beir
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.report import per_query_from_run
    from mteb_stratified.stratification import strata_for_dataset
    from mteb_stratified.stratification.validity import (assignment_reliability,
                                                         coverage_baselines,
                                                         definition_candidates,
                                                         lexical_overlap,
                                                         partial_correlations)
    from mteb_stratified.stratification.weights import cluster_weights
    from mteb_stratified.structure.artifact import StructureArtifact
    from mteb_stratified.structure.quality import cluster_quality

    t0 = time.perf_counter()
    runs = []
    for spec in args.run:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            print(f"--run {spec!r}: give NAME=TREC_FILE", file=sys.stderr)
            return 2
        runs.append((name, path))
    if len(runs) != 2:
        print("give exactly two --run NAME=TREC_FILE", file=sys.stderr)
        return 2
    try:
        data = load_beir(args.data, args.split)
        if args.structure is None:
            from mteb_stratified.stratification.bundled import (load_query_entities,
                                                                query_entities_path)
            art = StructureArtifact.bundled("nfcorpus")
            art.check_corpus(data.corpus)
            q_ents = load_query_entities(query_entities_path("nfcorpus", args.split))
        else:
            art = (_load_legacy(args.structure) if args.legacy
                   else StructureArtifact.load(args.structure, corpus=data.corpus))
            qids0 = [q for q in data.qrels if q in data.queries]
            q_ents = dict(zip(qids0, art.extract_entities_batch([data.queries[q]
                                                                 for q in qids0])))
        strata = strata_for_dataset(art, data, query_entities=q_ents)
        weights = cluster_weights(art, data.corpus)
        mass = np.asarray([art.cluster_mass[c] for c in range(art.n_clusters)])
        texts = {d: doc_text(data.corpus[d]) for d in data.corpus}
        quality = cluster_quality(art.clusters, art.entities, art.doc_entities, texts)
        stored = art.metadata.get("quality", {})
        quality["seed_ari"] = stored.get("seed_ari")
        if args.seed_structure:
            from mteb_stratified.structure.quality import adjusted_rand
            other = (_load_legacy(args.seed_structure) if args.legacy
                     else StructureArtifact.load(args.seed_structure, corpus=data.corpus))
            own_a = weights.primary()
            own_b = cluster_weights(other, data.corpus).primary()
            both = (own_a >= 0) & (own_b >= 0)
            quality["seed_ari"] = adjusted_rand(own_a[both], own_b[both])
        qids = list(strata.queries)
        measures = {}
        for name, path in runs:
            measures[name] = {}
            for m in ("nDCG@10", "R@100"):
                pq = per_query_from_run(data.qrels, path, m)
                missing = [q for q in qids if q not in pq.queries]
                if missing:
                    raise InputError(f"{len(missing)} stratified queries are not in the run's "
                                     f"evaluation (e.g. {missing[:3]})", source=path,
                                     fix="evaluate the run on the same split")
                vals = pq.subset(qids).column("expected")
                measures[name][m] = np.asarray(vals, dtype=np.float64)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    canon_q = {q: {art.canonical(e) for e in q_ents[q]} for q in qids}
    canon_d = {d: {art.canonical(e) for e in es} for d, es in art.doc_entities.items()}
    candidates = definition_candidates(strata, data.qrels, weights, canon_q, canon_d)
    own_share = weights.primary_share()
    weight_l1 = float(np.abs(mass / max(mass.sum(), 1e-12) - own_share / max(own_share.sum(),
                                                                              1e-12)).sum())
    rel_count = np.array([sum(1 for g in data.qrels[q].values() if g >= strata.level)
                          for q in qids], dtype=np.float64)
    reliability = assignment_reliability(art, strata, data.qrels, weights,
                                         n_resamples=args.bootstrap, seed=args.seed)
    coverage = coverage_baselines(strata, weights, mass, n_min=args.n_min, seed=args.seed)
    lexical = lexical_overlap(data.queries, data.corpus, data.qrels, qids, strata.level)
    schemes = {"cluster": strata.codes("cluster").tolist(),
               "cell": strata.codes("cell").tolist()}
    chance: dict = {}
    for name in measures:
        chance[name] = {}
        for m, y in measures[name].items():
            chance[name][m] = {}
            for scheme, labels in schemes.items():
                het = heterogeneity_test(y, labels, n_resamples=args.resamples,
                                         seed=args.seed)
                sh = split_half_reliability(y, labels, seed=args.seed)
                chance[name][m][scheme] = {
                    "eta_squared": het.eta_squared, "null_eta_squared": het.null_eta_squared,
                    "null_eta_squared_95": het.null_eta_squared_95, "p_value": het.p_value,
                    "holm_significant_strata": len(het.differing_strata()),
                    "split_half": sh.to_dict()}
    (a_name, _), (b_name, _) = runs
    flips = {m: {scheme: flip_test(measures[a_name][m], measures[b_name][m], labels,
                                   seed=args.seed).to_dict()
                 for scheme, labels in schemes.items()} for m in ("nDCG@10", "R@100")}
    feats = {**candidates, "lexical overlap": lexical}
    partial = {name: {m: partial_correlations(feats, measures[name][m], rel_count)
                      for m in ("nDCG@10", "R@100")} for name in measures}
    j_vs_lex = partial_correlations({"J": strata.alignment}, lexical, rel_count)["J"]
    out = {"data": args.data, "split": args.split, "structure": args.structure or "bundled",
           "format": art.metadata.get("format"), "n_queries": strata.n_queries,
           "excluded": len(strata.excluded), "n_clusters": art.n_clusters,
           "quality": quality, "assignment_reliability": reliability, "coverage": coverage,
           "chance": chance, "flips": flips,
           "partial_correlations": partial,
           "j_vs_lexical": j_vs_lex, "weights_vs_assignment_l1": weight_l1,
           "delta_na": int(np.isnan(strata.dispersion).sum()),
           "j_na": int(np.isnan(strata.alignment).sum()),
           "seconds": round(time.perf_counter() - t0, 1)}

    print(f"# strata validity: {args.data} {args.split}, {strata.n_queries} queries "
          f"({len(strata.excluded)} excluded), {art.n_clusters} clusters")
    print(f"generic mass share {_fmt(quality['generic_mass_share'])}  NPMI (weighted) "
          f"{_fmt(quality['npmi_weighted'])}  seed ARI {_fmt(quality['seed_ari'])}")
    print(f"assignment reliability: cluster {_fmt(reliability['cluster'])}, cluster×Δ "
          f"{_fmt(reliability['cluster_delta'])} ({reliability['n_resamples']} replicates)")
    c = coverage
    print(f"MSC {_fmt(c['msc'])} (ceiling {_fmt(c['ceiling_msc'])}, random docs "
          f"{_fmt(c['random_msc'])})  SCC {_fmt(c['scc'])} (ceiling {_fmt(c['ceiling_scc'])}, "
          f"random docs {_fmt(c['random_scc'])})")
    print(f"Δ N/A (|rel| = 1): {out['delta_na']}   J N/A (no query entity): {out['j_na']}")
    print(f"L1(stratum weights, documents' own strata) = {weight_l1:.3f} (0: one rule)")
    for name in chance:
        for m in chance[name]:
            for scheme, r in chance[name][m].items():
                sh = r["split_half"]
                print(f"{name:>8} {m:<8} {scheme:<7} η² {_fmt(r['eta_squared'])} vs random "
                      f"{_fmt(r['null_eta_squared'])} (95% {_fmt(r['null_eta_squared_95'])}) "
                      f"p={_fmt(r['p_value'])}  split-half r {_fmt(sh['r'])} vs random "
                      f"{_fmt(sh['null_r'])} p={_fmt(sh['p_value'])}  Holm strata "
                      f"{r['holm_significant_strata']}")
    for m in flips:
        for scheme, f in flips[m].items():
            print(f"flips {a_name}−{b_name} {m:<8} {scheme:<7} {f['flips']}/{f['tested']} "
                  f"(random {_fmt(f['null_flip_rate'] * max(f['tested'], 1), 1)}), significant "
                  f"{f['significant_flips']} (random "
                  f"{_fmt(f['null_significant_rate'] * max(f['tested'], 1), 2)}) p={_fmt(f['p_value'])}")
    print("Spearman ρ with the measure, ρ with |rel|, partial ρ given |rel| (p):")
    for sys_name, table in out["partial_correlations"].items():
        for m, rows in table.items():
            for k, v in rows.items():
                print(f"  {sys_name:>8} {m:<8} {k:<22} ρ {_fmt(v['rho'], 2):>5}  ρ(|rel|) "
                      f"{_fmt(v['rho_rel'], 2):>5}  partial {_fmt(v['partial'], 2):>5} "
                      f"(p={_fmt(v['p_partial'])}, n={v['n']})")
    print(f"J vs lexical overlap: ρ {_fmt(j_vs_lex['rho'], 2)}")
    print("heaviest clusters (weight, NPMI, generic share, label):")
    for r in quality["heaviest"]:
        print(f"  {r['mass']:.3f}  {_fmt(r['npmi'], 2):>5}  {r['generic_share']:.1f}  "
              f"c{r['id']} {r['label']}")
    print(f"({out['seconds']} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
