"""``generate`` as one library call: :func:`run` fills the strata a query set leaves empty and
writes the output folder; :class:`Outcome` is what it did.

:func:`run` checks the inputs before any work (the splits, the selection pool, the panel's
runs, the output folder), takes the folder's lock (one job per output: a second would repeat
paid calls and race on the cache), loads the dataset and the structure, runs the strategy
(:class:`~.strategies.Selection` of real queries, or :class:`~.strategies.Drafting` over the
offline template parts or the LLM ones), passes the result through the validity gate
(:func:`~.gate.run_gate`) and writes the folder (:func:`~.output.write_dataset`).  Its settings
are a :class:`RunConfig` (the LLM path's in :class:`LLMOptions`).  The two parts that live in
higher layers are passed in: the BM25 retriever of the gate's panel
(:func:`mteb_stratified.adapters.bm25.bm25_run`) and the Markdown of ``coverage.md``
(:func:`mteb_stratified.report.generation.coverage_markdown`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Mapping

from ..core import InputError
from ..io.coverage_report import LLMUsage, ValidityGate
from .config import GenerationConfig
from .result import GenerationResult

__all__ = ["LLMOptions", "RunConfig", "Outcome", "CandidateBar", "run"]

#: The writers: real judged queries, the offline templates (a smoke test), an LLM.
WRITERS = ("select", "template", "llm")
#: The keys of :attr:`LLMOptions.endpoint` (what the generator's chat endpoint is made of).
ENDPOINT_KEYS = ("base_url", "model", "api_key", "timeout", "max_retries", "price_in",
                 "price_out", "max_answer_bytes", "cache_path")


@dataclass(frozen=True)
class LLMOptions:
    """The LLM path's settings.  ``endpoint``: the user's endpoint as
    :class:`~mteb_stratified.structure.llm.LLMExtractor` arguments (``base_url``, ``model``,
    ``api_key``, ``timeout``, ``max_retries``, ``max_answer_bytes``, ``price_in``,
    ``price_out``, ``cache_path``: the SQLite answer cache); ``budget``: LLM calls at most
    (cached answers included); ``max_tokens_total``: tokens at most; ``concurrency``: requests
    in flight; ``judge_batch``: documents graded per request; ``retry_failed``: ask again for
    the cached answers that held no usable JSON."""

    endpoint: Mapping
    budget: int
    max_tokens_total: int | None = None
    concurrency: int = 1
    judge_batch: int = 8
    retry_failed: bool = False

    def __post_init__(self) -> None:
        missing = [k for k in ENDPOINT_KEYS if k not in self.endpoint]
        if missing:
            raise InputError(f"the LLM endpoint settings lack {', '.join(missing)}",
                             fix="give every key of generation.runner.ENDPOINT_KEYS (the "
                                 "CLI's endpoint_settings makes them)")
        object.__setattr__(self, "endpoint", MappingProxyType(dict(self.endpoint)))


@dataclass(frozen=True)
class RunConfig:
    """What :func:`run` does.  ``dataset``: a BEIR folder or a bundled dataset's name;
    ``structure``: a structure artifact folder, or ``"bundled"`` (the bundled NFCorpus one);
    ``out``: the output folder; ``generation``: the loop's settings; ``split``: the original
    query set; ``writer``: ``select`` (real queries of ``pool_splits``, default every judged
    split but ``split``), ``template`` (offline) or ``llm`` (needs ``llm``); None (the
    default): ``llm`` when ``llm`` is given, else ``select``; ``panel``:
    ``((name, run file), ...)``, systems added to the gate's panel; ``merge_into_split``: also
    merge the added qrels into that split; ``pool_bm25``/``pool_dense``/``max_pool``/
    ``no_dense``: the pooling (``pool_dense`` None: 4 on the LLM path, 0 offline);
    ``embedding_model``: the model the structure records, allowed when it is not the packaged
    one; ``embedding_cache``: the embedding cache folder (``"off"``: none; None: the
    default); ``show_progress``: progress bars on stderr."""

    dataset: str
    structure: str
    out: str
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    split: str = "test"
    writer: str | None = None
    pool_splits: tuple | None = None
    panel: tuple = ()
    merge_into_split: str | None = None
    pool_bm25: int = 4
    pool_dense: int | None = None
    max_pool: int = 8
    no_dense: bool = False
    embedding_model: str | None = None
    embedding_cache: str | None = None
    llm: LLMOptions | None = None
    show_progress: bool = True

    def __post_init__(self) -> None:
        if self.writer is None:  # the default: llm with LLM options, else select
            object.__setattr__(self, "writer", "llm" if self.llm is not None else "select")
        if self.writer not in WRITERS:
            raise InputError(f"writer {self.writer!r} is not one of {', '.join(WRITERS)}",
                             fix="choose select, template or llm")
        if (self.writer == "llm") != (self.llm is not None):
            raise InputError(f"the {self.writer} writer "
                             + ("runs offline: it takes no LLM options" if self.llm else
                                "needs the LLM options (an endpoint and a budget)"),
                             fix="give llm=LLMOptions(...) with writer='llm' only")
        if self.pool_splits is not None and self.writer != "select":
            raise InputError("pool_splits applies only to the select writer",
                             fix="drop pool_splits, or use writer='select'")
        if isinstance(self.panel, Mapping) or not all(
                isinstance(p, (tuple, list)) and len(p) == 2 for p in self.panel):
            raise InputError("panel must be (name, run file) pairs",
                             fix="e.g. panel=(('e5', 'runs/e5.trec'),)")

    @property
    def n_dense(self) -> int:
        """Dense candidates per query (the default: 4 on the LLM path, 0 offline)."""
        return self.pool_dense if self.pool_dense is not None else (4 if self.llm else 0)

    @property
    def dense(self) -> bool:
        """Whether the pool takes dense candidates."""
        return not self.no_dense and self.n_dense > 0

    @property
    def work_dir(self) -> str:
        """``OUT/.work``: the offline path's caches."""
        return os.path.join(self.out, ".work")


