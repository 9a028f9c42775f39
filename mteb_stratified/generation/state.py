"""The coverage state of a loop (steps 1 and 2 of :mod:`.loop`'s docstring): the query counts
per cluster and cell (:class:`CoverageState`), the targets ranked (:func:`rank_targets`), where
a loop starts (:func:`coverage_start`, a :class:`CoverageStart`) and the trivial baseline
(:func:`trivial_baseline`).  Shared by generation (:mod:`.rounds`) and selection
(:mod:`.select`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..core import InputError, cell_coverage, cluster_coverage
from ..core.stats.cells import GRID, CellGrid
from ..io.coverage_report import CoverageSummary
from .config import DEFAULT_MSC_SHARE, GenerationConfig
from .llm import BudgetExhausted
from .protocols import Target
from .result import GenerationResult

__all__ = ["J_RANK_ORDER", "CoverageState", "rank_targets", "trivial_baseline",
           "CoverageStart", "coverage_start"]

#: The J levels' tie order in :func:`rank_targets` when no order is given (the loop draws one
#: per cluster, :func:`~.rounds.j_order`).
J_RANK_ORDER = {"high": 0, "mid": 1, "low": 2, "na": 3}


class CoverageState:
    """Query counts per cluster and per cell, and the coverage they give."""

    def __init__(self, primary, dbin, jbin, mass, labels, n_min, grid: CellGrid = GRID):
        self.C = mass.size
        self.grid = grid
        self.mass = mass
        self.labels = labels
        self.n_min = n_min
        self.primary = [int(x) for x in primary]
        self.dbin = [int(x) for x in dbin]
        self.jbin = [int(x) for x in jbin]

    def add(self, c: int, d: int, j: int) -> None:
        self.primary.append(c)
        self.dbin.append(d)
        self.jbin.append(j)

    def cluster_counts(self) -> np.ndarray:
        return np.bincount(np.asarray(self.primary, dtype=np.int64), minlength=self.C)

    def with_added(self, cells) -> "CoverageState":
        """A copy of this state with ``cells`` ``(c, δ, j)`` added (this one is unchanged)."""
        out = copy.deepcopy(self)
        for cell in cells:
            out.add(*cell)
        return out

    def cell_counts(self) -> dict:
        """``{(c, δ, j): n}`` with bin codes."""
        out: dict = {}
        for key in zip(self.primary, self.dbin, self.jbin):
            out[key] = out.get(key, 0) + 1
        return out

    def coverage(self) -> CoverageSummary:
        """The queries counted and the coverage summary of each level
        (:meth:`~mteb_stratified.core.stats.coverage.Coverage.summary`), typed."""
        p = np.asarray(self.primary, dtype=np.int64)
        cl = cluster_coverage(p, self.mass, n_min=self.n_min, labels=self.labels)
        ce = cell_coverage(p, np.asarray(self.dbin), np.asarray(self.jbin), self.mass,
                           n_min=self.n_min, labels=self.labels, grid=self.grid)
        # the schema's keys, with its meanings (core/stats/coverage.py: SUMMARY_KEYS)
        return CoverageSummary.from_dict({"n_queries": len(self.primary),
                                          "cluster": cl.summary(), "cell": ce.summary()})


def rank_targets(cluster_counts, cell_counts, mass, n_min: int, *, labels=None,
                 exclude=(), failures=None, grid: CellGrid = GRID,
                 empty_only: bool = False, j_order=None) -> list[Target]:
    """Empty cells of under-covered clusters, highest priority first (the rule: :mod:`.loop`'s
    docstring).

    ``cluster_counts[c]``: queries of cluster c; ``cell_counts``: ``{(c, δ, j): n}`` with bin
    codes; ``mass``: corpus mass w_c; ``exclude``: cell labels ``(c, Δ level, J level)`` to skip;
    ``failures``: ``{c: rejected candidates}`` — each divides the cluster's priority by
    (1 + failures), so one hard cluster does not take the whole budget; ``empty_only``: only
    clusters without a query (the loop's focus once SCC is met and MSC is not); ``j_order``:
    ``{J rank: position}`` for the cells of a cluster, or ``c -> {J rank: position}`` (default:
    High, Mid, Low, N/A for every cluster).
    """
    if j_order is None:
        j_order = J_RANK_ORDER
    rank_of = j_order if callable(j_order) else (lambda c, _o=j_order: _o)
    failures = failures or {}
    out = []
    total = float(np.sum(mass)) or 1.0
    exclude = set(exclude)
    for c in range(len(mass)):
        deficit = n_min - int(cluster_counts[c])
        if deficit <= 0 or mass[c] <= 0 or (empty_only and cluster_counts[c] > 0):
            continue
        priority = float(mass[c]) / total * deficit / n_min / (1 + failures.get(c, 0))
        for d, j in grid.bin_pairs():
            cell = grid.label_of(c, d, j)
            if cell_counts.get((c, d, j), 0) == 0 and cell not in exclude:
                out.append(Target(*cell, priority, None if labels is None else labels.get(c),
                                  grid=grid))
    orders = {c: rank_of(c) for c in {t.cluster for t in out}}
    out.sort(key=lambda t: (-t.priority, orders[t.cluster][t.rank("alignment")],
                            grid.index("dispersion", t.dispersion), t.cluster))
    return out



def trivial_baseline(state_before, targets: list) -> dict:
    """MSC and SCC with one document per targeted cluster added, as many as ``targets``: the
    validity gate's trivial baseline (:mod:`.gate`).  At cluster level a document whose own
    stratum is c counts as one query in c whichever document it is, so the baseline is exact,
    with no draw."""
    cov = state_before.with_added((int(c), 0, 0) for c in targets).coverage()
    return {"documents": len(targets), "msc": cov.cluster.msc, "scc": cov.cluster.scc,
            "rule": "one document per targeted cluster (its own stratum), as many as were "
                    "added: the targeting alone"}


@dataclass
class CoverageStart:
    """What a coverage loop starts from (:func:`coverage_start`) and adds to: the stratum
    ``weights``, ``bins``, ``mass`` and cluster ``labels``; ``state``, the coverage the loop
    adds its queries to; ``coverage_before`` and ``original_clusters`` (``{qid: cluster}``) of
    the original queries; ``targets``, the MSC and SCC targets with the ceiling and their rule
    (:attr:`GenerationResult.targets`); ``target_msc`` and ``target_scc``; ``initial``, the
    state before anything is added (the baseline's start)."""

    weights: object
    bins: object
    mass: np.ndarray
    labels: dict
    state: CoverageState
    coverage_before: CoverageSummary
    original_clusters: dict
    targets: dict
    target_msc: float
    target_scc: float
    initial: CoverageState

    def result(self, accepted, candidates, **more) -> GenerationResult:
        """The run's :class:`GenerationResult`: ``accepted`` and ``candidates``, the coverage
        before and after, the trivial baseline of as many targeted clusters, the
        ``targets`` and ``more`` of its fields."""
        return GenerationResult(
            accepted=tuple(accepted), candidates=tuple(candidates),
            coverage_before=self.coverage_before, coverage_after=self.state.coverage(),
            original_clusters=self.original_clusters,
            baseline=trivial_baseline(self.initial, [c.target[0] for c in accepted]),
            **{"targets": self.targets, **more})

    def met(self, cov: CoverageSummary) -> bool:
        """Both targets reached by the coverage ``cov``."""
        return cov.cluster.msc >= self.target_msc and cov.cluster.scc >= self.target_scc


def coverage_start(dataset, artifact, cfg: GenerationConfig) -> CoverageStart:
    """The stratum weights, bins, the original queries' coverage (the state a loop adds to)
    and the targets: shared by generation and selection."""
    from ..stratification import cluster_weights, corpus_bins, strata_for_dataset
    from ..stratification.validity import coverage_ceiling

    artifact.check_corpus(dataset.corpus)
    weights = cluster_weights(artifact, dataset.corpus)
    bins = corpus_bins(artifact)
    mass = weights.primary_share()  # stratum weights by the argmax rule, as stratify counts
    ceiling = coverage_ceiling(weights, mass, n_min=cfg.n_min)
    target_msc, target_scc = cfg.targets(ceiling)
    try:
        strata = strata_for_dataset(artifact, dataset, bins=bins, level=cfg.level,
                                    check_corpus=False)
    except BudgetExhausted as exc:  # an LLM-built structure reads the original queries too
        raise InputError(f"the budget was spent ({exc}) on the entities of the "
                         f"{len(dataset.qrels)} original queries, before any generation",
                         fix="rerun with a larger --budget (the answers so far are cached)"
                         ) from None
    labels = {int(c): lab for c, lab in artifact.cluster_labels.items()}
    state = CoverageState(strata.primary, strata.dispersion_bin, strata.alignment_bin, mass,
                          labels, cfg.n_min, grid=bins.grid)
    targets = {"msc": target_msc, "scc": target_scc,
               "ceiling_msc": ceiling[0], "ceiling_scc_documents": ceiling[1],
               "rule": "MSC target: given, or "
                       f"{DEFAULT_MSC_SHARE} x the ceiling (every document a query)"}
    return CoverageStart(weights, bins, mass, labels, state, state.coverage(),
                         dict(zip(strata.queries, strata.primary.tolist())), targets,
                         target_msc, target_scc, copy.deepcopy(state))
