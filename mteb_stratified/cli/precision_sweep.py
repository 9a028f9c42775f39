"""``mteb-stratified precision-sweep``: the fp32 / bf16 / fp16 ± HPS / int8 / binary audit table.

Also runs standalone: ``python -m mteb_stratified.cli.precision_sweep --model minilm``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time

from ..adapters.precision.models import MODEL_KINDS as KINDS
from ..adapters.precision.regimes import REGIME_NAMES, RESCORE_DOCS
from ..core.errors import InputError
from . import summary
from ._args import int_at_least

REGIME_HELP = ", ".join(REGIME_NAMES)


#: Defaults of the reranker options (None on the command line: "not given", so an option
#: that no --model would use is an error rather than silently ignored).
RERANK_QUERIES, MAX_LENGTH, ACTIVATION = 20, 256, "softmax"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "precision-sweep", help=summary(__name__),
        description="Scores a task under each precision regime and prints one table, a row per "
                    "regime: tie-aware E[nDCG@10], oblivious nDCG@10, range and bias (also for "
                    "RR@10 = MRR@10 and R@100), tie statistics, Spearman/Kendall correlation "
                    "with fp32, time per query and peak memory. Saves CSV, JSON, a Markdown "
                    "table in the layout of the HPS paper, and a PNG of the ranges. The "
                    "quantized regimes (int8, binary, binary+rescore) add bytes per document, "
                    "search time and the first stage's recall of the fp32 top 100. With two "
                    "models it says whether their order flips between the oblivious and the "
                    "expected value.")
    p.add_argument("--model", action="append", metavar="MODEL",
                   help="model to audit: minilm or smollm2-reranker (packaged), a "
                        "sentence-transformers or CrossEncoder folder, a causal-LM folder or "
                        ".gguf file (a yes/no reranker), or a hub name (from the local cache "
                        "under HF_HUB_OFFLINE=1); repeat for two (default: minilm)")
    p.add_argument("--model-kind", action="append", choices=KINDS, metavar="KIND",
                   help=f"kind of each --model, in order ({', '.join(KINDS)}); inferred from "
                        "the model's files when omitted")
    p.add_argument("--task", default="nfcorpus",
                   help="a BEIR folder, nfcorpus (bundled), or an MTEB retrieval/reranking task "
                        "name loaded through mteb (default: nfcorpus)")
    p.add_argument("--split", default=None,
                   help="split of the task (default: test; an MTEB task's first eval split)")
    p.add_argument("--hf-subset", default=None, metavar="SUBSET",
                   help="subset of a multi-subset MTEB task (default: default)")
    p.add_argument("--first-stage", default=None, metavar="RUN|MODEL",
                   help="a reranker's candidates: a TREC run file, or a bi-encoder (short "
                        "name, folder or hub name) run in fp32 (default: the task's own "
                        "candidates of an MTEB reranking task, else a bi-encoder given as the "
                        "other --model)")
    p.add_argument("--regimes", nargs="+", default=None, metavar="REGIME",
                   help=f"regimes, space- or comma-separated: {REGIME_HELP}; or the groups "
                        "float, quantized, all (default: the six float regimes). int8, binary "
                        "and binary+rescore quantize a bi-encoder's embeddings")
    p.add_argument("--rescore-multiplier", type=int_at_least(1), default=None, metavar="M",
                   help="binary+rescore: the binary first stage keeps the top 100·M for "
                        "rescoring (default: 2, as sentence-transformers' semantic_search_faiss)")
    p.add_argument("--cut-draws", type=int_at_least(0), default=None, metavar="N",
                   help="binary+rescore: rerun the rescore N times with the first stage's tie "
                        "at its cut broken at random, to show what FAISS's order decided "
                        "(default: 20; 0: none)")
    p.add_argument("--seed", type=int_at_least(0), default=None,
                   help="binary+rescore: seed of those random draws (default: 0)")
    p.add_argument("--rescore-docs", choices=RESCORE_DOCS, default=None,
                   help="binary+rescore: multiply the fp32 query with the ±1 document bits "
                        "(binary, the default: no extra storage) or the dequantized int8 "
                        "document vectors (int8: +dim bytes per document)")
    p.add_argument("--max-queries", type=int_at_least(1), default=None, metavar="N",
                   help="first N judged queries (sorted ids) (default: all)")
    p.add_argument("--rerank-queries", type=int_at_least(1), default=None, metavar="N",
                   help="a reranker scores only the first N of those queries; its forward "
                        "pass is a model call per pair (default: 20)")
    p.add_argument("--rerank-depth", type=int_at_least(1), default=None, metavar="K",
                   help="candidates per query for a reranker (default: 10, or all of an MTEB "
                        "reranking task's own candidate lists)")
    p.add_argument("--max-length", type=int_at_least(16), default=None, metavar="T",
                   help="prompt tokens per pair for a yes/no reranker (default: 256)")
    p.add_argument("--activation", choices=("softmax", "sigmoid"), default=None,
                   help="yes/no reranker score: softmax over yes/no, or sigmoid of the yes-no "
                        "margin (default: softmax)")
    p.add_argument("--prompt-template", default=None, metavar="NAME|FILE",
                   help="yes/no reranker prompt: qwen3 (Qwen3-Reranker's, the default), chatml "
                        "(the same without the empty <think> block; smollm2-reranker's "
                        "default), or a JSON file with prefix, body, suffix; the body fills "
                        "{instruction}, {query} and {document}")
    p.add_argument("--instruction", default=None,
                   help="the yes/no reranker's <Instruct> line (default: Qwen3-Reranker's)")
    p.add_argument("--yes-token", default=None, help="answer token read as yes (default: yes)")
    p.add_argument("--no-token", default=None, help="answer token read as no (default: no)")
    p.add_argument("--batch-size", type=int_at_least(1), default=None, metavar="N",
                   help="pairs or texts per forward batch (default: 32; 8 for a yes/no reranker)")
    p.add_argument("--device", default="cpu",
                   help="torch device, e.g. cuda (default: cpu); on a GPU bf16 runs natively")
    p.add_argument("-o", "--out", default="runs/precision_sweep", metavar="DIR",
                   help="output folder (default: runs/precision_sweep)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines or bars on stderr")
    p.set_defaults(func=run)
    return p


def _specs(args) -> list:
    """The models, resolved (kinds inferred or checked), bi-encoders first."""
    from ..adapters.precision.models import resolve_model

    names = list(args.model or ["minilm"])
    kinds = list(args.model_kind or [])
    if len(names) > 2:
        raise InputError(f"{len(names)} models given", fix="give one or two --model")
    if len(names) != len(set(names)):
        raise InputError("the same --model is given twice", fix="give two different models")
    if len(kinds) > len(names):
        raise InputError(f"{len(kinds)} --model-kind for {len(names)} --model",
                         fix="give at most one --model-kind per --model, in the same order")
    options = {"template": args.prompt_template, "instruction": args.instruction,
               "yes_token": args.yes_token, "no_token": args.no_token}
    specs = []
    for i, name in enumerate(names):
        kind = kinds[i] if i < len(kinds) else None
        spec = resolve_model(name, kind)
        if spec.kind == "yes-no-reranker":  # the prompt options belong to a yes/no reranker
            spec = dataclasses.replace(spec, options={
                **spec.options, **{k: v for k, v in options.items() if v is not None}})
        specs.append(spec)
    if args.device.startswith("cuda"):
        from ..adapters.precision import check_dtype_supported

        check_dtype_supported("float32", args.device)  # no GPU: a clear error before any load
    specs.sort(key=lambda s: s.kind != "bi-encoder")  # a bi-encoder can be the first stage
    _check_options(args, specs, options)
    return specs


def _check_options(args, specs: list, options: dict) -> None:
    """Options that would be ignored, and reranker settings that would fail only after a
    long bi-encoder sweep, fail here, before any model loads."""
    from ..adapters.precision.models import load_tokenizer
    from ..adapters.precision.reranker import get_template, yes_no_token_ids
    from ..adapters.precision.sweep import first_stage_model

    kinds = {s.kind for s in specs}
    yes_no = {**options, "max_length": args.max_length, "activation": args.activation}
    given = [f"--{k.replace('_', '-')}" for k, v in yes_no.items() if v is not None]
    if given and "yes-no-reranker" not in kinds:
        raise InputError(f"{', '.join(given)} set a yes/no reranker's prompt or score, and no "
                         "--model is one", fix="drop them, or add a yes/no reranker as --model")
    rerankers = kinds - {"bi-encoder"}
    given = [f"--{k.replace('_', '-')}" for k in ("rerank_depth", "rerank_queries")
             if getattr(args, k) is not None]
    if given and not rerankers:
        raise InputError(f"{', '.join(given)} set a reranker's candidates, and no --model is a "
                         "reranker", fix="drop them: a bi-encoder retrieves over the whole corpus")
    if args.first_stage is not None:
        if not rerankers:
            raise InputError("--first-stage gives a reranker its candidates, and no --model is "
                             "a reranker", fix="drop --first-stage: a bi-encoder retrieves "
                                               "over the whole corpus")
        first = args.first_stage
        if os.path.isfile(first) and not first.lower().endswith(".gguf"):
            pass  # a TREC run: read and checked against the task in run(), before any model
        elif not os.path.exists(first) and (os.sep in first or first.lower().endswith(
                (".trec", ".run", ".txt", ".tsv", ".gz"))):
            raise InputError(f"--first-stage {first}: no such file",
                             fix="give an existing TREC run file, or a bi-encoder model")
        else:
            first_stage_model(first)
    for spec in specs:
        if spec.kind == "yes-no-reranker":
            template = get_template(spec.options.get("template") or "qwen3")
            tokenizer = load_tokenizer(spec)
            yes_no_token_ids(tokenizer, spec.options.get("yes_token") or "yes",
                             spec.options.get("no_token") or "no")
            fixed = len(tokenizer.encode(template.prefix + template.suffix,
                                         add_special_tokens=False))
            if fixed + 8 > (args.max_length or MAX_LENGTH):
                raise InputError(f"--max-length {args.max_length or MAX_LENGTH} leaves no room for "
                                 f"the query and document (the prompt template takes {fixed} "
                                 "tokens)", fix=f"pass --max-length {fixed + 64} or more")


def run(args: argparse.Namespace) -> int:
    from ..adapters.precision.regimes import parse_regimes
    from ..adapters.precision.sweep import (DEFAULT_DEPTH, load_task, no_first_stage,
                                            select_queries, with_rescore_settings)
    from ..adapters.precision.tasks import candidates_from_run

    from ..io.outputs import output_dir

    output_dir(args.out, option="-o/--out")  # a file there (or above) fails before any model
    # unknown names and bad rescoring settings fail here, before any model loads
    regimes = with_rescore_settings(parse_regimes(args.regimes), args.rescore_docs,
                                    args.rescore_multiplier)
    specs = _specs(args)
    given = [f"--{k.replace('_', '-')}" for k in ("cut_draws", "seed")
             if getattr(args, k) is not None]
    if given and not any(r.rescore_docs for r in regimes):
        raise InputError(f"{', '.join(given)} redraw a rescore's first-stage cut, and no regime "
                         "rescores", fix=f"add the binary+rescore regime, or drop "
                                         f"{' and '.join(given)}")
    quantized = [r.name for r in regimes if r.quantization]
    pairs = [s.name for s in specs if s.kind != "bi-encoder"]
    if quantized and pairs:
        raise InputError(f"{', '.join(quantized)} quantize a bi-encoder's embeddings, and "
                         f"{', '.join(pairs)} scores (query, document) pairs",
                         fix="sweep the quantized regimes with the bi-encoder alone (e.g. "
                             "--model minilm --regimes fp32 quantized)")
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)

    task = load_task(args.task, args.split, subset=args.hf_subset)
    if args.hf_subset is not None and task.source != "mteb":
        raise InputError(f"--hf-subset picks a subset of an MTEB task, and {task.name} is not "
                         f"one (a {task.source} folder)", fix="drop --hf-subset")
    _check_calibration(args.task, task, regimes)
    reranker = next((s for s in specs if s.kind != "bi-encoder"), None)
    if reranker is not None and args.first_stage is None and not task.top_ranked \
            and specs[0].kind != "bi-encoder":
        raise no_first_stage(reranker.name, reranker.kind, task.name)
    first = args.first_stage
    if reranker is not None and first is not None and os.path.isfile(first) \
            and not first.lower().endswith(".gguf"):  # its documents and queries, checked now
        qids = select_queries(task.dataset, min(args.max_queries or RERANK_QUERIES,
                                                args.rerank_queries or RERANK_QUERIES))
        candidates_from_run(first, qids, task.dataset.corpus, args.rerank_depth or DEFAULT_DEPTH)
    with _quiet_loading(args.quiet):
        results = _sweep_all(args, specs, task, regimes, say)
    _report(args, results)
    return 0


def _check_calibration(name: str, task, regimes) -> None:
    """int8 sets its ranges from the corpus embeddings: too small a corpus fails before any
    model loads."""
    from ..adapters.precision.quantized import MIN_CALIBRATION

    uses = [r.name for r in regimes if "int8" in (r.quantization, r.rescore_docs)]
    n = len(task.dataset.corpus)
    if uses and n < MIN_CALIBRATION:
        raise InputError(f"{name}: {', '.join(uses)} calibrates the int8 ranges on the corpus "
                         f"embeddings and needs at least {MIN_CALIBRATION} of them; this corpus "
                         f"has {n} documents",
                         fix=f"use a corpus of at least {MIN_CALIBRATION} documents, or the "
                             "binary regimes (binary, binary+rescore with --rescore-docs "
                             "binary), which need no calibration")


@contextlib.contextmanager
def _quiet_loading(quiet: bool):
    """With --quiet, transformers' own progress bars (weight loading) are off for the run, and
    put back as they were afterwards."""
    hf_logging = None
    if quiet:
        try:
            from transformers.utils import logging as hf_logging
        except ImportError:
            hf_logging = None
    was_on = hf_logging.is_progress_bar_enabled() if hf_logging else False
    if hf_logging and was_on:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if hf_logging and was_on:
            hf_logging.enable_progress_bar()


def _sweep_all(args, specs: list, task, regimes, say) -> list:
    from ..adapters.precision.quantized import DEFAULT_CUT_DRAWS
    from ..adapters.precision.sweep import run_sweep

    results = []
    for spec in specs:
        limit = args.max_queries
        first = args.first_stage
        if spec.kind != "bi-encoder":
            cap = args.rerank_queries or RERANK_QUERIES
            limit = min(limit or cap, cap)
            if first is None and not task.top_ranked and results:
                first = results[0]  # the bi-encoder's fp32 scores of the same queries
        results.append(run_sweep(spec, task, regimes, max_queries=limit,
                                 device=args.device, rerank_depth=args.rerank_depth,
                                 max_length=args.max_length or MAX_LENGTH,
                                 activation=args.activation or ACTIVATION,
                                 first_stage=first, batch_size=args.batch_size, progress=say,
                                 progress_bars=not args.quiet, seed=args.seed or 0,
                                 cut_draws=(DEFAULT_CUT_DRAWS if args.cut_draws is None
                                            else args.cut_draws)))
    return results


def _report(args, results: list) -> None:
    from ..adapters.precision.sweep import describe_flips, order_flips, save_results

    flips = order_flips(results[0], results[1]) if len(results) == 2 else []
    for res in results:
        print(f"\n{res.model} on {res.task}: {res.settings['queries']} queries, "
              f"{res.settings['candidates_per_query']:.0f} candidates per query")
        print(res.table())
    if flips:
        print(f"\nOrder of the two models on their {flips[0]['queries']} common queries, "
              "oblivious vs expected:")
        print(describe_flips(flips))
        n = sum(f["flip"] for f in flips)
        print(f"{n} of {len(flips)} (regime, measure) comparisons flip.")
    paths = save_results(results, args.out, flips, plot=not args.no_plot)
    print("\nsaved: " + ", ".join(paths.values()))
    for res in results:
        print(sweep_summary_line(res))


def sweep_summary_line(res) -> str:
    """One line per model: the nDCG@10 range of each regime (the audit's main figure)."""
    cells = ", ".join(f"{r.regime} {r.ndcg10_range:.4f}" for r in res.rows)
    return f"{res.model} on {res.task}: nDCG@10 range by regime: {cells}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="mteb-stratified")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "precision-sweep":
        argv = ["precision-sweep", *argv]
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"mteb-stratified precision-sweep: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if "pip install" not in str(exc):
            raise
        print(f"mteb-stratified precision-sweep: error: {exc}", file=sys.stderr)
        return 2



if __name__ == "__main__":
    sys.exit(main())
