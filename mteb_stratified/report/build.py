"""The stratified report as data: :func:`build`, the library side of ``mteb-stratified
report``.

:func:`build` locates and checks every system (:func:`.inputs.collect_systems`) before the
structure loads, reads their per-query values, stratifies each
(:func:`~mteb_stratified.stratification.stratified_summary`) and pairs and ranks them only
within a query set (:func:`~mteb_stratified.core.query_set.same_query_sets`).  It returns a
:class:`Report`: :meth:`Report.write` renders and writes the HTML page and its Markdown
summary (:func:`.render.write_report_pair`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ContextManager, Mapping, Sequence

from ..core import DEFAULT_N_MIN
from ..core.stats.hierarchy import DEFAULT_MIN_QUERIES
from ..core.query_set import QuerySetGroups, same_query_sets
from ..stratification.context import no_step, resolve_context

if TYPE_CHECKING:  # the annotation only: .model loads with the renderers
    from .model import ReportModel

__all__ = ["Report", "build"]


@dataclass(frozen=True)
class Report:
    """A built report, frozen: ``bundle``, the :class:`~.model.ReportModel` the renderers read
    (``title``, ``systems``: ``{system: StratifiedSummary}``, ``stability``: a
    :class:`~mteb_stratified.stratification.Stability` or one per query set, ``pairs``: a
    :class:`~mteb_stratified.stratification.PairedSummary`, ``query_sets``: see
    :func:`.model.build_report`), and ``query_sets``, the systems grouped by the query set they
    were evaluated on (the largest set first; the systems come in that order)."""

    bundle: "ReportModel"
    query_sets: QuerySetGroups

    @property
    def title(self) -> str:
        return self.bundle.title

    @property
    def summaries(self) -> Mapping:
        """``{system: StratifiedSummary}``."""
        return self.bundle.systems

    def write(self, html_path, md_path) -> tuple[str, str]:
        """Write the HTML page and its Markdown summary as one unit (its folder made when
        missing): :func:`.render.write_report_pair`."""
        from .render import write_report_pair

        os.makedirs(os.path.dirname(os.path.abspath(html_path)), exist_ok=True)
        return write_report_pair(self.bundle, html_path, md_path)



def build(systems: Sequence[str], *, task: str | None = None, split: str = "test",
          measure: str = "nDCG@10", scheme: str = "cluster", n_min: int = DEFAULT_N_MIN,
          min_queries: int = DEFAULT_MIN_QUERIES, level: int = 0, n_resamples: int = 2000,
          seed: int = 0, prediction_folder: str | None = None,
          require_same_queries: bool = False, skip_unreadable: bool = False,
          title: str | None = None, context=None,
          steps: Callable[[str], ContextManager] | None = None) -> Report:
    """The report of ``systems`` (``[NAME=]PATH``: an mteb output folder, a TaskResult JSON,
    a per-query CSV or a TREC run; :func:`.inputs.collect_systems`); ``task``: the task whose
    results a folder stands for (default: StratifiedNFCorpus).

    Every input is checked, and the [plots] extra found, before the structure loads.
    ``context``: the structure, dataset and strata (a
    :class:`~mteb_stratified.stratification.Context`, or a callable returning one; default:
    the bundled NFCorpus); ``steps(label)``: a context manager around each long step
    (progress).  Systems of different query sets are stratified each on its own, and paired
    and ranked only within their set; ``require_same_queries``: refused instead.  Bad input:
    an :class:`~mteb_stratified.core.InputError`.
    """
    from ..stratification import gate_verdict, split_origin, stratified_summary
    from ..stratification.results import DEFAULT_TASK, check_evaluated
    from .figures import require_matplotlib
    from .model import build_report
    from .inputs import collect_systems

    from ..io.mteb_results import input_list

    steps = steps or no_step
    found = collect_systems(input_list(systems), task=task or DEFAULT_TASK, measure=measure,
                            split=split,
                            prediction_folder=prediction_folder, skip_unreadable=skip_unreadable)
    require_matplotlib()  # a missing [plots] extra fails now, before the work
    with steps("loading the structure, the queries and their strata"):
        art, data, strata = resolve_context(context, split)
    art.cluster_tree.check_level(level)  # a level the artifact lacks: before any work
    with steps(f"reading the per-query values of {len(found)} system(s)"):
        values = {s.name: s.load(data.qrels) for s in found}
    for s in found:  # unknown query ids: said with the file
        check_evaluated(values[s.name], strata, s.source)
    sets = _query_sets(values, {s.name: s.subset for s in found}, split)
    groups = same_query_sets(values, sets.get, str, require_same=require_same_queries)
    values = {n: values[n] for g in groups.groups for n in g}  # the largest query set first
    grain = {"min_queries": min_queries, "level": level}
    summaries = {}
    for k, (n, v) in enumerate(values.items(), 1):
        with steps(f"{k}/{len(values)} {n}: estimates, intervals and chance tests "
                   f"({n_resamples} resamples)"):
            summaries[n] = stratified_summary(v, strata, art, measure=measure, scheme=scheme,
                                              n_min=n_min, n_resamples=n_resamples, seed=seed,
                                              origin=split_origin(data),
                                              gate=gate_verdict(data), **grain)
    with steps("paired tests and ranking stability"):
        stability, pairs = _within_sets(values, groups, (strata, art), scheme=scheme,
                                        n_min=n_min, n_resamples=n_resamples, seed=seed,
                                        **grain)
    bundle = build_report(summaries, stability, pairs, title=title,
                          query_sets={n: sets[n].label for n in values})
    return Report(bundle, groups)



def _query_sets(values: dict, subsets: dict, split: str) -> dict:
    """``{system: QuerySet}`` of the evaluated queries of each system."""
    from ..core.ranking.per_query import PerQuery
    from ..core.query_set import QuerySet

    return {n: QuerySet.of(PerQuery.from_mapping(v).queries, split, subset=subsets[n])
            for n, v in values.items()}


def _within_sets(values: dict, groups: QuerySetGroups, structure: tuple, *, scheme: str,
                 n_min: int, n_resamples: int, seed: int, **grain) -> tuple:
    """Decision stability (a :class:`~mteb_stratified.stratification.Stability`, None with
    one system) and the paired tests (a :class:`~mteb_stratified.stratification
    .PairedSummary`), each within one query set: with one set as they always were; with
    several, ``[(label, Stability)]`` per set of ≥ 2 systems and the pairs of every set
    together (never a pair across sets)."""
    from ..stratification import PairedSummary, paired_summary, stability_summary

    strata, art = structure

    def pairs_of(names):
        return paired_summary({n: values[n] for n in names}, strata, art, scheme=scheme,
                              n_min=n_min, n_resamples=n_resamples, seed=seed, **grain)

    def stability_of(names):
        return stability_summary({n: values[n] for n in names}, strata, art, scheme=scheme,
                                 **grain)

    if not groups.mixed:
        first = list(groups.groups[0])
        return (stability_of(first) if len(first) >= 2 else None), pairs_of(first)
    several = [(label, list(g)) for label, g in zip(groups.labels, groups.groups) if len(g) >= 2]
    stability = [(label, stability_of(g)) for label, g in several]
    pairs = PairedSummary.combined(
        [pairs_of(g) for _, g in several],
        none="no two systems share a query set, so no pair is compared")
    return stability, pairs
