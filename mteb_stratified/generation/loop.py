"""Coverage-aware query generation with verification: fill the strata a benchmark leaves empty.

The loop (our design; the paper describes the idea, not the rules):

1. **Coverage** of the current query set: per cluster n_c (queries whose primary cluster is c)
   and per cell n_{c,δ,j}; MSC and SCC (``n_min``) as in :mod:`mteb_stratified.core.coverage`.
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
"""

from __future__ import annotations

import copy
import math
import threading
from dataclasses import dataclass, field

import numpy as np

from ..core import InputError, cell_coverage, cluster_coverage, stratify
from ..core.coverage import DEFAULT_N_MIN, check_n_min
from ..core.cells import GRID, CellGrid
from ..io.corpus_text import doc_text
from ..core.strata import document_dispersion
from .llm import BudgetExhausted
from .protocols import QueryWriter, RelevanceJudge, Target, Verifier, judgements

__all__ = ["GenerationConfig", "GenerationResult", "generate_queries", "REASONS",
           "rank_targets", "normalize_query"]

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
#: The J levels' tie order in :func:`rank_targets` when no order is given (the loop draws one
#: per cluster, :func:`_j_order`).
_J_RANK_ORDER = {"high": 0, "mid": 1, "low": 2, "na": 3}
#: The default MSC target, as a share of the corpus' ceiling.
DEFAULT_MSC_SHARE = 0.9


@dataclass(frozen=True)
class GenerationConfig:
    """Settings of :func:`generate_queries` (stored with every generated query)."""

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


@dataclass
class GenerationResult:
    """Accepted queries (with qrels and provenance), every candidate, coverage before/after."""

    accepted: list = field(default_factory=list)
    candidates: list = field(default_factory=list)
    coverage_before: dict = field(default_factory=dict)
    coverage_after: dict = field(default_factory=dict)
    stop_reason: str = ""
    usage: dict = field(default_factory=dict)
    infeasible: list = field(default_factory=list)
    targets: dict = field(default_factory=dict)
    unfilled: list = field(default_factory=list)   # selection: strata the pool cannot fill
    pool: dict = field(default_factory=dict)       # selection: the pool and its ceiling
    original_clusters: dict = field(default_factory=dict)   # {qid: cluster} of the originals
    baseline: dict = field(default_factory=dict)   # the trivial baseline (.gate)
    gate: dict = field(default_factory=dict)       # the validity gate (.gate), set by the caller

    def counts(self) -> dict:
        rej: dict = {}
        for c in self.candidates:
            if c["status"] == "rejected":
                rej[c["reason"]] = rej.get(c["reason"], 0) + 1
        in_target = sum(1 for c in self.accepted if c["landed"] == c["target"])
        return {"generated": len(self.candidates), "accepted": len(self.accepted),
                "rejected": sum(rej.values()), "rejected_by_reason": dict(sorted(rej.items())),
                "accepted_in_target_cell": in_target}


# ---------------------------------------------------------------------------------------------
# coverage state and targets
# ---------------------------------------------------------------------------------------------
class _State:
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

    def with_added(self, cells) -> "_State":
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

    def coverage(self) -> dict:
        """``{"n_queries", "cluster", "cell"}``: the coverage summary of each level
        (:meth:`~mteb_stratified.core.coverage.Coverage.summary`)."""
        p = np.asarray(self.primary, dtype=np.int64)
        cl = cluster_coverage(p, self.mass, n_min=self.n_min, labels=self.labels)
        ce = cell_coverage(p, np.asarray(self.dbin), np.asarray(self.jbin), self.mass,
                           n_min=self.n_min, labels=self.labels, grid=self.grid)
        # the schema's keys, with its meanings (core/coverage.py: SUMMARY_KEYS)
        return {"n_queries": len(self.primary), "cluster": cl.summary(), "cell": ce.summary()}


