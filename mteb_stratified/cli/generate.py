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
from dataclasses import replace

from ..core import DEFAULT_N_MIN
from ..generation.loop import DEFAULT_MSC_SHARE
from ..core.rng import MAX_SEED
from ..io.outputs import output_dir
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
    from ..io import dataset_folder
    from ..io.lock import folder_lock

    from ..generation.output import check_splits

    folder = dataset_folder(args.dataset)  # inputs checked before the heavy imports
    _check_path(args)
    check_splits(folder, args.split, args.merge_into_split)
    _check_writer(args, folder)
    args.panel = _panel_runs(args.run)
    output_dir(args.out)
    # one job per --out: a second one would repeat paid calls and race on the cache
    from ..io.embedding_cache import using
    with folder_lock(args.out, what=f"mteb-stratified generate --out {args.out}"), \
            using(args.embedding_cache):
        return _generate(args, folder)


def _panel_runs(specs) -> dict:
    """``{name: run}`` of the --run options (read and checked before any work)."""
    from ..core import InputError
    from ..io.files import read_run

    out: dict = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path:
            raise InputError(f"--run {spec!r}: expected NAME=FILE",
                             fix="e.g. --run e5=runs/e5.trec")
        if name in out or name in ("BM25", "MiniLM"):
            raise InputError(f"--run {spec!r}: the panel already has a system {name!r}",
                             fix="give each run another name")
        out[name] = read_run(path)
    return out


def _check_writer(args: argparse.Namespace, folder: str) -> None:
    """--writer against --base-url, and the selection pool (before any work)."""
    from ..core import InputError
    from ..generation.select import pool_splits

    llm = args.base_url is not None
    if args.writer is None:
        args.writer = "llm" if llm else "select"
    if (args.writer == "llm") != llm:
        raise InputError(f"--writer {args.writer} " + ("needs --base-url (an LLM endpoint)"
                                                        if not llm else
                                                        "runs offline: it takes no --base-url"),
                         fix="drop --writer for the default (select offline, llm with "
                             "--base-url), or match the two")
    if args.pool_splits is not None and args.writer != "select":
        raise InputError("--pool-splits applies only to --writer select",
                         fix="drop --pool-splits, or use --writer select")
    if args.writer == "select":
        requested = (None if args.pool_splits is None else
                     [x.strip() for x in args.pool_splits.split(",") if x.strip()])
        args.pools = pool_splits(folder, args.split, requested)
        if not args.pools:
            raise InputError(f"no split to select from: the dataset judges only {args.split!r}",
                             source=folder,
                             fix="give a BEIR folder with a dev (or train) split, or use "
                                 "--writer template (a smoke test) or --base-url (an LLM)")
        if "train" in args.pools:
            notify("warning: the pool holds train queries: models fine-tuned on that split "
                   "are favoured on them (--pool-splits dev to leave it out)")


def _check_path(args: argparse.Namespace) -> None:
    """The LLM path needs --budget; the offline path takes none of the LLM options."""
    from ..core import InputError

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


def _generate(args: argparse.Namespace, folder: str) -> int:
    from ..io import load_beir
    from ..structure.artifact import StructureArtifact

    offline = args.base_url is None
    if args.structure == "bundled":
        artifact = StructureArtifact.bundled("nfcorpus")
    else:
        artifact = StructureArtifact.load(args.structure)
    dataset = load_beir(folder, args.split)
    artifact.check_corpus(dataset.corpus, source=folder)
    if offline and artifact.metadata["extractor"]["kind"] == "llm":
        from ..core import InputError
        raise InputError(f"the structure {args.structure} was extracted by an LLM: the offline "
                         "path reads each query's entities with the structure's own extractor, "
                         "so it needs that LLM too",
                         fix="add --base-url (and --budget) for the LLM path, or build the "
                             "structure with the offline extractor (mteb-stratified structure "
                             "--extractor offline)")
    n_dense = args.pool_dense if args.pool_dense is not None else (0 if offline else 4)
    dense = not args.no_dense and n_dense > 0
    from ..structure.query_entities import embedding_model_of
    # a recorded model the user did not name is refused before any call
    model = embedding_model_of(artifact, args.embedding_model) if dense or offline else None
    from ..generation import Drafting, GenerationConfig, Pooler

    cfg = GenerationConfig(seed=args.seed, n_min=args.n_min, target_msc=args.target_msc,
                           target_scc=args.target_scc, max_attempts=args.max_attempts,
                           n_seeds=args.n_seeds, max_candidates=args.max_candidates)
    _check_targets(cfg, artifact, dataset)  # a target above the ceiling: before any model
    if args.writer == "select":
        return _select(args, folder, dataset, _reader(args, artifact), cfg)
    endpoint = None if offline else _endpoint(args)  # no model or key: before any model
    work = os.path.join(args.out, ".work")
    pooler = Pooler(dataset.corpus, k_bm25=args.pool_bm25, k_dense=n_dense,
                    max_pool=args.max_pool, dense=dense, model=model, cache_dir=work)
    if offline:
        from ..generation.offline import offline_parts
        artifact = _reader(args, artifact)
        parts = offline_parts(artifact, pooler, seed=args.seed, n_seeds=args.n_seeds,
                              cache_dir=work, model=model, show_progress=not args.no_progress)
        with CandidateBar(args.max_candidates, enabled=not args.no_progress) as bar:
            strategy = Drafting(*parts, pooler, log=bar)
            result = strategy.fill(dataset, artifact, cfg)
        bm = _bm25_real(dataset)
        _gate(args, dataset, result, _judge_sample(args, dataset, strategy.judge, bm), bm)
    else:
        strategy, result = _llm_generate(args, endpoint, artifact, dataset, pooler, cfg)
    _write(args, dataset, result, strategy.provenance(cfg, artifact))
    return _summary(args, result)


