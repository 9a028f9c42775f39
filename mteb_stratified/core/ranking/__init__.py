"""Ranking evaluation: measures, padded ranking arrays, tie groups, the closed-form kernels,
the walk (numpy and C), evaluation and its frozen results, per-query values and the bf16/fp16
grids.  numpy only; imports nothing of :mod:`..stats`.

Importing it loads nothing: a submodule loads on first attribute access.
"""

from .._lazy import lazy_attributes

__getattr__, __dir__ = lazy_attributes(__name__, globals(), {})