@dataclass(frozen=True)
class Outcome:
    """What :func:`run` did: the ``result`` (its ``gate`` and ``usage`` included), the folder
    it wrote (``written``: the paths, ``splits`` and the ``coverage.json`` ``report`` of
    :func:`~.output.write_dataset`), the run's ``summary`` (the ``--json`` line) and ``lines``
    (its text)."""

    result: GenerationResult
    written: Mapping
    summary: Mapping
    lines: tuple

    @property
    def gate(self) -> ValidityGate:
        """The validity gate (:func:`~.gate.run_gate`)."""
        return self.result.gate

    @property
    def verdict(self) -> str:
        """The gate's verdict line."""
        return self.result.gate.verdict

    @property
    def usage(self) -> LLMUsage:
        """LLM usage (empty offline)."""
        return self.result.usage


class CandidateBar:
    """The generation loop's progress on stderr: candidates drafted (of ``total`` when given)
    and accepted, updated as each candidate is merged (the loop's ``log``).  A context
    manager; disabled (``enabled=False``, or tqdm missing) it does nothing."""

    def __init__(self, total: int | None, *, enabled: bool = True) -> None:
        from ..structure.extraction import progress_bar
        self.accepted = 0
        self.bar = progress_bar(total, "generate: candidates", enabled, unit="candidate")
        self.enabled = self.bar is not None

    def __call__(self, cand) -> None:
        """One candidate merged (a :class:`~.candidates.Candidate`)."""
        if self.bar is None:
            return
        self.accepted += cand.status == "accepted"
        self.bar.set_postfix_str(f"accepted {self.accepted}", refresh=False)
        self.bar.update(1)

    def __enter__(self) -> "CandidateBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclass(frozen=True)
class _Parts:
    """What the run's steps share: the injected ``bm25_run``, ``markdown`` and ``notify``,
    the panel's runs read from their files, and the selection's pool splits."""

    bm25_run: Callable
    markdown: Callable
    notify: Callable
    panel: Mapping
    pools: tuple


def run(config: RunConfig, *, bm25_run: Callable, coverage_markdown: Callable,
        notify: Callable[[str], None] | None = None) -> Outcome:
    """Fill the strata ``config.dataset`` leaves empty and write ``config.out`` (module
    docstring); the :class:`Outcome`.  ``bm25_run(corpus, queries, depth=)`` -> ``(run,
    info)``: the BM25 retriever of the gate's panel; ``coverage_markdown(report, reasons)``:
    ``coverage.md``'s text; ``notify(line)``: told each notice (a train pool, a run left out
    of the panel, the gate's verdict, what a merge changed; default: none).  Bad input is an
    :class:`InputError`, raised before any work where it can be."""
    from ..io import dataset_folder
    from ..io.embedding_cache import using
    from ..io.lock import folder_lock
    from ..io.outputs import output_dir
    from .output import check_splits

    for name, part in (("bm25_run", bm25_run), ("coverage_markdown", coverage_markdown)):
        if not callable(part):  # else it would fail after the paid calls
            raise InputError(f"{name} must be callable, got {type(part).__name__}",
                             fix="pass mteb_stratified.adapters.bm25.bm25_run and "
                                 "mteb_stratified.report.generation.coverage_markdown")
    folder = dataset_folder(config.dataset)  # inputs checked before the heavy imports
    check_splits(folder, config.split, config.merge_into_split)
    notify = notify or (lambda line: None)
    pools = _pool_splits(config, folder, notify) if config.writer == "select" else ()
    parts = _Parts(bm25_run, coverage_markdown, notify, _read_panel(config.panel), pools)
    output_dir(config.out)
    with folder_lock(config.out, what=f"mteb-stratified generate --out {config.out}"), \
            using(config.embedding_cache):
        return _generate(config, folder, parts)


