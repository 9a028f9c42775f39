"""The generation loop's rounds (:mod:`.loop`'s docstring): :class:`Rounds` plans each round
(the targets ranked, one draft per cluster with its seeds), drafts it
(:class:`~.candidates.CandidateContext`) and merges the outcomes in draft order; what the rounds
change as they go is their :class:`Progress`, and the result is built once at the end
(:meth:`Rounds.finish`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..core import InputError
from ..io.coverage_report import CoverageSummary
from .candidates import Candidate, CandidateContext, normalize_query
from .config import GenerationConfig
from .llm import BudgetExhausted
from .result import GenerationResult
from .seeds import SeedSampler, seed_terms
from .state import J_RANK_ORDER, coverage_start, rank_targets

__all__ = ["Progress", "Rounds", "j_order", "worst_calls"]


@dataclass
class Progress:
    """What the rounds change as they go (the coverage counts aside: ``state`` of the
    :class:`~.state.CoverageStart`); all else :class:`Rounds` holds is fixed at the start.

    * ``existing``: the queries' texts (:func:`normalize_query`), the original and the accepted
      ones: no query twice;
    * ``attempts``: ``{cell: attempts so far}``; ``exhausted``: the cells not to target again
      (``max_attempts`` reached, or no seed set reaches them); ``infeasible``: the cells no
      seed draw reaches (reported);
    * ``failures``: ``{cluster: failed candidates}``, the divisor of the cluster's priority;
    * ``used_seeds``: ``{cell: seed sets tried}`` (a second attempt draws another set);
    * ``no_json_run``, ``any_json``: answers without a JSON query in a row, and whether any
      had one (:meth:`Rounds._count_json`);
    * ``accepted`` and ``candidates``: the accepted candidates and every candidate so far
      (:class:`~.candidates.Candidate`), in merge order; ``stop_reason``: why the loop stopped.
    """

    existing: set
    attempts: dict = field(default_factory=dict)
    exhausted: set = field(default_factory=set)
    infeasible: list = field(default_factory=list)
    failures: dict = field(default_factory=dict)
    used_seeds: dict = field(default_factory=dict)
    no_json_run: int = 0
    any_json: bool = False
    accepted: list = field(default_factory=list)
    candidates: list = field(default_factory=list)
    stop_reason: str = ""


class Rounds:
    """The generation loop across rounds: what it reads, fixed at the start (the coverage
    start, the seed sampler, the candidate context, the round reservation, the J levels the
    writer aims at, the ``reported_targets``), and what the rounds change: the coverage
    (``state``) and the records and bookkeeping of :class:`Progress` (``progress``)."""

    def __init__(self, dataset, artifact, writer, judge, verifier, pooler,
                 cfg: GenerationConfig, calls, log) -> None:
        self.cfg, self.calls, self.log = cfg, calls, log
        self.start = start = coverage_start(dataset, artifact, cfg)
        self.state = start.state
        self.seeds = SeedSampler(start.weights, start.weights.doc_ids, cfg)
        self.doc_entities = artifact.canonical_doc_entities()
        self.entity_info = {e["name"]: (e.get("cluster"), -float(e.get("centrality") or 0.0))
                            for e in artifact.entities}
        self.ctx = CandidateContext(dataset, artifact, start.weights, start.bins,
                                    self.doc_entities, writer, judge, verifier, pooler, cfg)
        self.worst = worst_calls(writer, judge, verifier, artifact, pooler,
                                 max(cfg.n_seeds, 2))
        # the J levels the writer can aim at (a rule-based writer may say; an LLM tries all)
        self.writes = tuple(getattr(writer, "alignment_ranks", None) or J_RANK_ORDER)
        self.reported_targets = {**start.targets, "writer_alignment_ranks": list(self.writes)}
        self.j_order = j_order(cfg.seed, self.writes)
        self.progress = Progress(existing={normalize_query(t) for t in dataset.queries.values()})

    def stop_reason(self, cov: CoverageSummary) -> str | None:
        """Why the loop stops before this round, on the coverage ``cov`` at its start (the
        targets met, the candidates spent), or None."""
        cfg = self.cfg
        if self.start.met(cov):
            return "coverage targets met"
        if cfg.max_candidates is not None and len(self.progress.candidates) >= cfg.max_candidates:
            return f"{cfg.max_candidates} candidates written (max_candidates)"
        return None

    def targets(self, cov: CoverageSummary) -> list:
        """Round planning, first step: the targets in priority order (:func:`rank_targets`),
        those the writer can aim at; with the SCC target met on the coverage ``cov`` at the
        round's start and the MSC one not, only clusters without a query."""
        cfg, state, start, progress = self.cfg, self.state, self.start, self.progress
        empty_only = cov.cluster.scc >= start.target_scc
        targets = rank_targets(state.cluster_counts(), state.cell_counts(), start.mass,
                               cfg.n_min, labels=start.labels, exclude=progress.exhausted,
                               failures=progress.failures, grid=start.bins.grid,
                               empty_only=empty_only, j_order=self.j_order)
        return [t for t in targets if t.rank("alignment") in self.writes]

    def plan(self, targets) -> list:
        """Round planning, second step: the round's drafts ``[(target, candidate)]``, the best
        target of each of the ``round_size`` best clusters (fewer when the candidates or the
        budget left say so), each with its seed documents and terms (:meth:`_seeded`); a
        target no seed set reaches is excluded."""
        room = self._room()
        drafts, clusters = [], set()
        for target in targets:
            if len(drafts) >= room:
                break
            if target.cluster in clusters:
                continue
            cand = self._seeded(target)
            if cand is not None:
                clusters.add(target.cluster)
                drafts.append((target, cand))
        return drafts

    def _room(self) -> int:
        """Candidates this round may hold: ``round_size``, no more than the candidates left,
        and no more than the budget left holds worst cases (at least one)."""
        cfg = self.cfg
        room = cfg.round_size
        if cfg.max_candidates is not None:
            room = min(room, cfg.max_candidates - len(self.progress.candidates))
        if self.calls is not None and self.worst > 0:  # reserve: the round fits the budget
            room = max(1, min(room, self.calls.remaining // self.worst))
        return room

    def _seeded(self, target) -> Candidate | None:
        """An attempt at ``target`` counted, and its draft :class:`~.candidates.Candidate` with
        the seed documents (:meth:`~.seeds.SeedSampler.sample`) and terms; None when no seed
        set reaches the cell (then the cell is exhausted and listed as infeasible)."""
        cfg, progress, start = self.cfg, self.progress, self.start
        attempt = progress.attempts.get(target.cell, 0)
        progress.attempts[target.cell] = attempt + 1
        if progress.attempts[target.cell] >= cfg.max_attempts:
            progress.exhausted.add(target.cell)
        seed_ids = self.seeds.sample(target, attempt, start.weights, start.bins,
                                     progress.used_seeds.get(target.cell, ()))
        if seed_ids is None:  # no seed set reaches this cell's cluster and Δ bin
            progress.exhausted.add(target.cell)
            progress.infeasible.append(list(target.cell))
            return None
        progress.used_seeds.setdefault(target.cell, set()).add(tuple(sorted(seed_ids)))
        return Candidate(target=list(target.cell), target_label=target.label,
                         priority=target.priority, attempt=attempt, seed_docs=seed_ids,
                         seed=cfg.seed, terms=seed_terms(seed_ids, target.cluster,
                                                         self.doc_entities, self.entity_info,
                                                         cfg.n_terms))

    def draft(self, drafts, pool) -> list:
        """Drafting: each draft written, judged and verified
        (:meth:`~.candidates.CandidateContext.run`: ``(candidate, outcome)``) against the
        queries accepted before the round: in turn, or side by side on ``pool``."""
        frozen = frozenset(self.progress.existing)
        jobs = [(t, r, frozen) for t, r in drafts]
        if pool is None:
            return [self.ctx.run(*job) for job in jobs]
        return list(pool.map(lambda job: self.ctx.run(*job), jobs))

    def merge(self, drafts, outcomes) -> str | None:
        """Merging: the outcomes in draft order, whatever order they finished in; accepted
        queries join the coverage, failures count against their cluster; the reason to stop
        (the budget spent), or None.  A model that answers no JSON again and again is an
        :class:`InputError`."""
        stop = None
        progress = self.progress
        for (target, _), (cand, outcome) in zip(drafts, outcomes):
            if isinstance(outcome, BudgetExhausted):
                progress.candidates.append(cand.rejected("budget_spent", detail=str(outcome)))
                stop = stop or f"budget spent ({outcome})"
                continue
            if outcome is not None and normalize_query(cand.query) in progress.existing:
                cand = cand.rejected("duplicate_query",
                                     detail="the same text as a query accepted in this round")
                outcome = None
            if outcome is not None:
                cand = self._accept(cand, outcome)
            progress.candidates.append(cand)
            if outcome is None and cand.reason != "writer_declined":
                progress.failures[target.cluster] = progress.failures.get(target.cluster, 0) + 1
            if self.log is not None:
                self.log(cand)
            self._count_json(cand)
        return stop

    def _accept(self, cand: Candidate, cell: tuple) -> Candidate:
        """An accepted candidate: its landed cell codes ``cell`` join the coverage, its text
        the existing queries, and it gets the next query id (the candidate with it)."""
        self.state.add(*cell)
        self.progress.existing.add(normalize_query(cand.query))
        qid = f"gen-{self.cfg.seed}-{len(self.progress.accepted) + 1:04d}"
        cand = replace(cand, query_id=qid)
        self.progress.accepted.append(cand)
        return cand

    def _count_json(self, cand: Candidate) -> None:
        """Answers without a JSON query in a row, before any with one: past
        ``no_json_abort`` the model cannot do this task (an :class:`InputError`)."""
        progress = self.progress
        if cand.reason != "no_query":
            progress.no_json_run, progress.any_json = 0, True
            return
        progress.no_json_run += 1
        if not progress.any_json and progress.no_json_run >= self.cfg.no_json_abort:
            raise InputError(
                f"the model returned no JSON query in {progress.no_json_run} answers in a row "
                f"(last: {(cand.raw or '')[:120]!r})",
                fix="use an instruction-following model that can answer in JSON (e.g. a vLLM "
                    "or OpenAI endpoint: --base-url/--model); the answers so far are cached")

    def finish(self) -> GenerationResult:
        """The result, built once: the candidates, the coverage after, the trivial baseline,
        the stop, the infeasible targets and the usage."""
        progress = self.progress
        usage = self.calls.usage() if self.calls is not None else {}
        return self.start.result(progress.accepted, progress.candidates,
                                 stop_reason=progress.stop_reason, targets=self.reported_targets,
                                 infeasible=progress.infeasible, usage=usage)


def j_order(seed: int, writes):
    """``c -> {J rank: position}``: the order in which the J levels of cluster c's cells are
    tried — the levels the writer aims at (of Low, Mid, High) in an order drawn with
    ``default_rng([seed, c])``, then the others, N/A last.  A draw per cluster spreads the
    generated queries over the J levels independently of the clusters' weights (an order by
    the counts so far gave the heavy clusters of a round the same level)."""
    aimed = [r for r in ("high", "mid", "low") if r in writes]
    rest = [r for r in J_RANK_ORDER if r not in aimed]

    def order(c: int) -> dict:
        drawn = [aimed[i] for i in np.random.default_rng([int(seed), int(c)]).permutation(
            len(aimed))]
        return {r: i for i, r in enumerate(drawn + rest)}
    return order

def worst_calls(writer, judge, verifier, artifact, pooler, n_seeds: int) -> int:
    """Requests one candidate sends at most, retries aside (parts without ``max_calls`` make
    none): the round reservation, so the budget never ends inside a round of independent
    candidates and the output does not depend on which of them finished first."""
    n_pool = max(int(getattr(pooler, "max_pool", 0)), int(n_seeds), 1)  # seeds are kept
    total = 0
    for part in (writer, judge, verifier):
        fn = getattr(part, "max_calls", None)
        total += int(fn(n_pool)) if fn is not None else 0
    if total and artifact.metadata["extractor"]["kind"] == "llm":
        total += 2  # the structure's extraction of the query's entities, with one re-ask
    return total

