"""A candidate query and how one is drafted: :class:`Candidate` (the frozen record of one
candidate, built step by step with :func:`dataclasses.replace`) and :class:`CandidateContext`
(write, pool, judge and verify one candidate: steps 4 to 8 of :mod:`.loop`'s docstring).

A :class:`Candidate` holds only the fields its steps reached; :meth:`Candidate.to_dict` gives
them as the JSON object of a line of ``candidates.jsonl`` (the fields not reached have no key),
and :meth:`Candidate.from_dict` reads such an object back.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields, replace

from ..core import InputError, stratify
from ..core.jsonsafe import frozen_json
from ..io.corpus_text import doc_text
from .llm import BudgetExhausted
from .protocols import judgements

__all__ = ["UNSET", "Candidate", "CandidateContext", "normalize_query"]


class _Unset:
    """The value of a :class:`Candidate` field its steps did not reach (no key in its JSON)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return "UNSET"


#: A :class:`Candidate` field not reached (distinct from None: ``reason`` is None when
#: accepted).
UNSET = _Unset()


@dataclass(frozen=True)
class Candidate:
    """One candidate query, as far as its steps went (:data:`UNSET`: not reached).

    Drafted (:mod:`.loop`): ``target`` (the cell aimed at, ``[cluster, Δ level, J level]``),
    ``target_label`` (its cluster's label), ``priority``, ``attempt`` (at that cell),
    ``seed_docs`` (the seed documents), ``seed`` (the run's seed), ``terms`` (the entities
    given to the writer), ``raw`` (the writer's answer, 500 characters at most), ``query``,
    ``pool`` (the pooled documents: ``{"pool", "bm25", "dense"}``), ``judgements``
    (``{doc: grade or None}``), ``judged_by`` (``{doc: rule}``), ``judge_failures`` (pooled
    documents without a grade, when none was relevant), ``qrels`` (``{doc: grade}``, the
    relevant ones), ``qrel_rules`` (the rule that judged each), ``query_entities``,
    ``landed`` (the recomputed cell), ``dispersion`` and ``alignment`` (its Δ and J),
    ``verifier`` (the verifier's verdict), ``status`` (``accepted`` or ``rejected``),
    ``reason`` (:data:`~.config.REASONS`; None when accepted), ``detail`` (more on the
    reason), ``query_id`` (an accepted query's id).  Selected (:mod:`.select`): ``query_id``,
    ``query``, ``qrels``, ``from_split``, ``target``, ``target_label``, ``landed``, ``match``
    (``cell`` or ``cluster``), ``status``, ``step`` and ``seed``.

    JSON-like values are held read-only (:func:`~mteb_stratified.core.jsonsafe.frozen_json`).
    """

    target: object = UNSET
    target_label: object = UNSET
    priority: object = UNSET
    attempt: object = UNSET
    seed_docs: object = UNSET
    seed: object = UNSET
    terms: object = UNSET
    raw: object = UNSET
    query: object = UNSET
    pool: object = UNSET
    judgements: object = UNSET
    judged_by: object = UNSET
    judge_failures: object = UNSET
    qrels: object = UNSET
    qrel_rules: object = UNSET
    query_entities: object = UNSET
    landed: object = UNSET
    dispersion: object = UNSET
    alignment: object = UNSET
    verifier: object = UNSET
    status: object = UNSET
    reason: object = UNSET
    detail: object = UNSET
    query_id: object = UNSET
    from_split: object = UNSET
    match: object = UNSET
    step: object = UNSET

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (dict, list, tuple, set)):
                object.__setattr__(self, f.name, frozen_json(value))

    def rejected(self, reason: str, **more) -> "Candidate":
        """This candidate rejected for ``reason`` (:data:`~.config.REASONS`), with ``more``
        fields."""
        return replace(self, status="rejected", reason=reason, **more)

    def to_dict(self) -> dict:
        """The fields reached, ``{name: value}`` (a line of ``candidates.jsonl``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not UNSET}

    @classmethod
    def from_dict(cls, data) -> "Candidate":
        """The candidate of a :meth:`to_dict` object (a line of ``candidates.jsonl``); a key
        that is no field is an :class:`InputError`."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"not fields of a candidate: {', '.join(unknown)}",
                             fix="give a line of candidates.jsonl written by generate")
        return cls(**data)


def normalize_query(text: str) -> str:
    """A query's text for the duplicate check: lower case, single spaces."""
    return " ".join(text.lower().split())


class _Build:
    """A candidate as its steps build it: each step replaces the frozen :class:`Candidate`
    (``cand``), so the steps reached are kept when a later one raises."""

    def __init__(self, cand: Candidate) -> None:
        self.cand = cand

    def set(self, **changes) -> None:
        """The candidate with ``changes``."""
        self.cand = replace(self.cand, **changes)

    def reject(self, reason: str, **more) -> None:
        """The candidate rejected for ``reason``; None (the outcome of a rejection)."""
        self.cand = self.cand.rejected(reason, **more)