def _pool_splits(config: RunConfig, folder: str, notify) -> tuple:
    """The selection's pool splits, checked (:func:`~.select.pool_splits`); a train split is
    said to favour models fine-tuned on it."""
    from .select import pool_splits

    requested = None if config.pool_splits is None else list(config.pool_splits)
    pools = pool_splits(folder, config.split, requested)
    if not pools:
        raise InputError(f"no split to select from: the dataset judges only {config.split!r}",
                         source=folder,
                         fix="give a BEIR folder with a dev (or train) split, or use "
                             "--writer template (a smoke test) or --base-url (an LLM)")
    if "train" in pools:
        notify("warning: the pool holds train queries: models fine-tuned on that split "
               "are favoured on them (--pool-splits dev to leave it out)")
    return tuple(pools)


def _read_panel(panel) -> dict:
    """``{name: run}`` of the panel's ``(name, run file)`` pairs (read and checked before any
    work): a name may not repeat, nor be one of the built-in systems."""
    from ..io.files import read_run

    out: dict = {}
    for name, path in panel:
        if name in out or name in ("BM25", "MiniLM"):
            raise InputError(f"--run {f'{name}={path}'!r}: the panel already has a system "
                             f"{name!r}", fix="give each run another name")
        out[name] = read_run(path)
    return out


def _load(config: RunConfig, folder: str):
    """``(dataset, artifact)``: the evaluated split and the structure, checked against each
    other; the offline path refuses an LLM-built structure."""
    from ..io import load_beir
    from ..structure.artifact import StructureArtifact

    if config.structure == "bundled":
        artifact = StructureArtifact.bundled("nfcorpus")
    else:
        artifact = StructureArtifact.load(config.structure)
    dataset = load_beir(folder, config.split)
    artifact.check_corpus(dataset.corpus, source=folder)
    if config.llm is None and artifact.metadata["extractor"]["kind"] == "llm":
        raise InputError(f"the structure {config.structure} was extracted by an LLM: the "
                         "offline path reads each query's entities with the structure's own "
                         "extractor, so it needs that LLM too",
                         fix="add --base-url (and --budget) for the LLM path, or build the "
                             "structure with the offline extractor (mteb-stratified structure "
                             "--extractor offline)")
    return dataset, artifact


def _generate(config: RunConfig, folder: str, parts: _Parts) -> Outcome:
    """The run inside the output folder's lock: load, fill, gate, write."""
    from ..structure.query_entities import embedding_model_of
    from .pool import Pooler

    dataset, artifact = _load(config, folder)
    offline = config.llm is None
    # a recorded model the user did not name is refused before any call
    model = (embedding_model_of(artifact, config.embedding_model)
             if config.dense or offline else None)
    cfg = config.generation
    _check_targets(cfg, artifact, dataset)  # a target above the ceiling: before any model
    if config.writer == "select":
        return _select(config, folder, dataset, _reader(config, artifact, parts.notify), parts)
    endpoint = None if offline else _endpoint(config.llm)  # no model or key: before any model
    pooler = Pooler(dataset.corpus, k_bm25=config.pool_bm25, k_dense=config.n_dense,
                    max_pool=config.max_pool, dense=config.dense, model=model,
                    cache_dir=config.work_dir)
    if offline:
        strategy, result = _template(config, dataset, artifact, pooler, model, parts)
    else:
        strategy, result = _llm_generate(config, endpoint, artifact, dataset, pooler, parts)
    return _finish(config, dataset, result, strategy.provenance(cfg, artifact), parts)


