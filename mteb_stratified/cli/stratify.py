"""mteb-stratified stratify: add a strata block to MTEB results.

Examples:
  mteb-stratified stratify runs                      every StratifiedNFCorpus result under runs/
  mteb-stratified stratify runs/results/ORG__MODEL/REVISION/StratifiedNFCorpus.json
  mteb-stratified stratify runs --prediction-folder elsewhere/pred -o stratified-runs

RESULTS are TaskResult files (<Task>.json) or mteb --output-folder folders (every result of
--task in them). The per-query values come from <Task>_per_query.csv, which a tie-aware task
writes into mteb's --prediction-folder; it is looked for there when given, else next to the
results file, else anywhere under the --output-folder, and must hold rows of the results
file's model. Its mean must equal the results file's score, so a CSV from another run is
refused.

Each results file gains "strata": {split: block} and flat strata_<estimator>_<metric>_expected,
strata_msc, strata_scc and strata_uncovered_weight keys in its score entries (read by the
leaderboard). The default structure and dataset are the bundled NFCorpus ones, with the test
queries' entities precomputed, so no extractor runs; another --structure or --dataset runs the
structure's kind of extractor (needs the [structure] extra). For a structure built with the LLM
extractor that is your own endpoint (--base-url, --model, --api-key or $OPENAI_*): the endpoint,
key and cache path recorded in its metadata.json are provenance only, never used, and its
answers are cached in your folders (-o/--out, else your cache folder), never in the artifact's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass

from ..core import DEFAULT_N_MIN, InputError
from ..core.hierarchy import DEFAULT_MIN_QUERIES
from ..core.rng import MAX_SEED
from ..io.outputs import atomic_write, dumps_json, output_dir, safe_name
from ._args import HelpFormatter, add_llm_endpoint, int_at_least

#: Stratum schemes and J variants (owned by core.strata and stratification; literal here so
#: parsing the command line imports nothing heavy; a test checks they agree).
SCHEMES = ("cluster", "cell")
ALIGNMENTS = ("exact", "soft")
DEFAULT_TASK = "StratifiedNFCorpus"


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--structure", metavar="DIR", default=None,
                   help="structure artifact folder (default: the bundled NFCorpus structure)")
    p.add_argument("--dataset", metavar="DIR", default=None,
                   help="BEIR folder of the corpus and queries (default: the bundled NFCorpus)")
    p.add_argument("--split", default="test",
                   help="judged split the results were computed on (default: test)")
    p.add_argument("--measure", default="nDCG@10",
                   help="per-query measure to stratify, as in the per-query CSV "
                        "(default: nDCG@10)")
    p.add_argument("--scheme", choices=SCHEMES, default="cluster",
                   help="strata: cluster = the query's primary cluster; cell = cluster x "
                        "dispersion bin x alignment bin (default: cluster)")
    p.add_argument("--alignment", choices=ALIGNMENTS, default="soft",
                   help="J variant: soft = J over concepts (entities matched by embedding, "
                        "cosine >= tau; chosen on NFCorpus dev: it adds more than exact names "
                        "beyond lexical overlap; the bundled NFCorpus values are precomputed, "
                        "another --structure needs the [structure] extra), or exact = J over "
                        "entity names (default: soft)")
    p.add_argument("--n-min", type=int_at_least(1), default=DEFAULT_N_MIN, metavar="N",
                   help=f"queries a cluster needs to count as covered in SCC "
                        f"(default: {DEFAULT_N_MIN})")
    p.add_argument("--min-queries", type=int_at_least(1, 1_000_000), default=DEFAULT_MIN_QUERIES,
                   metavar="M",
                   help="queries every evaluated stratum holds: smaller strata are merged into "
                        "their parent in the structure's cluster tree; chosen on NFCorpus dev "
                        "for power 0.8 against a 0.10 gap in 20%% of the queries (default: "
                        f"{DEFAULT_MIN_QUERIES}; 1 = the fine clusters)")
    p.add_argument("--level", type=int_at_least(0, 64), default=0, metavar="L",
                   help="the finest level of the cluster tree the strata start from (0 = the "
                        "fine clusters; the artifact's levels are listed in its "
                        "cluster_levels table) (default: 0)")
    p.add_argument("--resamples", type=int_at_least(2, 1_000_000), default=2000, metavar="B",
                   help="stratified bootstrap resamples (default: 2000)")
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0,
                   help=f"bootstrap seed in [0, {MAX_SEED}] (default: 0)")
    p.add_argument("--prediction-folder", metavar="DIR", default=None,
                   help="the --prediction-folder of the mteb run, holding <Task>_per_query.csv "
                        "(default: searched next to each results file and under its "
                        "--output-folder)")
    p.add_argument("--task", default=DEFAULT_TASK,
                   help="the task whose results a folder argument stands for "
                        f"(default: {DEFAULT_TASK})")
    p.add_argument("--embedding-model", default=None, metavar="NAME",
                   help="allow the embedding model a --structure records (soft alignment "
                        "loads it) when it is not the packaged all-MiniLM-L6-v2: an artifact "
                        "never chooses a model to download on its own (default: none allowed)")
    llm = p.add_argument_group(
        "LLM endpoint for the query entities of an LLM-built --structure (yours: the endpoint "
        "recorded in the artifact is never contacted)")
    add_llm_endpoint(llm, cache_name="llm_cache.sqlite",
                     cache_folder="OUT (stratify -o), else $XDG_CACHE_HOME/mteb-stratified "
                                  "or ~/.cache/mteb-stratified")


def user_cache_dir() -> str:
    """The user's cache folder for LLM answers: ``$XDG_CACHE_HOME/mteb-stratified`` (an
    absolute one), else ``~/.cache/mteb-stratified`` (read at call time; the cache creates it
    when it first opens)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mteb-stratified")


