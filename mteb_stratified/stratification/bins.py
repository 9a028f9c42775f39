"""The J variants and the corpus' fixed Δ/J cut-points stored in the structure artifact.

* :func:`corpus_bins` — the stored cut-points (our rule: :mod:`.reference`).  An artifact
  without stored bins falls back to the fixed, corpus-independent cut-points of
  :data:`~mteb_stratified.core.DEFAULT_BINS` (for either J); its ``source`` says so.
* :data:`ALIGNMENTS` — J variants: ``soft`` (the default: J over concepts, entities matched at
  MiniLM cosine ≥ τ) or ``exact`` (J over entity names).  The default was chosen on NFCorpus
  dev: given |rel| and lexical containment, J over concepts kept a partial Spearman
  correlation with nDCG@10 of 0.38 (BM25) and 0.38 (MiniLM), J over names 0.38 and 0.31
  (``benchmarks/strata_validity.py``; docs/validity/strata-power.md).

The number of bins follows the number of cut-points (k cut-points, k + 1 bins); cells and level
names: :mod:`mteb_stratified.core.cells`.
"""

from __future__ import annotations

from ..core import DEFAULT_BINS, Bins, InputError

__all__ = ["ALIGNMENTS", "SOFT_TAU", "check_alignment", "corpus_bins"]

#: J variants: over concepts (soft: entities matched by embedding, cosine ≥ τ; the default) or
#: over entity names (exact).
ALIGNMENTS = ("exact", "soft")
DEFAULT_ALIGNMENT = "soft"
#: Default τ of the soft J (cosine between MiniLM entity embeddings).
SOFT_TAU = 0.8
_ALIGNMENT_DEFAULT = Bins().alignment


def check_alignment(alignment: str) -> str:
    if alignment not in ALIGNMENTS:
        raise InputError(f"unknown alignment {alignment!r}",
                         fix=f"use one of {', '.join(ALIGNMENTS)}")
    return alignment


def corpus_bins(artifact, *, alignment: str = "exact") -> Bins:
    """The corpus-fixed bins stored in the artifact, else the fixed fallback cut-points.

    ``alignment="soft"`` takes the stored soft-J cut-points (``alignment_soft``).
    """
    check_alignment(alignment)
    stored = artifact.bins
    key = "alignment" if alignment == "exact" else "alignment_soft"
    if stored and "dispersion" in stored and key in stored:
        return Bins(tuple(stored["dispersion"]), tuple(stored[key]),
                    stored.get("source", "stored"))
    if alignment == "soft" and stored:
        raise InputError("the structure artifact stores no soft-J cut-points (J over concepts, "
                         "the default alignment)",
                         fix="recompute its bins with `mteb-stratified structure --corpus ... "
                             "--out DIR` (soft cut-points are stored by default; a reference "
                             "query pool is needed), or use the exact J (--alignment exact)")
    return Bins(DEFAULT_BINS.dispersion, DEFAULT_BINS.alignment,
                "fallback (no stored bins): the fixed cut-points Δ (0.5, 0.75), J (0.25, 0.5)")
