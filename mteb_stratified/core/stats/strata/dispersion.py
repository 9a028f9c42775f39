"""The Δ and J kernels: a query's relevance dispersion Δ (:func:`pairwise_dispersion`), its
alignment J (:func:`alignment_figures`, exact; :func:`soft_containment`, soft), and a document's
own dispersion (:func:`document_dispersion`); the definitions are the package's,
:mod:`mteb_stratified.core.stats.strata`."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .weights import ClusterWeights

__all__ = ["row_entropy", "document_dispersion", "jaccard", "soft_containment",
           "flat_positions", "pairwise_dispersion", "alignment_figures"]


def row_entropy(indptr: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Normalised entropy per CSR row of probabilities p > 0 (0 for rows with ≤ 1 entries)."""
    k = np.diff(indptr)
    plogp = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    h = np.zeros(len(k))
    nz = k > 0
    if plogp.size:
        h[nz] = np.add.reduceat(plogp, indptr[:-1][nz])
    out = np.zeros(len(k))
    many = k > 1
    out[many] = h[many] / np.log(k[many])
    return np.clip(out, 0.0, 1.0)


def document_dispersion(weights: ClusterWeights) -> np.ndarray:
    """The evenness of each document's own cluster profile: −Σ_c m_d(c) log m_d(c) / log k_d
    (0: one cluster; NaN without cluster mass).  Not Δ (which needs two relevant documents);
    generation uses it to pick concentrated seed documents first.
    """
    m = weights.to_csr()
    m.eliminate_zeros()
    tot = np.asarray(m.sum(axis=1)).ravel()
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    p = m.data / np.where(tot > 0, tot, 1.0)[rows]
    out = row_entropy(m.indptr, p)
    out[tot <= 0] = np.nan
    return out


