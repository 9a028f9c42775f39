"""Tie-aware MTEB retrieval tasks: ``StratifiedNFCorpus``, ``StratifiedFiQA``,
``StratifiedSciDocs``, :func:`tie_aware` for any built-in retrieval/reranking task, and
:func:`beir_task` for any local BEIR folder.

What a tie-aware task changes, and nothing else:

1. **Search** - an encoder model is wrapped in :class:`~.search.ExactTieSearch`, which keeps
   every document tied with the k-th score (k = ``max(k_values)``), so expectations are exact.
2. **Scores** - :meth:`TieAwareRetrievalMixin.task_specific_scores` adds, next to MTEB's own
   keys, ``{ndcg,mrr,recall,precision,map}_at_{k}_{expected,min,max,range,bias,oblivious}`` and
   the tie audit (names: :mod:`mteb_stratified.naming`; meanings: :mod:`.scoring`).  ``*_oblivious`` equals MTEB's stock
   value (trec_eval order).
3. **Per-query values** - when mteb saves predictions (``--prediction-folder``), the file
   ``<task>_per_query.csv`` is written next to ``<task>_predictions.json``: one row per query
   and measure (hf_subset, hf_split, qid, measure, expected, min, max, oblivious, range, bias).
4. **Strata** - a task may carry ``query_strata`` ({qid: stratum}); then
   ``strata_<s>_<main>_expected`` and ``strata_<s>_n_queries`` are added per stratum.  Without
   strata (the default until a structure artifact is attached) nothing is added.

The Stratified* tasks report ``main_score = ndcg_at_10_expected``; :func:`tie_aware` keeps the
task's own name, results file and main score unless asked otherwise.

Subsets for quick runs (tests, smoke checks): ``MTEB_STRATIFIED_MAX_QUERIES=N`` keeps the first
N judged queries (sorted ids), ``MTEB_STRATIFIED_MAX_DOCS=M`` keeps their judged documents plus
the first documents of the corpus up to M.  A warning is logged; results are then not
comparable with full-split figures.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping

from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.models import EncoderProtocol, SearchProtocol

from mteb_stratified.core.errors import InputError
from mteb_stratified.core.query_set import QuerySet, subset_task_name

from mteb_stratified.naming import measure_of_key, split_tie_key
from .scoring import tie_aware_evaluation, tie_aware_scores, write_per_query
from .search import ExactTieSearch

logger = logging.getLogger(__name__)
#: The end-of-task summary line goes to a child of mteb's own logger, so the stock
#: ``mteb run`` shows it at its default verbosity (-v 2) and hides it at -v 0/1, exactly like
#: mteb's own progress messages (a logger of ours would sit below the root's WARNING level).
_RUN_LOG = logging.getLogger("mteb.mteb_stratified")

__all__ = ["read_task_folder", "wrap_for_exact_search", "add_tie_scores", "strata_scores",
           "TieAwareRetrievalMixin", "LocalBeirRetrieval", "StratifiedNFCorpus", "StratifiedFiQA",
           "StratifiedSciDocs", "tie_aware", "beir_task", "TASK_CLASSES", "DATA_DIR_ENV",
           "bundled_data_dir"]

DATA_DIR_ENV = "MTEB_STRATIFIED_DATA_DIR"
MAX_QUERIES_ENV = "MTEB_STRATIFIED_MAX_QUERIES"
MAX_DOCS_ENV = "MTEB_STRATIFIED_MAX_DOCS"


def bundled_data_dir() -> Path:
    """``mteb_stratified/data`` inside the installed package."""
    return Path(__file__).resolve().parents[2] / "data"


def wrap_for_exact_search(task, model):
    """``(model, exact)``: an encoder wrapped in :class:`ExactTieSearch` when the task asks for
    exact search; other models (own ``search``, cross-encoders) unchanged. ``exact`` also holds
    for a search model that says it keeps whole tie groups at its cut (``keeps_tie_groups``,
    e.g. the quantized MiniLM), so a list ending in a tie is not counted as truncated."""
    wrap = (getattr(task, "tie_exact_search", True) and isinstance(model, EncoderProtocol)
            and not isinstance(model, SearchProtocol))
    exact = wrap or (getattr(task, "tie_exact_search", True)
                     and getattr(model, "keeps_tie_groups", False) is True)
    return (ExactTieSearch(model) if wrap else model), bool(exact)


def add_tie_scores(task, base: dict, qrels, results, hf_split: str, hf_subset: str, *,
                   exact: bool, prediction_folder: Path | None) -> dict:
    """``base`` plus the tie-aware keys for one split (and the per-query file)."""
    base = dict(base)
    run = results
    if getattr(task, "skip_first_result", False):  # mirror MTEB's own scoring
        run = {q: dict(sorted(d.items(), key=lambda x: x[1], reverse=True)[1:])
               for q, d in results.items()}
    top_k = getattr(task, "_top_k", max(task.k_values))
    result = tie_aware_evaluation(qrels, run, task.k_values, exact_depth=exact, depth=top_k)
    base.update(tie_aware_scores(result, task.k_values, top_k=top_k, run=run))
    base.update(strata_scores(result, getattr(task, "query_strata", None), task.metadata.main_score))
    # the evaluated queries, so that results of different query sets are never ranked together
    base.update(QuerySet.of(result.queries, hf_split,
                            subset=getattr(task, "_tie_subset", None)).to_keys())
    summary = bundled_strata_block(task, result, hf_split)
    if summary is not None:
        from mteb_stratified.stratification import flat_strata_scores

        base.update(flat_strata_scores(summary, STRATA_MEASURE))
    ks = sorted({int(k) for k in task.k_values})
    _RUN_LOG.info("%s", summary_line(task.metadata.name, hf_split, result, summary,
                                     top_k=10 if 10 in ks else ks[0]))
    if prediction_folder is not None:
        path = Path(prediction_folder) / f"{task.metadata.name}_per_query.csv"
        model, revision = getattr(task, "_tie_model", ("", ""))
        write_per_query(result, path, hf_subset=hf_subset, hf_split=hf_split, model=model,
                        revision=revision)
        if summary is not None:
            from ...core.jsonsafe import dumps_json
            from ...io.outputs import atomic_write_text  # replaces a planted link, never follows

            strata_path = Path(prediction_folder) / f"{task.metadata.name}_strata_{hf_split}.json"
            atomic_write_text(strata_path, dumps_json(summary.to_dict(), indent=2, default=str))
    return base


def summary_line(task_name: str, split: str, result, summary=None, *, top_k: int = 10) -> str:
    """One line with the main figures of a tie-aware evaluation (logged when a task ends)."""
    m = result[f"nDCG@{top_k}"]
    share = result.tie_stats(top_k)["tied_query_share"]
    line = (f"{task_name} {split}: nDCG@{top_k} expected {m.expected:.4f} (range {m.range:.4f},"
            f" bias {m.bias:+.4f}; stock tie-oblivious {m.oblivious:.4f}), "
            f"{100 * share:.1f}% of {len(result.queries)} queries tie in the top {top_k}")
    if summary is not None:
        post = summary.post_stratified
        cov = summary.cluster_coverage
        if post is not None:
            line += (f"; corpus-weighted {post.estimate:.4f} "
                     f"[{post.ci_low:.4f}, {post.ci_high:.4f}]")
        line += f"; MSC {cov.msc:.3f}, SCC {cov.scc:.3f}"
    return line


#: The measure whose strata block a task with bundled strata reports (its main score's measure).
STRATA_MEASURE = "nDCG@10"


def bundled_strata_block(task, result, hf_split: str):
    """The :class:`~mteb_stratified.stratification.StratifiedSummary` of a task whose dataset
    ships a structure (``bundled_strata``), or None.

    Uses the bundled structure artifact and the precomputed query entities
    (:mod:`mteb_stratified.stratification.bundled`), so no entity extractor runs here.  Only the
    split the structure was stratified for (``test``) gets one; a query subset (quick runs) is
    aligned to the evaluated queries.  A failure is logged, never silent, and never fails the run.
    """
    name = getattr(task, "bundled_strata", None)
    if not name or hf_split != "test":
        return None
    from mteb_stratified.stratification import stratified_summary
    from mteb_stratified.stratification.bundled import bundled_strata

    from mteb_stratified.core.ranking.per_query import PerQuery

    values = PerQuery.from_result(result[STRATA_MEASURE])
    try:
        artifact, strata = bundled_strata(name, hf_split)
        return stratified_summary(values, strata, artifact, measure=STRATA_MEASURE)
    except (InputError, ImportError) as exc:
        logger.warning("%s: no strata block (%s)", task.metadata.name, exc)
        return None


def strata_scores(result, strata: Mapping[str, str] | None, main_score: str) -> dict:
    """Per-stratum mean of the main metric's expected value, when strata are attached."""
    if not strata:
        return {}
    import numpy as np

    parsed = split_tie_key(main_score)
    base_key = parsed[0] if parsed else main_score
    values = result[repr(measure_of_key(base_key))].values["expected"]
    labels = np.array([str(strata.get(q, "unassigned")) for q in result.queries])
    out = {}
    for s in sorted(set(labels)):
        sel = labels == s
        out[f"strata_{s}_{base_key}_expected"] = float(values[sel].mean())
        out[f"strata_{s}_n_queries"] = float(sel.sum())
    return out


