"""``mteb-stratified structure``: build the corpus structure artifact (entities, clusters).

Resumable: extraction is checkpointed under ``OUT/.work`` (and LLM answers are cached in
SQLite), so rerunning the same command after a crash continues where it stopped.

``--engine ray [--address ...]`` runs extraction and embedding on a Ray cluster's workers
(:mod:`mteb_stratified.adapters.ray_engine`, the [ray] extra); the artifact is the same.

When the corpus folder holds judged splits (``qrels/<split>.tsv``), the corpus' fixed Low/Med/High
cut-points for Δ and J are computed from a reference query pool (by default every split except
``test``; see :func:`mteb_stratified.stratification.reference_bins`) and stored in ``metadata.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from ..core.errors import InputError
from ..core.rng import MAX_CONSENSUS_RUNS, MAX_SEED
from ..io.outputs import output_dir, remove_orphan_temps
from ..structure.leiden import BACKENDS as LEIDEN_BACKENDS
from ..structure.leiden import ITERATIONS_RULE, valid_iterations
from ..structure.levels import MAX_LEAF_RESOLUTION, MAX_LEAF_SIZE
from ..structure.pipeline import StructureConfig

_DEFAULT = StructureConfig()
from . import summary
from ._args import add_embedding_cache, add_llm_endpoint, float_in, int_at_least, print_json

def _iterations(text: str) -> int:
    """An argparse ``type``: a Leiden iteration count (``structure.leiden.ITERATIONS_RULE``)."""
    value = int_at_least(-1)(text)
    if not valid_iterations(value):
        raise argparse.ArgumentTypeError(f"must be {ITERATIONS_RULE}, got {value}")
    return value


def _add_leiden_arguments(g) -> None:
    """How Leiden runs: iterations and the backend (docs/validity/structure.md, "Leiden at the
    floor")."""
    g.add_argument("--consensus-iterations", type=_iterations, metavar="N",
                   default=_DEFAULT.consensus_iterations,
                   help="Leiden iterations of each consensus run: a positive integer, or -1 = "
                        "until an iteration gains nothing "
                        f"(default: {_DEFAULT.consensus_iterations})")
    g.add_argument("--n-iterations", type=_iterations, metavar="N",
                   default=_DEFAULT.n_iterations,
                   help="Leiden iterations of every other fit (the consensus graph's, the "
                        "leaves', the coarser levels'): a positive integer, or -1 "
                        f"(default: {_DEFAULT.n_iterations})")
    g.add_argument("--leiden-backend", choices=LEIDEN_BACKENDS, default=_DEFAULT.leiden_backend,
                   help="who runs Leiden: igraph = igraph's own C community_leiden, leidenalg = "
                        "the leidenalg library (about 10x slower per fit; to rebuild an "
                        f"artifact made with it) (default: {_DEFAULT.leiden_backend})")


def _add_speed_arguments(g) -> None:
    """The settings that trade build time: how names and documents are embedded, and how the
    seed ARI is measured (docs/validity/structure.md, "Structure in minutes")."""
    g.add_argument("--seed-ari", choices=("split-half", "second-build"), default="split-half",
                   help="how the artifact's quality.seed_ari is measured: split-half = the ARI "
                        "between the consensus of the first half of the Leiden runs and that of "
                        "the other half (no extra runs; conservative), second-build = against a "
                        "second consensus with seed + 1 (R more Leiden runs) "
                        "(default: split-half)")
    g.add_argument("--entity-embedding", choices=("static", "model"), default=None,
                   help="how entity names are embedded: static = a lookup in the embedding "
                        "model's distilled static embedding (model2vec's method, distilled once "
                        "per machine and cached), model = the model itself (default: static)")
    g.add_argument("--document-embedding", choices=("static", "model", "bf16", "int8", "auto"),
                   default=None,
                   help="how documents are embedded for the document map, as above: auto = "
                        "bf16 where the CPU has bfloat16 instructions (AVX-512 BF16, AMX, Arm "
                        "BF16) or --embed-device cuda runs it, else model; the artifact records "
                        "what ran (document_embedding_choice); static is "
                        "the fast path (5,000 abstracts in under 2 minutes, coarser clusters); "
                        "bf16 = the model with its matrix products in bfloat16: 2.4x model's "
                        "speed on the documents on a CPU with AVX-512 BF16 (AMX and Arm BF16 "
                        "expected alike), expected slower on CPUs without such instructions "
                        "(said on stderr); its map differs from model's about as much as a "
                        "change of --seed does; "
                        "int8 = the model with its linear layers quantised to int8 (CPU only): "
                        "it embeds documents 2.6-3x faster than model (5,000 abstracts in "
                        "under 3 minutes), with lower NPMI and seed ARI on NFCorpus over 5 "
                        "seeds (docs/validity/structure.md, 'Structure in minutes') "
                        "(default: model)")


def _add_leaf_arguments(g) -> None:
    """The document map's topics and leaves (structure/levels.py)."""
    g.add_argument("--document-resolution", type=float_in(0, low_open=True), default=1.0,
                   metavar="R", help="Leiden resolution of the document map's topics "
                                     "(default: 1.0)")
    g.add_argument("--leaf-resolution", type=float_in(0, MAX_LEAF_RESOLUTION, low_open=True),
                   default=0.5, metavar="R",
                   help="each topic is split again into leaves, the finest level where "
                        f"coverage looks, by Leiden at this resolution, in (0, "
                        f"{MAX_LEAF_RESOLUTION:g}] (default: 0.5)")
    g.add_argument("--leaf-min-size", type=int_at_least(1, MAX_LEAF_SIZE), default=10,
                   metavar="N",
                   help="a leaf holds at least N documents unless its topic holds fewer; "
                        f"1..{MAX_LEAF_SIZE} (default: 10)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "structure", help=summary(__name__),
        description="Extract entities from every document, link similar entities (k-NN over "
                    "embeddings), cluster them with Leiden and write the structure artifact "
                    "(metadata.json + JSONL.gz tables). Rerun the same command to resume. "
                    "Needs the [structure] extra (and [llm] for --extractor llm, [ray] for "
                    "--engine ray).")
    p.add_argument("--corpus", required=True, metavar="DIR_OR_TASK",
                   help="a BEIR folder (corpus.jsonl[.gz]) or a bundled dataset name (nfcorpus)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="artifact folder")
    p.add_argument("--extractor", choices=("offline", "keybert", "llm"), default="offline",
                   help="entity extractor: offline = spaCy noun chunks, keybert, or llm (an "
                        "OpenAI-compatible server) (default: offline)")
    llm = p.add_argument_group("LLM extractor")
    add_llm_endpoint(llm, cache_name="llm_cache.sqlite")
    llm.add_argument("--concurrency", type=int_at_least(1, 256), default=4, metavar="N",
                     help="parallel requests (default: 4)")
    llm.add_argument("--max-tokens", type=int_at_least(1), default=512, metavar="N",
                     help="completion limit per document (default: 512)")
    llm.add_argument("--retry-failed", action="store_true",
                     help="ask again for the documents whose answers failed (no usable JSON, "
                          "rejected requests); what will be sent is printed before it is sent")
    g = p.add_argument_group("graph and clustering")
    g.add_argument("--clusters", choices=("documents", "entities"), default="documents",
                   help="the map: documents = Leiden clusters of the documents' k-NN graph "
                        "(entities still give J and the labels); entities = Leiden clusters of "
                        "the entity graph; documents measured better on NFCorpus dev "
                        "(coherence, replication, power) (default: documents)")
    _add_leaf_arguments(g)
    g.add_argument("--embedding-model", default=None, metavar="NAME_OR_DIR",
                   help="sentence-transformers model (default: the packaged all-MiniLM-L6-v2)")
    g.add_argument("--k", type=int_at_least(1, 10_000), default=10,
                   help="neighbours per entity (default: 10)")
    g.add_argument("--threshold", type=float_in(-1, 1), default=0.6, metavar="TAU",
                   help="cosine an edge needs (default: 0.6)")
    g.add_argument("--merge-threshold", type=float_in(0, 1, low_open=True), default=0.92,
                   metavar="COS",
                   help="cosine at which near-duplicate names merge (default: 0.92)")
    g.add_argument("--min-doc-freq", type=int_at_least(1), default=2, metavar="N",
                   help="cluster names found in at least N documents (default: 2)")
    g.add_argument("--max-doc-share", type=float_in(0, 1, low_open=True), default=0.1,
                   metavar="SHARE",
                   help="drop names found in more than this share of documents (default: 0.1)")
    g.add_argument("--objective", choices=("modularity", "cpm"), default="modularity",
                   help="Leiden objective (default: modularity)")
    g.add_argument("--resolution", type=float_in(0, low_open=True), default=0.5, metavar="R",
                   help="Leiden resolution (default: 0.5)")
    g.add_argument("--min-cluster-size", type=int_at_least(1), default=3, metavar="N",
                   help="smaller clusters are dropped (default: 3)")
    g.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0,
                   help=f"random seed in [0, {MAX_SEED}] (default: 0)")
    g.add_argument("--consensus-runs", type=int_at_least(1, MAX_CONSENSUS_RUNS),
                   default=_DEFAULT.consensus_runs, metavar="R",
                   help="Leiden runs whose consensus is clustered (seeds seed·R … seed·R+R-1); "
                        f"1 = a single run, at most {MAX_CONSENSUS_RUNS} "
                        f"(default: {_DEFAULT.consensus_runs})")
    _add_leiden_arguments(g)
    g.add_argument("--entity-context", choices=("description", "name"), default="description",
                   help="embed each entity as 'name: first sentence' or the bare name "
                        "(default: description)")
    _add_speed_arguments(g)
    b = p.add_argument_group("Δ/J bins (stored in the artifact)")
    b.add_argument("--bins-splits", default="auto", metavar="auto|none|SPLIT[,SPLIT]",
                   help="judged splits whose queries fix the Δ/J cut-points (default: auto = "
                        "every split but test; refused when test is the only judged split, "
                        "since bins never come from the evaluated queries); none = the fixed "
                        "cut-points")
    b.add_argument("--cut-points", type=_cut_points_arg, default=None, metavar="DA,DB:JA,JB",
                   help="explicit Δ and J cut-points instead of a reference split, e.g. "
                        "0.5,0.75:0.25,0.5 (default: from --bins-splits)")
    b.add_argument("--soft-bins", action=argparse.BooleanOptionalAction, default=True,
                   help="also store cut-points for the soft J, J over concepts, the default "
                        "alignment of stratify and report (embeds the reference queries' and "
                        "their documents' entities) (default: on)")
    b.add_argument("--soft-tau", type=float_in(-1, 1), default=None, metavar="COS",
                   help="cosine tau of the soft J (default: 0.8)")
    r = p.add_argument_group("engine (where extraction and embedding run)")
    r.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local = this process; ray = Ray Data pipelines on a Ray cluster's "
                        "workers, the same artifact byte for byte (needs the [ray] extra) "
                        "(default: local)")
    r.add_argument("--address", default=None, metavar="auto|HOST:PORT",
                   help="the Ray cluster to join, from one of its nodes: auto = the cluster of "
                        "this node (after 'ray start'), or HOST:PORT of its head; Ray Client "
                        "(ray://) cannot run Ray Data pipelines (default: a local Ray on this "
                        "machine)")
    r.add_argument("--workers", type=int_at_least(1, 4096), default=None, metavar="N",
                   help="Ray actors per step, one CPU each (default: the cluster's CPUs)")
    r.add_argument("--embed-device", choices=("cpu", "cuda"), default="cpu",
                   help="where the Ray embedding actors run; cuda (one GPU per actor) is "
                        "faster but its float bits differ from a CPU build (default: cpu)")
    p.add_argument("--limit", type=int_at_least(1), default=None, metavar="N",
                   help="only the first N documents by id, for a quick look (default: all)")
    add_embedding_cache(r)
    p.add_argument("--keep-work", action="store_true", help="keep OUT/.work after success")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)
    return p


