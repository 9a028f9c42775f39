"""The topic map of a structure artifact: its leaves, their coverage, coherence and stability
(issue #44).

    PYTHONPATH=. python benchmarks/topic_map.py --structure bundled --data nfcorpus \\
        --seeds 5 --work /tmp/topic-map [--json OUT.json] [--set KEY=VALUE ...]

Prints, for the artifact (``bundled``: the NFCorpus one shipped in the package, or a folder)
and the BEIR data it was built on:

1. **leaves**: how many, in how many topics, their sizes (min, deciles, max) and the share of
   leaves and of documents in leaves of 10–100 documents;
2. **coverage at the leaves** for each judged split (test, dev): MSC, SCC (n_min 5), the share
   of leaves and of documents with no query, and the 10 heaviest untested leaves by their
   terms (a query's leaf is its primary cluster: the leaf holding most of its relevant
   documents, ties by the hash rule);
3. **coherence** at every level of the tree, from the artifact's ``quality``: the document-
   weighted NPMI of the units' terms and the grab-bag share, beside the same figures for the
   old labels (the top entities);
4. **seed stability** (``--seeds S`` > 0): the document map rebuilt with seeds 0 … S−1 (the
   document embeddings computed once and cached in ``--work``) and the adjusted Rand index of
   the documents' leaves, topics, and **evaluated strata** (the tree cut so that each stratum
   holds ≥ 50 queries, ``--min-queries``: what stratify and report estimate on) for each split's
   query counts, averaged over the S(S−1)/2 pairs of seeds.  The same for today's tree before
   this change (the topics as the finest level, Ward's linkage above them:
   :func:`mteb_stratified.structure.hierarchy.cluster_tree`), measured on the same builds.

Every choice of the map was made on the corpus and dev (docs/validity/topic-map.md); test's
figures are reported, never tuned on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

from _harness import print_command


def _artifact(spec: str, data: str):
    from mteb_stratified.io import dataset_folder, load_corpus
    from mteb_stratified.structure import StructureArtifact

    folder = dataset_folder(data)
    corpus = load_corpus(folder)
    art = (StructureArtifact.bundled("nfcorpus") if spec == "bundled"
           else StructureArtifact.load(spec, corpus=corpus))
    return art, corpus, folder


def _qrels(folder: str, split: str) -> dict:
    from mteb_stratified.io import load_beir

    return load_beir(folder, split, corpus=False).qrels


def _primary(qrels: dict, leaf_of: dict) -> np.ndarray:
    """Each query's primary leaf (core.stats.strata.stratify, cluster scheme)."""
    from mteb_stratified.core.stats.strata import stratify

    weights = {d: {int(c): 1.0} for d, c in leaf_of.items()}
    return stratify(qrels, weights, unknown_docs="skip").primary


def leaves_section(art) -> dict:
    sizes = np.array([int(c["n_docs"]) for c in art.clusters])
    ok = (sizes >= 10) & (sizes <= 100)
    meta = art.metadata.get("leaves", {})
    return {"leaves": int(sizes.size), "topics": meta.get("topics"),
            "sizes": {"min": int(sizes.min()), "p10": float(np.percentile(sizes, 10)),
                      "p25": float(np.percentile(sizes, 25)),
                      "median": float(np.median(sizes)),
                      "p75": float(np.percentile(sizes, 75)),
                      "p90": float(np.percentile(sizes, 90)), "max": int(sizes.max())},
            "share_of_leaves_10_100": float(ok.mean()),
            "share_of_docs_in_leaves_10_100": float(sizes[ok].sum() / sizes.sum())}


