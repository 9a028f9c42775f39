"""Stratified statistics: strata (Δ, J, bins, cluster weights), cells, the cluster hierarchy,
estimators, coverage, decision stability, chance tests and power.  numpy/scipy; reads the
per-query values and interval type of :mod:`..ranking`.

Importing it loads nothing: a submodule loads on first attribute access.
"""

from .._lazy import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, globals(), {})