@contextlib.contextmanager
def _result_stdout(ray: bool):
    """stdout is the command's result (``--json``): while the build runs, whatever else writes
    to it (a library's print; Ray's forwarded worker and raylet log lines, which its log
    thread prints to ``sys.stdout`` at any time) goes to stderr.  With ``ray``, a Ray that
    this command started is shut down on the way out (its log thread joined), so no line of
    it can follow the result.  Process-wide (``sys.stdout``): writes straight to file
    descriptor 1 are not caught."""
    loaded = sys.modules.get("ray")
    running_before = loaded is not None and loaded.is_initialized()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        loaded = sys.modules.get("ray")
        if ray and not running_before and loaded is not None and loaded.is_initialized():
            try:  # a failing shutdown must not hide the build's own error or result
                with contextlib.redirect_stdout(sys.stderr):
                    loaded.shutdown()
            except Exception as exc:  # noqa: BLE001 - reported, the command goes on
                print(f"warning: Ray did not shut down cleanly ({type(exc).__name__}: {exc})",
                      file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from ..io import dataset_folder
    from ..io.lock import folder_lock
    folder = dataset_folder(args.corpus)  # checked before spaCy, torch or faiss load
    output_dir(args.out)
    if args.engine == "local":
        ray_only = [opt for opt, value in (("--address", args.address),
                                          ("--workers", args.workers),
                                          ("--embed-device", args.embed_device != "cpu"))
                    if value]
        if ray_only:
            raise InputError(f"{', '.join(ray_only)} only apply with --engine ray",
                             fix="add --engine ray, or drop " + ", ".join(ray_only))
    else:
        from ..adapters.ray_engine import check_address
        check_address(args.address)  # a malformed or ray:// address fails before any load
        if args.embed_device != "cpu" and args.document_embedding == "int8":
            raise InputError(f"--document-embedding int8 runs on CPUs only, not with "
                             f"--embed-device {args.embed_device}",
                             fix="drop --embed-device cuda, or use --document-embedding model "
                                 "(or bf16)")
    _resolve_auto(args)
    if args.document_embedding == "bf16" and args.engine == "local" and \
            args.clusters == "documents":
        from ..structure.sentence_model import cpu_bf16_native
        if cpu_bf16_native() is False:
            print("warning: --document-embedding bf16: this CPU has no bfloat16 instructions "
                  "(AVX-512 BF16, AMX or Arm BF16), so its bfloat16 products are emulated and "
                  "slower than --document-embedding model",
                  file=sys.stderr, flush=True)
    if args.cut_points is None:
        _reference_splits(folder, args.bins_splits)  # a wrong --bins-splits fails now
    # one job per --out: a second one would repeat paid calls and race on the checkpoint
    from ..io.embedding_cache import using
    with folder_lock(args.out, what=f"mteb-stratified structure --out {args.out}"), \
            using(args.embedding_cache):
        for where in (args.out, os.path.join(args.out, ".work")):  # a killed job's temp files
            remove_orphan_temps(where)  # never through a linked .work (refused below)
        return _build(args, folder)


def _resolve_auto(args: argparse.Namespace) -> None:
    """``--document-embedding auto``: the method it picks here
    (:func:`~mteb_stratified.structure.embed.resolve_document_embedding`) replaces it, and
    ``args.document_embedding_choice`` keeps the request, the pick and why, for the artifact."""
    args.document_embedding_choice = None
    if args.document_embedding != "auto":
        return
    from ..structure.embed import resolve_document_embedding

    device = args.embed_device if args.engine == "ray" else "cpu"
    method, why = resolve_document_embedding("auto", device=device)
    args.document_embedding = method
    args.document_embedding_choice = {"requested": "auto", "resolved": method, "why": why}


def _model_reachable(args: argparse.Namespace) -> None:
    """With the hub offline, a --embedding-model the embeddings load that is not in the local
    cache is refused now, not after the extraction (:func:`offline_miss`)."""
    if "model" in (args.entity_embedding, args.document_embedding) \
            or args.document_embedding in ("bf16", "int8"):
        from ..structure.sentence_model import offline_miss

        miss = offline_miss(args.embedding_model)
        if miss is not None:
            raise miss


def _config(args: argparse.Namespace, extractor_params: dict):
    """The :class:`StructureConfig` the flags ask for."""
    return StructureConfig(
        extractor=args.extractor, extractor_params=extractor_params,
        embedding_model=args.embedding_model, k=args.k, threshold=args.threshold,
        merge_threshold=args.merge_threshold, min_doc_freq=args.min_doc_freq,
        max_doc_share=args.max_doc_share, objective=args.objective, resolution=args.resolution,
        min_cluster_size=args.min_cluster_size, seed=args.seed,
        consensus_runs=args.consensus_runs, entity_context=args.entity_context,
        consensus_iterations=args.consensus_iterations, n_iterations=args.n_iterations,
        leiden_backend=args.leiden_backend,
        clusters=args.clusters, document_resolution=args.document_resolution,
        leaf_resolution=args.leaf_resolution, leaf_min_size=args.leaf_min_size,
        seed_ari=args.seed_ari,
        **{k: v for k, v in (("entity_embedding", args.entity_embedding),
                             ("document_embedding", args.document_embedding)) if v is not None})


def _build(args: argparse.Namespace, folder: str) -> int:
    from ..io import load_corpus
    from ..structure.pipeline import BuildReport, build_structure

    _model_reachable(args)
    name, corpus = os.path.basename(folder.rstrip("/")), load_corpus(folder)
    if args.limit is not None:
        corpus = {d: corpus[d] for d in sorted(corpus)[:args.limit]}
    extractor = None
    extractor_params: dict = {}
    if args.extractor == "llm":
        from ..structure.llm import LLMExtractor
        extractor = LLMExtractor(
            base_url=args.base_url, model=args.model, api_key=args.api_key,
            concurrency=args.concurrency, max_tokens=args.max_tokens, timeout=args.timeout,
            max_retries=args.max_retries, max_answer_bytes=args.max_answer_mib << 20,
            cache_path=args.cache or os.path.join(args.out, "llm_cache.sqlite"),
            price_in=args.price_in, price_out=args.price_out, progress=not args.no_progress,
            retry_failed=args.retry_failed)
        extractor_params = {"model": extractor.model, "base_url": extractor.base_url}
    config = _config(args, extractor_params)
    with _result_stdout(args.engine == "ray"):
        engine = None
        if args.engine == "ray":
            from ..adapters.ray_engine import RayEngine
            engine = RayEngine(args.address, workers=args.workers,
                               embed_device=args.embed_device, progress=not args.no_progress)
        # what the LLM will be sent, said before it is sent (and in the summary: llm_plan)
        report = BuildReport(announce=lambda words: print(words, file=sys.stderr, flush=True))
        notes: list = []  # the Δ/J bins: the pipeline's last step, before the artifact's one save
        art = build_structure(corpus, config, out=args.out, extractor=extractor,
                              progress=not args.no_progress, name=name, report=report,
                              keep_work=args.keep_work, retry_failed=args.retry_failed,
                              engine=engine, finish=_bins_step(folder, corpus, args, notes))
        engine_summary = engine.summary() if engine is not None else None
    bins_note = notes[-1]
    if report.reused and report.written:
        print(f"note: {args.out}: the reused artifact's Δ/J bins differ from these settings, so "
              "it is written again with the new ones (its tables are unchanged)",
              file=sys.stderr, flush=True)
    stats = art.metadata["stats"]
    summary = {"out": args.out, "reused": report.reused, "resumed_docs": report.resumed_docs,
               "timings_s": {k: round(v, 2) for k, v in report.timings.items()},
               "n_docs": art.metadata["corpus"]["n_docs"], "clusters": stats["clusters"],
               "entities": stats["entities"], "modularity": round(stats["modularity"], 4),
               "docs_without_clusters": art.metadata["docs_without_clusters"]["count"],
               "extraction_failures": art.metadata["extraction_failures"]["count"],
               "bins": art.metadata.get("bins", {}), "bins_note": bins_note,
               "largest": [[c["id"], c["size"], c["n_docs"], round(c["mass"], 4), c["label"]]
                           for c in art.clusters[:10]],
               **({"leaves": art.metadata["leaves"]} if "leaves" in art.metadata else {})}
    if extractor is not None and hasattr(extractor, "usage"):
        summary["llm_usage"] = extractor.usage()
        summary["llm_plan"] = report.llm_plan
    if engine_summary is not None:
        summary["engine"] = engine_summary
    _warn_empty_bins(art)
    if args.json:
        print_json(summary)
        return 0
    state = "reused existing artifact" if report.reused else (
        f"resumed after {report.resumed_docs} documents" if report.resumed_docs else "built")
    print(f"{args.out}: {state}: {summary['n_docs']} documents, {summary['entities']} entities, "
          f"{summary['clusters']} clusters, modularity {summary['modularity']}")
    _print_leaves(art.metadata)
    if summary["docs_without_clusters"]:
        print(f"  {summary['docs_without_clusters']} documents have no cluster weight "
              "(listed in metadata.json: docs_without_clusters)")
    if summary["extraction_failures"]:
        print(f"  {summary['extraction_failures']} documents failed extraction "
              "(metadata.json: extraction_failures)")
    if report.timings:
        print("  time (s): " + ", ".join(f"{k} {v}" for k, v in summary["timings_s"].items()))
    if "llm_usage" in summary:
        print("  LLM: " + json.dumps(summary["llm_usage"]))
    if "engine" in summary:
        e = summary["engine"]
        steps = "; ".join(f"{step} {v['items']} in {v['seconds']} s ({v['per_second']}/s, "
                          f"{v['workers']} workers)" for step, v in e["steps"].items())
        print(f"  Ray: {e['nodes']} nodes, {e['cpus']} CPUs, {e['gpus']} GPUs: "
              f"{steps or 'nothing to run (resumed)'}")
    print(f"  Δ/J bins: {bins_note}")
    from ..io.markdown import term_cell  # a label is the corpus' own words

    print("  largest clusters (id, entities, docs, mass, label):")
    for row in summary["largest"]:
        print(f"    {row[0]:>4} {row[1]:>5} {row[2]:>5} {row[3]:.4f}  {term_cell(row[4])}")
    return 0


def _print_leaves(metadata: dict) -> None:
    """The document map's leaves in one line, and the note of a corpus too small to split."""
    lv = metadata.get("leaves")
    if not lv:
        return
    print(f"  {lv['leaves']} leaves in {lv['topics']} topics"
          + (f", {lv['sizes']['min']}–{lv['sizes']['max']} documents each (median "
             f"{lv['sizes']['median']:g})" if lv.get("sizes") else ""))
    if lv.get("note"):
        print(f"  note: {lv['note']}")


def _reference_splits(folder: str, spec: str) -> list[str]:
    from ..io import qrels_splits
    found = qrels_splits(folder)
    if spec == "none":
        return []
    if spec == "auto":
        held_out = [s for s in found if s != "test"]
        if not held_out and found:
            raise InputError(
                f"the only judged split in {folder} is {', '.join(found)}, the split that is "
                "evaluated: Δ/J cut-points taken from it would be fitted to the queries they "
                "then stratify",
                fix="pass a reference split of other queries (--bins-splits dev), explicit "
                    "cut-points (--cut-points 0.5,0.75:0.25,0.5), or the fixed corpus-"
                    "independent cut-points (--bins-splits none)")
        return held_out
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in found]
    if not wanted or unknown:
        raise InputError(f"--bins-splits: no qrels for {unknown or spec!r} in {folder}",
                         fix=f"choose among {', '.join(found) or '(none found)'}, or 'none'")
    return wanted


