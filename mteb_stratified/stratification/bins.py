"""The J variants and the corpus' fixed Δ/J cut-points stored in the structure artifact.

* :func:`corpus_bins` — the stored cut-points (our rule: :mod:`.reference`).  An artifact
  without stored bins falls back to Δ at the 1/3, 2/3 quantiles of
  :func:`~mteb_stratified.core.document_dispersion` over every document (Δ of each document's
  own cluster profile) and J at the fixed defaults ``(0.2, 0.5)`` of
  :class:`~mteb_stratified.core.Bins`; its ``source`` says so.
* :data:`ALIGNMENTS` — J variants: the exact Jaccard, or the soft one by embedding matching.

The number of bins follows the number of cut-points (k cut-points, k + 1 bins); cells and level
names: :mod:`mteb_stratified.core.cells`.
"""

from __future__ import annotations

from ..core import Bins, ClusterWeights, InputError, document_dispersion
from .weights import cluster_weights

__all__ = ["ALIGNMENTS", "SOFT_TAU", "check_alignment", "corpus_bins"]

#: J variants: the exact Jaccard, or the soft one by embedding matching (cosine ≥ τ).
ALIGNMENTS = ("exact", "soft")
#: Default τ of the soft J (cosine between MiniLM entity embeddings).
SOFT_TAU = 0.8
_ALIGNMENT_DEFAULT = Bins().alignment


def check_alignment(alignment: str) -> str:
    if alignment not in ALIGNMENTS:
        raise InputError(f"unknown alignment {alignment!r}",
                         fix=f"use one of {', '.join(ALIGNMENTS)}")
    return alignment


def corpus_bins(artifact, weights: ClusterWeights | None = None, *,
                alignment: str = "exact") -> Bins:
    """The corpus-fixed bins stored in the artifact, else our document-dispersion fallback.

    ``alignment="soft"`` takes the stored soft-J cut-points (``alignment_soft``).
    """
    check_alignment(alignment)
    stored = artifact.bins
    key = "alignment" if alignment == "exact" else "alignment_soft"
    if stored and "dispersion" in stored and key in stored:
        return Bins(tuple(stored["dispersion"]), tuple(stored[key]),
                    stored.get("source", "stored"))
    if alignment == "soft":
        raise InputError("the structure artifact stores no soft-J cut-points",
                         fix="recompute its bins with `mteb-stratified structure --corpus ... "
                             "--out DIR --soft-bins` (a reference query pool is needed), or "
                             "use the exact J")
    if weights is None:
        weights = cluster_weights(artifact, artifact.doc_cluster_weights)
    b = Bins.from_reference(dispersion=document_dispersion(weights), source=(
        "fallback (no stored bins): Δ at the 1/3, 2/3 quantiles of the corpus' document "
        "dispersion; J at the fixed defaults (0.2, 0.5)"))
    return Bins(b.dispersion, _ALIGNMENT_DEFAULT, b.source)
