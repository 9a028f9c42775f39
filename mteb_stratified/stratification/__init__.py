"""Stratification of a dataset over a corpus structure, and the strata block of a system.

Layer: above :mod:`mteb_stratified.structure` (the corpus map it reads) and below the report,
generation and adapters that use it.  Definitions (ours) and the numeric estimators live in
:mod:`mteb_stratified.core` (``strata``, ``cells``, ``coverage``, ``estimators``, ``chance``);
this package joins them to a structure artifact and a BEIR dataset.

* :mod:`.weights` — each document's cluster mass m_d(c);
* :mod:`.bins` — the J variants and the corpus' stored Δ/J cut-points;
* :mod:`.reference` — our rule for those cut-points (a reference query pool);
* :mod:`.dataset` — each judged query's stratum;
* :mod:`.block` — the JSON-ready strata block, its flat MTEB keys, decision stability;
* :mod:`.bundled` — the bundled NFCorpus test queries' strata, with no extractor at run time.
"""

from .bins import ALIGNMENTS, SOFT_TAU, check_alignment, corpus_bins
from .block import (INTERVAL_RULE, align_strata, flat_strata_scores,
                    stability_summary, stratified_summary)
from .dataset import strata_for_dataset
from .reference import reference_bins
from .weights import cluster_weights

__all__ = ["corpus_bins", "reference_bins", "INTERVAL_RULE", "align_strata",
           "flat_strata_scores", "stability_summary", "stratified_summary", "ALIGNMENTS",
           "SOFT_TAU", "check_alignment", "cluster_weights", "strata_for_dataset"]
