"""Low-precision grids in numpy: what a score looks like after a bf16/fp16 cast.

``round_to_bfloat16(x)`` rounds to the nearest bfloat16 value (round half to even, as
``torch.Tensor.to(torch.bfloat16)``) and returns it as float32, so the tie damage of bf16 scoring
can be measured without torch.  bfloat16 keeps float32's 8 exponent bits and 7 of its 23
mantissa bits: ``bits16 = (bits32 + 0x7FFF + ((bits32 >> 16) & 1)) >> 16``.

:data:`DTYPES` is the one table of floating-point dtype names (canonical name, short name,
width, accepted spellings); :func:`dtype_name` reads a spelling or a torch dtype without
importing torch.  The model adapters and the precision regimes read both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["round_to_bfloat16", "round_to_float16", "round_scores", "DType", "DTYPES",
           "dtype_name"]


@dataclass(frozen=True)
class DType:
    """One floating-point dtype by name.

    Attributes
    ----------
    name : the canonical name, torch's (``torch.bfloat16``) and numpy's attribute name.
    short : the short name of the precision regimes (``"bf16"``).
    bits : storage width in bits (sign + exponent + mantissa).
    spellings : every accepted spelling, lower case.
    """

    name: str
    short: str
    bits: int
    spellings: tuple[str, ...]


#: The dtypes, canonical name -> :class:`DType`.
DTYPES = {d.name: d for d in (
    DType("float32", "fp32", 32, ("float32", "fp32", "f32", "float")),
    DType("bfloat16", "bf16", 16, ("bfloat16", "bf16")),
    DType("float16", "fp16", 16, ("float16", "fp16", "f16", "half")),
    DType("float64", "fp64", 64, ("float64", "fp64", "f64", "double")),
)}
_SPELLINGS = {spelling: d.name for d in DTYPES.values() for spelling in d.spellings}
_TORCH = "torch."


def dtype_name(dtype) -> str:
    """Canonical name (``"bfloat16"``...) of any accepted spelling (case-insensitive, a
    ``torch.`` prefix allowed) or of a torch dtype (read from its ``str``: no torch import)."""
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        name = _SPELLINGS.get(key[len(_TORCH):] if key.startswith(_TORCH) else key)
        if name is None:
            raise InputError(f"unknown dtype {dtype!r}",
                             fix=f"use one of {', '.join(DTYPES)} (or fp32, bf16, fp16)")
        return name
    text = str(dtype)  # "torch.bfloat16"
    if text.startswith(_TORCH):
        return dtype_name(text[len(_TORCH):])
    raise InputError(f"unknown dtype {dtype!r}", fix=f"use one of {', '.join(DTYPES)}")


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
