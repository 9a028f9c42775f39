"""The flags ``stratify`` and ``report`` share, and how they map onto the library: the
structure, dataset and strata options (:func:`add_common`, :func:`check_options`), the user's
LLM endpoint for an LLM-built structure's query entities (:func:`endpoint_settings`, the cache
folder) and :func:`load_context`, which hands them to
:func:`mteb_stratified.stratification.load_context`.  Argument mapping only: what is loaded,
and how, is the library's.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..core import DEFAULT_N_MIN, InputError
from ..core.stats.hierarchy import DEFAULT_MIN_QUERIES
from ..core.options import DEFAULT_TASK
from ..core.rng import MAX_SEED
from ._args import add_llm_endpoint, add_skip_unreadable, int_at_least

__all__ = ["SCHEMES", "ALIGNMENTS", "DEFAULT_TASK", "add_common", "check_options",
           "load_context", "query_cache_path", "user_cache_dir", "endpoint_settings", "notify"]

#: Stratum schemes and J variants (owned by core.stats.strata and stratification; literal here so
#: parsing the command line imports nothing heavy; a test checks they agree).
SCHEMES = ("cluster", "cell")
ALIGNMENTS = ("exact", "soft")


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr (one per long step, with its time)")
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
    p.add_argument("--require-same-queries", action="store_true",
                   help="exit 2 when the inputs were evaluated on different query sets "
                        "(default: each query set is compared on its own, never across)")
    p.add_argument("--task", default=DEFAULT_TASK,
                   help="the task whose results a folder argument stands for "
                        f"(default: {DEFAULT_TASK})")
    add_skip_unreadable(p)
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
            "max_answer_bytes": args.max_answer_mib << 20,
            "price_in": args.price_in, "price_out": args.price_out,
            "cache_path": args.cache or cache_path}


def notify(line: str) -> None:
    """A one-line notice on stderr (stdout stays the command's output), escaped for the
    terminal (:func:`~..io.markdown.term_cell`: it may quote a name from a file)."""
    from ..io.markdown import term_cell

    print("\n".join(term_cell(part) for part in str(line).split("\n")), file=sys.stderr)


def check_options(args) -> None:
    from ..core.stats.coverage import check_n_min
    from ..core.stats.strata import check_scheme
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
    art, data, strata = load(args.structure, args.dataset, split=args.split,
                             alignment=args.alignment, embedding_model=args.embedding_model,
                             endpoint=endpoint, notify=notify)
    return art, data, strata


def query_cache_path(args) -> str:
    """The default cache of the query entities: in stratify's -o/--out folder, else in the
    user's cache folder; never in the --structure folder (an artifact may come with a
    pre-filled cache that would decide the entities, and may be read-only)."""
    folder = args.out if getattr(args, "out_is_folder", False) and args.out else user_cache_dir()
    return os.path.join(folder, "llm_cache.sqlite")