def model_identity(model) -> tuple[str, str]:
    """(name, revision) of a model as mteb's results folder records it."""
    meta = getattr(model, "mteb_model_meta", None)
    name = getattr(meta, "name", None) or ""
    revision = getattr(meta, "revision", None) or ("no_revision_available" if name else "")
    return str(name), str(revision)


class TieAwareRetrievalMixin:
    """Mixin over ``AbsTaskRetrieval``: exact search + tie-aware scores (see module doc).

    Class attributes: ``tie_exact_search`` (default True), ``query_strata`` (default None).
    """

    tie_exact_search: bool = True
    query_strata: Mapping[str, str] | None = None
    _tie_prediction_folder: Path | None = None
    _tie_exact_used: bool = False

    def _evaluate_subset(self, model, data_split, *, prediction_folder=None, **kwargs: Any):
        self._tie_prediction_folder = Path(prediction_folder) if prediction_folder else None
        self._tie_model = model_identity(model)
        model, self._tie_exact_used = wrap_for_exact_search(self, model)
        return super()._evaluate_subset(model, data_split, prediction_folder=prediction_folder,
                                        **kwargs)

    def task_specific_scores(self, scores, qrels, results, hf_split: str, hf_subset: str):
        base = super().task_specific_scores(scores, qrels, results, hf_split=hf_split,
                                            hf_subset=hf_subset)
        return add_tie_scores(self, base, qrels, results, hf_split, hf_subset,
                              exact=self._tie_exact_used,
                              prediction_folder=self._tie_prediction_folder)


