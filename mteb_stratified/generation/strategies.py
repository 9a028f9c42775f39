"""The strategies ``generate`` runs, each a :class:`~.protocols.Strategy`:

* :class:`Selection` — real judged queries of held-back splits (:mod:`.select`);
* :class:`Drafting` — the coverage-aware loop (:mod:`.loop`) over a writer, a judge and a
  verifier: the offline ones (``Drafting(*offline_parts(...), pooler)``, :mod:`.offline`: the
  template smoke test) or the LLM ones (:mod:`.llm`, sharing one
  :class:`~.llm.BudgetedCalls` passed as ``calls``).
"""

from __future__ import annotations

from .config import GenerationConfig
from .loop import generate_queries
from .result import GenerationResult
from .output import provenance_of, selection_provenance
from .protocols import QueryWriter, RelevanceJudge, Verifier
from .select import select_queries

__all__ = ["Selection", "Drafting"]


class Selection:
    """Fill the strata with real queries of the ``pools`` (``{split: BeirDataset}`` of the same
    corpus, in the order the provenance lists them): :func:`~.select.select_queries`."""

    def __init__(self, pools: dict) -> None:
        self.pools = pools

    def fill(self, dataset, artifact, config: GenerationConfig) -> GenerationResult:
        """The selection (:func:`~.select.select_queries`)."""
        return select_queries(dataset, self.pools, artifact, config=config)

    def provenance(self, config: GenerationConfig, artifact) -> dict:
        """The rule, the pool splits, the settings (:func:`~.output.selection_provenance`)."""
        return selection_provenance(config, artifact, list(self.pools))


class Drafting:
    """Fill the strata with queries drafted for them: :func:`~.loop.generate_queries` over
    ``writer``, ``judge``, ``verifier`` and ``pooler``; ``calls``, ``log`` and ``concurrency``
    are passed on to it."""

    def __init__(self, writer: QueryWriter, judge: RelevanceJudge, verifier: Verifier, pooler,
                 *, calls=None, log=None, concurrency: int = 1) -> None:
        self.writer, self.judge, self.verifier, self.pooler = writer, judge, verifier, pooler
        self.calls, self.log, self.concurrency = calls, log, concurrency

    def fill(self, dataset, artifact, config: GenerationConfig) -> GenerationResult:
        """The generation loop (:func:`~.loop.generate_queries`)."""
        return generate_queries(dataset, artifact, writer=self.writer, judge=self.judge,
                                verifier=self.verifier, pooler=self.pooler, config=config,
                                calls=self.calls, log=self.log, concurrency=self.concurrency)

    def provenance(self, config: GenerationConfig, artifact) -> dict:
        """The three parts' settings and the run's (:func:`~.output.provenance_of`)."""
        return provenance_of(self.writer, self.judge, self.verifier, config, artifact)