def _select(args, folder, dataset, artifact, cfg) -> int:
    """--writer select: real judged queries of the pool splits into the uncovered strata."""
    from ..generation import Selection
    from ..io import load_beir

    pools = {name: load_beir(folder, name, corpus=False) for name in args.pools}
    strategy = Selection({name: replace(p, corpus=dataset.corpus) for name, p in pools.items()})
    result = strategy.fill(dataset, artifact, cfg)
    bm = _bm25_real(dataset)
    _gate(args, dataset, result, _judge_sample(args, dataset, None, bm, note="a selection's "
                                               "judgments are the pool's human qrels"), bm)
    _write(args, dataset, result, strategy.provenance(cfg, artifact))
    return _summary(args, result)


def _write(args, dataset, result, provenance: dict) -> None:
    """The output folder (generation/output.py) and its coverage.md (report/generation.py);
    says what --merge-into-split changed."""
    from ..generation import REASONS, write_dataset
    from ..report.generation import coverage_markdown

    written = write_dataset(args.out, dataset, result, merge_into=args.merge_into_split,
                            provenance=provenance,
                            markdown=lambda report: coverage_markdown(report, REASONS))
    if written["splits"]["merge_changes"]:
        notify(written["splits"]["merge_changes"])


def _bm25_real(dataset) -> dict:
    from ..adapters.bm25 import bm25_run
    real = {q: dataset.queries[q] for q in dataset.qrels if q in dataset.queries}
    return bm25_run(dataset.corpus, real, depth=100)[0]


#: The gate's judge sample: this many real queries (one batched judge request each) at most,
#: and at least GATE_MIN_QUERIES of them, or the judge is not measured.
GATE_QUERIES, GATE_MIN_QUERIES = 20, 5


