"""Per-query strata: primary cluster, relevance dispersion Δ, query–document alignment J, bins.

Every definition here is **ours: the paper does not publish it**.  With m_d(c) the cluster mass
of document d (its specificity-weighted share of entities in cluster c, rows summing to 1),
rel(q) the n_q documents judged with grade ≥ ``level`` for query q, and E(·) the normalised
entity set of a query or document:

* **cluster profile**   a_q(c) = Σ_{d∈rel(q)} m_d(c),   p_q(c) = a_q(c) / Σ_c' a_q(c');
* **primary cluster**   c*(q) = argmax_c a_q(c); ties (within a relative 1e-12) go to the tied
  cluster with the smallest hash h(q, c) (BLAKE2b of the query id and the cluster id): fixed for
  a query, and with no preference for large or small clusters (a smallest-id rule sent 29% of
  NFCorpus queries to the largest cluster).  One rule for everything: a document's own stratum
  is the same argmax of m_d (ties by h(d, c)), and a stratum's corpus weight is the share of
  corpus documents whose own stratum it is (:meth:`ClusterWeights.primary_share`), i.e. weights
  are counted the way queries are assigned;
* **dispersion**        the mean total-variation distance between the cluster profiles of two
  distinct relevant documents::

      Δ(q) = (2 / (n_q (n_q − 1))) Σ_{d<d' ∈ rel(q)} ½ Σ_c |m_d(c) − m_d'(c)|      (n_q ≥ 2)

  0: every relevant document has the same profile; 1: no two share a cluster.  A U-statistic:
  its expectation does not grow or shrink with n_q (the normalised entropy of p_q did, at
  ρ(Δ, |rel|) = −0.79 on NFCorpus).  **Not applicable** (NaN, the N/A level) when n_q = 1;
* **alignment**         the mean containment of the query's entities in a relevant document::

      J(q) = (1 / n_q) Σ_{d∈rel(q)} |E(q) ∩ E(d)| / |E(q)|

  the share of the query's entities a relevant document carries, averaged over rel(q), so it
  does not shrink as rel(q) grows (a Jaccard against the union of ~38 relevant documents had
  median 0.0001).  **Not applicable** (NaN) when the query has no entity.  The *soft* variant
  counts a query entity as found in d when some entity of d is the same string or has cosine
  similarity ≥ τ; it equals J when only identical strings match;
* **bins**  Low/Med/High with two cut-points (a, b) per quantity: Low x ≤ a, Med a < x ≤ b,
  High x > b (k cut-points make k + 1 bins), plus the N/A level (names and cell codes:
  :mod:`.cells`).  The cut-points are fixed per corpus (a :class:`Bins`, computed once from a
  reference query pool that is never the evaluated query set, and stored with the corpus
  structure), so a query is binned the same way whatever query set it is evaluated with;
* **stratum** of q: the cell (c*(q), Δ bin, J bin) (scheme ``"cell"``; encoding in
  :mod:`.cells`), or the cluster alone (scheme ``"cluster"``).

The definitions of Δ and J were chosen by measurement on NFCorpus dev, never test
(``git show 026ce8f:benchmarks/results/strata_validity/dev.txt``: the candidates' ρ with
the measures, a results file of that commit, removed since).  Queries with no relevant
document, or whose relevant documents carry no cluster mass, are not dropped silently: they
are listed in :attr:`QueryStrata.excluded` with the reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from .cells import GRID, LEVELS, CellGrid
from .errors import InputError

if TYPE_CHECKING:  # scipy.sparse is imported by the functions that build matrices
    from scipy import sparse

__all__ = ["ClusterWeights", "Bins", "DEFAULT_BINS", "LEVELS", "SCHEMES", "ExcludedQuery",
           "QueryStrata", "stratify", "jaccard", "soft_containment", "document_dispersion",
           "check_scheme", "mass_array", "tie_hash", "argmax_rows"]

#: Stratum schemes: the primary cluster alone, or the cluster × Δ bin × J bin cell.
SCHEMES = ("cluster", "cell")
_TIE_RTOL = 1e-12


def check_scheme(scheme: str) -> str:
    """Return ``scheme`` if known, else raise :class:`InputError`."""
    if scheme not in SCHEMES:
        raise InputError(f"unknown stratum scheme {scheme!r}",
                         fix=f"use one of {', '.join(SCHEMES)}")
    return scheme


def tie_hash(key, cluster: int) -> int:
    """h(key, c): the 64-bit BLAKE2b hash of ``repr(key)`` and the cluster id, which breaks an
    argmax tie (smallest hash wins): fixed per query or document, blind to cluster size."""
    h = hashlib.blake2b(f"{key!r}\x00{int(cluster)}".encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def argmax_rows(matrix: sparse.csr_matrix, keys: Sequence) -> np.ndarray:
    """Per CSR row: the column of the largest value, ties (relative 1e-12) broken by
    :func:`tie_hash` of the row's key; −1 for an empty row."""
    m = matrix
    n = m.shape[0]
    out = np.full(n, -1, dtype=np.int64)
    nonempty = np.diff(m.indptr) > 0
    if not nonempty.any():
        return out
    starts = m.indptr[:-1][nonempty]
    rowmax = np.maximum.reduceat(m.data, starts)
    full_max = np.zeros(n)
    full_max[nonempty] = rowmax
    rows = np.repeat(np.arange(n), np.diff(m.indptr))
    top = m.data >= full_max[rows] * (1 - _TIE_RTOL)
    n_top = np.bincount(rows[top], minlength=n)
    first = np.full(n, -1, dtype=np.int64)
    pos = np.flatnonzero(top)
    first[rows[pos[::-1]]] = m.indices[pos[::-1]]  # any tied column; fixed below for ties
    out[nonempty] = first[nonempty]
    for r in np.flatnonzero(n_top > 1):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        tied = m.indices[lo:hi][top[lo:hi]]
        out[r] = int(min(tied.tolist(), key=lambda c: tie_hash(keys[r], c)))
    return out