def jaccard(a: Iterable, b: Iterable) -> float:
    """|A ∩ B| / |A ∪ B| (0 when both are empty)."""
    a, b = set(a), set(b)
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _unit(vectors: Mapping, names: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows for the names that have a vector, and the mask of those that do."""
    has = np.array([n in vectors for n in names], dtype=bool)
    if not has.any():
        return np.zeros((0, 0)), has
    v = np.stack([np.asarray(vectors[n], dtype=np.float64) for n, h in zip(names, has) if h])
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0), has


def soft_containment(query: Iterable, docs: Sequence[Iterable], vectors: Mapping | Callable | None,
                     tau: float) -> float:
    """The soft J of one query (our definition, see the package docstring).

    J_soft = (1 / n) Σ_d |{e ∈ E(q) : e matches some entity of d}| / |E(q)|, where e matches f
    when e == f or cos(v_e, v_f) ≥ ``tau``.  ``docs``: the entity sets of the n relevant
    documents; ``vectors`` maps an entity to its embedding (a Mapping or a callable returning a
    vector or None; entities without one match by string only).  NaN when the query has no
    entity (J is not applicable); equals the exact J when only identical strings match.
    """
    a = sorted(set(query))
    docs = [sorted(set(d)) for d in docs]
    if not a:
        return float("nan")
    if not docs:
        return 0.0
    if callable(vectors) and not isinstance(vectors, Mapping):
        fn = vectors
        names = set(a).union(*docs)
        vectors = {n: v for n in sorted(names) if (v := fn(n)) is not None}
    ua, ha = _unit(vectors, a) if vectors is not None else (np.zeros((0, 0)), None)
    total = 0.0
    for b in docs:
        match = np.array([x in set(b) for x in a], dtype=bool)
        if vectors is not None and b and ua.size:
            ub, hb = _unit(vectors, b)
            if ub.size:
                close = ((ua @ ub.T) >= tau).any(axis=1)
                match[ha] |= close
        total += match.mean()
    return total / len(docs)


def flat_positions(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Flat positions ``starts[i] + 0..lens[i]−1`` for every i, concatenated."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(lens)[:-1]])
    return np.repeat(starts - before, lens) + np.arange(total)


def pairwise_dispersion(qi: np.ndarray, di: np.ndarray, weights: ClusterWeights,
                        n_queries: int) -> np.ndarray:
    """Δ(q), the mean pairwise total-variation distance (the package docstring), for every
    query.

    ``qi``/``di``: the (query row, document row) pairs of rel(q), each pair once.  Kernel: for
    one cluster c, the n values x_1 ≤ … ≤ x_n of m_d(c) over rel(q) (zeros included) give
    Σ_{i<j} |x_i − x_j| = Σ_k (2k − n − 1) x_(k); summed over c and halved, that is
    Σ_{d<d'} TV(m_d, m_d'), so one sort of the nonzero entries serves every query::

        Δ(q) = Σ_c Σ_k (2k − n_q − 1) x_(k),c / (n_q (n_q − 1))

    NaN when n_q < 2.
    """
    n_q = np.bincount(qi, minlength=n_queries).astype(np.int64)
    start = weights.indptr[di]
    lens = weights.indptr[di + 1] - start
    offs = flat_positions(start, lens)
    q = np.repeat(qi, lens)
    c = weights.indices[offs]
    v = weights.data[offs]
    keep = v > 0
    q, c, v = q[keep], c[keep], v[keep]
    out = np.full(n_queries, np.nan)
    if q.size:
        order = np.lexsort((v, c, q))
        q, c, v = q[order], c[order], v[order]
        new = np.ones(q.size, dtype=bool)
        new[1:] = (q[1:] != q[:-1]) | (c[1:] != c[:-1])
        grp = np.cumsum(new) - 1
        grp_start = np.flatnonzero(new)
        grp_len = np.diff(np.append(grp_start, q.size))
        j = np.arange(q.size) - grp_start[grp] + 1          # rank among the nonzeros
        z = n_q[q] - grp_len[grp]                            # zeros of that (q, c) column
        coef = 2.0 * (z + j) - n_q[q] - 1
        total = np.bincount(q, coef * v, minlength=n_queries)
    else:
        total = np.zeros(n_queries)
    many = n_q >= 2
    out[many] = total[many] / (n_q[many] * (n_q[many] - 1.0))
    return np.clip(out, 0.0, 1.0)


def alignment_figures(qi: np.ndarray, di: np.ndarray, queries: Sequence, query_entities: Mapping,
                     doc_entities: Mapping, doc_ids: Sequence) -> dict:
    """Alignment figures for every query, vectorised: entities interned to ids, (q, e) codes.

    ``qi``/``di``: the (query row, document row) pairs of rel(q).  Returns ``{"containment":
    J(q) (the package docstring), "union_containment": |E(q) ∩ U_q| / |E(q)|, "union_jaccard":
    |E(q) ∩ U_q| / |E(q) ∪ U_q|}`` with U_q = ∪_{d∈rel(q)} E(d) (the last two for comparison:
    they move with |rel|); NaN for a query without entities.
    """
    Q = len(queries)
    vocab: dict = {}
    q_sets = [set(query_entities[q]) for q in queries]
    q_len = np.fromiter((len(e) for e in q_sets), np.int64, Q)
    q_ent = np.fromiter((vocab.setdefault(e, len(vocab)) for es in q_sets for e in es),
                        np.int64, int(q_len.sum()))
    order = np.argsort(di, kind="stable")
    first = np.ones(len(di), dtype=bool)
    first[1:] = di[order][1:] != di[order][:-1]
    udocs = di[order][first]
    inv = np.empty(len(di), dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    d_sets = [set(doc_entities.get(doc_ids[j], ())) for j in udocs.tolist()]
    d_len = np.fromiter((len(e) for e in d_sets), np.int64, len(d_sets))
    d_ent = np.fromiter((vocab.setdefault(e, len(vocab)) for es in d_sets for e in es),
                        np.int64, int(d_len.sum()))
    V = max(len(vocab), 1)
    d_start = np.concatenate([[0], np.cumsum(d_len)[:-1]]).astype(np.int64)
    lens = d_len[inv]
    union = np.sort(np.repeat(qi, lens) * V + d_ent[flat_positions(d_start[inv], lens)])
    if union.size:
        union = union[np.concatenate([[True], union[1:] != union[:-1]])]
    u_size = np.bincount(union // V, minlength=Q)
    q_rows = np.repeat(np.arange(Q, dtype=np.int64), q_len)
    codes = q_rows * V + q_ent
    pos = np.searchsorted(union, codes)
    if union.size:
        hit = union[np.minimum(pos, len(union) - 1)] == codes
    else:
        hit = np.zeros(len(codes), dtype=bool)
    inter = np.bincount(q_rows[hit], minlength=Q)
    denom = q_len + u_size - inter
    has = q_len > 0
    safe_len = np.where(has, q_len, 1)
    # per (q, d) pair: |E(q) ∩ E(d)|; the query's codes are sorted for a membership lookup
    q_codes = np.sort(codes)
    pair_codes = np.repeat(qi, lens) * V + d_ent[flat_positions(d_start[inv], lens)]
    if q_codes.size and pair_codes.size:
        pos = np.searchsorted(q_codes, pair_codes)
        in_q = q_codes[np.minimum(pos, len(q_codes) - 1)] == pair_codes
    else:
        in_q = np.zeros(len(pair_codes), dtype=bool)
    n_rel = np.bincount(qi, minlength=Q)
    hits = np.bincount(np.repeat(qi, lens)[in_q], minlength=Q)
    nan = np.full(Q, np.nan)
    return {
        "containment": np.where(has, hits / (safe_len * np.maximum(n_rel, 1)), nan),
        "union_containment": np.where(has, inter / safe_len, nan),
        "union_jaccard": np.where(has, inter / np.where(denom > 0, denom, 1), nan),
    }
