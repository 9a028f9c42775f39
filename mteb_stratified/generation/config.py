"""The generation loop's settings (:class:`GenerationConfig`), the reasons a candidate is
rejected (:data:`REASONS`) and the default MSC target (:data:`DEFAULT_MSC_SHARE`).

The rules these settings steer are in :mod:`.loop`'s docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core import InputError
from ..core.stats.coverage import DEFAULT_N_MIN, check_n_min

__all__ = ["REASONS", "DEFAULT_MSC_SHARE", "GenerationConfig"]

#: Why a candidate was rejected (first failing check).
REASONS = {
    "no_query": "the writer's answer held no query (no usable JSON after a re-ask)",
    "writer_declined": "the offline writer's rules reach no query for this cell with these "
                       "seeds (no graph neighbour outside them, no entity mix whose J over "
                       "them is in the bin, or no phrasing that re-extracts as built)",
    "duplicate_query": "the same text as an existing query",
    "no_relevant_document": "the judge found no pooled document relevant (grade ≥ 1)",
    "wrong_cell": "recomputed cluster, Δ bin or J bin differ from the target",
    "not_well_formed": "the verifier says the query is not well-formed",
    "not_answerable": "the verifier says the judged documents do not answer it",
    "verifier_no_answer": "the verifier gave no usable JSON",
    "budget_spent": "the budget ran out before the candidate was complete",
}
#: The default MSC target, as a share of the corpus' ceiling.
DEFAULT_MSC_SHARE = 0.9


@dataclass(frozen=True)
class GenerationConfig:
    """Settings of :func:`~.loop.generate_queries` (stored with every generated query)."""

    seed: int = 0
    n_min: int = DEFAULT_N_MIN
    target_msc: float | None = None
    target_scc: float = 0.5
    max_attempts: int = 2
    n_seeds: int = 2
    central_docs: int = 20
    related_clusters: int = 5
    level: int = 1
    no_json_abort: int = 3
    seed_draws: int = 20
    n_terms: int = 5
    max_candidates: int | None = None
    round_size: int = 8

    def __post_init__(self):
        check_n_min(self.n_min)
        if self.max_candidates is not None and int(self.max_candidates) < 1:
            raise InputError(f"max_candidates must be ≥ 1, got {self.max_candidates}",
                             fix="omit it (no limit) or give a positive number")
        for name in ("max_attempts", "n_seeds", "central_docs", "related_clusters",
                     "no_json_abort", "seed_draws", "n_terms", "round_size"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"{name} must be ≥ 1, got {getattr(self, name)}",
                                 fix=f"pass a positive {name}")
        for name in ("target_msc", "target_scc"):
            value = getattr(self, name)
            if value is not None and not 0 <= float(value) <= 1:
                raise InputError(f"{name} must be in [0, 1]", fix="e.g. 0.9")

    def targets(self, ceiling: tuple[float, float]) -> tuple[float, float]:
        """``(MSC, SCC)`` to stop at, given the corpus' ceiling ``(MSC, SCC)`` (every document a
        query, :func:`~mteb_stratified.stratification.validity.coverage_ceiling`).

        The MSC target defaults to :data:`DEFAULT_MSC_SHARE` of the ceiling; a target above the
        ceiling is an :class:`InputError` that says the ceiling: this generator targets only
        the clusters that carry stratum weight, and those are the ceiling's (a query whose
        several relevant documents sum to another argmax could land in a weightless cluster,
        but such a stratum adds nothing to a weighted estimate).
        The SCC ceiling of the documents is no bound here (a cluster with few documents can
        hold many queries), so the SCC target is used as given.
        """
        ceil_msc = float(ceiling[0])
        msc = DEFAULT_MSC_SHARE * ceil_msc if self.target_msc is None else float(self.target_msc)
        if msc > ceil_msc + 1e-12:
            raise InputError(
                f"the target MSC {msc:.3f} is above this corpus' single-document ceiling "
                f"{ceil_msc:.3f} (every document a query): only that share of its clusters is "
                f"some document's own stratum, and the generator targets only those (the others "
                f"carry no stratum weight)",
                fix=f"pass --target-msc ≤ {math.floor(ceil_msc * 1000) / 1000:.3f}, or omit "
                    f"it ({DEFAULT_MSC_SHARE} × the ceiling = {DEFAULT_MSC_SHARE * ceil_msc:.3f})")
        return msc, float(self.target_scc)