def _template(config: RunConfig, dataset, artifact, pooler, model, parts: _Parts):
    """The offline template path, ``(strategy, result)``: the offline writer, judge and
    verifier (:func:`~.offline.offline_parts`), and the gate with the offline judge."""
    from .offline import offline_parts
    from .strategies import Drafting

    cfg = config.generation
    artifact = _reader(config, artifact, parts.notify)
    drafted = offline_parts(artifact, pooler, seed=cfg.seed, n_seeds=cfg.n_seeds,
                            cache_dir=config.work_dir, model=model,
                            show_progress=config.show_progress)
    with CandidateBar(cfg.max_candidates, enabled=config.show_progress) as bar:
        strategy = Drafting(*drafted, pooler, log=bar)
        result = strategy.fill(dataset, artifact, cfg)
    return strategy, _gated(config, dataset, result, parts, judge=strategy.judge)


def _select(config: RunConfig, folder: str, dataset, artifact, parts: _Parts) -> Outcome:
    """The selection: real judged queries of the pool splits into the uncovered strata."""
    from ..io import load_beir
    from .strategies import Selection

    pools = {name: load_beir(folder, name, corpus=False) for name in parts.pools}
    strategy = Selection({name: replace(p, corpus=dataset.corpus) for name, p in pools.items()})
    result = strategy.fill(dataset, artifact, config.generation)
    result = _gated(config, dataset, result, parts, judge=None,
                    note="a selection's judgments are the pool's human qrels")
    return _finish(config, dataset, result, strategy.provenance(config.generation, artifact),
                   parts)


def _gated(config: RunConfig, dataset, result: GenerationResult, parts: _Parts, *, judge,
           note: str | None = None, calls=None) -> GenerationResult:
    """The result with its validity gate (:func:`~.gate.run_gate`) and, on the LLM path, its
    usage after the gate's judge sample; the notices said."""
    from .gate import run_gate

    gate = run_gate(dataset, result, judge=judge, bm25_run=parts.bm25_run, panel=parts.panel,
                    seed=config.generation.seed, note=note, calls=calls,
                    judge_batch=config.llm.judge_batch if config.llm else 8,
                    dense_pool=config.writer == "llm" and not config.no_dense,
                    cache_dir=config.work_dir, show_progress=config.show_progress)
    for line in gate.get("panel_left_out", ()):
        parts.notify(f"validity gate: --run {line}: left out of the panel")
    parts.notify(f"validity gate: {gate['verdict']}")
    usage = calls.usage() if calls is not None else result.usage
    return replace(result, gate=gate, usage=usage)


def _finish(config: RunConfig, dataset, result: GenerationResult, provenance: dict,
            parts: _Parts) -> Outcome:
    """Write the output folder (:func:`~.output.write_dataset`, its ``coverage.md`` by the
    injected Markdown), say what ``merge_into_split`` changed, and the :class:`Outcome`."""
    from .config import REASONS
    from .output import write_dataset

    written = write_dataset(config.out, dataset, result, merge_into=config.merge_into_split,
                            provenance=provenance,
                            markdown=lambda report: parts.markdown(report, REASONS))
    if written["splits"]["merge_changes"]:
        parts.notify(written["splits"]["merge_changes"])
    summary = _summary(config, result)
    return Outcome(result=result, written=MappingProxyType(written),
                   summary=MappingProxyType(summary), lines=_lines(config, result))


def _check_targets(cfg: GenerationConfig, artifact, dataset) -> None:
    """Refuse a target MSC above the corpus' ceiling (GenerationConfig.targets says why)."""
    from ..stratification import cluster_weights
    from ..stratification.validity import coverage_ceiling

    weights = cluster_weights(artifact, dataset.corpus)
    cfg.targets(coverage_ceiling(weights, weights.primary_share(), n_min=cfg.n_min))


def _endpoint(llm: LLMOptions):
    """The generator's chat endpoint (a missing model or key is refused here)."""
    from .llm import GenerationEndpoint

    e = llm.endpoint
    return GenerationEndpoint(e["base_url"], e["model"], e["api_key"], timeout=e["timeout"],
                              max_retries=e["max_retries"], price_in=e["price_in"],
                              price_out=e["price_out"], max_answer_bytes=e["max_answer_bytes"])


