"""What plugs into generation: a :class:`Strategy` fills the strata a query set leaves empty;
a drafting strategy's three parts (:class:`QueryWriter`, :class:`RelevanceJudge`,
:class:`Verifier`) write, judge and verify each candidate for a :class:`Target` cell.

The strategies ``generate`` offers (:mod:`.strategies`), all through :class:`Strategy`:

* **selection** (:class:`~.strategies.Selection`): real judged queries of held-back splits,
  chosen by :func:`~.select.select_queries`;
* **template** and **LLM** (:class:`~.strategies.Drafting`): the coverage-aware loop
  (:func:`~.loop.generate_queries`) over the offline parts (:mod:`.offline`) or the LLM ones
  (:mod:`.llm`).

A third-party part checks itself against these protocols with the conformance kit
(:mod:`mteb_stratified.testing`).  Beside a protocol's methods the loop reads a few optional
attributes with ``getattr`` (a part without them gets the default):

* ``max_calls(n_docs) -> int`` (any part): the requests one call of the part sends at most for
  ``n_docs`` documents, retries aside (default: none): the loop reserves them per candidate, so
  a round fits the budget;
* ``sends_requests`` (any part, default False): its calls may overlap with other candidates'
  (a part that says nothing runs under the loop's CPU lock, one candidate at a time);
* ``alignment_ranks`` (writer; default: every J level): the J levels it can aim at;
* ``declines`` (writer, default False): an empty answer is the writer's rules declining the
  cell (``writer_declined``), not a failure (``no_query``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ..core.stats.cells import GRID, CellGrid

__all__ = ["Target", "QueryWriter", "RelevanceJudge", "Verifier", "Strategy", "judgements"]


@dataclass(frozen=True)
class Target:
    """A cell to fill: cluster × Δ bin × J bin, with its priority."""

    cluster: int
    dispersion: str
    alignment: str
    priority: float = 0.0
    label: str | None = None
    grid: CellGrid = field(default=GRID, repr=False, compare=False)

    @property
    def cell(self) -> tuple:
        return (self.cluster, self.dispersion, self.alignment)

    def rank(self, quantity: str) -> str:
        """``low``/``mid``/``high``: the position of the target's bin (:meth:`CellGrid.rank`)."""
        return self.grid.rank(quantity, getattr(self, quantity))


@runtime_checkable
class QueryWriter(Protocol):
    """Writes one query for a target cell from its seed documents."""

    def write(self, target: Target, seed_docs: Sequence[tuple[str, str]],
              terms: Sequence[str] = ()) -> tuple:
        """``(query or None, raw answer)`` for ``target`` given the seed documents
        ``[(doc_id, text)]`` and ``terms`` (the seeds' entities, the target cluster's first):
        for Low J the query must avoid them, for High J use them."""
        ...

    def params(self) -> dict:
        """JSON-able settings, recorded with every generated query (``generator``)."""
        ...


@runtime_checkable
class RelevanceJudge(Protocol):
    """Grades the pooled documents of a query."""

    def judge(self, query: str, docs: Sequence[tuple[str, str]], seeds: Sequence[str] = ()
              ) -> dict:
        """``{doc_id: grade}`` for every document of ``docs``: 0/1/2, or None when no grade
        came; or ``(grade, rule)`` pairs naming the rule that judged each.  ``seeds``: the
        documents the query was written from."""
        ...

    def params(self) -> dict:
        """JSON-able settings, recorded with every generated query (``judge``)."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """Checks that a query is well-formed and answerable from its judged documents."""

    def verify(self, query: str, docs: Sequence[tuple[str, str]], context: dict | None = None
               ) -> dict:
        """``{"well_formed": bool | None, "answerable": bool | None, ...}`` over the relevant
        documents ``docs`` (None: no usable answer); ``context``: the candidate's
        ``seed_docs``, ``pool``, ``qrels`` and ``query_entities``."""
        ...

    def params(self) -> dict:
        """JSON-able settings, recorded with every generated query (``verifier``)."""
        ...


@runtime_checkable
class Strategy(Protocol):
    """A way to fill the uncovered strata of a query set: selection, template or LLM.

    ``generate`` runs any strategy the same way: :meth:`fill`, then the validity gate, then
    :func:`~.output.write_dataset` with :meth:`provenance`.
    """

    def fill(self, dataset, artifact, config):
        """The :class:`~.result.GenerationResult` of filling ``dataset``'s uncovered strata
        over the structure ``artifact`` with the settings ``config``
        (:class:`~.config.GenerationConfig`); nothing is written."""
        ...

    def provenance(self, config, artifact) -> dict:
        """What the output records about how its queries were found (``provenance`` of
        :func:`~.output.write_dataset`)."""
        ...


def judgements(judged: dict, judge: RelevanceJudge) -> tuple[dict, dict]:
    """``({doc: grade}, {doc: rule})`` from a :meth:`RelevanceJudge.judge` answer: grades, or
    ``(grade, rule)`` pairs (a judge that gives plain grades judged every document by its own
    ``params()["rule"]``, or by its kind, else its class name)."""
    params = judge.params()
    default = str(params.get("rule") or params.get("kind") or type(judge).__name__)
    grades, rules = {}, {}
    for d, v in judged.items():
        if isinstance(v, tuple):
            grades[d], rules[d] = v[0], str(v[1])
        else:
            grades[d], rules[d] = v, default
    return grades, rules