def _bins_step(folder: str, corpus: dict, args, notes: list):
    """The pipeline's last step (``build_structure``'s ``finish``): the artifact with its Δ/J
    cut-points, a new artifact when they differ from the ones it stores, computed before its
    one save; the summary's words for them are appended to ``notes``."""
    choice = getattr(args, "document_embedding_choice", None)

    def step(art, extractor):
        bins, note = _bins(art, extractor, folder, corpus, args)
        notes.append(note)
        art = art if bins is None or bins == art.bins else art.with_bins(bins)
        # --document-embedding auto: what was asked, next to what ran (parameters)
        old = art.metadata.get("document_embedding_choice")
        if (None if old is None else dict(old)) != choice:
            art = art.with_metadata("document_embedding_choice", choice)
        return art
    return step


def _bins(art, extractor, folder: str, corpus: dict, args) -> tuple:
    """``(bins, note)``: the reference cut-points (when the folder has judged splits; the
    reference queries read by ``extractor``, the build's), or the explicit ones; None when
    there are none to store."""
    from dataclasses import replace

    from ..io import load_beir
    from ..stratification import SOFT_TAU, reference_bins

    cuts = args.cut_points
    if cuts is not None:
        bins = {"dispersion": list(cuts[0]), "alignment": list(cuts[1]),
                "alignment_soft": list(cuts[1]),
                "source": "explicit cut-points (--cut-points; J's serve both J variants)"}
        return bins, f"Δ {_fmt(cuts[0])}, J {_fmt(cuts[1])} (explicit)"
    splits = _reference_splits(folder, args.bins_splits)
    if not splits:
        return None, ("none stored (no reference split): Δ/J use the fixed cut-points "
                      "Δ (0.5, 0.75), J (0.25, 0.5)")
    if args.limit is not None:
        return None, "not computed with --limit (a partial corpus)"
    tau = SOFT_TAU if args.soft_tau is None else args.soft_tau
    b = art.bins
    same = (b.get("reference", {}).get("splits") == sorted(splits)
            and (not args.soft_bins or ("alignment_soft" in b and b.get("tau") == tau)))
    if not same:
        datasets = [replace(load_beir(folder, split, corpus=False), corpus=corpus)
                    for split in splits]
        b = reference_bins(art, datasets, soft=args.soft_bins, tau=tau, extractor=extractor,
                           embedding_model=args.embedding_model)
    soft = f", soft J {_fmt(b['alignment_soft'])} (τ {b['tau']})" if "alignment_soft" in b else ""
    return b, (f"Δ {_fmt(b['dispersion'])}, J {_fmt(b['alignment'])}{soft} from "
               f"{b['reference']['n_queries']} queries of {', '.join(b['reference']['splits'])}")


def _cut_points_arg(spec: str):
    """An argparse ``type``: ``"DA,DB:JA,JB"`` → ((DA, DB), (JA, JB)), ascending numbers in
    [0, 1] (Δ and J both lie there)."""
    from ..core import Bins
    number = float_in(0, 1)  # the options' one number grammar: ASCII decimal, finite
    try:
        d, j = spec.split(":")
        cuts = [tuple(number(x) for x in part.split(",")) for part in (d, j)]
        bins = Bins(*cuts)
    except (ValueError, InputError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            f"must be DA,DB:JA,JB (ascending numbers in [0, 1], e.g. 0.5,0.75:0.25,0.5), "
            f"got {spec!r}") from None
    return bins.dispersion, bins.alignment


def _fmt(cuts) -> str:
    return "(" + ", ".join(f"{c:.4g}" for c in cuts) + ")"


def _warn_empty_bins(art) -> None:
    """Cut-points that repeat a value leave a bin empty by construction: said on stderr."""
    from ..core.stats.strata import Bins

    stored = art.metadata.get("bins")
    if stored:
        for w in Bins.from_dict(stored).empty_bins_warnings():
            print(f"warning: {w}", file=sys.stderr)
