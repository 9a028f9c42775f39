"""The numeric core: numpy/scipy only (tie groups, measures, tie-aware kernels, results).

Nothing here imports torch, mteb, igraph or any other heavy package; a test enforces it.
"""

from .arrays import RankingArrays, from_dicts, from_matrices
from .errors import InputError
from .evaluate import IDEALS, OBLIVIOUS_ORDERS, evaluate_arrays, evaluate_matrices
from .measures import AP, MEASURE_NAMES, RR, Measure, P, R, Success, nDCG, parse_measure, parse_measures
from .results import ConfidenceInterval, EvaluationResult, MeasureResult, TieAwareValue

__all__ = ["RankingArrays", "from_dicts", "from_matrices", "InputError", "evaluate_arrays",
           "evaluate_matrices", "evaluate_dicts", "IDEALS", "OBLIVIOUS_ORDERS", "Measure",
           "parse_measure", "parse_measures", "MEASURE_NAMES", "nDCG", "RR", "R", "P", "AP",
           "Success", "EvaluationResult", "MeasureResult", "TieAwareValue", "ConfidenceInterval"]


def evaluate_dicts(qrels, run, measures, *, missing: str = "skip", **options) -> EvaluationResult:
    """Tie-aware evaluation of pytrec_eval-style dicts ``{qid: {docid: grade/score}}``.

    ``missing="zero"`` scores qrels queries absent from the run as 0 (``trec_eval -c``).
    Options as :func:`evaluate_arrays`.
    """
    arrays, left_out = from_dicts(qrels, run, missing=missing)
    return evaluate_arrays(arrays, measures, left_out=left_out, **options)
