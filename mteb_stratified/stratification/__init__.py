"""Stratification of a dataset over a corpus structure, and the strata block of a system.

Layer: above :mod:`mteb_stratified.structure` (the corpus map it reads) and below the report,
generation and adapters that use it.  Definitions (ours) and the numeric estimators live in
:mod:`mteb_stratified.core` (``strata``, ``cells``, ``coverage``, ``estimators``, ``chance``);
this package joins them to a structure artifact and a BEIR dataset.

* :mod:`.dataset` — each judged query's stratum (and its lexical containment, :mod:`.lexical`),
  and what it reads from the artifact: m_d(c) (cluster_weights), the stored Δ/J cut-points
  (corpus_bins) and the J variants;
* :mod:`.reference` — our rule for those cut-points (a reference query pool);
* :mod:`.grain` — the evaluated strata: the most even cut of the cluster tree at ``min_queries``;
* :mod:`.block` — one system's stratified evaluation, its flat MTEB keys, decision stability;
* :mod:`.summary` — its typed result, :class:`StratifiedSummary` (``to_dict()``: the JSON block);
* :mod:`.pairs` — the paired question: where one system beats another, beyond chance
  (:class:`PairedSummary` of :class:`PairResult`);
* :mod:`.variation` — how much a gap varies across topics: τ and its 95% upper bound (REML);
* :mod:`.power` — the minimum detectable effect of a test on the evaluated strata;
* :mod:`.bundled` — the bundled NFCorpus test queries' strata, with no extractor at run time;
* :mod:`.context` — (artifact, dataset, strata) for a structure, a dataset and a split, loaded
  once per process: what ``stratify`` and ``report`` map their flags onto;
* :mod:`.results` — :func:`stratify_results`: strata blocks written into MTEB results files
  (what ``stratify`` runs), with typed outcomes.
"""

from .block import (INTERVAL_RULE, Stability, StratumWinner, align_strata, flat_strata_scores,
                    stability_summary, stratified_summary)
from .context import Context, load_context
from .dataset import (ALIGNMENTS, GENERATED_APART, SOFT_TAU, check_alignment, cluster_weights,
                      corpus_bins, gate_verdict, split_origin, strata_for_dataset)
from .grain import DEFAULT_MIN_QUERIES, EvaluatedStrata, Grain, GrainStratum, evaluated_strata
from .pairs import PairedSummary, PairResult, paired_summary
from .power import DetectableEffect
from .variation import GapVariation, gap_variation
from .summary import (BinCounts, BoundedEstimate, Bounds, CellTable, ClusterRow, GeneratedQueries,
                      LexicalComparison, PooledMean, Spread, SpreadEnd,
                      StratifiedSummary, StratumRow)
from .reference import reference_bins
from .results import (GeneratedApart, StrataWarning, StratifiedFile, StratifyResult,
                      stratify_results)

__all__ = ["corpus_bins", "reference_bins", "INTERVAL_RULE", "align_strata",
           "flat_strata_scores", "stability_summary", "stratified_summary", "ALIGNMENTS",
           "SOFT_TAU", "check_alignment", "cluster_weights", "strata_for_dataset",
           "DEFAULT_MIN_QUERIES", "EvaluatedStrata", "evaluated_strata", "paired_summary",
           "GENERATED_APART", "split_origin", "gate_verdict", "Context", "load_context",
           "StratifiedSummary", "BoundedEstimate", "GapVariation", "gap_variation",
           "stratify_results", "StratifyResult", "StratifiedFile", "StrataWarning",
           "GeneratedApart", "Stability", "StratumWinner", "PairedSummary", "PairResult",
           "DetectableEffect", "Grain", "GrainStratum", "StratumRow", "ClusterRow", "CellTable",
           "BinCounts", "Bounds", "Spread", "SpreadEnd", "PooledMean", "GeneratedQueries",
           "LexicalComparison"]