# ---------------------------------------------------------------------------------------------
# doc → cluster weights
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ClusterWeights:
    """Sparse document → cluster weights m_d(c) in CSR form.

    ``doc_ids[i]``'s clusters are ``indices[indptr[i]:indptr[i+1]]`` with weights
    ``data[indptr[i]:indptr[i+1]]``; cluster ids are integers in ``[0, n_clusters)``.  A
    document without entities has an empty row (it is part of the corpus, with no cluster mass).
    """

    doc_ids: tuple
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_clusters: int
    _index: dict = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        indptr = np.asarray(self.indptr, dtype=np.int64)
        indices = np.asarray(self.indices, dtype=np.int64)
        data = np.asarray(self.data, dtype=np.float64)
        n_docs = len(self.doc_ids)
        if indptr.shape != (n_docs + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
                or indptr[-1] != len(indices) or len(indices) != len(data):
            raise InputError("malformed CSR doc→cluster weights (indptr/indices/data lengths)",
                             fix="indptr must have len(doc_ids)+1 non-decreasing entries from 0 "
                                 "to len(indices) == len(data)")
        if self.n_clusters < 1:
            raise InputError("n_clusters must be ≥ 1", fix="pass the number of clusters")
        if len(indices) and (indices.min() < 0 or indices.max() >= self.n_clusters):
            raise InputError(f"cluster ids must lie in [0, {self.n_clusters})",
                             fix="renumber clusters 0..n_clusters-1 or raise n_clusters")
        if not np.all(np.isfinite(data)) or np.any(data < 0):
            raise InputError("doc→cluster weights must be finite and ≥ 0",
                             fix="check the structure artifact's weights")
        index = {d: i for i, d in enumerate(self.doc_ids)}
        if len(index) != n_docs:
            raise InputError("duplicate document ids in the doc→cluster weights",
                             fix="give each document one row")
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "doc_ids", tuple(self.doc_ids))
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_dict(cls, weights: Mapping[object, Mapping[int, float]],
                  n_clusters: int | None = None, *,
                  doc_ids: Sequence | None = None) -> "ClusterWeights":
        """From ``{doc_id: {cluster_id: weight}}`` (n_clusters: max id + 1 unless given).

        ``doc_ids``: every document of the corpus, when ``weights`` lists only documents with
        clustered entities (as the structure artifact does); the others get empty rows, so they
        count in |D| and a relevant document outside the corpus is still caught.
        """
        if doc_ids is None:
            doc_ids = tuple(weights)
        else:
            doc_ids = tuple(doc_ids)
            known = set(doc_ids)
            stray = [d for d in weights if d not in known]
            if stray:
                raise InputError(f"{len(stray)} weighted documents are not among doc_ids "
                                 f"(e.g. {stray[:3]})",
                                 fix="pass every document id of the corpus the weights came from")
        empty: dict = {}
        # each row by cluster id: sums over a row then run in one order, whatever order the
        # mapping came in (a freshly built artifact and the same one loaded from disk agree
        # to the last bit)
        rows = [sorted((int(c), float(w)) for c, w in weights.get(d, empty).items())
                for d in doc_ids]
        lens = [len(r) for r in rows]
        indptr = np.concatenate([[0], np.cumsum(lens, dtype=np.int64)])
        indices = np.fromiter((c for r in rows for c, _ in r), np.int64, indptr[-1])
        data = np.fromiter((w for r in rows for _, w in r), np.float64, indptr[-1])
        if n_clusters is None:
            n_clusters = int(indices.max()) + 1 if len(indices) else 1
        return cls(doc_ids, indptr, indices, data, int(n_clusters))

    @classmethod
    def from_csr(cls, doc_ids: Sequence, matrix) -> "ClusterWeights":
        """From a scipy sparse (or dense) (n_docs, n_clusters) matrix, rows aligned with doc_ids."""
        from scipy import sparse

        m = sparse.csr_matrix(matrix)
        m.sum_duplicates()
        return cls(tuple(doc_ids), m.indptr, m.indices, m.data, m.shape[1])

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def doc_index(self, doc_id) -> int | None:
        return self._index.get(doc_id)

    def to_csr(self) -> sparse.csr_matrix:
        from scipy import sparse

        return sparse.csr_matrix((self.data, self.indices, self.indptr),
                                 shape=(self.n_docs, self.n_clusters))

    def corpus_mass(self) -> np.ndarray:
        """Corpus mass of every cluster: w(c) = Σ_d m_d(c) / |D|  (shape (n_clusters,)).

        The fractional membership mass; stratum weights use :meth:`primary_share`, which counts
        documents the way queries are assigned."""
        return np.bincount(self.indices, self.data, minlength=self.n_clusters) / max(self.n_docs, 1)

    def primary(self) -> np.ndarray:
        """Each document's own stratum: argmax_c m_d(c), ties by h(d, c); −1 without mass."""
        cached = self.__dict__.get("_primary")
        if cached is None:
            cached = argmax_rows(self.to_csr(), self.doc_ids)
            object.__setattr__(self, "_primary", cached)
        return cached.copy()

    def primary_share(self) -> np.ndarray:
        """Stratum weights by the argmax rule: w(c) = |{d : argmax m_d = c}| / |D|, the share of
        corpus documents whose own stratum is c (shape (n_clusters,); documents without mass
        count in |D| and in no cluster)."""
        p = self.primary()
        return np.bincount(p[p >= 0], minlength=self.n_clusters) / max(self.n_docs, 1)