def _llm_generate(config: RunConfig, endpoint, artifact, dataset, pooler, parts: _Parts):
    """The LLM path, ``(strategy, result)``: budgeted, cached calls shared by the writer,
    judge, verifier and an LLM-built structure's query extractor; the gate's judge sample is
    paid from what the budget has left."""
    from .llm import BudgetedCalls, CallCache, LLMJudge, LLMQueryWriter, LLMVerifier
    from .strategies import Drafting

    llm = config.llm
    cache = CallCache(llm.endpoint["cache_path"])
    bar = None
    if config.show_progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=llm.budget, desc="generate (LLM calls)", unit="call")
    calls = BudgetedCalls(endpoint, cache, max_calls=llm.budget,
                          max_tokens=llm.max_tokens_total, progress=bar,
                          retry_failed=llm.retry_failed)
    candidates = CandidateBar(config.generation.max_candidates, enabled=config.show_progress)
    strategy = Drafting(LLMQueryWriter(calls), LLMJudge(calls, batch=llm.judge_batch),
                        LLMVerifier(calls), pooler, calls=calls, concurrency=llm.concurrency,
                        log=candidates)
    try:
        with candidates:
            reader = _llm_reader(config, artifact, calls, endpoint, parts.notify)
            result = strategy.fill(dataset, reader, config.generation)
        result = _gated(config, dataset, result, parts, judge=strategy.judge, calls=calls)
    finally:
        if bar is not None:
            bar.close()
        cache.close()
    return strategy, result


def _reader(config: RunConfig, artifact, notify, endpoint: dict | None = None):
    """The artifact read with the user's query extractor
    (:class:`~mteb_stratified.structure.query_entities.QueryReader`): its recorded kind, with
    the model the user names (``embedding_model``) and, for an LLM-built structure, the user's
    ``endpoint`` settings (never the endpoint recorded in the artifact)."""
    from ..structure.query_entities import QueryReader, query_extractor
    return QueryReader(artifact, query_extractor(artifact, endpoint, notify=notify,
                                                 embedding_model=config.embedding_model))


def _llm_reader(config: RunConfig, artifact, calls, endpoint, notify):
    """:func:`_reader` on the LLM path: an LLM-built structure reads each generated query's
    entities with the user's endpoint, the same requests counter, budget and cache file as
    the generator."""
    if artifact.metadata["extractor"]["kind"] != "llm":
        return _reader(config, artifact, notify)
    reader = _reader(config, artifact, notify,
                     {**config.llm.endpoint, "provider": endpoint.provider})
    calls.share(reader.extractor)
    if config.llm.retry_failed:
        n = reader.extractor.cache.retry_failed()
        notify(f"--retry-failed: {n} failed answers cleared from {reader.extractor.cache.path}; "
               "those queries are asked again")
    return reader


def _summary(config: RunConfig, result: GenerationResult) -> dict:
    """The run's summary (``generate --json``)."""
    summary = {"out": config.out, "before": result.coverage_before.to_dict(),
               "after": result.coverage_after.to_dict(), "counts": result.counts().to_dict(),
               "stop_reason": result.stop_reason, "usage": result.usage.to_dict(),
               "targets": result.targets.to_dict(), "writer": config.writer}
    if result.pool:
        summary.update(pool=result.pool.to_dict(),
                       unfilled=[u.to_dict() for u in result.unfilled])
    return summary


def _lines(config: RunConfig, result: GenerationResult) -> tuple:
    """The run's summary as text: what was added, the coverage before and after, the usage."""
    counts = result.counts()
    b, a = result.coverage_before.cluster, result.coverage_after.cluster
    t = result.targets
    if result.pool:
        pool = result.pool
        lines = [f"{config.out}: {pool.selected} real judged queries selected from "
                 f"{', '.join(pool.splits)} ({pool.queries} in the pool; "
                 f"{counts.accepted_in_target_cell} in their target cell) into split "
                 f"'selected'; the pool's own ceiling: MSC {pool.ceiling.msc:.3f}, SCC "
                 f"{pool.ceiling.scc:.3f}; strata the pool cannot fill: "
                 f"{sum(u.pool_queries_left == 0 for u in result.unfilled)}"]
    else:
        lines = [f"{config.out}: {counts.accepted} of {counts.generated} candidates "
                 f"accepted ({counts.accepted_in_target_cell} in their target cell); "
                 f"rejected by reason: {dict(counts.rejected_by_reason) or '-'}"]
    lines.append(f"  MSC {b.msc:.3f} → {a.msc:.3f} (target {t.msc:.3f}, ceiling "
                 f"{t.ceiling_msc:.3f}), SCC {b.scc:.3f} → {a.scc:.3f} (target "
                 f"{t.scc:.3f}) (stop: {result.stop_reason})")
    u = result.usage
    if u:
        lines.append(f"  LLM calls {u.calls} of {u.budget_calls} ({u.paid_calls} "
                     f"requests sent in this run, retries included; {u.cached_calls} from "
                     f"the cache), tokens {u.tokens}, cost ${u.cost_usd}")
    return tuple(lines)
