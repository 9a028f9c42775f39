"""mteb-stratified: tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.

The top level is light: ``import mteb_stratified`` loads nothing but this file; each public name
imports its module on first use (PEP 562 ``__getattr__``), so the command line's ``--help`` and
argument parsing start without numpy.  ``mteb_stratified.evaluate`` and the core names load
numpy and the evaluation code; scipy's subpackages load inside the functions that use them, and
the heavy parts (mteb, torch, LLM clients) from ``mteb_stratified.adapters`` when used
(tests/core/test_import_light.py checks this).
"""

from .core._lazy import lazy_attributes

__version__ = "0.1.0"

#: The public names by the module that defines them, imported on first access.
_LAZY_MODULES = {
    "api": ("evaluate", "DEFAULT_MEASURES"),
    "core": ("evaluate_matrices", "evaluate_arrays", "parse_measure", "parse_measures",
             "Measure", "nDCG", "RR", "R", "P", "AP", "Success", "EvaluationResult",
             "MeasureResult", "TieAwareValue", "ConfidenceInterval", "InputError"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

__all__ = ["evaluate", "evaluate_matrices", "evaluate_arrays", "DEFAULT_MEASURES",
           "parse_measure", "parse_measures", "Measure", "nDCG", "RR", "R", "P", "AP", "Success",
           "EvaluationResult", "MeasureResult", "TieAwareValue", "ConfidenceInterval",
           "InputError", "__version__"]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)
