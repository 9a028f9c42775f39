"""Coverage-aware selection: fill the uncovered strata with real queries and their human qrels
from held-back splits of the same corpus (``generate``'s offline default).

The rule (ours), in the coverage accounting of :mod:`.state` (the same state, targets, MSC and
SCC):

1. the **pool**: the judged queries of the pool splits (``dev``, and ``train`` where it exists,
   by default), each stratified over the corpus structure with the corpus bins, exactly as the
   original queries are; a pool that shares a query id with the evaluated split is refused
   (a query must never be evaluated twice);
2. each step ranks the empty cells of the under-covered clusters (:func:`.state.rank_targets`:
   priority w_c · (n_min − n_c) / n_min, only clusters without a query once the SCC target is
   met) and takes a pool query **in the best target cell**; when no pool query sits in any
   target cell, a pool query **in the best under-covered cluster** (any cell); among the
   candidates of a cell or cluster one is drawn with ``default_rng([seed, step])`` from the
   sorted ids, so the choice does not depend on the pool's order;
3. it stops when both targets are met, or when no pool query is left in an under-covered
   cluster; the clusters still short of a query (and of ``n_min``) that the pool cannot reach
   are listed (``unfilled``), with what the pool holds there.

A selected query keeps its id, text, qrels and split of origin; nothing about it is
synthetic.  It is written to the split ``selected`` (:mod:`.output`), never into the
evaluated split unless ``--merge-into-split`` asks.  Models fine-tuned on ``train`` are
favoured on queries taken from it: the command warns when ``train`` is in the pool.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ..core import InputError
from ..core.errors import InputWarning
from .candidates import Candidate
from .config import GenerationConfig
from .result import GenerationResult
from .state import coverage_start, rank_targets
from .output import GENERATED_SPLIT, SELECTED_SPLIT

__all__ = ["select_queries", "pool_splits"]

#: Splits never pooled: the outputs' own.
_NOT_POOLS = (GENERATED_SPLIT, SELECTED_SPLIT)


def pool_splits(folder: str, split: str, requested=None) -> list[str]:
    """The pool splits: ``requested`` (each must exist with qrels, and differ from ``split``),
    or every judged split of ``folder`` but ``split`` (``dev``, ``train`` …).  An
    :class:`InputError` names the splits that exist."""
    from ..io.beir import qrels_splits

    have = [s for s in qrels_splits(folder) if s not in _NOT_POOLS]
    if requested is None:
        out = [s for s in have if s != split]
    else:
        out = []
        for s in requested:
            if s == split:
                raise InputError(f"--pool-splits {s}: that is the evaluated split (--split)",
                                 source=folder, fix="pool from another split: "
                                 + (", ".join(x for x in have if x != split) or "none exists"))
            if s not in have:
                raise InputError(f"--pool-splits {s}: the dataset has no split {s!r} with "
                                 "qrels", source=folder,
                                 fix=f"choose among {', '.join(have) or 'none'}")
            out.append(s)
    for s in out:  # read now, before any output: a pool without judgments names the others
        _check_judged(folder, s, [x for x in have if x not in (s, split)])
    return out


def _check_judged(folder: str, split: str, others: list) -> None:
    """An :class:`InputError` naming ``folder/qrels/<split>.tsv[.gz]`` and the ``others``
    when that file holds no usable judgment."""
    from ..io.beir import find_file
    from ..io.files import read_qrels

    path = find_file(os.path.join(folder, "qrels"), f"{split}.tsv")  # listed: it exists
    try:
        with warnings.catch_warnings():  # (read again later, where its warnings are shown)
            warnings.simplefilter("ignore", InputWarning)
            read_qrels(path)
    except InputError as exc:
        raise InputError(f"pool split {split!r}: {exc.message}", source=exc.source,
                         line=exc.line, fix=f"{exc.fix}; or pool from another split with "
                         f"--pool-splits ({', '.join(others) or 'none exists'})") from None


def _check_disjoint(dataset, pools: dict) -> None:
    names = sorted(pools)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = sorted(set(pools[a].qrels) & set(pools[b].qrels))
            if shared:
                raise InputError(f"the pool splits {a!r} and {b!r} share {len(shared)} query "
                                 f"ids (e.g. {shared[:5]}): one query would be two candidates",
                                 fix=f"pool from one of them (--pool-splits {a})")
    for name, pool in pools.items():
        shared = sorted(set(pool.qrels) & set(dataset.qrels))
        if shared:
            raise InputError(f"the pool split {name!r} shares {len(shared)} query ids with the "
                             f"evaluated split {dataset.split!r} (e.g. {shared[:5]}): a query "
                             "must never be evaluated twice",
                             fix=f"pool from a split disjoint from {dataset.split!r}, or remove "
                                 "those queries from one of the qrels files")


def select_queries(dataset, pools: dict, artifact, *, config: GenerationConfig | None = None
                   ) -> GenerationResult:
    """Select pool queries into the uncovered strata (module docstring).

    ``dataset``: the evaluated split (``load_beir``); ``pools``: ``{split: BeirDataset}`` of the
    same corpus.  The result's ``accepted`` records carry ``query_id``, ``query``, ``qrels``,
    ``from_split``, ``target`` (the cell aimed at), ``landed`` (the query's own cell) and
    ``match`` (``cell`` or ``cluster``); ``unfilled`` the strata the pool cannot fill, and
    ``pool`` the pool's size and its own ceiling (the coverage with every pool query added).
    """
    from ..stratification import strata_for_dataset

    cfg = config or GenerationConfig()
    _check_disjoint(dataset, pools)
    start = coverage_start(dataset, artifact, cfg)
    state, mass, labels, grid = start.state, start.mass, start.labels, start.bins.grid
    cands = []   # (qid, split, (c, d, j), text, qrels), sorted by split then id
    excluded = {}
    for name in sorted(pools):
        pool = pools[name]
        st = strata_for_dataset(artifact, pool, bins=start.bins, level=cfg.level,
                                check_corpus=False)
        excluded[name] = len(st.excluded)
        for i, q in enumerate(st.queries):
            cell = (int(st.primary[i]), int(st.dispersion_bin[i]), int(st.alignment_bin[i]))
            cands.append((q, name, cell, pool.queries[q], dict(pool.qrels[q])))
    by_cell: dict = {}
    by_cluster: dict = {}
    for k, (_, _, cell, _, _) in enumerate(cands):
        by_cell.setdefault(cell, []).append(k)
        by_cluster.setdefault(cell[0], []).append(k)
    used: set = set()
    targets_info = {**start.targets, "pool_ceiling": _ceiling(state, cands)}

    step, accepted = 0, []
    while True:
        cov = state.coverage()
        if start.met(cov):
            stop = "coverage targets met"
            break
        if cfg.max_candidates is not None and len(accepted) >= cfg.max_candidates:
            stop = f"{cfg.max_candidates} queries selected (max_candidates)"
            break
        empty_only = cov.cluster.scc >= start.target_scc
        targets = rank_targets(state.cluster_counts(), state.cell_counts(), mass, cfg.n_min,
                               labels=labels, grid=grid, empty_only=empty_only)
        pick, target, match = None, None, None
        for t in targets:
            free = [k for k in by_cell.get(_codes(grid, t), ()) if k not in used]
            if free:
                pick, target, match = free, t, "cell"
                break
        if pick is None:
            for t in targets:   # best cluster first (targets are sorted by priority)
                free = [k for k in by_cluster.get(t.cluster, ()) if k not in used]
                if free:
                    pick, target, match = free, t, "cluster"
                    break
        if pick is None:
            stop = ("no pool query is left in an under-covered cluster" if targets else
                    "no target left")
            break
        pick = sorted(pick, key=lambda k: (cands[k][0], cands[k][1]))  # by id: order-free
        rng = np.random.default_rng([cfg.seed, step])
        k = pick[int(rng.integers(len(pick)))]
        used.add(k)
        step += 1
        q, name, cell, text, qrels = cands[k]
        state.add(*cell)
        accepted.append(Candidate(query_id=q, query=text, qrels=qrels, from_split=name,
                                  target=list(target.cell), target_label=target.label,
                                  landed=list(grid.label_of(*cell)), match=match,
                                  status="accepted", step=step, seed=cfg.seed))
    pool = {"splits": sorted(pools), "queries": len(cands), "excluded_by_strata": excluded,
            "selected": len(accepted), "ceiling": targets_info["pool_ceiling"]}
    return start.result(accepted, accepted, stop_reason=stop, targets=targets_info,
                        unfilled=_unfilled(state, mass, labels, cands, used, cfg.n_min),
                        pool=pool)


def _codes(grid, t) -> tuple:
    """A target's (cluster, Δ bin, J bin) codes."""
    return (t.cluster, grid.index("dispersion", t.dispersion),
            grid.index("alignment", t.alignment))


def _ceiling(state, cands) -> dict:
    """MSC and SCC if every pool query were added to the original ones."""
    cov = state.with_added(cell for _, _, cell, _, _ in cands).coverage()
    return {"msc": cov.cluster.msc, "scc": cov.cluster.scc, "n_queries": cov.n_queries}


def _unfilled(state, mass, labels, cands, used, n_min: int) -> list:
    """The weighted clusters still short of ``n_min`` queries, with the pool queries left
    there (0: the pool cannot fill it), heaviest first."""
    counts = state.cluster_counts()
    left = np.zeros(mass.size, dtype=np.int64)
    for k, (_, _, cell, _, _) in enumerate(cands):
        if k not in used:
            left[cell[0]] += 1
    short = [c for c in range(mass.size) if mass[c] > 0 and counts[c] < n_min]
    short.sort(key=lambda c: (-mass[c], c))
    return [{"cluster": int(c), "label": labels.get(c), "mass": float(mass[c]),
             "queries": int(counts[c]), "pool_queries_left": int(left[c])} for c in short]
