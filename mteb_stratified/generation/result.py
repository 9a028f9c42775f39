"""What a generation or selection run produced: :class:`GenerationResult` (frozen, built once
at the end of the run; its candidates counted by
:class:`~mteb_stratified.io.coverage_report.CandidateCounts`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping

from ..core import InputError
from ..io.coverage_report import (CandidateCounts, CoverageSummary, CoverageTargets,
                                   LLMUsage, SelectionPool, TrivialBaseline, UnfilledStratum,
                                   ValidityGate)
from ..core.jsonsafe import ReadOnlyDict, frozen_json
from .candidates import Candidate

__all__ = ["GenerationResult"]


#: The typed parts of a :class:`GenerationResult` (the others: candidates, JSON).
_TYPED = {"coverage_before": CoverageSummary, "coverage_after": CoverageSummary,
          "usage": LLMUsage, "targets": CoverageTargets, "pool": SelectionPool,
          "baseline": TrivialBaseline, "gate": ValidityGate}


def _records(name: str, values) -> tuple:
    """``values`` as a tuple of :class:`Candidate` (a mapping is read by
    :meth:`Candidate.from_dict`)."""
    out = []
    for v in values:
        if isinstance(v, Mapping):
            v = Candidate.from_dict(v)
        if not isinstance(v, Candidate):
            raise InputError(f"GenerationResult.{name} holds a {type(v).__name__}, not a "
                             "candidate", fix="pass Candidate objects (or their to_dict())")
        out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class GenerationResult:
    """What a run produced (built once at its end; change it with :func:`dataclasses.replace`).

    ``accepted``: the accepted candidates (:class:`Candidate`, with their qrels and
    provenance); ``candidates``: every candidate, in merge order; ``coverage_before`` and
    ``coverage_after``: the coverage summaries (:class:`CoverageSummary`,
    :data:`~mteb_stratified.core.stats.coverage.SUMMARY_KEYS`); ``stop_reason``: why the run
    stopped; ``usage``: the LLM usage (:class:`LLMUsage`, empty offline); ``infeasible``: the
    cells no seed draw reaches; ``targets``: the MSC and SCC targets, the ceiling and their
    rule (:class:`CoverageTargets`); ``unfilled`` (selection): the strata the pool cannot fill
    (:class:`UnfilledStratum`); ``pool`` (selection): the pool and its ceiling
    (:class:`SelectionPool`); ``original_clusters``: ``{qid: cluster}`` of the original
    queries; ``baseline``: the trivial baseline (:class:`TrivialBaseline`,
    :func:`~.state.trivial_baseline`); ``gate``: the validity gate (:class:`ValidityGate`,
    :mod:`.gate`, added by the runner).  The typed parts (classes of
    :mod:`mteb_stratified.core.stats.coverage`) may be given as their JSON objects; an empty one
    is false, as ``{}`` is.  Mappings and lists are read-only.
    """

    accepted: tuple = ()
    candidates: tuple = ()
    coverage_before: CoverageSummary = field(default_factory=ReadOnlyDict)
    coverage_after: CoverageSummary = field(default_factory=ReadOnlyDict)
    stop_reason: str = ""
    usage: LLMUsage = field(default_factory=ReadOnlyDict)
    infeasible: tuple = ()
    targets: CoverageTargets = field(default_factory=ReadOnlyDict)
    unfilled: tuple = ()
    pool: SelectionPool = field(default_factory=ReadOnlyDict)
    original_clusters: Mapping = field(default_factory=ReadOnlyDict)
    baseline: TrivialBaseline = field(default_factory=ReadOnlyDict)
    gate: ValidityGate = field(default_factory=ReadOnlyDict)

    def __post_init__(self) -> None:
        for name in ("accepted", "candidates"):
            object.__setattr__(self, name, _records(name, getattr(self, name)))
        for name, kind in _TYPED.items():
            object.__setattr__(self, name, kind.from_dict(getattr(self, name)))
        object.__setattr__(self, "unfilled",
                           tuple(UnfilledStratum.from_dict(u) for u in self.unfilled))
        object.__setattr__(self, "infeasible", tuple(frozen_json(list(self.infeasible))))
        object.__setattr__(self, "original_clusters", frozen_json(self.original_clusters))

    def counts(self) -> CandidateCounts:
        """The candidates counted
        (:class:`~mteb_stratified.io.coverage_report.CandidateCounts`)."""
        rej: dict = {}
        for c in self.candidates:
            if c.status == "rejected":
                rej[c.reason] = rej.get(c.reason, 0) + 1
        in_target = sum(1 for c in self.accepted if c.landed == c.target)
        return CandidateCounts(generated=len(self.candidates), accepted=len(self.accepted),
                               rejected=sum(rej.values()),
                               rejected_by_reason=dict(sorted(rej.items())),
                               accepted_in_target_cell=in_target)

    def to_dict(self) -> dict:
        """Every field, the candidates as their :meth:`Candidate.to_dict` (an accepted one is
        also a candidate: ``accepted`` lists the indices in ``candidates`` of the accepted
        ones)."""
        index = {id(c): i for i, c in enumerate(self.candidates)}
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update({name: getattr(self, name).to_dict() for name in _TYPED})
        out["unfilled"] = [u.to_dict() for u in self.unfilled]
        out["candidates"] = [c.to_dict() for c in self.candidates]
        out["accepted"] = [index[id(c)] if id(c) in index else c.to_dict()
                           for c in self.accepted]
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "GenerationResult":
        """The result of a :meth:`to_dict` object."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"not fields of a generation result: {', '.join(unknown)}",
                             fix="give a GenerationResult.to_dict()")
        candidates = _records("candidates", data.get("candidates", ()))
        accepted = tuple(candidates[a] if isinstance(a, int) else a
                         for a in data.get("accepted", ()))
        return cls(**{**data, "candidates": candidates, "accepted": accepted})
