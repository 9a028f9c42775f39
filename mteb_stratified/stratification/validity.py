"""Do the strata carry signal?  The figures that say so, each next to its chance or ceiling.

* :func:`assignment_reliability` — the share of queries whose stratum survives an **entity
  bootstrap**: every relevant document's clustered entities are resampled with replacement
  (as many as it has), m_d(c) recomputed with the same idf weights, and the query restratified
  with the same rule and bins; averaged over replicates.  Reported for the cluster and for the
  cluster × Δ bin (J is kept: the query's own entities are not resampled);
* :func:`coverage_baselines` — MSC (share of clusters with ≥ 1 query) and SCC (share of
  stratum weight in clusters with ≥ n_min queries) of the query set, next to their **ceiling**
  (every corpus document used as a query with rel = {d}) and a **random-document baseline**
  (as many random documents as there are queries, each a query with rel = {d}; mean of
  ``n_random`` draws);
* :func:`partial_correlations` — Spearman correlations of Δ, J and a lexical overlap with a
  per-query measure, raw and partial given |rel| (ranks residualised on the ranks of |rel|):
  r_xy·z = (r_xy − r_xz r_yz) / √((1 − r_xz²)(1 − r_yz²));
* :func:`definition_candidates` — Δ and J by the definitions we compared (ours now, and the
  earlier ones they replaced), for the measurement that chose them;
* :func:`lexical_overlap` — the plain lexical yardstick for J: the mean token Jaccard between
  the query text and each relevant document's text (:func:`..structure.specificity.word_tokens`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse, stats

from ..core import ClusterWeights, InputError, QueryStrata, stratify
from ..core.stats.coverage import cluster_coverage
from ..core.rng import as_generator

__all__ = ["assignment_reliability", "coverage_baselines", "coverage_ceiling",
           "partial_correlations",
           "lexical_overlap", "definition_candidates"]


def _doc_entity_table(artifact, weights: ClusterWeights):
    """Per document row: its clustered entities' cluster ids and idf weights (flat + offsets)."""
    cluster_of = {r["name"]: int(r["cluster"]) for r in artifact.entities if r["cluster"] >= 0}
    df = {r["name"]: int(r["doc_freq"]) for r in artifact.entities}
    from ..structure.specificity import idf

    idf_on = artifact.metadata.get("parameters", {}).get("idf_weights", False)
    n = weights.n_docs
    lens, cl, w = [], [], []
    for d in weights.doc_ids:
        ents = [e for e in sorted(set(artifact.doc_entities.get(d, ()))) if e in cluster_of]
        lens.append(len(ents))
        cl.extend(cluster_of[e] for e in ents)
        w.extend((idf(df[e], n) if idf_on else 1.0) for e in ents)
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return indptr, np.asarray(cl, dtype=np.int64), np.asarray(w, dtype=np.float64)