class CandidateContext:
    """What every candidate reads (shared, read-only), and the lock its CPU steps take: the
    pooler, the extractor and the strata run one candidate at a time, the LLM requests of
    several overlap."""

    def __init__(self, dataset, artifact, weights, bins, doc_entities, writer, judge, verifier,
                 pooler, cfg):
        self.dataset, self.artifact, self.weights, self.bins = dataset, artifact, weights, bins
        self.doc_entities = doc_entities
        self.writer, self.judge, self.verifier, self.pooler = writer, judge, verifier, pooler
        self.cfg = cfg
        self.cpu = threading.RLock()

    def run(self, target, cand: Candidate, existing) -> tuple:
        """One candidate drafted from ``cand`` (its seeds and terms): ``(the candidate as far
        as its steps went, outcome)``, the outcome being the landed cell codes when accepted,
        None when rejected, the :class:`BudgetExhausted` when the budget ran out inside it."""
        build = _Build(cand)
        try:
            outcome = self._candidate(target, build, existing)
        except BudgetExhausted as exc:
            outcome = exc
        return build.cand, outcome

    def _text(self, ids):
        corpus = self.dataset.corpus
        return [(d, doc_text(corpus[d])) for d in ids]

    def _candidate(self, target, build: _Build, existing) -> tuple | None:
        cfg, seed_ids = self.cfg, list(build.cand.seed_docs)
        with self.cpu if not _calls_llm(self.writer) else _NOLOCK:
            query, raw = self.writer.write(target, self._text(seed_ids), list(build.cand.terms))
        build.set(raw=(raw or "")[:500])
        if not query:
            # an LLM's answer without a query is a failure; a writer whose rules cannot reach
            # a cell (``declines = True``: the offline writer) declines it, and it is not tried
            # again
            declined = bool(getattr(self.writer, "declines", False))
            return build.reject("writer_declined" if declined else "no_query")
        build.set(query=query)
        if normalize_query(query) in existing:
            return build.reject("duplicate_query")
        with self.cpu:
            pooled = self.pooler.pool(query, seed_ids)
        build.set(pool=pooled)
        with self.cpu if not _calls_llm(self.judge) else _NOLOCK:
            judged = self.judge.judge(query, self._text(pooled["pool"]), seeds=tuple(seed_ids))
        grades, rules = judgements(judged, self.judge)
        build.set(judgements=grades, judged_by=rules)
        qrels = {d: g for d, g in grades.items() if g is not None and g >= cfg.level}
        if not qrels:
            return build.reject("no_relevant_document",
                                judge_failures=sum(g is None for g in grades.values()))
        build.set(qrels=qrels, qrel_rules={d: rules[d] for d in sorted(qrels)})
        landed = self._landed(build, query, qrels)
        if landed is None:
            return None
        rel_docs = sorted(qrels, key=lambda x: (-qrels[x], x))
        context = {"seed_docs": list(seed_ids), "pool": pooled, "qrels": qrels,
                   "query_entities": list(build.cand.query_entities)}
        with self.cpu if not _calls_llm(self.verifier) else _NOLOCK:
            verdict = self.verifier.verify(query, self._text(rel_docs), context=context)
        build.set(verifier=verdict)
        if verdict.get("well_formed") is None or verdict.get("answerable") is None:
            return build.reject("verifier_no_answer")
        if not verdict["well_formed"]:
            return build.reject("not_well_formed")
        if not verdict["answerable"]:
            return build.reject("not_answerable")
        build.set(status="accepted", reason=None)
        return landed

    def _landed(self, build: _Build, query: str, qrels: dict) -> tuple | None:
        """Verification (a): the query's entities and its stratum recomputed over ``qrels``;
        the landed cell codes when that is the target cell, else None (rejected)."""
        with self.cpu:
            ents = self.artifact.extract_entities(query)
            build.set(query_entities=sorted(ents))
            st = stratify({"q": qrels}, self.weights, query_entities={"q": ents},
                          doc_entities=self.doc_entities, bins=self.bins, level=self.cfg.level)
        if st.n_queries == 0:
            return build.reject("no_relevant_document",
                                detail=st.excluded[0].reason if st.excluded else "")
        c, d, j = int(st.primary[0]), int(st.dispersion_bin[0]), int(st.alignment_bin[0])
        build.set(landed=list(st.grid.label_of(c, d, j)), dispersion=float(st.dispersion[0]),
                  alignment=float(st.alignment[0]))
        if tuple(build.cand.landed) != tuple(build.cand.target):
            return build.reject("wrong_cell")
        return c, d, j


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOLOCK = _NoLock()


def _calls_llm(part) -> bool:
    """Does the part send requests (its steps may overlap with other candidates')?  Parts that
    say nothing run under the CPU lock, one candidate at a time."""
    return bool(getattr(part, "sends_requests", False))
