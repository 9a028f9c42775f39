"""NFCorpus stratified figures: coverage of the test queries, gaps, per-stratum nDCG@10 of the
packaged MiniLM and of BM25 with CIs, and whether their order flips between aggregations.

    python benchmarks/nfcorpus_strata.py \
        --minilm /tmp/full/fp32/pred/StratifiedNFCorpus_per_query.csv --out /tmp/nfcorpus-strata

``--minilm``: the per-query CSV of a full ``StratifiedNFCorpus`` run of the packaged
all-MiniLM-L6-v2 (``mteb-stratified mteb run ... --prediction-folder``).  BM25 is run here (bm25s,
as ``mteb-stratified demo``, float32 scores, missing queries scored 0).  Structure: the bundled
offline artifact; bins: corpus-fixed (see ``mteb_stratified.stratification.dataset``).  Writes
``report.html``, ``report.md`` and ``summary.json`` to ``--out`` and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from _harness import print_command


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minilm", required=True, help="per-query CSV of the MiniLM run")
    ap.add_argument("--out", default="nfcorpus-strata")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-min", type=int, default=5)
    args = ap.parse_args()
    print_command()

    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io import bundled_path, load_beir, write_run
    from mteb_stratified.report import (build_report, per_query_from_run, read_per_query_csv,
                                        to_markdown, write_html)
    from mteb_stratified.stratification import (stability_summary, strata_for_dataset,
                                                stratified_summary)
    from mteb_stratified.structure.artifact import StructureArtifact

    t0 = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    art = StructureArtifact.bundled("nfcorpus")
    data = load_beir(bundled_path("nfcorpus"), "test")
    strata = strata_for_dataset(art, data)
    run, _ = bm25_run(data.corpus, data.queries, depth=1000)
    run_path = os.path.join(args.out, "bm25.fp32.trec")
    write_run(run, run_path, tag="bm25-fp32")
    systems = {"MiniLM-L6-v2 (fp32)": read_per_query_csv(args.minilm, "nDCG@10", split="test"),
               "BM25": per_query_from_run(data.qrels, run_path, "nDCG@10")}
    summaries = {n: stratified_summary(v, strata, art, n_min=args.n_min,
                                       n_resamples=args.resamples, seed=args.seed)
                 for n, v in systems.items()}
    stability = stability_summary(systems, strata, art)
    report = build_report(summaries, stability,
                          title="NFCorpus test: stratified nDCG@10 (bundled offline structure)")
    write_html(report, os.path.join(args.out, "report.html"))
    md = to_markdown(report)
    with open(os.path.join(args.out, "report.md"), "w", encoding="utf-8") as fh:
        fh.write(md)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump({"title": report.title,
                   "systems": {n: b.to_dict() for n, b in summaries.items()},
                   "stability": stability.to_dict(),
                   "pairs": report.pairs and report.pairs.to_dict(),  # None here: no pairs
                   "query_sets": report.query_sets and dict(report.query_sets)}, fh, indent=1)
    print(md)
    print(f"bins: {strata.bins}")
    print(f"({time.perf_counter() - t0:.1f}s; files in {args.out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
