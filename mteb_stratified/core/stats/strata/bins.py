"""The fixed Low/Med/High cut-points of Δ and J per corpus (:class:`Bins`,
:data:`DEFAULT_BINS`); the definitions are the package's, :mod:`mteb_stratified.core.stats.strata`,
and the bins' names and cell codes :mod:`mteb_stratified.core.stats.cells`'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from ..cells import CellGrid
from ...errors import InputError

__all__ = ["Bins", "DEFAULT_BINS"]


def _cuts(value, name: str) -> tuple:
    try:
        cuts = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(f"{name} cut-points must be numbers (a, b, ...)",
                         fix="e.g. Bins(dispersion=(0.0, 0.5), alignment=(0.2, 0.5))") from None
    if not cuts or not all(np.isfinite(cuts)) or any(a > b for a, b in zip(cuts, cuts[1:])):
        raise InputError(f"{name} cut-points must be at least one finite number, ascending, "
                         f"got {cuts}", fix="sort the cut-points")
    return cuts


@dataclass(frozen=True)
class Bins:
    """Low/Med/High cut-points for Δ and J, fixed per corpus (our definition).

    Low: x ≤ a, Med: a < x ≤ b, High: x > b for ``(a, b) = dispersion`` or ``alignment``.
    Compute it once per corpus with :meth:`from_reference` (e.g. from the Δ of each document's
    own cluster profile, :func:`document_dispersion`, or from Δ and J of the corpus' whole own
    query pool), store it with the structure (:meth:`to_dict`) and reuse it for every query set.
    """

    dispersion: tuple = (0.5, 0.75)
    alignment: tuple = (0.25, 0.5)
    source: str = "fixed"

    def __post_init__(self) -> None:
        object.__setattr__(self, "dispersion", _cuts(self.dispersion, "dispersion"))
        object.__setattr__(self, "alignment", _cuts(self.alignment, "alignment"))

    @property
    def grid(self) -> CellGrid:
        """The cell grid of these cut-points (k cut-points: k + 1 bins)."""
        return CellGrid.for_bins(self)

    def empty_bins(self) -> dict:
        """``{quantity: [bin name, ...]}`` of the bins no value can fall in: between two equal
        cut-points (``(0, 0)``: Med is ``0 < x ≤ 0``).  Reference quantiles repeat when many
        values are equal; the bin is then empty by construction, not for want of queries."""
        grid = self.grid
        out = {}
        for name in ("dispersion", "alignment"):
            cuts = getattr(self, name)
            empty = [grid.level(name, i + 1) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))
                     if a == b]
            if empty:
                out[name] = empty
        return out

    def empty_bins_warnings(self) -> list[str]:
        """One sentence per quantity with bins that are empty by construction."""
        return [f"the {name} cut-points {getattr(self, name)} repeat a value, so the "
                f"{' and '.join(levels)} {name} bin{'s' if len(levels) > 1 else ''} can hold "
                "no query (empty by construction, not for want of queries); choose other "
                "cut-points or fewer bins to separate these values"
                for name, levels in self.empty_bins().items()]

    @classmethod
    def from_reference(cls, dispersion: Iterable[float] | None = None,
                       alignment: Iterable[float] | None = None, *,
                       quantiles: tuple = (1 / 3, 2 / 3), source: str = "reference") -> "Bins":
        """Cut-points at ``quantiles`` of a reference distribution computed once per corpus.

        A quantity without reference values keeps the default cut-points of ``Bins()``.
        """
        q = np.asarray(quantiles, dtype=np.float64)
        if q.ndim != 1 or q.size < 1 or np.any(np.diff(q) < 0) or q[0] < 0 or q[-1] > 1:
            raise InputError("quantiles must be ascending numbers in [0, 1]",
                             fix="e.g. (1/3, 2/3) for three bins")
        default = cls()
        cuts = {}
        for name, ref in (("dispersion", dispersion), ("alignment", alignment)):
            if ref is None:
                cuts[name] = getattr(default, name)
                continue
            x = np.asarray(list(ref) if not isinstance(ref, np.ndarray) else ref, dtype=np.float64)
            x = x[np.isfinite(x)]
            if x.size == 0:
                raise InputError(f"the {name} reference distribution is empty",
                                 fix="pass reference values, or None for the default cut-points")
            cuts[name] = tuple(float(v) for v in np.quantile(x, q))
        return cls(cuts["dispersion"], cuts["alignment"], source)

    def bin_dispersion(self, x) -> np.ndarray:
        """Bin indices (0 = lowest; :mod:`..cells` names them) of Δ values; NaN (n_q = 1) →
        the N/A level."""
        return _bin(x, self.dispersion)

    def bin_alignment(self, x) -> np.ndarray:
        """Bin indices (0 = lowest) of J values; NaN (no query entity) → the N/A level."""
        return _bin(x, self.alignment)

    def to_dict(self) -> dict:
        return {"dispersion": list(self.dispersion), "alignment": list(self.alignment),
                "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Bins":
        try:
            return cls(tuple(d["dispersion"]), tuple(d["alignment"]), d.get("source", "stored"))
        except KeyError as e:
            raise InputError(f"stored bins lack {e.args[0]!r}",
                             fix="store {'dispersion': [a, b], 'alignment': [a, b]}") from None


def _bin(x, cuts) -> np.ndarray:
    """Bin index per value; NaN (not applicable) → the N/A index, ``len(cuts) + 1``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.searchsorted(np.asarray(cuts), x, side="left").astype(np.int8)
    out[np.isnan(x)] = len(cuts) + 1
    return out


#: Fixed fallback cut-points (ours, corpus-independent): Δ Low ≤ 0.5 < Med ≤ 0.75 < High (mean
#: total-variation distance between relevant documents' profiles); J Low ≤ 0.25 < Med ≤ 0.5 <
#: High (mean containment).  Prefer corpus-specific :meth:`Bins.from_reference`.
DEFAULT_BINS = Bins()