def _judge_sample(args, dataset, judge, bm25_real, note=None, calls=None) -> dict:
    """The gate's judge sample on real pairs.  On the LLM path it is paid from what the
    generation left of the budget (one request per query with the batched judge): fewer
    than GATE_MIN_QUERIES requests left leaves the judge unmeasured, and says so."""
    from ..generation.gate import judge_check
    from ..generation.llm import BudgetExhausted

    n = GATE_QUERIES
    if calls is not None and judge is not None:
        per = -(-4 // max(1, args.judge_batch))   # requests per query: 4 pooled documents
        n = min(GATE_QUERIES, calls.remaining // per)
        if n < GATE_MIN_QUERIES:
            return judge_check(None, dataset, bm25_real, note=(
                f"{calls.remaining} LLM calls were left after the generation, fewer than the "
                f"gate's sample of {GATE_MIN_QUERIES}–{GATE_QUERIES} real queries needs: raise "
                f"--budget, or bound the generation with --max-candidates"))
    try:
        out = judge_check(judge, dataset, bm25_real, note=note, seed=args.seed, n_queries=n)
    except BudgetExhausted as exc:
        return judge_check(None, dataset, bm25_real, note=f"the budget ran out on the "
                           f"judge's sample ({exc}): raise --budget")
    if out.get("measured") and out["queries"] < GATE_MIN_QUERIES:
        why = out.get("stopped") or "no BM25 ranking for the others"
        return judge_check(None, dataset, bm25_real, note=(
            f"only {out['queries']} queries were graded ({why}), fewer than the gate's "
            f"{GATE_MIN_QUERIES}"))
    return out


#: What the gate says of generated qrels (generation/gate.py, "pool bias").
POOL_BIAS = ("the generated queries' qrels were judged on a BM25{dense} pool, unjudged "
             "documents count as non-relevant: the pool's systems are favoured on them")


def _gate(args, dataset, result, judged: dict, bm25_real: dict) -> None:
    """The validity gate (generation/gate.py) on what the run added: the panel is BM25 and
    the packaged MiniLM; the corpus embeddings are cached in OUT/.work."""
    from ..adapters.bm25 import bm25_run
    from ..generation.gate import dense_runs, validity_gate

    added = {r["query_id"]: r["query"] for r in result.accepted}
    real = {q: dataset.queries[q] for q in dataset.qrels if q in dataset.queries}
    runs = {"BM25": (bm25_real, bm25_run(dataset.corpus, added, depth=100)[0] if added else {})}
    if added:  # nothing added: no order to compare, and no corpus to embed for it
        dense = dense_runs(dataset.corpus, {"real": real, "added": added}, None,
                           os.path.join(args.out, ".work"), show_progress=not args.no_progress)
        runs["MiniLM"] = (dense["real"], dense["added"])
    left_out = []
    for name, run in getattr(args, "panel", {}).items():
        # a run that ranks none of one set was made without it (before the generation, say):
        # left out; a query missing from a run that has its set is an empty ranking (nDCG 0,
        # as trec_eval -c counts it)
        for what, qs in (("original", real), ("added", added)):
            if qs and not any(q in run for q in qs):
                left_out.append(f"{name}: no ranking for any of the {len(qs)} {what} queries")
                break
        else:
            runs[name] = ({q: run.get(q, {}) for q in real}, {q: run.get(q, {}) for q in added})
    result.gate = validity_gate(
        dataset, added, {r["query_id"]: r["qrels"] for r in result.accepted},
        {r["query_id"]: r["landed"][0] for r in result.accepted}, result.original_clusters,
        runs=runs, baseline=result.baseline, judge=judged,
        pool_bias=None if result.pool else POOL_BIAS.format(
            dense=" + dense" if args.writer == "llm" and not args.no_dense else ""))
    if left_out:
        result.gate["panel_left_out"] = left_out
        for line in left_out:
            notify(f"validity gate: --run {line}: left out of the panel")
    notify(f"validity gate: {result.gate['verdict']}")


class CandidateBar:
    """The generation loop's progress on stderr: candidates drafted (of ``--max-candidates``
    when given) and accepted, updated as each candidate is merged (the loop's ``log``).
    A context manager; disabled (``--no-progress``, or tqdm missing) it does nothing."""

    def __init__(self, total: int | None, *, enabled: bool = True) -> None:
        from ..structure.extraction import progress_bar
        self.accepted = 0
        self.bar = progress_bar(total, "generate: candidates", enabled, unit="candidate")
        self.enabled = self.bar is not None

    def __call__(self, record: dict) -> None:
        if self.bar is None:
            return
        self.accepted += record.get("status") == "accepted"
        self.bar.set_postfix_str(f"accepted {self.accepted}", refresh=False)
        self.bar.update(1)

    def __enter__(self) -> "CandidateBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


def _check_targets(cfg, artifact, dataset) -> None:
    """Refuse a --target-msc above the corpus' ceiling (GenerationConfig.targets says why)."""
    from ..stratification import cluster_weights
    from ..stratification.validity import coverage_ceiling

    weights = cluster_weights(artifact, dataset.corpus)
    cfg.targets(coverage_ceiling(weights, weights.primary_share(), n_min=cfg.n_min))


def _endpoint(args):
    """The generator's chat endpoint (a missing model or key is refused here)."""
    from ..generation import GenerationEndpoint

    return GenerationEndpoint(args.base_url, args.model, args.api_key, timeout=args.timeout,
                              max_retries=args.max_retries, price_in=args.price_in,
                              price_out=args.price_out,
                              max_answer_bytes=args.max_answer_mib << 20)


def _llm_generate(args, endpoint, artifact, dataset, pooler, cfg):
    """The LLM path, ``(strategy, result)``: budgeted, cached calls shared by the writer,
    judge, verifier and an LLM-built structure's query extractor."""
    from ..generation import (BudgetedCalls, CallCache, Drafting, LLMJudge, LLMQueryWriter,
                              LLMVerifier)

    cache = CallCache(args.cache or os.path.join(args.out, "generate_cache.sqlite"))
    bar = None
    if not args.no_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=args.budget, desc="generate (LLM calls)", unit="call")
    calls = BudgetedCalls(endpoint, cache, max_calls=args.budget,
                          max_tokens=args.max_tokens_total, progress=bar,
                          retry_failed=args.retry_failed)
    candidates = CandidateBar(args.max_candidates, enabled=not args.no_progress)
    strategy = Drafting(LLMQueryWriter(calls), LLMJudge(calls, batch=args.judge_batch),
                        LLMVerifier(calls), pooler, calls=calls, concurrency=args.concurrency,
                        log=candidates)
    try:
        with candidates:
            result = strategy.fill(dataset, _llm_reader(args, artifact, calls, endpoint,
                                                        cache.path), cfg)
        bm = _bm25_real(dataset)   # the gate's judge sample: what the budget has left
        _gate(args, dataset, result,
              _judge_sample(args, dataset, strategy.judge, bm, calls=calls), bm)
        result.usage = calls.usage()
    finally:
        if bar is not None:
            bar.close()
        cache.close()
    return strategy, result


def _reader(args, artifact, endpoint: dict | None = None):
    """The artifact read with the user's query extractor
    (:class:`~mteb_stratified.structure.query_entities.QueryReader`): its recorded kind, with
    the model the user names (--embedding-model) and, for an LLM-built structure, the user's
    ``endpoint`` settings (never the endpoint recorded in the artifact)."""
    from ..structure.query_entities import QueryReader, query_extractor
    return QueryReader(artifact, query_extractor(artifact, endpoint, notify=notify,
                                                 embedding_model=args.embedding_model))


def _llm_reader(args, artifact, calls, endpoint, cache_path: str):
    """:func:`_reader` on the LLM path: an LLM-built structure reads each generated query's
    entities with the user's endpoint, the same requests counter, budget and cache file as
    the generator."""
    if artifact.metadata["extractor"]["kind"] != "llm":
        return _reader(args, artifact)
    reader = _reader(args, artifact, {**endpoint_settings(args, cache_path=cache_path),
                                      "provider": endpoint.provider})
    calls.share(reader.extractor)
    if args.retry_failed:
        n = reader.extractor.cache.retry_failed()
        notify(f"--retry-failed: {n} failed answers cleared from {reader.extractor.cache.path}; "
               "those queries are asked again")
    return reader


def _summary(args, result) -> int:
    counts = result.counts()
    summary = {"out": args.out, "before": result.coverage_before, "after": result.coverage_after,
               "counts": counts, "stop_reason": result.stop_reason, "usage": result.usage,
               "targets": result.targets, "writer": args.writer}
    if result.pool:
        summary.update(pool=result.pool, unfilled=result.unfilled)
    if args.json:
        print_json(summary)
        return 0
    b, a = result.coverage_before["cluster"], result.coverage_after["cluster"]
    t = result.targets
    if result.pool:
        pool = result.pool
        print(f"{args.out}: {pool['selected']} real judged queries selected from "
              f"{', '.join(pool['splits'])} ({pool['queries']} in the pool; "
              f"{counts['accepted_in_target_cell']} in their target cell) into split "
              f"'selected'; the pool's own ceiling: MSC {pool['ceiling']['msc']:.3f}, SCC "
              f"{pool['ceiling']['scc']:.3f}; strata the pool cannot fill: "
              f"{sum(u['pool_queries_left'] == 0 for u in result.unfilled)}")
    else:
        print(f"{args.out}: {counts['accepted']} of {counts['generated']} candidates accepted "
              f"({counts['accepted_in_target_cell']} in their target cell); rejected by "
              f"reason: {counts['rejected_by_reason'] or '-'}")
    print(f"  MSC {b['msc']:.3f} → {a['msc']:.3f} (target {t['msc']:.3f}, ceiling "
          f"{t['ceiling_msc']:.3f}), SCC {b['scc']:.3f} → {a['scc']:.3f} (target "
          f"{t['scc']:.3f}) (stop: {result.stop_reason})")
    u = result.usage
    if u:
        print(f"  LLM calls {u['calls']} of {u['budget_calls']} ({u['paid_calls']} requests "
              f"sent in this run, retries included; {u['cached_calls']} from the cache), "
              f"tokens {u['tokens']}, cost ${u['cost_usd']}")
    return 0
