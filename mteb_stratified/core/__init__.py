"""The numeric core: numpy/scipy only, the bottom layer (imports nothing above it).

* tie-aware evaluation: ``measures`` (Measure value objects), ``arrays`` (padded ranking
  arrays), ``ties``, ``kernels`` (closed forms, formulas in the docstrings), ``evaluate``,
  ``results`` (frozen result objects);
* stratification: ``cells`` (the cell encoding and level names: their one owner), ``strata``
  (primary cluster, Δ, J, Bins), ``per_query`` (PerQuery), ``estimators``, ``coverage`` (MSC,
  SCC), ``stability`` (winners and flips), ``chance`` (permutation tests, Holm);
* ``errors`` (InputError, EndpointError), ``rng`` (random generators), ``precision``.

Nothing here imports torch, mteb, igraph or any other heavy package; tests enforce it.
"""

from .arrays import RankingArrays, from_dicts, from_matrices
from .errors import EndpointError, EndpointUnreachable, InputError
from .evaluate import IDEALS, OBLIVIOUS_ORDERS, evaluate_arrays, evaluate_matrices
from .measures import AP, MEASURE_NAMES, RR, Measure, P, R, Success, nDCG, parse_measure, parse_measures
from .results import ConfidenceInterval, EvaluationResult, MeasureResult, TieAwareValue
from .strata import (DEFAULT_BINS, Bins, ClusterWeights, ExcludedQuery, QueryStrata,
                     document_dispersion, stratify)
from .estimators import (Estimate, PairedComparison, StratifiedDesign, StratumTable,
                         paired_comparison, per_stratum, pooled_bootstrap, stratified_bootstrap,
                         stratified_estimates, tie_aware_values)
from .coverage import DEFAULT_N_MIN, Coverage, Gap, cell_coverage, cluster_coverage, strata_coverage
from .stability import StabilityReport, decision_stability

__all__ = ["RankingArrays", "from_dicts", "from_matrices", "InputError", "EndpointError", "EndpointUnreachable", "evaluate_arrays",
           "evaluate_matrices", "evaluate_dicts", "IDEALS", "OBLIVIOUS_ORDERS", "Measure",
           "parse_measure", "parse_measures", "MEASURE_NAMES", "nDCG", "RR", "R", "P", "AP",
           "Success", "EvaluationResult", "MeasureResult", "TieAwareValue", "ConfidenceInterval",
           "DEFAULT_BINS", "Bins", "ClusterWeights", "ExcludedQuery", "QueryStrata",
           "document_dispersion", "stratify", "Estimate", "PairedComparison", "StratifiedDesign",
           "StratumTable", "paired_comparison", "per_stratum", "pooled_bootstrap",
           "stratified_bootstrap", "stratified_estimates", "tie_aware_values", "DEFAULT_N_MIN",
           "Coverage", "Gap", "cell_coverage", "cluster_coverage", "strata_coverage",
           "StabilityReport", "decision_stability"]


def evaluate_dicts(qrels, run, measures, *, missing: str = "skip", **options) -> EvaluationResult:
    """Tie-aware evaluation of pytrec_eval-style dicts ``{qid: {docid: grade/score}}``.

    ``missing="zero"`` scores qrels queries absent from the run as 0 (``trec_eval -c``).
    Options as :func:`evaluate_arrays`.
    """
    arrays, left_out = from_dicts(qrels, run, missing=missing)
    return evaluate_arrays(arrays, measures, left_out=left_out, **options)