def assignment_reliability(artifact, strata: QueryStrata, qrels: dict, weights: ClusterWeights,
                           *, n_resamples: int = 50, seed: int = 0) -> dict:
    """Share of queries whose stratum survives an entity bootstrap (module docstring)."""
    if n_resamples < 1:
        raise InputError("n_resamples must be ≥ 1", fix="e.g. 50")
    rng = as_generator(None, seed)
    indptr, cl, w = _doc_entity_table(artifact, weights)
    lens = np.diff(indptr)
    qrels = {q: qrels[q] for q in strata.queries}
    base_cluster = strata.primary
    base_delta = strata.dispersion_bin
    same_c, same_cd = [], []
    rows = np.repeat(np.arange(len(lens)), lens)  # one slot per entity of each document
    for _ in range(int(n_resamples)):
        # resample each document's entities: position start + ⌊U · len⌋ for each slot
        pick = indptr[rows] + np.floor(rng.random(rows.size) * lens[rows]).astype(np.int64)
        m = sparse.csr_matrix((w[pick], (rows, cl[pick])),
                              shape=(len(lens), weights.n_clusters))
        m.sum_duplicates()
        tot = np.asarray(m.sum(axis=1)).ravel()
        scale = np.where(tot > 0, 1.0 / np.where(tot > 0, tot, 1.0), 0.0)
        m = sparse.diags(scale) @ m
        # documents whose idf weights are all 0 keep their stored row
        boot = ClusterWeights.from_csr(weights.doc_ids, m)
        s = stratify(qrels, boot, bins=strata.bins, level=strata.level, unknown_docs="skip")
        idx = {q: i for i, q in enumerate(s.queries)}
        rows_q = np.array([idx.get(q, -1) for q in strata.queries])
        ok = rows_q >= 0
        c = np.full(len(rows_q), -2)
        c[ok] = s.primary[rows_q[ok]]
        db = np.full(len(rows_q), -2)
        db[ok] = s.dispersion_bin[rows_q[ok]]
        same_c.append(np.mean(c == base_cluster))
        same_cd.append(np.mean((c == base_cluster) & (db == base_delta)))
    return {"cluster": float(np.mean(same_c)), "cluster_delta": float(np.mean(same_cd)),
            "n_resamples": int(n_resamples), "n_queries": strata.n_queries,
            "rule": "share of queries whose stratum is unchanged when every relevant document's "
                    "clustered entities are resampled with replacement (mean over replicates)"}


def _msc_scc(primary, mass, n_min: int) -> tuple[float, float]:
    cov = cluster_coverage(primary, mass, n_min=n_min)
    return float(cov.msc), float(cov.scc)


def coverage_ceiling(weights: ClusterWeights, mass, *, n_min: int = 5) -> tuple[float, float]:
    """``(MSC, SCC)`` of the ceiling: every corpus document a query with rel = {d}.

    A cluster is no document's own stratum exactly when its stratum weight is 0, and MSC counts
    only the clusters that carry weight (:mod:`mteb_stratified.core.stats.coverage`), so the MSC
    ceiling is 1 whenever the weights are the documents' own strata; SCC's ceiling is below 1
    when some weighted cluster is the own stratum of fewer than ``n_min`` documents.  A query
    with several relevant documents can still land in a weightless cluster (their summed
    masses may peak there): it counts in neither MSC nor any weighted estimate.
    """
    own = weights.primary()
    return _msc_scc(own[own >= 0], np.asarray(mass, dtype=np.float64), n_min)


def coverage_baselines(strata: QueryStrata, weights: ClusterWeights, mass, *, n_min: int = 5,
                       n_random: int = 20, seed: int = 0) -> dict:
    """MSC and SCC of the queries, their ceiling and a random-document baseline (module doc)."""
    mass = np.asarray(mass, dtype=np.float64)
    own = weights.primary()
    own = own[own >= 0]
    msc, scc = _msc_scc(strata.primary, mass, n_min)
    ceil = coverage_ceiling(weights, mass, n_min=n_min)
    rng = as_generator(None, seed)
    draws = [_msc_scc(rng.choice(own, size=min(strata.n_queries, own.size), replace=False),
                      mass, n_min) for _ in range(int(n_random))]
    rnd = np.asarray(draws)
    return {"msc": msc, "scc": scc, "ceiling_msc": ceil[0], "ceiling_scc": ceil[1],
            "random_msc": float(rnd[:, 0].mean()), "random_scc": float(rnd[:, 1].mean()),
            "random_msc_95": [float(x) for x in np.quantile(rnd[:, 0], [0.025, 0.975])],
            "random_scc_95": [float(x) for x in np.quantile(rnd[:, 1], [0.025, 0.975])],
            "n_min": int(n_min), "n_queries": strata.n_queries, "n_random": int(n_random)}


def _rank_residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    rx, rz = stats.rankdata(x), stats.rankdata(z)
    A = np.column_stack([np.ones_like(rz), rz])
    beta, *_ = np.linalg.lstsq(A, rx, rcond=None)
    return rx - A @ beta


