"""Low-precision grids in numpy: what a score looks like after a bf16/fp16 cast.

``round_to_bfloat16(x)`` rounds to the nearest bfloat16 value (round half to even, as
``torch.Tensor.to(torch.bfloat16)``) and returns it as float32, so the tie damage of bf16 scoring
can be measured without torch.  bfloat16 keeps float32's 8 exponent bits and 7 of its 23
mantissa bits: ``bits16 = (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16``.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

__all__ = ["round_to_bfloat16", "round_to_float16", "round_scores"]


def round_to_bfloat16(x) -> np.ndarray:
    """Values of ``x`` rounded to the bfloat16 grid (round half to even), as float32."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out)


def round_to_float16(x) -> np.ndarray:
    """Values of ``x`` rounded to the IEEE half-precision grid, as float32."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def round_scores(x, precision: str) -> np.ndarray:
    """Round to ``"bf16"``, ``"fp16"`` or ``"fp32"`` (float32 rounding)."""
    if precision == "bf16":
        return round_to_bfloat16(x)
    if precision == "fp16":
        return round_to_float16(x)
    if precision == "fp32":
        return np.asarray(x, dtype=np.float32)
    raise InputError(f"unknown precision {precision!r}", fix="use bf16, fp16 or fp32")
