"""``mteb-stratified generate``: coverage-aware query generation with LLM verification.

Writes an augmented BEIR dataset to ``--out`` (original + verified generated queries, marked by
``origin``; ``qrels/<split>.tsv``, ``qrels/original.tsv``, ``qrels/generated.tsv``), every
candidate with its verdict (``candidates.jsonl``) and the before/after coverage report
(``coverage.json``, ``coverage.md``).  LLM answers are cached in SQLite: rerun the same command
after a crash and it resumes without repeating a finished call, with the same output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..core import DEFAULT_N_MIN, InputError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("generate", help="generate verified queries for uncovered strata",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, metavar="DIR_OR_TASK",
                   help="BEIR folder (corpus, queries, qrels) or a bundled dataset (nfcorpus)")
    p.add_argument("--split", default="test", help="the original query set (default test)")
    p.add_argument("--structure", required=True,
                   help="structure artifact folder of the corpus ('bundled' for the bundled "
                        "NFCorpus structure)")
    p.add_argument("--budget", type=int, required=True,
                   help="LLM calls at most (writer + judge + verifier, cached ones included)")
    p.add_argument("--max-tokens-total", type=int, default=None, help="token budget")
    p.add_argument("--out", required=True, help="output folder (augmented BEIR dataset)")
    llm = p.add_argument_group("LLM endpoint (OpenAI-compatible: vLLM, OpenAI, "
                               "transformers serve, llama.cpp)")
    llm.add_argument("--base-url", default=None, help="endpoint (default $OPENAI_BASE_URL)")
    llm.add_argument("--model", default=None, help="model name (default $OPENAI_MODEL)")
    llm.add_argument("--api-key", default=None,
                     help="API key (default $OPENAI_API_KEY; any value for a local server)")
    llm.add_argument("--timeout", type=float, default=60.0, help="request timeout (s)")
    llm.add_argument("--max-retries", type=int, default=5, help="retries per request")
    llm.add_argument("--cache", default=None,
                     help="SQLite answer cache (default OUT/generate_cache.sqlite)")
    llm.add_argument("--price-in", type=float, default=0.0, help="USD per 1M prompt tokens")
    llm.add_argument("--price-out", type=float, default=0.0, help="USD per 1M completion tokens")
    g = p.add_argument_group("targets, seeds and pooling")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--n-min", type=int, default=DEFAULT_N_MIN,
                   help=f"queries a cluster needs (SCC; default {DEFAULT_N_MIN})")
    g.add_argument("--target-msc", type=float, default=0.9, help="stop at this MSC (default 0.9)")
    g.add_argument("--target-scc", type=float, default=0.5, help="stop at this SCC (default 0.5)")
    g.add_argument("--max-attempts", type=int, default=2, help="tries per target cell")
    g.add_argument("--n-seeds", type=int, default=2, help="seed documents per query")
    g.add_argument("--max-candidates", type=int, default=None,
                   help="stop after this many candidate queries (default: no limit)")
    g.add_argument("--pool-bm25", type=int, default=4, help="BM25 candidates per query")
    g.add_argument("--pool-dense", type=int, default=4, help="dense candidates per query")
    g.add_argument("--max-pool", type=int, default=8, help="documents judged per query")
    g.add_argument("--no-dense", action="store_true", help="pool with BM25 only")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..generation import (BudgetedCalls, CallCache, GenerationConfig, GenerationEndpoint,
                              LLMJudge, LLMQueryWriter, LLMVerifier, Pooler, generate_queries,
                              provenance_of, write_dataset)
    from ..io import load_beir
    from ..structure.artifact import StructureArtifact
    from .structure import _corpus_folder

    if args.budget < 1:
        raise InputError(f"--budget must be ≥ 1 LLM call, got {args.budget}",
                         fix="e.g. --budget 200 (each candidate query costs about "
                             "2 + --max-pool calls)")
    cfg = GenerationConfig(seed=args.seed, n_min=args.n_min, target_msc=args.target_msc,
                           target_scc=args.target_scc, max_attempts=args.max_attempts,
                           n_seeds=args.n_seeds, max_candidates=args.max_candidates)
    if args.structure == "bundled":
        artifact = StructureArtifact.bundled("nfcorpus")
    else:
        artifact = StructureArtifact.load(args.structure)
    folder = _corpus_folder(args.dataset)
    dataset = load_beir(folder, args.split)
    artifact.check_corpus(dataset.corpus, source=folder)
    endpoint = GenerationEndpoint(args.base_url, args.model, args.api_key, timeout=args.timeout,
                                  max_retries=args.max_retries, price_in=args.price_in,
                                  price_out=args.price_out)
    os.makedirs(args.out, exist_ok=True)
    cache = CallCache(args.cache or os.path.join(args.out, "generate_cache.sqlite"))
    bar = None
    if not args.no_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=args.budget, desc="generate (LLM calls)", unit="call")
    calls = BudgetedCalls(endpoint, cache, max_calls=args.budget,
                          max_tokens=args.max_tokens_total, progress=bar)
    writer, judge, verifier = LLMQueryWriter(calls), LLMJudge(calls), LLMVerifier(calls)
    pooler = Pooler(dataset.corpus, k_bm25=args.pool_bm25, k_dense=args.pool_dense,
                    max_pool=args.max_pool, dense=not args.no_dense,
                    model=artifact.metadata.get("parameters", {}).get("embedding_model"),
                    cache_dir=os.path.join(args.out, ".work"))
    try:
        result = generate_queries(dataset, artifact, writer=writer, judge=judge,
                                  verifier=verifier, pooler=pooler, config=cfg, calls=calls)
    finally:
        if bar is not None:
            bar.close()
        cache.close()
    write_dataset(args.out, dataset, result,
                  provenance=provenance_of(writer, judge, verifier, cfg, artifact))
    counts = result.counts()
    summary = {"out": args.out, "before": result.coverage_before, "after": result.coverage_after,
               "counts": counts, "stop_reason": result.stop_reason, "usage": result.usage}
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    b, a = result.coverage_before["cluster"], result.coverage_after["cluster"]
    print(f"{args.out}: {counts['accepted']} of {counts['generated']} candidates accepted "
          f"({counts['accepted_in_target_cell']} in their target cell); rejected by reason: "
          f"{counts['rejected_by_reason'] or '-'}")
    print(f"  MSC {b['msc']:.3f} → {a['msc']:.3f}, SCC {b['scc']:.3f} → {a['scc']:.3f} "
          f"(stop: {result.stop_reason})")
    u = result.usage
    print(f"  LLM calls {u['calls']} ({u['paid_calls']} sent, {u['cached_calls']} cached), "
          f"tokens {u['tokens']}, cost ${u['cost_usd']}")
    return 0