def endpoint_settings(args, *, cache_path: str) -> dict:
    """The user's LLM endpoint options as :class:`~..structure.llm.LLMExtractor` arguments."""
    return {"base_url": args.base_url, "model": args.model, "api_key": args.api_key,
            "timeout": args.timeout, "max_retries": args.max_retries,
            "price_in": args.price_in, "price_out": args.price_out,
            "cache_path": args.cache or cache_path}


def notify(line: str) -> None:
    """A one-line notice on stderr (stdout stays the command's output)."""
    print(line, file=sys.stderr)


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("stratify", help="add a strata block to MTEB results JSON files",
                              description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="TaskResult JSON files or mteb --output-folder folders")
    p.add_argument("--per-query", nargs="+", default=None, metavar="CSV",
                   help="per-query CSV(s), one per results file in the same order (default: "
                        "found as described above)")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="write updated copies into this folder (default: update the results "
                        "files in place)")
    add_common(p)
    p.set_defaults(func=run, out_is_folder=True)
    return p


@dataclass(frozen=True)
class ResultsInput:
    """One TaskResult file with its model and the per-query CSV that belongs to it."""

    path: str
    data: dict
    model: str
    revision: str
    per_query: str


def expand_results(specs, task: str) -> list[str]:
    """Result files for the RESULTS arguments: a folder stands for every ``task`` TaskResult
    under it (mteb layout), a file for itself."""
    from ..io.mteb_results import load_task_result, task_result_files

    out: list[str] = []
    for spec in specs:
        if os.path.isdir(spec):
            found, other, unreadable = [], set(), []
            for path in task_result_files(spec):
                try:
                    name = load_task_result(path)["task_name"]
                except InputError as exc:  # the folder may hold other JSON files
                    unreadable.append(exc)
                    continue
                if name == task:
                    found.append(str(path))
                else:
                    other.add(str(name))
            if not found:
                why = ""
                if other:
                    why += f" (it holds results of {', '.join(sorted(other))})"
                if unreadable:  # a corrupt result of this task must not hide behind "none"
                    why += (f"; {len(unreadable)} JSON file(s) could not be read, e.g. "
                            f"{str(unreadable[0]).splitlines()[0]}")
                raise InputError(f"no {task} results under {spec}{why}",
                                 fix="give the --output-folder of an mteb run of this task, "
                                     "or choose another one with --task")
            out.extend(found)
        elif not os.path.exists(spec):
            raise InputError("results file not found", source=spec,
                             fix="give <Task>.json of an mteb run, or its --output-folder")
        else:
            out.append(spec)
    return out


def resolve_inputs(paths, args, per_query=None) -> list[ResultsInput]:
    """Load each results file and locate its per-query CSV (cheap: no structure, no model)."""
    from ..io.mteb_results import check_task_name, find_per_query, load_task_result, model_of

    if per_query is not None and len(per_query) != len(paths):
        raise InputError(f"{len(per_query)} --per-query files for {len(paths)} results files",
                         fix="give one per-query CSV per results file, in the same order")
    out = []
    for i, path in enumerate(paths):
        data = load_task_result(path)
        model, revision = model_of(path)
        csv_path = per_query[i] if per_query else find_per_query(
            path, check_task_name(data["task_name"], source=path), model=model, revision=revision,
            prediction_folder=args.prediction_folder)
        if not os.path.isfile(csv_path):
            raise InputError("per-query file not found", source=csv_path,
                             fix="give the <Task>_per_query.csv of this run")
        out.append(ResultsInput(path, data, model, revision, csv_path))
    return out


def read_values(item: ResultsInput, args) -> dict:
    """The item's per-query values of ``args.measure``, checked against its results file."""
    from ..io.mteb_results import check_matches_results, read_per_query_csv
    from ..naming import mteb_key

    vals = read_per_query_csv(item.per_query, args.measure, split=args.split,
                              model=item.model, revision=item.revision)
    check_matches_results(vals, item.data, mteb_key(args.measure), split=args.split,
                          per_query_path=item.per_query, results_path=item.path)
    return vals


