"""The numeric core: numpy/scipy only, the bottom layer (imports nothing above it).

Two subpackages over a few shared modules, each importing only downwards (ranking evaluation
never imports the stratified statistics; ``tests/test_import_graph.py`` checks it):

* :mod:`.ranking`, tie-aware ranking evaluation: ``measures`` (Measure value objects and one
  MeasureFamily spec per family: parser, kernel and names), ``arrays`` (padded ranking arrays),
  ``ties``, ``kernels`` (closed forms, formulas in the docstrings), ``walk`` (numpy and the
  compiled ``_walk.c``), ``evaluate``, ``results`` (frozen result objects), ``per_query``
  (PerQuery: one system's per-query values), ``precision`` (the bf16/fp16 grids and the one
  dtype table);
* :mod:`.stats`, stratified statistics: ``cells`` (the cell encoding and level names: their
  one owner), ``strata`` (a package: primary cluster, Δ, J, Bins; one module per part:
  ``weights``, ``bins``, ``dispersion``, ``query_strata``), ``hierarchy`` (the cluster tree and
  its cut), ``estimators``, ``coverage`` (MSC, SCC), ``stability`` (winners and flips),
  ``chance`` (permutation tests, Holm, Westfall–Young), ``power`` (Type I error, power, MDE);
* shared: ``errors`` (InputError, EndpointError), ``options`` (the evaluation's option values
  and bounds, ALPHA; no numpy), ``rng`` (random generators), ``jsonsafe``, ``query_set``.

Nothing here imports torch, mteb, igraph or any other heavy package; tests enforce it.  Importing
the package loads nothing: every name loads its module on first use (the evaluation names
numpy and the evaluation code, the stratification names more), and scipy.stats /
scipy.sparse load inside the functions that use them.
"""

from ._lazy import lazy_attributes

#: Every public name by its module, imported on first access (PEP 562 ``__getattr__`` below):
#: ``import mteb_stratified.core`` (or one light submodule such as ``core.errors``) loads nothing
#: else, so the command line parses its arguments without numpy, and evaluating a run never
#: pays for the stratification names.
_LAZY_MODULES = {
    "ranking.arrays": ("RankingArrays", "from_dicts", "from_matrices"),
    "errors": ("EndpointError", "EndpointUnreachable", "InputError"),
    "ranking.evaluate": ("evaluate_arrays", "evaluate_matrices"),
    "options": ("IDEALS", "OBLIVIOUS_ORDERS"),
    "ranking.measures": ("AP", "MEASURE_NAMES", "RR", "Measure", "P", "R", "Success", "nDCG",
                 "parse_measure", "parse_measures"),
    "ranking.results": ("ConfidenceInterval", "EvaluationResult", "MeasureResult", "TieAwareValue"),
    "stats.strata": ("DEFAULT_BINS", "Bins", "ClusterWeights", "ExcludedQuery", "QueryStrata",
               "document_dispersion", "stratify"),
    "stats.estimators": ("Estimate", "PairedComparison", "StratifiedDesign", "StratumTable",
                   "paired_comparison", "per_stratum", "pooled_bootstrap",
                   "stratified_bootstrap", "stratified_estimates", "tie_aware_values"),
    "stats.coverage": ("DEFAULT_N_MIN", "Coverage", "Gap", "cell_coverage", "cluster_coverage",
                 "strata_coverage", "RecordedCoverage"),
    "stats.stability": ("StabilityReport", "decision_stability"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}
_STRATIFICATION = ("stats.strata", "stats.estimators", "stats.coverage",
                   "stats.stability")

__all__ = ["RankingArrays", "from_dicts", "from_matrices", "InputError", "EndpointError",
           "EndpointUnreachable", "evaluate_arrays", "evaluate_matrices", "evaluate_dicts",
           "IDEALS", "OBLIVIOUS_ORDERS", "Measure", "parse_measure", "parse_measures",
           "MEASURE_NAMES", "nDCG", "RR", "R", "P", "AP", "Success", "EvaluationResult",
           "MeasureResult", "TieAwareValue", "ConfidenceInterval",
           *(n for m in _STRATIFICATION for n in _LAZY_MODULES[m])]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)


def evaluate_dicts(qrels, run, measures, *, missing: str = "skip", **options):
    """Tie-aware evaluation of pytrec_eval-style dicts ``{qid: {docid: grade/score}}``.

    ``missing="zero"`` scores qrels queries absent from the run as 0 (``trec_eval -c``).
    Options as :func:`evaluate_arrays`.
    """
    from .ranking.arrays import from_dicts
    from .ranking.evaluate import evaluate_arrays

    arrays, left_out = from_dicts(qrels, run, missing=missing)
    return evaluate_arrays(arrays, measures, left_out=left_out, **options)