def partial_correlations(features: dict, outcome, n_rel) -> dict:
    """``{name: {"rho", "rho_rel", "partial", "p_partial", "n"}}`` for each feature array
    (NaN entries, i.e. N/A, left out): Spearman ρ with the outcome, with |rel|, and the partial
    Spearman correlation with the outcome given |rel| (module docstring)."""
    y = np.asarray(outcome, dtype=np.float64)
    z = np.asarray(n_rel, dtype=np.float64)
    out = {}
    for name, x in features.items():
        x = np.asarray(x, dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        n = int(ok.sum())
        if n < 5 or np.ptp(x[ok]) == 0:
            out[name] = {"rho": float("nan"), "rho_rel": float("nan"), "partial": float("nan"),
                         "p_partial": float("nan"), "n": n}
            continue
        rho = float(stats.spearmanr(x[ok], y[ok])[0])
        rho_rel = float(stats.spearmanr(x[ok], z[ok])[0]) if np.ptp(z[ok]) else 0.0
        if np.ptp(z[ok]):
            ex, ey = _rank_residual(x[ok], z[ok]), _rank_residual(y[ok], z[ok])
        else:
            ex, ey = stats.rankdata(x[ok]), stats.rankdata(y[ok])
        r = float(np.corrcoef(ex, ey)[0, 1]) if ex.std() and ey.std() else 0.0
        t = r * math.sqrt(max(n - 3, 1) / max(1 - r * r, 1e-12))
        p = float(2 * stats.t.sf(abs(t), max(n - 3, 1)))
        out[name] = {"rho": rho, "rho_rel": rho_rel, "partial": r, "p_partial": p, "n": n}
    return out


def lexical_overlap(queries: dict, corpus: dict, qrels: dict, qids, level: float = 1) -> np.ndarray:
    """Mean token Jaccard of each query's text with each relevant document's text."""
    from ..io.corpus_text import doc_text
    from ..structure.specificity import word_tokens

    cache: dict = {}
    out = np.full(len(qids), np.nan)
    for i, q in enumerate(qids):
        qt = set(word_tokens(queries[q]))
        rel = [d for d, g in qrels[q].items() if g >= level and d in corpus]
        if not rel or not qt:
            continue
        vals = []
        for d in rel:
            if d not in cache:
                cache[d] = set(word_tokens(doc_text(corpus[d])))
            dt = cache[d]
            vals.append(len(qt & dt) / len(qt | dt))
        out[i] = float(np.mean(vals))
    return out


def definition_candidates(strata: QueryStrata, qrels: dict, weights: ClusterWeights,
                          query_entities: dict, doc_entities: dict) -> dict:
    """Per query (strata order): the candidate definitions of Δ and J that were compared.

    ``Δ pairwise TV`` (ours), ``Δ entropy`` (the earlier normalised entropy of p_q, 0 for one
    cluster), ``J mean containment`` (ours), ``J union containment`` and ``J union Jaccard``
    (the earlier one), see :mod:`mteb_stratified.core.stats.strata`.
    """
    from ..core.stats.strata import alignment_figures, pairwise_dispersion, row_entropy

    qi, di = [], []
    for i, q in enumerate(strata.queries):
        for d, g in qrels[q].items():
            j = weights.doc_index(d)
            if g >= strata.level and j is not None:
                qi.append(i)
                di.append(j)
    qi = np.asarray(qi, dtype=np.int64)
    di = np.asarray(di, dtype=np.int64)
    with_mass = np.diff(weights.indptr)[di] > 0
    Q = strata.n_queries
    m = strata.membership
    al = alignment_figures(qi, di, strata.queries, query_entities, doc_entities, weights.doc_ids)
    return {"Δ pairwise TV": pairwise_dispersion(qi[with_mass], di[with_mass], weights, Q),
            "Δ entropy": row_entropy(m.indptr, m.data),
            "J mean containment": al["containment"],
            "J union containment": al["union_containment"],
            "J union Jaccard": al["union_jaccard"]}
