"""``coverage.json``, the report ``generate`` writes, typed at the file boundary.

:class:`CoverageReport` and its parts are frozen JSON objects of a known shape
(:class:`_Doc`): known keys as attributes, unknown keys kept, the key order kept, so
``CoverageReport.from_dict(d).to_dict() == d`` for every file ``generate`` wrote.  The
generation side builds them (:mod:`mteb_stratified.generation.result`), and the report side
renders them (:mod:`mteb_stratified.report.generation`) without importing the generator: the
schema sits here, in the file layer below both.  The coverage figures inside use the keys of
:data:`mteb_stratified.core.stats.coverage.COVERAGE_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar, Mapping

from ..core.errors import InputError
from ..core.jsonsafe import ReadOnlyDict, frozen_json

__all__ = ["LevelSummary", "CoverageSummary", "CandidateCounts", "CoverageTargets", "SplitInfo",
           "PoolCeiling", "SelectionPool", "UnfilledStratum", "LLMUsage", "GateJudge", "PairTest",
           "SignAgreement", "OrderPair", "SystemOrder", "RankOneRelevance", "LexicalBias",
           "TrivialBaseline", "ValidityGate", "CoverageReport"]


@dataclass(frozen=True, kw_only=True)
class _Doc:
    """A frozen JSON object of a known shape: its known keys as attributes (None where the key
    is absent or null), ``absent`` (the known keys the object did not have), ``other`` (its
    other keys, kept as they were, read-only) and ``order`` (its keys in the order read; empty:
    the schema's), so :meth:`to_dict` gives the object back, keys in the same order.
    ``_nested``: ``{field: type}`` of the fields that are typed objects, ``{field: [type]}``
    of those that are lists of them.  True when it holds any key (as a dict is)."""

    absent: frozenset = frozenset()
    other: Mapping = field(default_factory=ReadOnlyDict)
    order: tuple = field(default=(), compare=False)
    _nested: ClassVar[dict] = {}

    def __post_init__(self) -> None:
        for k in self._keys():  # JSON given as plain dicts and lists is held read-only
            value = getattr(self, k)
            if isinstance(value, (dict, list)):
                object.__setattr__(self, k, frozen_json(value))

    def _keys(self) -> list:
        return [f.name for f in fields(self) if f.name not in _DOC_FIELDS]

    def __bool__(self) -> bool:
        return bool(self.other) or any(k not in self.absent for k in self._keys())

    def to_dict(self) -> dict:
        """The JSON object (:meth:`from_dict`'s input, keys in the schema's order)."""
        out = {k: _thaw(getattr(self, k)) for k in self._keys() if k not in self.absent}
        out.update(_thaw(self.other))
        if not self.order:
            return out
        return {**{k: out[k] for k in self.order if k in out}, **out}

    @classmethod
    def empty(cls) -> "_Doc":
        """The typed form of ``{}`` (every key absent: false, as an empty dict is)."""
        return cls.from_dict({})

    @classmethod
    def from_dict(cls, data: Mapping) -> "_Doc":
        """The typed object of the JSON object ``data``."""
        if not isinstance(data, (Mapping, cls)):
            raise InputError(f"{cls.__name__}: expected a JSON object, got "
                             f"{type(data).__name__}", fix="give the coverage.json generate "
                             "wrote")
        if isinstance(data, cls):
            return data
        keys = [f.name for f in fields(cls) if f.name not in _DOC_FIELDS]
        values = {k: _typed(cls._nested.get(k), data[k]) for k in keys if k in data}
        return cls(**values, absent=frozenset(k for k in keys if k not in data),
                   other=frozen_json({k: v for k, v in data.items() if k not in keys}),
                   order=tuple(data))


#: The fields of every :class:`_Doc` that are no key of its JSON object.
_DOC_FIELDS = ("absent", "other", "order")


def _typed(kind, value):
    """``value`` read as ``kind`` (a :class:`_Doc` type, ``[type]``: a list of them, None:
    JSON kept read-only)."""
    if value is None:
        return None
    if isinstance(kind, list):
        return tuple(kind[0].from_dict(v) for v in value)
    if isinstance(kind, type) and isinstance(value, kind):
        return value
    return kind.from_dict(value) if kind is not None else frozen_json(value)


def _thaw(value):
    """Plain JSON of a typed or read-only value."""
    if isinstance(value, _Doc):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class LevelSummary(_Doc):
    """One level of a coverage summary (:data:`SUMMARY_KEYS`, meanings: :data:`COVERAGE_KEYS`):
    ``msc``, ``scc``, ``covered``, ``weighted_units``; at cluster level also ``weightless``
    and ``uncovered_mass``."""

    msc: float | None = None
    scc: float | None = None
    covered: int | None = None
    weighted_units: int | None = None
    weightless: int | None = None
    uncovered_mass: float | None = None


@dataclass(frozen=True)
class CoverageSummary(_Doc):
    """A query set's coverage: ``n_queries`` and the ``cluster`` and ``cell``
    :class:`LevelSummary` (``coverage.json``'s ``before`` and ``after``)."""

    n_queries: int | None = None
    cluster: LevelSummary | None = None
    cell: LevelSummary | None = None
    _nested: ClassVar[dict] = {"cluster": LevelSummary, "cell": LevelSummary}


@dataclass(frozen=True)
class CandidateCounts(_Doc):
    """A run's candidates counted: ``generated``, ``accepted``, ``rejected``,
    ``rejected_by_reason`` (``{reason: n}``, read-only) and ``accepted_in_target_cell``."""

    generated: int | None = None
    accepted: int | None = None
    rejected: int | None = None
    rejected_by_reason: Mapping | None = None
    accepted_in_target_cell: int | None = None


@dataclass(frozen=True)
class CoverageTargets(_Doc):
    """The targets: ``msc`` and ``scc``, the ceiling ``ceiling_msc`` and
    ``ceiling_scc_documents`` (every document a query), their ``rule``; a generation's
    ``writer_alignment_ranks``, a selection's ``pool_ceiling``."""

    msc: float | None = None
    scc: float | None = None
    ceiling_msc: float | None = None
    ceiling_scc_documents: float | None = None
    rule: str | None = None
    writer_alignment_ranks: tuple | None = None
    pool_ceiling: Mapping | None = None


@dataclass(frozen=True)
class SplitInfo(_Doc):
    """Which split holds what: ``evaluated``, ``added`` (the new split), ``kind``
    (``generated`` or ``selected``), ``copied_byte_for_byte``, ``merged_into`` and its
    ``merge_changes`` line."""

    evaluated: str | None = None
    added: str | None = None
    kind: str | None = None
    copied_byte_for_byte: tuple | None = None
    merged_into: str | None = None
    merge_changes: str | None = None


@dataclass(frozen=True)
class PoolCeiling(_Doc):
    """MSC and SCC with every pool query added (``msc``, ``scc``, ``n_queries``)."""

    msc: float | None = None
    scc: float | None = None
    n_queries: int | None = None


@dataclass(frozen=True)
class SelectionPool(_Doc):
    """A selection's pool: ``splits``, ``queries``, ``excluded_by_strata``, ``selected`` and
    its own ``ceiling`` (:class:`PoolCeiling`)."""

    splits: tuple | None = None
    queries: int | None = None
    excluded_by_strata: Mapping | None = None
    selected: int | None = None
    ceiling: PoolCeiling | None = None
    _nested: ClassVar[dict] = {"ceiling": PoolCeiling}


@dataclass(frozen=True)
class UnfilledStratum(_Doc):
    """A weighted cluster short of ``n_min`` queries: ``cluster``, ``label``, ``mass``,
    ``queries`` and ``pool_queries_left`` (0: the pool cannot fill it)."""

    cluster: int | None = None
    label: str | None = None
    mass: float | None = None
    queries: int | None = None
    pool_queries_left: int | None = None


@dataclass(frozen=True)
class LLMUsage(_Doc):
    """LLM usage: ``calls`` (cached ones included) of ``budget_calls``, ``paid_calls`` (sent
    in this run), ``cached_calls``, ``tokens`` and ``cost_usd``."""

    calls: int | None = None
    budget_calls: int | None = None
    paid_calls: int | None = None
    cached_calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class GateJudge(_Doc):
    """The validity gate's judge check: ``measured``; if so ``pairs``, ``per_query``,
    ``queries``, ``precision``, ``recall``, ``kappa`` (None: undefined) and ``stopped`` (why
    the sample stopped early); if not, ``why``."""

    measured: bool | None = None
    pairs: int | None = None
    per_query: int | None = None
    queries: int | None = None
    precision: float | None = None
    recall: float | None = None
    kappa: float | None = None
    stopped: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class PairTest(_Doc):
    """A paired difference of two systems on one query set: ``difference`` and ``p_value``."""

    difference: float | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class SignAgreement(_Doc):
    """The clusters both query sets share (``shared_clusters``) and how many of them give the
    difference the same sign (``same_sign``)."""

    same_sign: int | None = None
    shared_clusters: int | None = None


@dataclass(frozen=True)
class OrderPair(_Doc):
    """Systems ``a`` − ``b`` on the ``real`` (original) and the ``added`` queries
    (:class:`PairTest`), and their per-cluster sign agreement ``strata``."""

    a: str | None = None
    b: str | None = None
    real: PairTest | None = None
    added: PairTest | None = None
    strata: SignAgreement | None = None
    _nested: ClassVar[dict] = {"real": PairTest, "added": PairTest, "strata": SignAgreement}


@dataclass(frozen=True)
class SystemOrder(_Doc):
    """The panel's order on the original and the added queries: ``systems``, ``measure``,
    ``kendall_tau`` (None: undefined) and the ``pairs`` (:class:`OrderPair`)."""

    systems: tuple | None = None
    measure: str | None = None
    kendall_tau: float | None = None
    pairs: tuple | None = None
    _nested: ClassVar[dict] = {"pairs": [OrderPair]}


@dataclass(frozen=True)
class RankOneRelevance(_Doc):
    """How often BM25's rank 1 is relevant (``rank1_relevant``) over ``queries``."""

    queries: int | None = None
    rank1_relevant: float | None = None


@dataclass(frozen=True)
class LexicalBias(_Doc):
    """BM25's rank-1 relevance on the ``added`` and the ``original`` queries
    (:class:`RankOneRelevance`; ``added`` None when none was added)."""

    added: RankOneRelevance | None = None
    original: RankOneRelevance | None = None
    _nested: ClassVar[dict] = {"added": RankOneRelevance, "original": RankOneRelevance}


@dataclass(frozen=True)
class TrivialBaseline(_Doc):
    """MSC and SCC (``msc``, ``scc``) with ``documents`` documents added, one per targeted
    cluster, and the ``rule``."""

    documents: int | None = None
    msc: float | None = None
    scc: float | None = None
    rule: str | None = None


@dataclass(frozen=True)
class ValidityGate(_Doc):
    """The validity gate of a run: ``verdict``, ``passed``, the ``added_queries`` and
    ``original_queries`` it compares, the systems of its ``panel`` (and those
    ``panel_left_out``), the ``judge`` check (:class:`GateJudge`), the ``system_order``
    (:class:`SystemOrder`, None when there is no order to compare), the ``lexical_bias``
    (:class:`LexicalBias`), the ``trivial_baseline`` (:class:`TrivialBaseline`), the
    ``pool_bias`` note and the ``thresholds``."""

    verdict: str | None = None
    passed: bool | None = None
    added_queries: int | None = None
    original_queries: int | None = None
    panel: tuple | None = None
    panel_left_out: tuple | None = None
    judge: GateJudge | None = None
    system_order: SystemOrder | None = None
    lexical_bias: LexicalBias | None = None
    trivial_baseline: TrivialBaseline | None = None
    pool_bias: str | None = None
    thresholds: Mapping | None = None
    _nested: ClassVar[dict] = {"judge": GateJudge, "system_order": SystemOrder,
                               "lexical_bias": LexicalBias, "trivial_baseline": TrivialBaseline}


@dataclass(frozen=True)
class CoverageReport(_Doc):
    """``coverage.json``, the report of a ``generate`` run: the evaluated ``split``, the
    coverage ``before`` and ``after`` (:class:`CoverageSummary`), the candidates' ``counts``
    (:class:`CandidateCounts`), the ``stop_reason``, the LLM ``usage`` (:class:`LLMUsage`,
    empty offline), the ``targets`` (:class:`CoverageTargets`), the ``infeasible_cells``, the
    ``provenance`` (kept as JSON), the ``splits`` (:class:`SplitInfo`); a selection's
    ``pool`` (:class:`SelectionPool`) and ``unfilled`` strata (:class:`UnfilledStratum`);
    the validity ``gate`` (:class:`ValidityGate`) and a smoke test's ``label``."""

    split: str | None = None
    before: CoverageSummary | None = None
    after: CoverageSummary | None = None
    counts: CandidateCounts | None = None
    stop_reason: str | None = None
    usage: LLMUsage | None = None
    targets: CoverageTargets | None = None
    infeasible_cells: tuple | None = None
    provenance: Mapping | None = None
    splits: SplitInfo | None = None
    pool: SelectionPool | None = None
    unfilled: tuple | None = None
    gate: ValidityGate | None = None
    label: str | None = None
    _nested: ClassVar[dict] = {"before": CoverageSummary, "after": CoverageSummary,
                               "counts": CandidateCounts, "usage": LLMUsage,
                               "targets": CoverageTargets, "splits": SplitInfo,
                               "pool": SelectionPool, "unfilled": [UnfilledStratum],
                               "gate": ValidityGate}
