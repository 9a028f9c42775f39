"""Strata blocks written into MTEB results files: :func:`stratify_results`, the library side
of ``mteb-stratified stratify``.

Each TaskResult file (``<Task>.json``) gains ``"strata": {split: block}`` (the
:class:`~.summary.StratifiedSummary` as JSON) and the flat ``strata_*`` keys in its score
entries of that split (read by the leaderboard), and a per-query strata table
``<Task>_strata_<split>.tsv`` beside it (:mod:`.table`).  Every input is read and checked
before the structure loads, and every input's query ids against the strata before any file is
written; results of different query sets are stratified each on its own
and said apart, or refused (:func:`~mteb_stratified.core.query_set.same_query_sets`).

A results file is updated in place (under its lock, only this split's block and keys, so two
runs on one file both land; a file whose scores changed since it was read is refused), or
copied below ``out`` with its ``model_meta.json``.  The files are written so that a kill never
leaves a new block beside an old table (:func:`save_block`).

What a caller prints comes typed: :class:`StratifiedFile` per results file, with its warnings
as :class:`StrataWarning` (a :attr:`~StrataWarning.kind`, never told apart by wording) and the
generated queries reported apart as :class:`GeneratedApart`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Callable, ContextManager, Sequence

from ..core import DEFAULT_N_MIN, InputError
from ..core.query_set import QuerySetGroups, same_query_sets
from ..io.outputs import atomic_write, dumps_json, fsync_dir, output_dir, safe_name
from ..core.options import DEFAULT_TASK
from .block import ORIGIN, STRATA
from .context import no_step, resolve_context
from .grain import DEFAULT_MIN_QUERIES
from .summary import StratifiedSummary

__all__ = ["stratify_results", "StratifyResult", "StratifiedFile", "StrataWarning",
           "GeneratedApart", "save_block", "check_evaluated", "STRATA", "ORIGIN",
           "DEFAULT_TASK"]



@dataclass(frozen=True)
class StrataWarning:
    """One warning of a strata block: its ``kind`` (:data:`STRATA` or :data:`ORIGIN`) and its
    ``text`` (as in the block's ``warnings``)."""

    kind: str
    text: str


@dataclass(frozen=True)
class GeneratedApart:
    """Generated queries of a split of original ones, reported apart (never in the
    estimates): their pooled mean with its t interval (``ci_low``/``ci_high`` None when there
    is none), next to the original queries' pooled mean."""

    n_queries: int
    estimate: float
    ci_low: float | None
    ci_high: float | None
    n_original: int
    original_estimate: float

    @classmethod
    def of(cls, summary: StratifiedSummary) -> "GeneratedApart | None":
        """The summary's generated queries (its ``generated`` record), or None."""
        gen = summary.generated
        if gen is None:
            return None
        g, o = gen.generated, gen.original
        return cls(g.n_queries, g.estimate, g.ci_low, g.ci_high, o.n_queries, o.estimate)


@dataclass(frozen=True)
class StratifiedFile:
    """What :func:`stratify_results` did to one results file.

    ``source``: the results file read; ``target``: the results file written (``source`` in
    place, else its copy); ``model``/``split``; ``summary``; ``table``: the per-query strata
    table written beside ``target`` and ``table_text`` its content; ``warnings``;
    ``generated``: the generated queries reported apart, or None."""

    source: str
    target: str
    model: str
    split: str
    summary: StratifiedSummary
    table: str
    table_text: str
    warnings: tuple
    generated: GeneratedApart | None


@dataclass(frozen=True)
class StratifyResult:
    """``files``: one :class:`StratifiedFile` per results file, in input order;
    ``query_sets``: the files grouped by query set (each group holds indices into ``files``)."""

    files: tuple
    query_sets: QuerySetGroups



def stratify_results(results: Sequence[str], *, per_query: Sequence[str] | None = None,
                     out: str | None = None, task: str = DEFAULT_TASK, split: str = "test",
                     measure: str = "nDCG@10", scheme: str = "cluster",
                     n_min: int = DEFAULT_N_MIN, min_queries: int = DEFAULT_MIN_QUERIES,
                     level: int = 0, n_resamples: int = 2000, seed: int = 0,
                     prediction_folder: str | None = None, require_same_queries: bool = False,
                     skip_unreadable: bool = False, context=None,
                     steps: Callable[[str], ContextManager] | None = None,
                     on_query_sets: Callable[[QuerySetGroups], None] | None = None,
                     on_file: Callable[[StratifiedFile], None] | None = None) -> StratifyResult:
    """Add the strata block of ``split`` to each results file of ``results`` (TaskResult files
    or mteb output folders, every result of ``task`` in them); see the module docstring.

    ``per_query``: one per-query CSV per results file (default: found next to it, in
    ``prediction_folder`` or under its output folder).  ``out``: write updated copies below
    this folder (default: in place).  ``context``: the structure, dataset and strata (a
    :class:`~.context.Context`, or a callable returning one, called once every input is
    checked; default: the bundled NFCorpus).  ``steps(label)``: a context manager around each
    long step (progress).  ``on_query_sets`` is called with the query-set groups once the
    inputs are read, ``on_file`` with each file's outcome once it is written (so a caller can
    say what was done as it goes); both are in the returned :class:`StratifyResult` too.
    Bad input: an :class:`InputError`.
    """
    from ..io.mteb_results import (copy_target, evaluated_query_set, expand_results,
                                   input_list, read_values, resolve_inputs)
    from .block import stratified_summary
    from .dataset import gate_verdict, split_origin

    steps = steps or no_step
    results = input_list(results)
    if out is not None:
        output_dir(out)
    items = resolve_inputs(expand_results(results, task, skip_unreadable=skip_unreadable),
                           per_query, prediction_folder=prediction_folder)
    values = [read_values(item, measure, split=split) for item in items]  # every input first
    sets = [evaluated_query_set(vals.queries, item.data, split)
            for item, vals in zip(items, values)]
    groups = same_query_sets(range(len(items)), sets.__getitem__, lambda i: items[i].model,
                             require_same=require_same_queries)
    if on_query_sets is not None:
        on_query_sets(groups)
    targets = [item.path if out is None else copy_target(item.path, out) for item in items]
    if len(set(targets)) < len(targets):
        raise InputError(f"several results files would be copied to the same place in {out}",
                         fix="stratify them in place (leave out -o/--out), or one at a time")
    with steps("loading the structure, the queries and their strata"):
        art, data, strata = resolve_context(context, split)
    art.cluster_tree.check_level(level)  # a level the artifact lacks: before any work
    for item, vals in zip(items, values):  # unknown query ids: before any file is written
        check_evaluated(vals, strata, item.per_query)
    options = {"measure": measure, "scheme": scheme, "n_min": n_min, "min_queries": min_queries,
               "level": level, "n_resamples": n_resamples, "seed": seed}
    files = []
    for k, (item, vals, target) in enumerate(zip(items, values, targets), 1):
        with steps(f"{k}/{len(items)} {item.model}: estimates, intervals and chance tests "
                   f"({n_resamples} resamples)"):
            summary = stratified_summary(vals, strata, art, **options, origin=split_origin(data),
                                         gate=gate_verdict(data))
        done = _write_file(item, summary, target, (art, data, strata), split,
                           in_place=out is None)
        files.append(done)
        if on_file is not None:
            on_file(done)
    return StratifyResult(tuple(files), groups)



def check_evaluated(values, strata, source: str | None) -> None:
    """The evaluated queries of ``values`` (read from ``source``) are queries the strata know
    (stratified, or excluded by them): else an :class:`InputError` naming ``source``."""
    from ..core.ranking.per_query import PerQuery
    from .block import align_strata

    try:
        align_strata(strata, PerQuery.from_mapping(values).queries)
    except InputError as exc:
        raise InputError(exc.message, source=exc.source or source, fix=exc.fix) from None


def _write_file(item, summary: StratifiedSummary, target: str, context: tuple, split: str, *,
                in_place: bool) -> StratifiedFile:
    """One results file's block written into ``target``, with the strata table beside."""
    from .block import flat_strata_scores
    from .table import strata_rows, strata_table_text

    art, data, strata = context
    table_text = strata_table_text(strata_rows(strata, art, data.qrels, summary.grain))
    flat = flat_strata_scores(summary, summary.measure)
    # named after the result's own task (a quick-run subset's keeps its mark), so results
    # of two tasks, or a subset and a full run, in one folder never share a table
    folder = os.path.dirname(target)
    table = os.path.join(folder, f"{safe_name(str(item.data['task_name']))}"
                                 f"_strata_{safe_name(split)}.tsv")
    beside = [(table, table_text.encode("utf-8"))]
    if not in_place:
        os.makedirs(folder, exist_ok=True)
        meta = os.path.join(os.path.dirname(item.path), "model_meta.json")
        if os.path.isfile(meta):  # the copy keeps its model (leaderboard, report read it)
            with open(meta, "rb") as src:  # replaced in the copy, a link never followed
                beside.append((os.path.join(folder, "model_meta.json"), src.read()))
    save_block(item, target, split, summary.to_dict(), flat, in_place=in_place, beside=beside)
    return StratifiedFile(item.path, target, item.model, split, summary, table, table_text,
                          _warnings(summary), GeneratedApart.of(summary))


def _warnings(summary: StratifiedSummary) -> tuple:
    """The summary's warnings, each with its kind (``StratifiedSummary.warning_kinds``, set
    where each warning is made; a summary built without kinds: every warning the strata's)."""
    kinds = summary.warning_kinds
    if len(kinds) != len(summary.warnings):
        kinds = (STRATA,) * len(summary.warnings)
    return tuple(StrataWarning(ORIGIN if kind == ORIGIN else STRATA, text)
                 for kind, text in zip(kinds, summary.warnings))


def _with_block(res: dict, split: str, block: dict, flat: dict) -> dict:
    """``res`` with ``block`` as its strata block of ``split`` and ``flat`` in its entries."""
    res.setdefault("strata", {})[split] = block
    for entry in res["scores"].get(split, []):
        entry.update(flat)
    return res


def _without_strata(res: dict) -> str:
    """``res`` without what ``stratify`` adds (the strata blocks, the ``strata_*`` keys), as
    canonical JSON (NaN compares equal to NaN there)."""
    scores = {split: [{k: v for k, v in entry.items() if not str(k).startswith("strata_")}
                      if isinstance(entry, dict) else entry for entry in entries]
              for split, entries in res["scores"].items()}
    rest = {k: v for k, v in res.items() if k not in ("strata", "scores")}
    return dumps_json({**rest, "scores": scores}, sort_keys=True, default=str)


def save_block(item, target: str, split: str, block: dict, flat: dict, *, in_place: bool,
               beside: "list | tuple" = ()) -> dict:
    """Write the results file ``target`` with this split's strata block, and the files
    ``beside`` it (``[(path, bytes)]``: the per-query strata table, the copy's
    model_meta.json); returns the results written.  ``item``: the results file as read (its
    ``path`` and ``data``).  In place, the file is read again under its lock and only this
    split's block and keys change, so two runs on one file (say ``--split test`` and ``--split
    dev``) both land; a file whose scores changed since it was read is refused."""
    from ..io.lock import file_lock
    from ..io.mteb_results import load_task_result

    if not in_place:
        res = _with_block(item.data, split, block, flat)
        _write_results(target, res, beside)
        return res
    with file_lock(target, what="mteb-stratified stratify"):
        current = load_task_result(target)
        if _without_strata(current) != _without_strata(item.data):
            raise InputError("the results file changed while stratify ran (its scores are no "
                             "longer the ones stratified)", source=target,
                             fix="run stratify again on the new results")
        res = _with_block(current, split, block, flat)
        _write_results(target, res, beside)
    return res


def _write_results(target: str, res: dict, beside: list) -> None:
    """The results file and the files beside it, so that a kill never leaves a new strata
    block beside an old table, nor an old block beside a new one: the files beside are
    removed first, then the results file is replaced (atomically: it is never missing, it may
    be the user's only copy), then the files beside are written."""
    for path, _ in beside:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a link is removed, never followed
    fsync_dir(os.path.dirname(os.path.abspath(target)))
    with atomic_write(target, encoding="utf-8") as fh:
        fh.write(dumps_json(res, indent=2, default=str))
    for path, data in beside:
        with atomic_write(path, "wb") as fh:
            fh.write(data)
