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
  :mod:`mteb_stratified.core.stats.cells`).  The cut-points are fixed per corpus (a :class:`Bins`,
  computed once from a reference query pool that is never the evaluated query set, and stored
  with the corpus structure), so a query is binned the same way whatever query set it is
  evaluated with;
* **stratum** of q: the cell (c*(q), Δ bin, J bin) (scheme ``"cell"``; encoding in
  :mod:`mteb_stratified.core.stats.cells`), or the cluster alone (scheme ``"cluster"``).

The definitions of Δ and J were chosen by measurement on NFCorpus dev, never test: the
candidate definitions (computed per query by
:func:`mteb_stratified.stratification.validity.definition_candidates`) were compared by their
Spearman ρ with the measures given |rel|; J's figures on dev are in
``benchmarks/results/strata_validity/dev_entities.txt`` and the choice of both is told in
``docs/validity/strata-power.md``.  Queries with no relevant document, or whose relevant
documents carry no cluster mass, are not dropped silently: they are listed in
:attr:`QueryStrata.excluded` with the reason.

The parts, one module each: :mod:`.weights` (the doc → cluster weights m_d(c) and the argmax
rule of primary clusters), :mod:`.bins` (the fixed cut-points), :mod:`.dispersion` (the Δ and J
kernels) and :mod:`.query_strata` (:class:`QueryStrata` and :func:`stratify`).  Every name that
was public in the single module ``core/stats/strata.py`` is imported from here.
"""

from ..cells import LEVELS
from .bins import DEFAULT_BINS, Bins
from .dispersion import document_dispersion, jaccard, soft_containment
# public outside __all__, as in the single module (stratification.validity reads them here)
from .dispersion import alignment_figures, pairwise_dispersion, row_entropy  # noqa: F401
from .query_strata import SCHEMES, ExcludedQuery, QueryStrata, check_scheme, stratify
from .weights import ClusterWeights, argmax_rows, mass_array, tie_hash

__all__ = ["ClusterWeights", "Bins", "DEFAULT_BINS", "LEVELS", "SCHEMES", "ExcludedQuery",
           "QueryStrata", "stratify", "jaccard", "soft_containment", "document_dispersion",
           "check_scheme", "mass_array", "tie_hash", "argmax_rows"]