def copy_target(results_path: str, out: str) -> str:
    """Where ``-o/--out`` writes a results file's copy: its path below mteb's output folder
    (``results/<model>/<revision>/<Task>.json``) under ``out``, so the copies form an output
    folder of their own; a file outside that layout goes to ``out/<file name>``."""
    from ..io.mteb_results import output_folder_of

    root = output_folder_of(results_path)
    rel = (os.path.relpath(os.path.abspath(results_path), root) if root is not None
           else os.path.basename(results_path))
    return os.path.join(out, rel)


def check_options(args) -> None:
    from ..core.coverage import check_n_min
    from ..core.strata import check_scheme
    from ..stratification import check_alignment
    check_scheme(args.scheme)
    check_alignment(args.alignment)
    check_n_min(args.n_min)
    for name in ("structure", "dataset"):
        folder = getattr(args, name, None)
        if folder is not None and not os.path.isdir(folder):
            raise InputError(f"--{name} {folder} is not a folder",
                             fix=f"give the {name} folder (or leave --{name} out for the "
                                 "bundled NFCorpus)")


def load_context(args):
    """(artifact, dataset, strata) for the structure, dataset and endpoint flags:
    :func:`mteb_stratified.stratification.load_context`, kept for the process."""
    from ..stratification import load_context as load

    endpoint = (endpoint_settings(args, cache_path=query_cache_path(args))
                if args.structure is not None else None)
    return load(args.structure, args.dataset, split=args.split, alignment=args.alignment,
                embedding_model=args.embedding_model, endpoint=endpoint, notify=notify)


def query_cache_path(args) -> str:
    """The default cache of the query entities: in stratify's -o/--out folder, else in the
    user's cache folder; never in the --structure folder (an artifact may come with a
    pre-filled cache that would decide the entities, and may be read-only)."""
    folder = args.out if getattr(args, "out_is_folder", False) and args.out else user_cache_dir()
    return os.path.join(folder, "llm_cache.sqlite")


def run(args: argparse.Namespace) -> int:
    from ..stratification import (flat_strata_scores, gate_verdict, split_origin,
                                  stratified_summary)

    check_options(args)
    if args.out is not None:
        output_dir(args.out)
    items = resolve_inputs(expand_results(args.results, args.task), args, args.per_query)
    values = [read_values(item, args) for item in items]  # every input checked first
    targets = [item.path if args.out is None else copy_target(item.path, args.out)
               for item in items]
    if len(set(targets)) < len(targets):
        raise InputError(f"several results files would be copied to the same place in {args.out}",
                         fix="stratify them in place (leave out -o/--out), or one at a time")
    from ..stratification.table import strata_rows, write_strata_table

    art, data, strata = load_context(args)
    art.cluster_tree.check_level(args.level)  # a level the artifact lacks: before any work
    for item, vals, target in zip(items, values, targets):
        block = stratified_summary(vals, strata, art, measure=args.measure, scheme=args.scheme,
                                   n_min=args.n_min, min_queries=args.min_queries,
                                   level=args.level, n_resamples=args.resamples, seed=args.seed,
                                   origin=split_origin(data), gate=gate_verdict(data))
        table_rows = strata_rows(strata, art, data.qrels, block["grain"])
        res = item.data
        res.setdefault("strata", {})[args.split] = block
        flat = flat_strata_scores(block, args.measure)
        for entry in res["scores"].get(args.split, []):
            entry.update(flat)
        if args.out:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            meta = os.path.join(os.path.dirname(item.path), "model_meta.json")
            if os.path.isfile(meta):  # the copy keeps its model (leaderboard, report read it)
                shutil.copyfile(meta, os.path.join(os.path.dirname(target), "model_meta.json"))
        with atomic_write(target, encoding="utf-8") as fh:
            fh.write(dumps_json(res, indent=2, default=str))
        table = os.path.join(os.path.dirname(target),
                             f"{safe_name(args.task)}_strata_{safe_name(args.split)}.tsv")
        write_strata_table(table, table_rows)
        post = block["estimates"]["expected"]["analytic"].get("post_stratified", {})
        grain = block["grain"]
        print(f"{target}: {item.model}: {block['n_queries']} queries "
              f"({block['n_excluded']} excluded) in {grain['n_strata']} strata of ≥ "
              f"{grain['min_queries']} queries, "
              f"MSC {block['coverage']['cluster']['msc']:.3f}, "
              f"SCC {block['coverage']['cluster']['scc']:.3f}, pooled "
              f"{block['estimates']['expected']['analytic']['pooled']['estimate']:.4f}, "
              f"corpus-weighted {post.get('estimate', float('nan')):.4f}; per-query strata: "
              f"{table}")
        gen = block["generated"]
        if gen:
            g, o = gen["generated"], gen["original"]
            ci = ("" if g["ci_low"] is None else
                  f" [{g['ci_low']:.4f}, {g['ci_high']:.4f}]")
            print(f"  {g['n_queries']} generated queries in split {args.split!r}, reported "
                  f"apart (never in the estimates above): pooled {g['estimate']:.4f}{ci} "
                  f"against the {o['n_queries']} original queries' {o['estimate']:.4f}")
        for w in block["warnings"]:
            if block["origin"] != "original" and w.startswith("every query of this split"):
                print(f"  note: {w}")
    return 0
