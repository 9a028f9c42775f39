"""mteb-stratified generate: fill the strata a query set leaves empty, real judged queries first.

--writer select (the default without --base-url): real queries with human qrels from held-back
splits of the same corpus (--pool-splits, default every judged split but --split: dev, and
train where it exists), chosen to fill the uncovered strata; nothing synthetic, no network.
--writer template: the offline entity-template writer, judge and verifier (a pipeline smoke
test, labelled so in its output, not evaluation data). With --base-url (--writer llm), an
OpenAI-compatible LLM writes, judges and verifies queries (--budget calls at most,
--concurrency requests in flight).

Writes a BEIR folder to -o/--out: every original split as it was (qrels copied byte for byte)
and the verified generated queries in a split of their own, "generated" (qrels/generated.tsv;
queries.jsonl marks each query's "origin"), every candidate with its verdict (candidates.jsonl)
and the before/after coverage report (coverage.json, coverage.md). Generated queries never
enter an original split unless --merge-into-split says so (and stratify and report still set
them apart). LLM answers are cached in SQLite: rerun the same
command after a crash and it resumes without repeating a finished call, with the same output.
Needs the [bm25] and [structure] extras, and [llm] for --base-url.
"""

from __future__ import annotations

import argparse
import os

from ..core import DEFAULT_N_MIN, InputError
from ..core.rng import MAX_SEED
from ..generation.config import DEFAULT_MSC_SHARE
from . import summary
from ._args import (HelpFormatter, add_embedding_cache, add_llm_endpoint, float_in, int_at_least,
                    print_json)
from ._strata_args import endpoint_settings, notify


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("generate", help=summary(__name__),
                              description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--dataset", required=True, metavar="DIR_OR_TASK",
                   help="BEIR folder (corpus, queries, qrels) or a bundled dataset (nfcorpus)")
    p.add_argument("--split", default="test",
                   help="the original query set (default: test)")
    p.add_argument("--writer", choices=("select", "template", "llm"), default=None,
                   help="select: real judged queries from --pool-splits; template: the offline "
                        "entity-template writer (a smoke test); llm: the --base-url model "
                        "(default: llm with --base-url, else select)")
    p.add_argument("--run", action="append", default=[], metavar="NAME=FILE",
                   help="another system for the validity gate's panel (BM25 and the packaged "
                        "MiniLM are always in it): a TREC or JSON run over the original queries "
                        "and the added ones (a run with none of the added queries, e.g. made "
                        "before the generation, is left out of the panel with a note; a query "
                        "it lacks counts as an empty ranking; repeatable; default: none, the "
                        "panel is BM25 and MiniLM)")
    p.add_argument("--pool-splits", default=None, metavar="SPLIT[,SPLIT]",
                   help="--writer select: the splits to select from (default: every judged "
                        "split but --split; a train split favours models fine-tuned on it, "
                        "and the command says so)")
    p.add_argument("--structure", required=True, metavar="DIR",
                   help="structure artifact folder of the corpus ('bundled' for the bundled "
                        "NFCorpus structure)")
    p.add_argument("--budget", type=int_at_least(1), default=None, metavar="CALLS",
                   help="LLM calls at most, required with --base-url: requests sent (writer, "
                        "judge, verifier, the structure's extraction of generated queries, "
                        "retries) plus answers taken from the cache (default: none; the offline "
                        "path makes no calls)")
    p.add_argument("--max-tokens-total", type=int_at_least(1), default=None, metavar="N",
                   help="token budget (default: none)")
    p.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="output folder (the BEIR dataset with a 'generated' split)")
    p.add_argument("--merge-into-split", default=None, metavar="SPLIT",
                   help="also merge the generated queries into this split's qrels (it prints "
                        "what that changes; stratify and report still keep them out of the "
                        "original estimates) (default: none: every original split as it was)")
    llm = p.add_argument_group("LLM endpoint (OpenAI-compatible: vLLM, OpenAI, "
                               "transformers serve, llama.cpp); without --base-url the offline "
                               "writer and judge run")
    add_llm_endpoint(llm, cache_name="generate_cache.sqlite",
                     base_url_help="OpenAI-compatible endpoint of the LLM writer, judge and "
                                   "verifier (default: none: the offline writer and judge)")
    g = p.add_argument_group("targets, seeds and pooling")
    g.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0,
                   help=f"random seed in [0, {MAX_SEED}] (default: 0)")
    g.add_argument("--n-min", type=int_at_least(1), default=DEFAULT_N_MIN, metavar="N",
                   help=f"queries a cluster needs to count in SCC (default: {DEFAULT_N_MIN})")
    g.add_argument("--target-msc", type=float_in(0, 1), default=None, metavar="MSC",
                   help="stop at this MSC; above the corpus' ceiling (every document a query) "
                        f"it is refused (default: {DEFAULT_MSC_SHARE} × the ceiling)")
    g.add_argument("--target-scc", type=float_in(0, 1), default=0.5, metavar="SCC",
                   help="stop at this SCC (default: 0.5)")
    g.add_argument("--max-attempts", type=int_at_least(1), default=2, metavar="N",
                   help="tries per target cell (default: 2)")
    g.add_argument("--n-seeds", type=int_at_least(1), default=2, metavar="N",
                   help="seed documents per query (default: 2)")
    g.add_argument("--max-candidates", type=int_at_least(1), default=None, metavar="N",
                   help="stop after this many candidate queries (default: no limit)")
    g.add_argument("--pool-bm25", type=int_at_least(0), default=4, metavar="N",
                   help="BM25 candidates per query (default: 4)")
    g.add_argument("--pool-dense", type=int_at_least(0), default=None, metavar="N",
                   help="dense candidates per query; dense pooling embeds the whole corpus once "
                        "(about 10 min for NFCorpus on 2 cores), or takes it from the embedding "
                        "cache when structure embedded it (default: 4 with --base-url, 0 "
                        "offline)")
    g.add_argument("--max-pool", type=int_at_least(1), default=8, metavar="N",
                   help="documents judged per query (default: 8)")
    g.add_argument("--no-dense", action="store_true", help="pool with BM25 only")
    g.add_argument("--embedding-model", default=None, metavar="NAME",
                   help="allow the embedding model the --structure records (dense pooling "
                        "loads it) when it is not the packaged all-MiniLM-L6-v2: an artifact "
                        "never chooses a model to download on its own (default: none allowed)")
    llm.add_argument("--concurrency", type=int_at_least(1, 256), default=1, metavar="N",
                     help="LLM requests in flight at most: the candidates of a round are "
                          "drafted N at a time; the output does not depend on N (default: 1)")
    llm.add_argument("--judge-batch", type=int_at_least(1, 1000), default=8, metavar="N",
                     help="pooled documents the judge grades in one request (1: one request "
                          "per document) (default: 8)")
    p.add_argument("--retry-failed", action="store_true",
                   help="ask again for the cached answers that held no usable JSON (the "
                        "writer's, judge's and verifier's, and an LLM-built --structure's "
                        "failed query entities)")
    add_embedding_cache(g)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    # the LLM path's options, with their defaults: given without --base-url they are refused
    llm_only = [a for a in p._actions if a.dest in ("budget", "max_tokens_total", "retry_failed")]
    llm_only += [a for a in llm._group_actions if a.dest != "base_url"]
    p.set_defaults(func=run, llm_only={a.dest: a.default for a in llm_only})
    return p