_BEIR_HELP = ("download the BEIR zip (https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/"
              "datasets/<name>.zip), unzip it, and point the task at the unzipped folder")


def read_task_folder(folder: Path, split: str, task_name: str):
    """Load a local BEIR folder (``mteb_stratified.io.load_beir``) for a task; errors name the
    task and say how to point it at data."""
    from mteb_stratified.io import load_beir

    if not Path(folder).is_dir():
        raise InputError(f"{task_name}: data folder not found: {folder}",
                         fix=f"{_BEIR_HELP}, then set {DATA_DIR_ENV} to its parent folder or "
                             "pass --data-dir to `mteb-stratified mteb run`")
    try:
        return load_beir(folder, split)
    except InputError as exc:
        raise InputError(f"{task_name}: cannot load the BEIR folder: {exc.message}",
                         source=exc.source or str(folder), line=exc.line,
                         fix=(exc.fix + "; " if exc.fix else "") + _BEIR_HELP) from None


def subset_note() -> str | None:
    """``MTEB_STRATIFIED_MAX_QUERIES=5, MTEB_STRATIFIED_MAX_DOCS=-`` when a quick-run subset is
    asked for (results then record it and are never ranked with full runs), else None."""
    max_q = os.environ.get(MAX_QUERIES_ENV, "").strip()
    max_d = os.environ.get(MAX_DOCS_ENV, "").strip()
    if not max_q and not max_d:
        return None
    return f"{MAX_QUERIES_ENV}={max_q or '-'}, {MAX_DOCS_ENV}={max_d or '-'}"