def coverage_section(art, folder: str, split: str) -> dict:
    from mteb_stratified.core.stats.coverage import cluster_coverage

    leaf_of = {d: max(w, key=w.get) for d, w in art.doc_cluster_weights.items() if w}
    primary = _primary(_qrels(folder, split), leaf_of)
    mass = np.array([art.cluster_mass.get(c, 0.0) for c in range(art.n_clusters)])
    cov = cluster_coverage(primary, mass, labels=art.cluster_labels)
    terms = {int(c["id"]): c["terms"] for c in art.clusters}
    docs = {int(c["id"]): int(c["n_docs"]) for c in art.clusters}
    gaps = [{"leaf": int(g.stratum), "docs": docs[int(g.stratum)], "mass": round(g.mass, 4),
             "terms": terms[int(g.stratum)]} for g in cov.gaps[:10]]
    return {"split": split, "queries": int(len(primary)), "msc": cov.msc, "scc": cov.scc,
            "untested_leaf_share": 1.0 - cov.msc, "untested_doc_share": cov.uncovered_mass,
            "untested_leaves": int(cov.weighted_units - cov.covered),
            "largest_untested": gaps}


def coherence_section(art) -> dict:
    q = art.metadata["quality"]
    return {lvl: {"units": f["n_units"], "npmi_terms": f["npmi_weighted"],
                  "grab_bag_terms": f["grab_bag_mass_share"],
                  "npmi_old_labels": f["entity_npmi_weighted"],
                  "grab_bag_old_labels": f["entity_grab_bag_mass_share"]}
            for lvl, f in q["levels"].items()}


def _pair_ari(parts: list) -> float:
    from mteb_stratified.structure.quality import adjusted_rand

    vals = [adjusted_rand(parts[i], parts[j]) for i in range(len(parts))
            for j in range(i + 1, len(parts))]
    return float(np.mean(vals))


