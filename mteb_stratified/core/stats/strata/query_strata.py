"""Per-query strata (:class:`QueryStrata`, :func:`stratify`): each query's primary cluster,
membership, Δ, J and bins, and the queries left out with their reason (:class:`ExcludedQuery`);
the definitions are the package's, :mod:`mteb_stratified.core.stats.strata`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

import numpy as np

from ..cells import GRID, CellGrid
from ...errors import InputError
from .bins import DEFAULT_BINS, Bins
from .dispersion import (alignment_figures, flat_positions, pairwise_dispersion,
                         soft_containment)
from .weights import ClusterWeights, argmax_rows

if TYPE_CHECKING:  # scipy.sparse is imported by the functions that build matrices
    from scipy import sparse

__all__ = ["SCHEMES", "check_scheme", "ExcludedQuery", "QueryStrata", "stratify"]

#: Stratum schemes: the primary cluster alone, or the cluster × Δ bin × J bin cell.
SCHEMES = ("cluster", "cell")


def check_scheme(scheme: str) -> str:
    """Return ``scheme`` if known, else raise :class:`InputError`."""
    if scheme not in SCHEMES:
        raise InputError(f"unknown stratum scheme {scheme!r}",
                         fix=f"use one of {', '.join(SCHEMES)}")
    return scheme


@dataclass(frozen=True)
class ExcludedQuery:
    """A query left out of stratification, with the reason (never dropped silently)."""

    qid: object
    reason: str


@dataclass(frozen=True, eq=False)
class QueryStrata:
    """Strata of Q queries over a corpus structure with C clusters (see the package
    docstring, :mod:`mteb_stratified.core.stats.strata`).

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
        """The cell grid of the strata's bins (:mod:`..cells`)."""
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
        ``n_strata`` coarser strata, e.g. a :class:`~..hierarchy.TreeCut`'s ``stratum``):
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
    for qid, judged in qrels.items():
        rel = [d for d, g in judged.items() if g >= level]
        if not rel:
            excluded.append(ExcludedQuery(qid, f"no relevant documents (grade ≥ {level})"))
            continue
        idx = weights.doc_rows(rel)
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
    offs = flat_positions(start, lens)
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
    ``entity_vectors`` (the package docstring)."""
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
    """Primary cluster, membership, Δ, J and bins of every query (formulas: the package
    docstring).

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