def _subset_counts() -> tuple[int | None, int | None]:
    """``(N, M)`` of ``MTEB_STRATIFIED_MAX_QUERIES``/``_MAX_DOCS`` (None when unset); a value
    that is not a positive integer is an :class:`InputError` naming the variable."""
    from ...io.numbers import parse_integer

    def count(name: str) -> int | None:
        text = os.environ.get(name, "").strip()
        return parse_integer(text, f"environment variable {name}:", 1, 10**9,
                             fix=f"set a positive integer, or unset it for the full split "
                                 f"(unset {name})") if text else None

    return count(MAX_QUERIES_ENV), count(MAX_DOCS_ENV)


def subset_task_name_of(task_name: str) -> str:
    """The name a run's results are saved under: ``task_name``, or with the quick-run subset
    in it (:func:`~mteb_stratified.core.query_set.subset_task_name`), so mteb never takes a
    subset's cached result for a full run's or the reverse.  A malformed variable leaves the
    name alone: loading the data then says what is wrong with it."""
    try:
        nq, nd = _subset_counts()
    except InputError:
        return task_name
    return subset_task_name(task_name, nq, nd)


def _subset(data, split: str, task_name: str):
    nq, nd = _subset_counts()
    if nq is None and nd is None:
        return data
    queries, qrels, corpus = data.queries, data.qrels, data.corpus
    if nq is not None:
        keep = sorted(qrels)[:nq]
        qrels = {q: qrels[q] for q in keep}
        queries = {q: queries[q] for q in keep}
    if nd is not None:
        judged = [d for q in qrels for d in qrels[q] if d in corpus]
        chosen = dict.fromkeys(judged)
        for d in corpus:
            if len(chosen) >= nd:
                break
            chosen.setdefault(d)
        corpus = {d: corpus[d] for d in chosen}
    logger.warning("%s %s: SUBSET for a quick run (%s=%s, %s=%s): %d queries, %d documents; "
                   "scores are not comparable with the full split (saved under this task name)",
                   task_name, split, MAX_QUERIES_ENV, nq or "-", MAX_DOCS_ENV, nd or "-",
                   len(queries), len(corpus))
    return type(data)(data.name, corpus, queries, qrels, data.split)


def _to_split_data(data):
    from datasets import Dataset

    corpus = Dataset.from_dict({
        "id": list(data.corpus),
        "title": [v["title"] for v in data.corpus.values()],
        "text": [v["text"] for v in data.corpus.values()],
    })
    queries = Dataset.from_dict({"id": list(data.queries), "text": list(data.queries.values())})
    return {"corpus": corpus, "queries": queries, "relevant_docs": data.qrels, "top_ranked": None}