def stability_section(art, corpus: dict, folder: str, seeds: int, work: str,
                      min_queries: int, overrides: dict | None = None) -> dict:
    from mteb_stratified.core.stats.hierarchy import cut_tree
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.structure.documents import cluster_documents, embed_documents_cached
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.hierarchy import cluster_tree
    from mteb_stratified.structure.pipeline import StructureConfig

    params = {k: v for k, v in art.metadata["parameters"].items()
              if k in {f.name for f in dataclasses.fields(StructureConfig)}}
    cfg = StructureConfig(**{**params, **(overrides or {})})
    texts = {d: doc_text(corpus[d]) for d in sorted(corpus)}
    os.makedirs(work, exist_ok=True)
    t = time.perf_counter()
    emb, _ = embed_documents_cached(texts, cfg, work, LocalEngine(progress=False))
    print(f"  document embeddings: {time.perf_counter() - t:.0f} s (cached in {work})",
          file=sys.stderr)
    qrels = {s: _qrels(folder, s) for s in ("dev", "test")}
    builds = []
    for seed in range(seeds):
        t = time.perf_counter()
        docs = cluster_documents(texts, cfg, emb, seed=seed)
        ward = cluster_tree(docs.topics, emb, docs.n_topics)     # today's tree
        builds.append((docs, ward))
        print(f"  seed {seed}: {docs.n_clusters} leaves, {docs.n_topics} topics "
              f"({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    ids = builds[0][0].doc_ids

    def evaluated(labels, tree, split):
        primary = _primary(qrels[split], dict(zip(ids, labels.tolist())))
        counts = np.bincount(primary, minlength=tree.n_clusters).astype(np.int64)
        cut = cut_tree(tree, counts, min_queries)
        return cut.stratum[labels], cut.n_strata

    out = {"seeds": seeds, "leaves": _pair_ari([d.labels for d, _ in builds]),
           "topics": _pair_ari([d.topics for d, _ in builds])}
    for split in ("dev", "test"):
        new = [evaluated(d.labels, d.tree, split) for d, _ in builds]
        old = [evaluated(d.topics, w, split) for d, w in builds]
        out[f"evaluated_{split}"] = {"new": _pair_ari([p for p, _ in new]),
                                     "new_strata": [n for _, n in new],
                                     "before": _pair_ari([p for p, _ in old]),
                                     "before_strata": [n for _, n in old]}
    for level in range(1, builds[0][0].tree.n_levels - 1):
        parts = [d.tree.ancestors(level)[d.labels] for d, _ in builds
                 if d.tree.n_levels > level + 1]
        out[f"level_{level}"] = {"units": int(parts[0].max()) + 1, "ari": _pair_ari(parts)}
    for level in range(1, builds[0][1].n_levels - 1):
        parts = [w.ancestors(level)[d.topics] for d, w in builds if w.n_levels > level + 1]
        out[f"before_level_{level}"] = {"units": int(parts[0].max()) + 1,
                                        "ari": _pair_ari(parts)}
    return out


def _setting(item: str) -> tuple:
    key, sep, value = item.partition("=")
    if not sep:
        raise SystemExit(f"--set takes KEY=VALUE, got {item!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--structure", default="bundled")
    p.add_argument("--data", default="nfcorpus", help="BEIR folder or bundled name")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--work", default=None, help="cache folder of the document embeddings")
    p.add_argument("--min-queries", type=int, default=50)
    p.add_argument("--json", default=None)
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                   help="settings of the seed builds that differ from the artifact's (a "
                        "StructureConfig field; the value read as JSON, else as text), e.g. "
                        "consensus_runs=10 leiden_backend=leidenalg")
    args = p.parse_args(argv)
    overrides = dict(_setting(item) for item in args.set)
    art, corpus, folder = _artifact(args.structure, args.data)
    out = {"leaves": leaves_section(art),
           "coverage": [coverage_section(art, folder, s) for s in ("test", "dev")],
           "coherence": coherence_section(art)}
    lv = out["leaves"]
    print_command()
    print(f"leaves: {lv['leaves']} in {lv['topics']} topics; documents per leaf "
          + ", ".join(f"{k} {v:g}" for k, v in lv["sizes"].items())
          + f"; {lv['share_of_leaves_10_100']:.1%} of leaves "
            f"({lv['share_of_docs_in_leaves_10_100']:.1%} of documents) hold 10-100")
    for c in out["coverage"]:
        print(f"coverage at the leaves, {c['split']} ({c['queries']} queries): MSC "
              f"{c['msc']:.3f}, SCC {c['scc']:.3f}; untested: {c['untested_leaves']} leaves "
              f"({c['untested_leaf_share']:.1%}), {c['untested_doc_share']:.1%} of documents")
        if c["split"] == "test":
            print("  the 10 heaviest untested leaves (leaf, documents, terms):")
            for g in c["largest_untested"]:
                print(f"    {g['leaf']:>4} {g['docs']:>4}  {', '.join(g['terms'][:6])}")
    print("coherence (document-weighted NPMI, grab-bag share): level, units, terms | old "
          "labels")
    for lvl, f in out["coherence"].items():
        print(f"  {lvl:>2} {f['units']:>4}  {f['npmi_terms']:+.3f} {f['grab_bag_terms']:.3f} | "
              f"{f['npmi_old_labels']:+.3f} {f['grab_bag_old_labels']:.3f}")
    if args.seeds > 1:
        work = args.work or os.path.join("/tmp", "topic-map-work")
        s = stability_section(art, corpus, folder, args.seeds, work, args.min_queries,
                              overrides)
        out["stability"] = s
        print(f"seed ARI over {args.seeds} seeds (mean of pairs): leaves {s['leaves']:.3f}, "
              f"topics {s['topics']:.3f}")
        for split in ("dev", "test"):
            e = s[f"evaluated_{split}"]
            print(f"  evaluated strata ({split} counts, >= {args.min_queries} queries): "
                  f"{e['new']:.3f} ({e['new_strata']} strata); before this change "
                  f"{e['before']:.3f} ({e['before_strata']})")
        print("  levels: " + ", ".join(f"{k[6:]}: {v['units']} units {v['ari']:.3f}"
                                       for k, v in s.items() if k.startswith("level_")))
        print("  before (Ward above the topics): " + ", ".join(
            f"{k[13:]}: {v['units']} units {v['ari']:.3f}" for k, v in s.items()
            if k.startswith("before_level_")))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
