"""Seed documents of a target cell (step 3 of :mod:`.loop`'s docstring): :class:`SeedSampler`
draws them, :func:`seed_terms` picks the entities a writer is given with them."""

from __future__ import annotations

import numpy as np

from ..core import stratify
from ..core.stats.strata import document_dispersion
from .config import GenerationConfig
from .protocols import Target

__all__ = ["SeedSampler", "seed_terms"]


class SeedSampler:
    """Seed documents per target (the sampling rule: :mod:`.loop`'s docstring)."""

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



def seed_terms(seed_ids, cluster: int, doc_entities, entity_info, n: int) -> list[str]:
    """The seeds' clustered entities: the target cluster's first, then by centrality, name."""
    names = set().union(*(doc_entities.get(d, set()) for d in seed_ids))
    ranked = sorted((x for x in names if x in entity_info and entity_info[x][0] is not None
                     and int(entity_info[x][0]) >= 0),
                    key=lambda x: (entity_info[x][0] != cluster, entity_info[x][1], x))
    return ranked[:n]