class LocalBeirRetrieval(TieAwareRetrievalMixin, AbsTaskRetrieval):
    """A tie-aware retrieval task whose data come from a BEIR folder on disk.

    ``beir_name`` names the folder (``nfcorpus``); it is looked up, in order, in
    ``$MTEB_STRATIFIED_<NAME>_DIR`` (the folder itself), ``$MTEB_STRATIFIED_DATA_DIR/<name>``
    (or that folder itself when it holds ``corpus.jsonl``; a data dir without ``<name>/`` falls
    back to the bundled copy when there is one), then the data bundled in the package.
    When none exists and ``hub_fallback`` is True, mteb's own hub loader is tried
    (``metadata.dataset``); when that fails too, the error says how to point the task at data.
    """

    beir_name: str = ""
    hub_fallback: bool = False
    data_dir: Path | None = None  # set by beir_task() or by hand

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name = subset_task_name_of(self.metadata.name)
        if name != self.metadata.name:  # a quick-run subset: its own results file
            self.metadata = self.metadata.model_copy(update={"name": name})

    def _local_folder(self) -> Path | None:
        specific = os.environ.get(f"MTEB_STRATIFIED_{self.beir_name.upper()}_DIR", "").strip()
        if specific:
            return Path(specific).expanduser()
        if self.data_dir is not None:
            return Path(self.data_dir)
        bundled = bundled_data_dir() / self.beir_name
        bundled = bundled if bundled.is_dir() else None
        root = os.environ.get(DATA_DIR_ENV, "").strip()
        if root:
            root_p = Path(root).expanduser()
            if (root_p / "corpus.jsonl").exists() or (root_p / "corpus.jsonl.gz").exists() \
                    or root_p.name.lower() == self.beir_name:
                return root_p
            if (root_p / self.beir_name).exists() or bundled is None:
                return root_p / self.beir_name
        return bundled

    def load_data(self, num_proc: int | None = None, *, timer=None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        folder = self._local_folder()
        if folder is None and self.hub_fallback:
            try:
                AbsTaskRetrieval.load_data(self, num_proc=num_proc, timer=timer, **kwargs)
            except Exception as exc:
                raise InputError(
                    f"{self.metadata.name}: no local data and the Hugging Face hub dataset "
                    f"{self.metadata.dataset['path']!r} could not be loaded "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})",
                    fix=f"download and unzip the BEIR '{self.beir_name}' dataset, then set "
                        f"{DATA_DIR_ENV}=/path/to/folder-holding-{self.beir_name} (or "
                        f"MTEB_STRATIFIED_{self.beir_name.upper()}_DIR=/path/to/{self.beir_name}, "
                        f"or `mteb-stratified mteb run --data-dir ...`), or make the hub "
                        "reachable (unset HF_HUB_OFFLINE)") from exc
            self._post_load(num_proc)
            return
        if folder is None:
            raise InputError(f"{self.metadata.name}: no data folder for '{self.beir_name}'",
                             fix=f"set {DATA_DIR_ENV} to a folder holding '{self.beir_name}/' in "
                                 "BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
        self.dataset = {"default": {}}
        self._tie_subset = subset_note()
        for split in self.eval_splits:
            data = read_task_folder(folder, split, self.metadata.name)
            data = _subset(data, split, self.metadata.name)
            self.dataset["default"][split] = _to_split_data(data)
        self._post_load(num_proc)

    def _post_load(self, num_proc) -> None:
        self.dataset_transform(num_proc=num_proc)
        self.data_loaded = True


def _stratified_metadata(stock_name: str, name: str, description: str, dataset: dict) -> TaskMetadata:
    """Copy a stock task's metadata with our name, data and ``main_score``."""
    from mteb.get_tasks import _TASKS_REGISTRY

    stock = _TASKS_REGISTRY[stock_name].metadata
    return stock.model_copy(update={
        "name": name, "description": description, "dataset": dataset,
        "main_score": "ndcg_at_10_expected", "adapted_from": [stock_name],
        "superseded_by": None,
    })


class StratifiedNFCorpus(LocalBeirRetrieval):
    """NFCorpus test split (323 queries, 3,633 documents), bundled in the package; tie-aware."""

    beir_name = "nfcorpus"
    bundled_strata = "nfcorpus"  # results carry the strata block (stratification.bundled)
    metadata = _stratified_metadata(
        "NFCorpus", "StratifiedNFCorpus",
        "NFCorpus (medical IR, BEIR format) test split, bundled with mteb-stratified so it runs "
        "offline; tie-aware scores (expected/min/max/range/bias/oblivious), exact search at the "
        "depth boundary. main_score = ndcg_at_10_expected.",
        {"path": "mteb-stratified/nfcorpus-bundled",
         "revision": "a4460b6055c4b57eb3d78a19a4a28bc31429788c8e549c49f09caee9efbfa4c3"},
    )


class StratifiedFiQA(LocalBeirRetrieval):
    """FiQA-2018 test split; from a local BEIR folder or the hub (``mteb/fiqa``); tie-aware."""

    beir_name = "fiqa"
    hub_fallback = True
    metadata = _stratified_metadata(
        "FiQA2018", "StratifiedFiQA",
        "FiQA-2018 (financial QA) test split, tie-aware. Loads a local BEIR folder "
        f"(${DATA_DIR_ENV}/fiqa or $MTEB_STRATIFIED_FIQA_DIR) or the hub dataset mteb/fiqa.",
        {"path": "mteb/fiqa", "revision": "27a168819829fe9bcd655c2df245fb19452e8e06"},
    )


class StratifiedSciDocs(LocalBeirRetrieval):
    """SCIDOCS test split; from a local BEIR folder or the hub (``mteb/scidocs``); tie-aware."""

    beir_name = "scidocs"
    hub_fallback = True
    metadata = _stratified_metadata(
        "SCIDOCS", "StratifiedSciDocs",
        "SCIDOCS (citation prediction) test split, tie-aware. Loads a local BEIR folder "
        f"(${DATA_DIR_ENV}/scidocs or $MTEB_STRATIFIED_SCIDOCS_DIR) or the hub dataset "
        "mteb/scidocs.",
        {"path": "mteb/scidocs", "revision": "f8c2fcf00f625baaa80f62ec5bd9e1fff3b8ae88"},
    )


TASK_CLASSES = (StratifiedNFCorpus, StratifiedFiQA, StratifiedSciDocs)

_TIE_AWARE_CACHE: dict = {}


def _tie_aware_class(cls, main_score_expected: bool):
    key = (cls, main_score_expected)
    if key not in _TIE_AWARE_CACHE:
        attrs: dict = {"__doc__": f"Tie-aware {cls.__name__} (same name and results file).",
                       "__module__": __name__}
        if main_score_expected and split_tie_key(cls.metadata.main_score) is None:
            attrs["metadata"] = cls.metadata.model_copy(
                update={"main_score": cls.metadata.main_score + "_expected"})
        _TIE_AWARE_CACHE[key] = type(f"TieAware{cls.__name__}", (TieAwareRetrievalMixin, cls), attrs)
    return _TIE_AWARE_CACHE[key]


def tie_aware(task, *, main_score_expected: bool = False):
    """Make a built-in MTEB retrieval or reranking task tie-aware.

    ``task``: a task instance, a task class, or a task name (``"SciFact"``).  Returns a task
    **instance** of a subclass that keeps the task's name, metadata, loaded data and filters, so
    results land in the same results file with the tie-aware keys added.  The main score stays
    the task's own (``ndcg_at_10``) unless ``main_score_expected=True`` (``ndcg_at_10_expected``).
    Already tie-aware tasks are returned unchanged.
    """
    import mteb

    if isinstance(task, str):
        task = mteb.get_task(task)
    if isinstance(task, type):
        if not issubclass(task, AbsTaskRetrieval):
            raise InputError(f"{task.__name__} is not a retrieval or reranking task",
                             fix="tie_aware() works on AbsTaskRetrieval/AbsTaskReranking tasks")
        task = task()
    if isinstance(task, TieAwareRetrievalMixin):
        return task
    if not isinstance(task, AbsTaskRetrieval):
        raise InputError(f"{type(task).__name__} ({getattr(task.metadata, 'name', '?')}) is not a "
                         "retrieval or reranking task",
                         fix="tie_aware() works on AbsTaskRetrieval/AbsTaskReranking tasks; "
                             "see mteb.get_tasks(task_types=['Retrieval', 'Reranking'])")
    new_cls = _tie_aware_class(type(task), main_score_expected)
    new = new_cls.__new__(new_cls)
    new.__dict__.update(task.__dict__)
    return new


def beir_task(folder, name: str | None = None, *, split: str = "test",
              main_score: str = "ndcg_at_10_expected", description: str | None = None):
    """A tie-aware retrieval task over any local BEIR folder (returns an instance).

    ``name`` defaults to ``"Stratified" + folder name``.  The task is not registered with mteb;
    pass the instance to ``mteb.evaluate(model, [task])``.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise InputError(f"BEIR folder not found: {folder}",
                         fix="give the unzipped BEIR dataset folder (with corpus.jsonl, "
                             "queries.jsonl, qrels/)")
    base = folder.name
    name = name or "Stratified" + "".join(p.capitalize() for p in base.replace("-", "_").split("_"))
    stock = StratifiedNFCorpus.metadata
    meta = stock.model_copy(update={
        "name": name, "description": description or f"Local BEIR folder {folder} ({split}), tie-aware.",
        "dataset": {"path": f"local/{base}", "revision": "local"}, "eval_splits": [split],
        "main_score": main_score, "adapted_from": None, "domains": None,
        "reference": None, "bibtex_citation": "",
    })
    cls = type(name, (LocalBeirRetrieval,), {"beir_name": base, "metadata": meta,
                                             "data_dir": folder, "__module__": __name__})
    return cls()


from .registration import complete_deferred  # noqa: E402  (see complete_deferred)

complete_deferred()
