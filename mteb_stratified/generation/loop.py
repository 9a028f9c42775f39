"""Coverage-aware query generation with verification: fill the strata a benchmark leaves empty.

The loop (our design; the paper describes the idea, not the rules):

1. **Coverage** of the current query set: per cluster n_c (queries whose primary cluster is c)
   and per cell n_{c,δ,j}; MSC and SCC (``n_min``) as in :mod:`mteb_stratified.core.stats.coverage`.
2. **Targets**: every empty cell (c, Δ bin, J bin) of a cluster with n_c < n_min (once the SCC
   target is met and the MSC one is not: of a cluster with n_c = 0), ranked by
   ``priority = w_c · (n_min − n_c) / n_min / (1 + f_c)`` (w_c: stratum weight, f_c: rejected
   candidates of cluster c so far), ties → the J levels in an order drawn per cluster
   (``default_rng([seed, c])``, of the Low, Med and High levels the writer aims at; N/A last),
   then Δ Low before Med before High, then cluster id.  A
   target is tried at most ``max_attempts`` times; cells of a J level the writer does not aim
   at (its ``alignment_ranks``) are not targets.  A **round** takes the best target of each of
   the ``round_size`` best clusters, on the coverage at the round's start.
3. **Seeds**: the cluster's *central* documents are those whose own stratum is c (every
   weighted cluster has one), then the others by m_d(c).  N/A Δ: one of them; Low Δ: ``n_seeds``
   of them (all drawn from the more concentrated half — lowest own dispersion — of the
   ``central_docs`` most central); Med Δ: ``n_seeds`` (≥ 2) documents, all but one from c, one
   from a related cluster; High Δ: one from c, the rest from related clusters (related: largest
   co-membership Σ_d m_d(c) m_d(c')).  Sampling uses
   ``numpy.random.default_rng([seed, c, δ, j, attempt])``, so it does not depend on the order
   in which targets are visited.  A draw is kept only if the seeds themselves, taken as the
   relevant set, have primary cluster c and Δ in the target bin (up to ``seed_draws`` draws);
   a cell no draw reaches is skipped without an LLM call (listed as ``infeasible``).
4. **Write** a query (:class:`QueryWriter`) given the seeds and their own entities (``n_terms``
   of them, those of the target cluster first, then by centrality): for Low J it must avoid
   them (another register and vocabulary), for High J it must use them.  A writer with
   ``declines = True`` may decline a cell its rules cannot reach with these seeds
   (``writer_declined``: an attempt at the cell, not a failure of the cluster).
5. **Pool** candidates: seeds ∪ BM25 top-k ∪ dense top-k (:class:`~.pool.Pooler`).
6. **Judge** every pooled document 0/1/2 (:class:`RelevanceJudge`, told which are the seeds):
   the graded qrels, each with the rule that judged it (``qrel_rules``).
7. **Verify**: (a) recompute the query's stratum with the corpus structure — its entities by the
   artifact's own extractor, Δ and J over the judged relevant documents, the corpus' stored
   bins — which must be the targeted cell; (b) the :class:`Verifier`'s check that the query is
   well-formed and answerable from the judged documents (run only when (a) passes).
8. **Accept or reject** with the reason (``REASONS``); only accepted queries enter the dataset.
9. Repeat until MSC ≥ ``target_msc`` and SCC ≥ ``target_scc``
   (:meth:`GenerationConfig.targets`), or the budget is spent, or no target is left (or
   ``max_candidates`` candidates were written).

The candidates of a round are independent of each other (drafted on the same coverage, at
distinct clusters) and are merged in draft order, so the output does not depend on how many
run at once (``concurrency``) or which finished first.  A round is cut so that its candidates'
worst-case requests (the parts' ``max_calls``, retries aside) fit the budget left, so without
retries the budget ends inside a round only when one candidate alone is left to try (a round of
one, as a sequential loop would); a retry can end it inside a round, and then which of that
round's candidates got the last calls depends on timing.  Every LLM answer is cached
(:class:`~.llm.BudgetedCalls`) and every random step is seeded, so a rerun after a crash
replays the finished calls from the cache and produces the same output as an uninterrupted run.

The parts, each in a module of its own: the settings and rejection reasons (:mod:`.config`),
the coverage state and targets (:mod:`.state`), the seeds (:mod:`.seeds`), a candidate and its
drafting (:mod:`.candidates`), the rounds (:mod:`.rounds`) and the result (:mod:`.result`);
this module runs the rounds (:func:`generate_queries`).
"""

from __future__ import annotations

from ..core import InputError
from .config import GenerationConfig
from .protocols import QueryWriter, RelevanceJudge, Verifier
from .result import GenerationResult
from .rounds import Rounds

__all__ = ["generate_queries"]


def generate_queries(dataset, artifact, *, writer: QueryWriter, judge: RelevanceJudge,
                     verifier: Verifier, pooler, config: GenerationConfig | None = None,
                     calls=None, log=None, concurrency: int = 1) -> GenerationResult:
    """Run the coverage-aware generation loop (module docstring) and return its result.

    ``dataset``: a BEIR dataset (``load_beir``) of the artifact's corpus; its judged queries are
    the original query set.  ``calls``: the :class:`~.llm.BudgetedCalls` the LLM parts share
    (for usage and the round reservations; the budget itself is enforced there).
    ``concurrency``: candidates of a round drafted at once (threads; their LLM requests overlap,
    their CPU steps take turns).  The rounds, and so the output, do not depend on it.  Nothing
    is written; see :func:`.output.write_dataset`.

    Each round (:class:`~.rounds.Rounds`), on the coverage at its start: stop when the
    targets are met or the candidates spent (:meth:`~.rounds.Rounds.stop_reason`); **round
    planning**: rank the targets (:meth:`~.rounds.Rounds.targets`) and plan the round's drafts,
    one per cluster, with their seeds (:meth:`~.rounds.Rounds.plan`); **drafting**: write,
    judge and verify them, side by side with ``concurrency`` (:meth:`~.rounds.Rounds.draft`);
    **merging**: the outcomes in draft order (:meth:`~.rounds.Rounds.merge`).
    """
    cfg = config or GenerationConfig()
    concurrency = int(concurrency)
    if concurrency < 1:
        raise InputError(f"concurrency must be ≥ 1, got {concurrency}", fix="e.g. 4")
    rounds = Rounds(dataset, artifact, writer, judge, verifier, pooler, cfg, calls, log)
    pool = None
    if concurrency > 1:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="generate")
    try:
        while True:
            cov = rounds.state.coverage()  # the round's start: its stop, targets and focus
            stop = rounds.stop_reason(cov)
            targets = rounds.targets(cov) if stop is None else []
            if stop is None and not targets:
                stop = "no target left"
            if stop is not None:
                rounds.progress.stop_reason = stop
                break
            drafts = rounds.plan(targets)
            if not drafts:
                continue  # every ranked target was infeasible: they are excluded now
            stop = rounds.merge(drafts, rounds.draft(drafts, pool))
            if stop is not None:
                rounds.progress.stop_reason = stop
                break
    finally:
        if pool is not None:  # after an error, queued candidates are not started
            pool.shutdown(wait=True, cancel_futures=True)
    return rounds.finish()