def rank_targets(cluster_counts, cell_counts, mass, n_min: int, *, labels=None,
                 exclude=(), failures=None, grid: CellGrid = GRID,
                 empty_only: bool = False, j_order=None) -> list[Target]:
    """Empty cells of under-covered clusters, highest priority first (rule: module docstring).

    ``cluster_counts[c]``: queries of cluster c; ``cell_counts``: ``{(c, δ, j): n}`` with bin
    codes; ``mass``: corpus mass w_c; ``exclude``: cell labels ``(c, Δ level, J level)`` to skip;
    ``failures``: ``{c: rejected candidates}`` — each divides the cluster's priority by
    (1 + failures), so one hard cluster does not take the whole budget; ``empty_only``: only
    clusters without a query (the loop's focus once SCC is met and MSC is not); ``j_order``:
    ``{J rank: position}`` for the cells of a cluster, or ``c -> {J rank: position}`` (default:
    High, Mid, Low, N/A for every cluster).
    """
    if j_order is None:
        j_order = _J_RANK_ORDER
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


class _Seeds:
    """Seed documents per target (sampling rule: module docstring)."""

    def __init__(self, weights, doc_ids, cfg: GenerationConfig):
        self.m = weights.to_csr().tocsc()
        self.ids = list(doc_ids)
        self.disp = np.nan_to_num(document_dispersion(weights), nan=1.0)
        self.own = weights.primary()  # each document's own stratum
        self.cfg = cfg
        co = (self.m.T @ self.m).tocsr()
        co.setdiag(0)
        co.eliminate_zeros()
        self.co = co

    def central(self, c: int, k: int) -> list[int]:
        """The ``k`` most central documents of c: those whose own stratum is c first (they give
        c its weight, so every weighted cluster has one), then by m_d(c)."""
        col = self.m.getcol(c)
        rows, vals = col.indices, col.data
        order = np.lexsort((rows, -vals, self.own[rows] != c))[:k]
        chosen = rows[order]
        # in each group (own stratum c or not), the most concentrated first (lowest own Δ)
        return [int(x) for x in chosen[np.lexsort((chosen, self.disp[chosen],
                                                   self.own[chosen] != c))]]

    def own_pool(self, c: int, central: list[int], n_own: int, concentrated: bool) -> list[int]:
        """Where the cluster's own seeds are drawn: its central documents whose own stratum is
        c when there are ``n_own`` of them, else all its central documents; with
        ``concentrated``, the more concentrated half of those."""
        mine = [d for d in central if self.own[d] == c]
        pool = mine if len(mine) >= n_own else central
        return pool[:max(n_own, (len(pool) + 1) // 2)] if concentrated else pool

    def related(self, c: int) -> list[int]:
        row = self.co.getrow(c)
        order = np.lexsort((row.indices, -row.data))[:self.cfg.related_clusters]
        return [int(x) for x in row.indices[order]]

    def _draw(self, target: Target, rng) -> list[int]:
        cfg = self.cfg
        c = target.cluster
        rank = target.rank("dispersion")
        # N/A: one relevant document (Δ needs two); Low: several documents of the cluster
        # itself (similar profiles); Mid: mostly its own plus a related cluster's; High: one
        # of its own, the rest from related clusters
        single = rank == "na"
        n = 1 if single else max(cfg.n_seeds, 2)
        n_own = n if rank in ("na", "low") else (max(n - 1, 1) if rank == "mid" else 1)
        central = self.central(c, cfg.central_docs)
        pool = self.own_pool(c, central, n_own, rank in ("na", "low"))
        chosen = [int(x) for x in rng.choice(pool, size=min(n_own, len(pool)), replace=False)]
        related = self.related(c)
        if n - len(chosen) > 0 and related:
            picks = rng.choice(related, size=min(n - len(chosen), len(related)), replace=False)
            for r in picks:
                options = [doc for doc in self.central(int(r), cfg.central_docs)
                           if doc not in chosen and self.m[doc, c] == 0]
                if options:
                    chosen.append(int(rng.choice(options)))
        return chosen

    def sample(self, target: Target, attempt: int, weights, bins,
               used=()) -> list[str] | None:
        """Seeds whose own stratum (as if all were relevant) has the target's cluster and Δ bin.

        Up to ``seed_draws`` seeded draws, skipping seed sets in ``used`` (earlier attempts at
        the cell); None when none qualifies (no LLM call is spent).
        """
        cfg = self.cfg
        grid = bins.grid
        rng = np.random.default_rng([cfg.seed, target.cluster,
                                     grid.index("dispersion", target.dispersion),
                                     grid.index("alignment", target.alignment), attempt])
        for _ in range(cfg.seed_draws):
            chosen = self._draw(target, rng)
            if not chosen:
                return None
            ids = [self.ids[i] for i in chosen]
            if tuple(sorted(ids)) in used:
                continue
            st = stratify({"s": dict.fromkeys(ids, cfg.level)}, weights, bins=bins,
                          level=cfg.level)
            if st.n_queries and int(st.primary[0]) == target.cluster and \
                    grid.level("dispersion", st.dispersion_bin[0]) == target.dispersion:
                return ids
        return None


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------
def trivial_baseline(state_before, targets: list) -> dict:
    """MSC and SCC with one document per targeted cluster added, as many as ``targets``: the
    validity gate's trivial baseline (:mod:`.gate`).  At cluster level a document whose own
    stratum is c counts as one query in c whichever document it is, so the baseline is exact,
    with no draw."""
    cov = state_before.with_added((int(c), 0, 0) for c in targets).coverage()
    return {"documents": len(targets), "msc": cov["cluster"]["msc"],
            "scc": cov["cluster"]["scc"],
            "rule": "one document per targeted cluster (its own stratum), as many as were "
                    "added: the targeting alone"}


@dataclass
class CoverageStart:
    """What a coverage loop starts from (:func:`coverage_start`)."""

    weights: object
    bins: object
    mass: np.ndarray
    labels: dict
    state: _State
    result: GenerationResult
    target_msc: float
    target_scc: float
    initial: _State = None   # the state before anything is added (the baseline's start)

    def finish(self) -> GenerationResult:
        """The coverage after, and the trivial baseline of as many targeted clusters."""
        self.result.coverage_after = self.state.coverage()
        self.result.baseline = trivial_baseline(self.initial, [r["target"][0] for r in
                                                               self.result.accepted])
        return self.result

    def met(self, cov: dict) -> bool:
        """Both targets reached by the coverage ``cov``."""
        return (cov["cluster"]["msc"] >= self.target_msc
                and cov["cluster"]["scc"] >= self.target_scc)


def coverage_start(dataset, artifact, cfg: GenerationConfig) -> CoverageStart:
    """The stratum weights, bins, the original queries' coverage (the state a loop adds to),
    the targets and an empty result: shared by generation and selection."""
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
    state = _State(strata.primary, strata.dispersion_bin, strata.alignment_bin, mass, labels,
                   cfg.n_min, grid=bins.grid)
    result = GenerationResult(coverage_before=state.coverage(),
                              original_clusters=dict(zip(strata.queries,
                                                         strata.primary.tolist())))
    result.targets = {"msc": target_msc, "scc": target_scc,
                      "ceiling_msc": ceiling[0], "ceiling_scc_documents": ceiling[1],
                      "rule": "MSC target: given, or "
                              f"{DEFAULT_MSC_SHARE} x the ceiling (every document a query)"}
    return CoverageStart(weights, bins, mass, labels, state, result, target_msc, target_scc,
                         copy.deepcopy(state))


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

    Each round (:class:`_Rounds`), on the coverage at its start: stop when the targets are
    met or the candidates spent (:meth:`~_Rounds.stop_reason`); **round planning**: rank the
    targets (:meth:`~_Rounds.targets`) and plan the round's drafts, one per cluster, with their
    seeds (:meth:`~_Rounds.plan`); **drafting**: write, judge and verify them, side by side
    with ``concurrency`` (:meth:`~_Rounds.draft`); **merging**: the outcomes in draft order
    (:meth:`~_Rounds.merge`).
    """
    cfg = config or GenerationConfig()
    concurrency = int(concurrency)
    if concurrency < 1:
        raise InputError(f"concurrency must be ≥ 1, got {concurrency}", fix="e.g. 4")
    rounds = _Rounds(dataset, artifact, writer, judge, verifier, pooler, cfg, calls, log)
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
                rounds.result.stop_reason = stop
                break
            drafts = rounds.plan(targets)
            if not drafts:
                continue  # every ranked target was infeasible: they are excluded now
            stop = rounds.merge(drafts, rounds.draft(drafts, pool))
            if stop is not None:
                rounds.result.stop_reason = stop
                break
    finally:
        if pool is not None:  # after an error, queued candidates are not started
            pool.shutdown(wait=True, cancel_futures=True)
    return rounds.finish()


@dataclass
class _Progress:
    """What the rounds change as they go (the coverage counts and the records aside: ``state``
    and ``result`` of the :class:`CoverageStart`); all else :class:`_Rounds` holds is fixed at
    the start.

    * ``existing``: the queries' texts (:func:`normalize_query`), the original and the accepted
      ones: no query twice;
    * ``attempts``: ``{cell: attempts so far}``; ``exhausted``: the cells not to target again
      (``max_attempts`` reached, or no seed set reaches them); ``infeasible``: the cells no
      seed draw reaches (reported);
    * ``failures``: ``{cluster: failed candidates}``, the divisor of the cluster's priority;
    * ``used_seeds``: ``{cell: seed sets tried}`` (a second attempt draws another set);
    * ``no_json_run``, ``any_json``: answers without a JSON query in a row, and whether any
      had one (:meth:`_Rounds._count_json`).
    """

    existing: set
    attempts: dict = field(default_factory=dict)
    exhausted: set = field(default_factory=set)
    infeasible: list = field(default_factory=list)
    failures: dict = field(default_factory=dict)
    used_seeds: dict = field(default_factory=dict)
    no_json_run: int = 0
    any_json: bool = False


class _Rounds:
    """The generation loop across rounds: what it reads, fixed at the start (the coverage
    start, the seed sampler, the candidate context, the round reservation, the J levels the
    writer aims at), and what the rounds change: the coverage (``state``), the records
    (``result``) and the bookkeeping of :class:`_Progress` (``progress``)."""

    def __init__(self, dataset, artifact, writer, judge, verifier, pooler,
                 cfg: GenerationConfig, calls, log) -> None:
        self.cfg, self.calls, self.log = cfg, calls, log
        self.start = start = coverage_start(dataset, artifact, cfg)
        self.state, self.result = start.state, start.result
        self.seeds = _Seeds(start.weights, start.weights.doc_ids, cfg)
        self.doc_entities = artifact.canonical_doc_entities()
        self.entity_info = {e["name"]: (e.get("cluster"), -float(e.get("centrality") or 0.0))
                            for e in artifact.entities}
        self.ctx = _Context(dataset, artifact, start.weights, start.bins, self.doc_entities,
                            writer, judge, verifier, pooler, cfg)
        self.worst = _worst_calls(writer, judge, verifier, artifact, pooler,
                                  max(cfg.n_seeds, 2))
        # the J levels the writer can aim at (a rule-based writer may say; an LLM tries all)
        self.writes = tuple(getattr(writer, "alignment_ranks", None) or _J_RANK_ORDER)
        self.result.targets["writer_alignment_ranks"] = list(self.writes)
        self.j_order = _j_order(cfg.seed, self.writes)
        self.progress = _Progress(existing={normalize_query(t) for t in dataset.queries.values()})

    def stop_reason(self, cov: dict) -> str | None:
        """Why the loop stops before this round, on the coverage ``cov`` at its start (the
        targets met, the candidates spent), or None."""
        cfg = self.cfg
        if self.start.met(cov):
            return "coverage targets met"
        if cfg.max_candidates is not None and len(self.result.candidates) >= cfg.max_candidates:
            return f"{cfg.max_candidates} candidates written (max_candidates)"
        return None

    def targets(self, cov: dict) -> list:
        """Round planning, first step: the targets in priority order (:func:`rank_targets`),
        those the writer can aim at; with the SCC target met on the coverage ``cov`` at the
        round's start and the MSC one not, only clusters without a query."""
        cfg, state, start, progress = self.cfg, self.state, self.start, self.progress
        empty_only = cov["cluster"]["scc"] >= start.target_scc
        targets = rank_targets(state.cluster_counts(), state.cell_counts(), start.mass,
                               cfg.n_min, labels=start.labels, exclude=progress.exhausted,
                               failures=progress.failures, grid=start.bins.grid,
                               empty_only=empty_only, j_order=self.j_order)
        return [t for t in targets if t.rank("alignment") in self.writes]

    def plan(self, targets) -> list:
        """Round planning, second step: the round's drafts ``[(target, record)]``, the best
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
            record = self._seeded(target)
            if record is not None:
                clusters.add(target.cluster)
                drafts.append((target, record))
        return drafts

    def _room(self) -> int:
        """Candidates this round may hold: ``round_size``, no more than the candidates left,
        and no more than the budget left holds worst cases (at least one)."""
        cfg = self.cfg
        room = cfg.round_size
        if cfg.max_candidates is not None:
            room = min(room, cfg.max_candidates - len(self.result.candidates))
        if self.calls is not None and self.worst > 0:  # reserve: the round fits the budget
            room = max(1, min(room, self.calls.remaining // self.worst))
        return room

    def _seeded(self, target) -> dict | None:
        """An attempt at ``target`` counted, and its draft record with the seed documents
        (:meth:`_Seeds.sample`) and terms; None when no seed set reaches the cell (then the
        cell is exhausted and listed as infeasible)."""
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
        return {"target": list(target.cell), "target_label": target.label,
                "priority": target.priority, "attempt": attempt,
                "seed_docs": seed_ids, "seed": cfg.seed,
                "terms": _terms(seed_ids, target.cluster, self.doc_entities,
                                self.entity_info, cfg.n_terms)}

    def draft(self, drafts, pool) -> list:
        """Drafting: each draft written, judged and verified (:meth:`_Context.run`) against
        the queries accepted before the round: in turn, or side by side on ``pool``."""
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
        for (target, record), outcome in zip(drafts, outcomes):
            if isinstance(outcome, BudgetExhausted):
                record.update(status="rejected", reason="budget_spent", detail=str(outcome))
                self.result.candidates.append(record)
                stop = stop or f"budget spent ({outcome})"
                continue
            if outcome is not None and normalize_query(record["query"]) in progress.existing:
                record.update(status="rejected", reason="duplicate_query",
                              detail="the same text as a query accepted in this round")
                outcome = None
            self.result.candidates.append(record)
            if outcome is None and record.get("reason") != "writer_declined":
                progress.failures[target.cluster] = progress.failures.get(target.cluster, 0) + 1
            if self.log is not None:
                self.log(record)
            self._count_json(record)
            if outcome is not None:
                self._accept(record, outcome)
        return stop

    def _accept(self, record: dict, cell: tuple) -> None:
        """An accepted candidate: its landed cell codes ``cell`` join the coverage, its text
        the existing queries, and it gets the next query id."""
        self.state.add(*cell)
        self.progress.existing.add(normalize_query(record["query"]))
        record["query_id"] = f"gen-{self.cfg.seed}-{len(self.result.accepted) + 1:04d}"
        self.result.accepted.append(record)

    def _count_json(self, record: dict) -> None:
        """Answers without a JSON query in a row, before any with one: past
        ``no_json_abort`` the model cannot do this task (an :class:`InputError`)."""
        progress = self.progress
        if record.get("reason") != "no_query":
            progress.no_json_run, progress.any_json = 0, True
            return
        progress.no_json_run += 1
        if not progress.any_json and progress.no_json_run >= self.cfg.no_json_abort:
            raise InputError(
                f"the model returned no JSON query in {progress.no_json_run} answers in a row "
                f"(last: {record.get('raw', '')[:120]!r})",
                fix="use an instruction-following model that can answer in JSON (e.g. a vLLM "
                    "or OpenAI endpoint: --base-url/--model); the answers so far are cached")

    def finish(self) -> GenerationResult:
        """The result, its coverage finished, the infeasible targets and the usage added."""
        self.start.finish()
        self.result.infeasible = self.progress.infeasible
        if self.calls is not None:
            self.result.usage = self.calls.usage()
        return self.result


def _j_order(seed: int, writes):
    """``c -> {J rank: position}``: the order in which the J levels of cluster c's cells are
    tried — the levels the writer aims at (of Low, Mid, High) in an order drawn with
    ``default_rng([seed, c])``, then the others, N/A last.  A draw per cluster spreads the
    generated queries over the J levels independently of the clusters' weights (an order by
    the counts so far gave the heavy clusters of a round the same level)."""
    aimed = [r for r in ("high", "mid", "low") if r in writes]
    rest = [r for r in _J_RANK_ORDER if r not in aimed]

    def order(c: int) -> dict:
        drawn = [aimed[i] for i in np.random.default_rng([int(seed), int(c)]).permutation(
            len(aimed))]
        return {r: i for i, r in enumerate(drawn + rest)}
    return order


def normalize_query(text: str) -> str:
    """A query's text for the duplicate check: lower case, single spaces."""
    return " ".join(text.lower().split())


def _worst_calls(writer, judge, verifier, artifact, pooler, n_seeds: int) -> int:
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


def _terms(seed_ids, cluster: int, doc_entities, entity_info, n: int) -> list[str]:
    """The seeds' clustered entities: the target cluster's first, then by centrality, name."""
    names = set().union(*(doc_entities.get(d, set()) for d in seed_ids))
    ranked = sorted((x for x in names if x in entity_info and entity_info[x][0] is not None
                     and int(entity_info[x][0]) >= 0),
                    key=lambda x: (entity_info[x][0] != cluster, entity_info[x][1], x))
    return ranked[:n]


class _Context:
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

    def run(self, target, record, existing):
        """One candidate: fills ``record``; the landed cell codes when accepted, None when
        rejected, the :class:`BudgetExhausted` when the budget ran out inside it."""
        try:
            return self._candidate(target, record, existing)
        except BudgetExhausted as exc:
            return exc

    def _text(self, ids):
        corpus = self.dataset.corpus
        return [(d, doc_text(corpus[d])) for d in ids]

    def _candidate(self, target, record, existing) -> tuple | None:
        cfg, seed_ids = self.cfg, record["seed_docs"]
        with self.cpu if not _calls_llm(self.writer) else _NOLOCK:
            query, raw = self.writer.write(target, self._text(seed_ids), record["terms"])
        record["raw"] = (raw or "")[:500]
        if not query:
            # an LLM's answer without a query is a failure; a writer whose rules cannot reach
            # a cell (``declines = True``: the offline writer) declines it, and it is not tried
            # again
            declined = bool(getattr(self.writer, "declines", False))
            record.update(status="rejected", reason="writer_declined" if declined else "no_query")
            return None
        record["query"] = query
        if normalize_query(query) in existing:
            record.update(status="rejected", reason="duplicate_query")
            return None
        with self.cpu:
            pooled = self.pooler.pool(query, seed_ids)
        record["pool"] = pooled
        with self.cpu if not _calls_llm(self.judge) else _NOLOCK:
            judged = self.judge.judge(query, self._text(pooled["pool"]), seeds=tuple(seed_ids))
        grades, rules = judgements(judged, self.judge)
        record["judgements"], record["judged_by"] = grades, rules
        qrels = {d: g for d, g in grades.items() if g is not None and g >= cfg.level}
        if not qrels:
            record.update(status="rejected", reason="no_relevant_document",
                          judge_failures=sum(g is None for g in grades.values()))
            return None
        record["qrels"] = qrels
        record["qrel_rules"] = {d: rules[d] for d in sorted(qrels)}
        with self.cpu:
            ents = self.artifact.extract_entities(query)
            record["query_entities"] = sorted(ents)
            st = stratify({"q": qrels}, self.weights, query_entities={"q": ents},
                          doc_entities=self.doc_entities, bins=self.bins, level=cfg.level)
        if st.n_queries == 0:
            record.update(status="rejected", reason="no_relevant_document",
                          detail=st.excluded[0].reason if st.excluded else "")
            return None
        c, d, j = int(st.primary[0]), int(st.dispersion_bin[0]), int(st.alignment_bin[0])
        record["landed"] = list(st.grid.label_of(c, d, j))
        record["dispersion"], record["alignment"] = float(st.dispersion[0]), float(st.alignment[0])
        if tuple(record["landed"]) != target.cell:
            record.update(status="rejected", reason="wrong_cell")
            return None
        rel_docs = sorted(qrels, key=lambda x: (-qrels[x], x))
        context = {"seed_docs": list(seed_ids), "pool": pooled, "qrels": qrels,
                   "query_entities": record["query_entities"]}
        with self.cpu if not _calls_llm(self.verifier) else _NOLOCK:
            verdict = self.verifier.verify(query, self._text(rel_docs), context=context)
        record["verifier"] = verdict
        if verdict.get("well_formed") is None or verdict.get("answerable") is None:
            record.update(status="rejected", reason="verifier_no_answer")
            return None
        if not verdict["well_formed"]:
            record.update(status="rejected", reason="not_well_formed")
            return None
        if not verdict["answerable"]:
            record.update(status="rejected", reason="not_answerable")
            return None
        record.update(status="accepted", reason=None)
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
