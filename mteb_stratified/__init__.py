"""mteb-stratified: tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.

The top level is light: importing it loads numpy and the evaluation code only.  scipy's
subpackages load inside the functions that use them, the stratification names of
``mteb_stratified.core`` on first use, and the heavy parts (mteb, torch, LLM clients) from
``mteb_stratified.adapters`` when used (tests/core/test_import_light.py checks this).
"""

from .api import DEFAULT_MEASURES, evaluate
from .core import (AP, RR, ConfidenceInterval, EvaluationResult, InputError, Measure,
                   MeasureResult, P, R, Success, TieAwareValue, evaluate_arrays, evaluate_matrices,
                   nDCG, parse_measure, parse_measures)

__version__ = "0.1.0"

__all__ = ["evaluate", "evaluate_matrices", "evaluate_arrays", "DEFAULT_MEASURES",
           "parse_measure", "parse_measures", "Measure", "nDCG", "RR", "R", "P", "AP", "Success",
           "EvaluationResult", "MeasureResult", "TieAwareValue", "ConfidenceInterval",
           "InputError", "__version__"]