def mass_array(cluster_mass, n_clusters: int | None = None) -> np.ndarray:
    """Cluster corpus mass as a (C,) float array, from an array or a ``{cluster: mass}`` mapping
    (clusters missing from the mapping get 0; C = ``n_clusters`` or the largest id + 1)."""
    if isinstance(cluster_mass, Mapping):
        try:
            ids = [int(c) for c in cluster_mass]
        except (TypeError, ValueError):
            raise InputError("cluster_mass keys must be integer cluster ids",
                             fix="pass {cluster_id: mass} or an array indexed by cluster id"
                             ) from None
        C = n_clusters if n_clusters is not None else (max(ids) + 1 if ids else 0)
        if ids and (min(ids) < 0 or max(ids) >= C):
            raise InputError(f"cluster_mass has cluster ids outside [0, {C})",
                             fix="use the corpus mass of the same structure")
        out = np.zeros(C)
        out[ids] = [float(v) for v in cluster_mass.values()]
        return out
    return np.asarray(cluster_mass, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# bins
# ---------------------------------------------------------------------------------------------

def _cuts(value, name: str) -> tuple:
    try:
        cuts = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(f"{name} cut-points must be numbers (a, b, ...)",
                         fix="e.g. Bins(dispersion=(0.0, 0.5), alignment=(0.2, 0.5))") from None
    if not cuts or not all(np.isfinite(cuts)) or any(a > b for a, b in zip(cuts, cuts[1:])):
        raise InputError(f"{name} cut-points must be at least one finite number, ascending, "
                         f"got {cuts}", fix="sort the cut-points")
    return cuts


@dataclass(frozen=True)
class Bins:
    """Low/Med/High cut-points for Δ and J, fixed per corpus (our definition).

    Low: x ≤ a, Med: a < x ≤ b, High: x > b for ``(a, b) = dispersion`` or ``alignment``.
    Compute it once per corpus with :meth:`from_reference` (e.g. from the Δ of each document's
    own cluster profile, :func:`document_dispersion`, or from Δ and J of the corpus' whole own
    query pool), store it with the structure (:meth:`to_dict`) and reuse it for every query set.
    """

    dispersion: tuple = (0.5, 0.75)
    alignment: tuple = (0.25, 0.5)
    source: str = "fixed"

    def __post_init__(self) -> None:
        object.__setattr__(self, "dispersion", _cuts(self.dispersion, "dispersion"))
        object.__setattr__(self, "alignment", _cuts(self.alignment, "alignment"))

    @property
    def grid(self) -> CellGrid:
        """The cell grid of these cut-points (k cut-points: k + 1 bins)."""
        return CellGrid.for_bins(self)

    def empty_bins(self) -> dict:
        """``{quantity: [bin name, ...]}`` of the bins no value can fall in: between two equal
        cut-points (``(0, 0)``: Med is ``0 < x ≤ 0``).  Reference quantiles repeat when many
        values are equal; the bin is then empty by construction, not for want of queries."""
        grid = self.grid
        out = {}
        for name in ("dispersion", "alignment"):
            cuts = getattr(self, name)
            empty = [grid.level(name, i + 1) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))
                     if a == b]
            if empty:
                out[name] = empty
        return out

    def empty_bins_warnings(self) -> list[str]:
        """One sentence per quantity with bins that are empty by construction."""
        return [f"the {name} cut-points {getattr(self, name)} repeat a value, so the "
                f"{' and '.join(levels)} {name} bin{'s' if len(levels) > 1 else ''} can hold "
                "no query (empty by construction, not for want of queries); choose other "
                "cut-points or fewer bins to separate these values"
                for name, levels in self.empty_bins().items()]

    @classmethod
    def from_reference(cls, dispersion: Iterable[float] | None = None,
                       alignment: Iterable[float] | None = None, *,
                       quantiles: tuple = (1 / 3, 2 / 3), source: str = "reference") -> "Bins":
        """Cut-points at ``quantiles`` of a reference distribution computed once per corpus.

        A quantity without reference values keeps the default cut-points of ``Bins()``.
        """
        q = np.asarray(quantiles, dtype=np.float64)
        if q.ndim != 1 or q.size < 1 or np.any(np.diff(q) < 0) or q[0] < 0 or q[-1] > 1:
            raise InputError("quantiles must be ascending numbers in [0, 1]",
                             fix="e.g. (1/3, 2/3) for three bins")
        default = cls()
        cuts = {}
        for name, ref in (("dispersion", dispersion), ("alignment", alignment)):
            if ref is None:
                cuts[name] = getattr(default, name)
                continue
            x = np.asarray(list(ref) if not isinstance(ref, np.ndarray) else ref, dtype=np.float64)
            x = x[np.isfinite(x)]
            if x.size == 0:
                raise InputError(f"the {name} reference distribution is empty",
                                 fix="pass reference values, or None for the default cut-points")
            cuts[name] = tuple(float(v) for v in np.quantile(x, q))
        return cls(cuts["dispersion"], cuts["alignment"], source)

    def bin_dispersion(self, x) -> np.ndarray:
        """Bin indices (0 = lowest; :mod:`.cells` names them) of Δ values; NaN (n_q = 1) →
        the N/A level."""
        return _bin(x, self.dispersion)

    def bin_alignment(self, x) -> np.ndarray:
        """Bin indices (0 = lowest) of J values; NaN (no query entity) → the N/A level."""
        return _bin(x, self.alignment)

    def to_dict(self) -> dict:
        return {"dispersion": list(self.dispersion), "alignment": list(self.alignment),
                "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Bins":
        try:
            return cls(tuple(d["dispersion"]), tuple(d["alignment"]), d.get("source", "stored"))
        except KeyError as e:
            raise InputError(f"stored bins lack {e.args[0]!r}",
                             fix="store {'dispersion': [a, b], 'alignment': [a, b]}") from None


def _bin(x, cuts) -> np.ndarray:
    """Bin index per value; NaN (not applicable) → the N/A index, ``len(cuts) + 1``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.searchsorted(np.asarray(cuts), x, side="left").astype(np.int8)
    out[np.isnan(x)] = len(cuts) + 1
    return out


#: Fixed fallback cut-points (ours, corpus-independent): Δ Low ≤ 0.5 < Med ≤ 0.75 < High (mean
#: total-variation distance between relevant documents' profiles); J Low ≤ 0.25 < Med ≤ 0.5 <
#: High (mean containment).  Prefer corpus-specific :meth:`Bins.from_reference`.
DEFAULT_BINS = Bins()


# ---------------------------------------------------------------------------------------------
# Δ and J kernels
# ---------------------------------------------------------------------------------------------

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
    """The soft J of one query (our definition, see the module docstring).

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


def _positions(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Flat positions ``starts[i] + 0..lens[i]−1`` for every i, concatenated."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(lens)[:-1]])
    return np.repeat(starts - before, lens) + np.arange(total)


def pairwise_dispersion(qi: np.ndarray, di: np.ndarray, weights: ClusterWeights,
                        n_queries: int) -> np.ndarray:
    """Δ(q), the mean pairwise total-variation distance (module docstring), for every query.

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
    offs = _positions(start, lens)
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
    J(q) (module docstring), "union_containment": |E(q) ∩ U_q| / |E(q)|, "union_jaccard":
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
    union = np.sort(np.repeat(qi, lens) * V + d_ent[_positions(d_start[inv], lens)])
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
    pair_codes = np.repeat(qi, lens) * V + d_ent[_positions(d_start[inv], lens)]
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


# ---------------------------------------------------------------------------------------------
# query strata
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExcludedQuery:
    """A query left out of stratification, with the reason (never dropped silently)."""

    qid: object
    reason: str


@dataclass(frozen=True, eq=False)
class QueryStrata:
    """Strata of Q queries over a corpus structure with C clusters (see the module docstring).

    Attributes
    ----------
    queries : tuple of query ids (row order of every array).
    primary : (Q,) int64, primary cluster c*(q).
    membership : (Q, C) scipy CSR matrix, p_q(c) (rows sum to 1).
    dispersion : (Q,) float64, Δ(q) in [0, 1]; NaN (N/A) with fewer than two relevant
        documents that carry cluster mass.
    alignment : (Q,) float64, J(q) in [0, 1]; NaN (N/A) for a query without entities, and for
        every query when no entities were given (``alignment_computed`` False).
    bins : the corpus' fixed :class:`Bins`.
    n_clusters : C.
    excluded : queries not stratified, with reasons.
    n_relevant : (Q,) int64, |rel(q)| (None when not given).
    lexical : (Q,) float64, the lexical containment of the query in its relevant documents
        (the share of its content words a relevant document contains, averaged over rel(q);
        :func:`mteb_stratified.stratification.lexical.lexical_containment`), the yardstick J is
        compared with; None when the texts were not given.
    """

    queries: tuple
    primary: np.ndarray
    membership: sparse.csr_matrix
    dispersion: np.ndarray
    alignment: np.ndarray
    bins: Bins
    n_clusters: int
    excluded: tuple = ()
    level: float = 1
    alignment_computed: bool = True
    n_relevant: np.ndarray | None = None
    lexical: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    @property
    def dispersion_bin(self) -> np.ndarray:
        return self.bins.bin_dispersion(self.dispersion)

    @property
    def alignment_bin(self) -> np.ndarray:
        return self.bins.bin_alignment(self.alignment)

    @property
    def has_alignment(self) -> bool:
        return self.alignment_computed

    @property
    def grid(self) -> CellGrid:
        """The cell grid of the strata's bins (:mod:`.cells`)."""
        return self.bins.grid

    def codes(self, scheme: str = "cell") -> np.ndarray:
        """Integer stratum code per query: c*(q) (``cluster``) or the cell code
        (``cell``; :meth:`CellGrid.encode`)."""
        check_scheme(scheme)
        if scheme == "cluster":
            return self.primary.copy()
        if not self.has_alignment:
            raise InputError("the 'cell' scheme needs the alignment J, which was not computed",
                             fix="pass query_entities and doc_entities to stratify(), or use "
                                 "scheme='cluster'")
        return self.grid.encode(self.primary, self.dispersion_bin, self.alignment_bin)

    @staticmethod
    def decode(code: int, scheme: str = "cell", grid: CellGrid = GRID):
        """The label of a stratum code: ``c``, or ``(c, Δ level, J level)``."""
        check_scheme(scheme)
        code = int(code)
        if scheme == "cluster":
            return code
        return grid.label(code)

    def labels(self, scheme: str = "cell") -> list:
        """Stratum label per query (see :meth:`decode`)."""
        codes = self.codes(scheme)
        uniq, inv = np.unique(codes, return_inverse=True)
        names = [self.decode(c, scheme, self.grid) for c in uniq]
        return [names[i] for i in inv]

    def stratum(self, qid) -> tuple:
        """``(cluster, Δ level, J level)`` of one query (J level None when J was not computed)."""
        i = self._row(qid)
        g = self.grid
        return (int(self.primary[i]), g.level("dispersion", self.dispersion_bin[i]),
                g.level("alignment", self.alignment_bin[i]))

    def membership_of(self, qid) -> dict:
        """``{cluster: p_q(c)}`` of one query (clusters with p_q(c) > 0)."""
        i = self._row(qid)
        lo, hi = self.membership.indptr[i], self.membership.indptr[i + 1]
        return dict(zip(self.membership.indices[lo:hi].tolist(),
                        self.membership.data[lo:hi].tolist()))

    def records(self) -> dict:
        """``{qid: {"cluster", "dispersion", "dispersion_bin", "alignment", "alignment_bin"}}``
        (JSON-ready; alignment None when J was not computed)."""
        db, ab, g = self.dispersion_bin, self.alignment_bin, self.grid
        out = {}
        for i, q in enumerate(self.queries):
            j = float(self.alignment[i])
            dv = float(self.dispersion[i])
            out[q] = {"cluster": int(self.primary[i]), "dispersion": None if np.isnan(dv) else dv,
                      "dispersion_bin": g.level("dispersion", db[i]),
                      "alignment": None if np.isnan(j) else j,
                      "alignment_bin": g.level("alignment", ab[i]) if self.has_alignment
                      else None}
        return out

    def _row(self, qid) -> int:
        index = self.__dict__.get("_qidx")
        if index is None:
            index = {q: i for i, q in enumerate(self.queries)}
            object.__setattr__(self, "_qidx", index)
        i = index.get(qid)
        if i is None:
            why = next((e.reason for e in self.excluded if e.qid == qid), None)
            raise InputError(f"query {qid!r} was not stratified" + (f": {why}" if why else ""),
                             fix="pick a query id from strata.queries")
        return i

    def subset(self, qids: Iterable) -> "QueryStrata":
        """The strata of some of the queries, in the given order (bins unchanged)."""
        index = {q: i for i, q in enumerate(self.queries)}
        qids = list(qids)
        missing = [q for q in qids if q not in index]
        if missing:
            raise InputError(f"{len(missing)} queries were not stratified (e.g. {missing[:3]})",
                             fix="subset with ids from strata.queries")
        rows = np.array([index[q] for q in qids], dtype=np.int64)
        return QueryStrata(tuple(qids), self.primary[rows], self.membership[rows],
                           self.dispersion[rows], self.alignment[rows], self.bins,
                           self.n_clusters, (), self.level, self.alignment_computed,
                           _take(self.n_relevant, rows), _take(self.lexical, rows))

    def with_lexical(self, lexical) -> "QueryStrata":
        """The same strata carrying each query's lexical containment (one per query)."""
        lexical = np.asarray(lexical, dtype=np.float64)
        if lexical.shape != (self.n_queries,):
            raise InputError(f"{lexical.size} lexical containments for {self.n_queries} queries",
                             fix="give one value per stratified query, in strata order")
        return dataclasses.replace(self, lexical=lexical)

    def coarsen(self, mapping, n_strata: int) -> "QueryStrata":
        """The same queries with every cluster c replaced by ``mapping[c]`` (one of
        ``n_strata`` coarser strata, e.g. a :class:`~.hierarchy.TreeCut`'s ``stratum``):
        primary c*(q) → mapping[c*(q)] and p_q summed within each coarse stratum.  Δ and J are
        kept: they are computed on the fine clusters and the entities."""
        from scipy import sparse

        mapping = np.asarray(mapping, dtype=np.int64)
        if mapping.shape != (self.n_clusters,) or (mapping.size and (
                mapping.min() < 0 or mapping.max() >= n_strata)):
            raise InputError(f"a coarsening maps each of the {self.n_clusters} clusters to one "
                             f"of {n_strata} strata", fix="pass one stratum id per cluster")
        fold = sparse.csr_matrix((np.ones(self.n_clusters), (np.arange(self.n_clusters),
                                                             mapping)),
                                 shape=(self.n_clusters, n_strata))
        membership = (self.membership @ fold).tocsr()
        membership.sort_indices()
        return dataclasses.replace(self, primary=mapping[self.primary], membership=membership,
                                   n_clusters=int(n_strata))


def _take(values, rows):
    return None if values is None else values[rows]


def _check_inputs(weights, bins, query_entities, doc_entities, unknown_docs,
                  n_clusters) -> "ClusterWeights":
    """:func:`stratify`'s arguments checked; the weights as :class:`ClusterWeights`."""
    if not isinstance(weights, ClusterWeights):
        weights = ClusterWeights.from_dict(weights, n_clusters)
    if not isinstance(bins, Bins):
        raise InputError("bins must be a Bins instance", fix="pass Bins.from_reference(...) or "
                                                           "Bins.from_dict(stored)")
    if (query_entities is None) != (doc_entities is None):
        raise InputError("pass both query_entities and doc_entities (or neither)",
                         fix="J compares a query's entities with its relevant documents'")
    if unknown_docs not in ("error", "skip"):
        raise InputError(f"unknown_docs must be 'error' or 'skip', got {unknown_docs!r}",
                         fix="use unknown_docs='skip' to leave out documents the structure lacks")
    return weights


def _relevant_pairs(qrels, weights, level, unknown_docs) -> tuple:
    """``(kept, qi, di, rel_docs, excluded)``: the queries with a relevant document the structure
    knows, each (query row, document row) pair of rel(q), the relevant documents per kept query,
    and the queries excluded with their reason.  A relevant document unknown to the structure is
    an :class:`InputError` (``unknown_docs="error"``) or left out (``"skip"``)."""
    excluded: list[ExcludedQuery] = []
    kept: list = []
    q_rows: list[int] = []
    d_rows: list[int] = []
    rel_docs: list[list] = []
    unknown: list = []
    lookup = weights._index
    for qid, judged in qrels.items():
        rel = [d for d, g in judged.items() if g >= level]
        if not rel:
            excluded.append(ExcludedQuery(qid, f"no relevant documents (grade ≥ {level})"))
            continue
        idx = [lookup.get(d) for d in rel]
        bad = [d for d, i in zip(rel, idx) if i is None]
        if bad:
            if unknown_docs == "error":
                unknown.extend((qid, d) for d in bad)
                continue
            rel = [d for d, i in zip(rel, idx) if i is not None]
            idx = [i for i in idx if i is not None]
            if not rel:
                excluded.append(ExcludedQuery(qid, "no relevant document is in the corpus "
                                                   "structure"))
                continue
        row = len(kept)
        kept.append(qid)
        q_rows.extend([row] * len(idx))
        d_rows.extend(idx)
        rel_docs.append(rel)
    if unknown:
        n_docs = len({d for _, d in unknown})
        ex = ", ".join(f"{q}:{d}" for q, d in unknown[:3])
        raise InputError(f"{n_docs} relevant documents are not in the corpus structure "
                         f"(e.g. {ex}); the qrels are of a different corpus",
                         fix="build or load the structure of the corpus these qrels judge; if "
                             "the weights list only documents with entities, build them with "
                             "ClusterWeights.from_dict(weights, C, doc_ids=<all corpus ids>) "
                             "(or pass unknown_docs='skip' to leave such documents out)")
    return (kept, np.asarray(q_rows, dtype=np.int64), np.asarray(d_rows, dtype=np.int64),
            rel_docs, excluded)


def _profiles(weights, kept, qi, di, rel_docs, excluded) -> tuple:
    """``(prof, kept, qi, di, rel_docs)``: each kept query's cluster profile a_q(c), the sum of
    its relevant documents' weights (CSR, one row per query); a query whose relevant documents
    carry no cluster mass joins ``excluded`` and leaves the other arguments."""
    from scipy import sparse

    # expand every (query, relevant doc) pair into the doc's (cluster, weight) entries
    start = weights.indptr[di]
    lens = weights.indptr[di + 1] - start
    offs = _positions(start, lens)
    prof = sparse.coo_matrix((weights.data[offs], (np.repeat(qi, lens), weights.indices[offs])),
                             shape=(len(kept), weights.n_clusters)).tocsr()
    prof.sum_duplicates()
    prof.eliminate_zeros()
    prof.sort_indices()
    empty = np.asarray(prof.sum(axis=1)).ravel() <= 0
    if not empty.any():
        return prof, kept, qi, di, rel_docs
    for i in np.flatnonzero(empty):
        excluded.append(ExcludedQuery(kept[i], "relevant documents carry no cluster mass "
                                               "(no entities in any cluster)"))
    keep = np.flatnonzero(~empty)
    row_map = np.full(len(kept), -1, dtype=np.int64)
    row_map[keep] = np.arange(len(keep))
    qi = row_map[qi]
    di = di[qi >= 0]
    qi = qi[qi >= 0]
    return (prof[keep], [kept[i] for i in keep], qi, di, [rel_docs[i] for i in keep])


def _alignment(kept, qi, di, rel_docs, weights, query_entities, doc_entities, entity_vectors,
               tau) -> np.ndarray:
    """J of every kept query (NaN without entities): exact containment, or the soft one with
    ``entity_vectors`` (module docstring)."""
    alignment = np.full(len(kept), np.nan)
    if query_entities is None:
        return alignment
    missing = [q for q in kept if q not in query_entities]
    if missing:
        raise InputError(f"{len(missing)} queries have no entity entry (e.g. {missing[:3]})",
                         fix="extract entities for every query (an empty set for none) with "
                             "the corpus' extractor")
    if entity_vectors is None:
        return alignment_figures(qi, di, kept, query_entities, doc_entities,
                                 weights.doc_ids)["containment"]
    doc_sets: dict = {}
    for i, (q, rel) in enumerate(zip(kept, rel_docs)):
        for d in rel:
            if d not in doc_sets:
                doc_sets[d] = frozenset(doc_entities.get(d, ()))
        alignment[i] = soft_containment(query_entities[q], [doc_sets[d] for d in rel],
                                        entity_vectors, tau)
    return alignment


def stratify(qrels: Mapping[object, Mapping[object, float]], weights: ClusterWeights | Mapping, *,
             query_entities: Mapping[object, Iterable[str]] | None = None,
             doc_entities: Mapping[object, Iterable[str]] | None = None,
             bins: Bins = DEFAULT_BINS, level: float = 1,
             entity_vectors: Mapping | Callable | None = None, tau: float = 0.8,
             n_clusters: int | None = None, unknown_docs: str = "error") -> QueryStrata:
    """Primary cluster, membership, Δ, J and bins of every query (formulas: module docstring).

    Parameters
    ----------
    qrels : ``{qid: {doc_id: grade}}``; rel(q) = documents with grade ≥ ``level``.
    weights : :class:`ClusterWeights`, or ``{doc_id: {cluster_id: m_d(c)}}``.
    query_entities, doc_entities : normalised entity sets (same extractor) for J; without them J
        is NaN and only the ``cluster`` scheme is available.  Every stratified query needs an
        entry (empty for no entities); a document without an entry has no entities.
    bins : the corpus' fixed cut-points (never tertiles of this query set).
    entity_vectors, tau : the soft J (cosine ≥ τ); None gives the exact Jaccard.
    unknown_docs : ``"error"`` (default): a relevant document missing from the structure raises
        :class:`InputError` (qrels of a different corpus); ``"skip"``: such documents are left
        out of rel(q) (a query left with none goes to ``excluded``).

    Raises
    ------
    InputError
        When a relevant document is unknown to the structure (qrels of a different corpus) or
        a query lacks an entity entry.

    Notes
    -----
    Queries with no relevant document, or whose relevant documents carry no cluster mass, go
    to ``excluded`` with the reason.
    """
    from scipy import sparse

    weights = _check_inputs(weights, bins, query_entities, doc_entities, unknown_docs,
                            n_clusters)
    C = weights.n_clusters
    kept, qi, di, rel_docs, excluded = _relevant_pairs(qrels, weights, level, unknown_docs)
    prof, kept, qi, di, rel_docs = _profiles(weights, kept, qi, di, rel_docs, excluded)
    Q = len(kept)
    mass = np.asarray(prof.sum(axis=1)).ravel()
    rows = np.repeat(np.arange(Q), np.diff(prof.indptr))
    # primary cluster: largest a_q(c), ties within a relative 1e-12 → smallest h(q, c)
    primary = argmax_rows(prof, kept) if Q else np.zeros(0, dtype=np.int64)
    p = prof.data / mass[rows] if Q else prof.data
    membership = sparse.csr_matrix((p, prof.indices, prof.indptr), shape=(Q, C))
    with_mass = np.diff(weights.indptr)[di] > 0
    dispersion = pairwise_dispersion(qi[with_mass], di[with_mass], weights, Q)
    alignment = _alignment(kept, qi, di, rel_docs, weights, query_entities, doc_entities,
                           entity_vectors, tau)
    n_relevant = np.array([len(r) for r in rel_docs], dtype=np.int64)
    return QueryStrata(tuple(kept), np.asarray(primary, dtype=np.int64), membership, dispersion,
                       alignment, bins, C, tuple(excluded), level, query_entities is not None,
                       n_relevant)