def run(args: argparse.Namespace) -> int:
    """Map the flags onto :class:`~mteb_stratified.generation.runner.RunConfig`, run
    :func:`~mteb_stratified.generation.runner.run` once and print its outcome."""
    from ..adapters.bm25 import bm25_run
    from ..generation import run as generate
    from ..report.generation import coverage_markdown

    outcome = generate(_config(args), bm25_run=bm25_run, coverage_markdown=coverage_markdown,
                       notify=notify)
    if args.json:
        print_json(dict(outcome.summary))
    else:
        print("\n".join(outcome.lines))
    return 0


def _config(args: argparse.Namespace):
    """The run's settings from the flags, checked against each other (the LLM options need
    --base-url, --writer matches it, --pool-splits needs --writer select, --run is NAME=FILE)."""
    from ..generation import GenerationConfig, LLMOptions, RunConfig

    _check_path(args)
    writer = _writer(args)
    pool_splits = None
    if args.pool_splits is not None:
        pool_splits = tuple(x.strip() for x in args.pool_splits.split(",") if x.strip())
    llm = None
    if args.base_url is not None:
        cache_path = os.path.join(args.out, "generate_cache.sqlite")
        llm = LLMOptions(endpoint_settings(args, cache_path=cache_path), budget=args.budget,
                         max_tokens_total=args.max_tokens_total, concurrency=args.concurrency,
                         judge_batch=args.judge_batch, retry_failed=args.retry_failed)
    cfg = GenerationConfig(seed=args.seed, n_min=args.n_min, target_msc=args.target_msc,
                           target_scc=args.target_scc, max_attempts=args.max_attempts,
                           n_seeds=args.n_seeds, max_candidates=args.max_candidates)
    return RunConfig(dataset=args.dataset, structure=args.structure, out=args.out,
                     generation=cfg, split=args.split, writer=writer, pool_splits=pool_splits,
                     panel=_panel(args.run), merge_into_split=args.merge_into_split,
                     pool_bm25=args.pool_bm25, pool_dense=args.pool_dense,
                     max_pool=args.max_pool, no_dense=args.no_dense,
                     embedding_model=args.embedding_model,
                     embedding_cache=args.embedding_cache, llm=llm,
                     show_progress=not args.no_progress)


def _panel(specs) -> tuple:
    """``((name, file), ...)`` of the --run NAME=FILE options."""
    out = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path:
            raise InputError(f"--run {spec!r}: expected NAME=FILE",
                             fix="e.g. --run e5=runs/e5.trec")
        out.append((name, path))
    return tuple(out)


def _writer(args: argparse.Namespace) -> str:
    """--writer, defaulted (llm with --base-url, else select) and checked against --base-url
    and --pool-splits."""
    llm = args.base_url is not None
    writer = args.writer or ("llm" if llm else "select")
    if (writer == "llm") != llm:
        raise InputError(f"--writer {writer} " + ("needs --base-url (an LLM endpoint)"
                                                   if not llm else
                                                   "runs offline: it takes no --base-url"),
                         fix="drop --writer for the default (select offline, llm with "
                             "--base-url), or match the two")
    if args.pool_splits is not None and writer != "select":
        raise InputError("--pool-splits applies only to --writer select",
                         fix="drop --pool-splits, or use --writer select")
    return writer


def _check_path(args: argparse.Namespace) -> None:
    """The LLM path needs --budget; the offline path takes none of the LLM options."""
    if args.base_url is not None:
        if args.budget is None:
            raise InputError("--base-url needs a --budget (LLM calls at most, cached answers "
                             "included)", fix="add e.g. --budget 200, or omit --base-url for "
                                              "the offline writer and judge")
        return
    given = [f"--{k.replace('_', '-')}" for k, v in args.llm_only.items()
             if getattr(args, k) != v]
    if given:
        raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only "
                         "to the LLM path, and no --base-url was given (the offline writer and "
                         "judge make no calls)",
                         fix="add --base-url URL for an LLM, or drop those options (bound an "
                             "offline run with --max-candidates)")
