"""Document → cluster weights m_d(c) (:class:`ClusterWeights`, CSR form) and the argmax rule
that gives a document or a query its primary cluster (ties by :func:`tie_hash`); the definitions
are the package's, :mod:`mteb_stratified.core.stats.strata`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from ...errors import InputError

if TYPE_CHECKING:  # scipy.sparse is imported by the functions that build matrices
    from scipy import sparse

__all__ = ["ClusterWeights", "mass_array", "tie_hash", "argmax_rows"]

_TIE_RTOL = 1e-12


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
        """The row of ``doc_id``; None for a document the weights do not know."""
        return self._index.get(doc_id)

    def doc_rows(self, doc_ids: Iterable) -> list:
        """The row of each of ``doc_ids`` (:meth:`doc_index` of many), None for an unknown one."""
        index = self._index
        return [index.get(d) for d in doc_ids]

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
