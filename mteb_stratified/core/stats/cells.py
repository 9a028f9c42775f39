"""The stratum cell (cluster, Δ bin, J bin) and the bin levels: their one owner.

A query's **cell** is its primary cluster c, its dispersion bin d and its alignment bin j,
each bin an index into the grid's levels.  With n_d dispersion bins and n_j alignment bins::

    code(c, d, j) = c · n_d · n_j + d · n_j + j          (n_d · n_j cells per cluster)
    label(code)   = (c, levels_d[d], levels_j[j])          e.g. (12, "Low", "High")

Level names by bin count: 2 → Low/High, 3 → Low/Med/High (the default), otherwise Q1..Qn.
With ``na=True`` (the grid of stored cut-points) each quantity has one more level, ``N/A``, the
last index: Δ is not applicable to a query with one relevant document, J to a query without
entities, and such a query gets that level, never a made-up number.
Each level also has a **rank** word, ``low``/``mid``/``high`` (its relative position; ``na`` for
N/A), which is what prompts and rules key on, so they follow any number of bins.

The number of bins is set by the corpus' cut-points
(:class:`~mteb_stratified.core.stats.strata.Bins`: k cut-points make k + 1 bins);
:meth:`CellGrid.for_bins` builds the grid that goes with them.
Strata, coverage, estimators, the strata block, the report's heatmaps and the generation
targets all encode, decode and name cells through a :class:`CellGrid`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["CellGrid", "GRID", "LEVELS", "NA", "level_names"]

_NAMED = {2: ("Low", "High"), 3: ("Low", "Med", "High")}


def level_names(n_bins: int) -> tuple:
    """The names of ``n_bins`` bins, lowest first."""
    n = int(n_bins)
    if n < 1:
        raise InputError(f"a quantity needs at least 1 bin, got {n_bins}",
                         fix="give k ≥ 0 cut-points for k + 1 bins")
    return _NAMED.get(n, tuple(f"Q{i + 1}" for i in range(n)))


#: The level of a query whose Δ or J is not applicable (the last bin index when ``na``).
NA = "N/A"


@dataclass(frozen=True)
class CellGrid:
    """The cells of one cluster: ``n_dispersion`` × ``n_alignment`` bins.

    The counts include the N/A level when ``na`` (the default grid: Low/Med/High/N/A for Δ and
    for J, 4 × 4 cells per cluster).
    """

    n_dispersion: int = 4
    n_alignment: int = 4
    na: bool = True

    def __post_init__(self) -> None:
        level_names(self.n_dispersion - self.na)
        level_names(self.n_alignment - self.na)

    @classmethod
    def for_bins(cls, bins) -> "CellGrid":
        """The grid of a :class:`~mteb_stratified.core.stats.strata.Bins`: cut-points + 1 bins, and
        the N/A level."""
        return cls(len(bins.dispersion) + 2, len(bins.alignment) + 2, True)

    # -- levels ---------------------------------------------------------------------------
    @property
    def dispersion_levels(self) -> tuple:
        return level_names(self.n_dispersion - self.na) + ((NA,) if self.na else ())

    @property
    def alignment_levels(self) -> tuple:
        return level_names(self.n_alignment - self.na) + ((NA,) if self.na else ())

    @property
    def shape(self) -> tuple:
        """``(n_dispersion, n_alignment)``: the per-cluster table of cells."""
        return (self.n_dispersion, self.n_alignment)

    @property
    def per_cluster(self) -> int:
        return self.n_dispersion * self.n_alignment

    def n_cells(self, n_clusters: int) -> int:
        return int(n_clusters) * self.per_cluster

    def level(self, quantity: str, index) -> "str | None":
        """The name of bin ``index`` of ``quantity`` ("dispersion"/"alignment"); None for −1
        (not computed)."""
        i = int(index)
        return None if i < 0 else self._levels(quantity)[i]

    def index(self, quantity: str, name: str) -> int:
        """The bin index of a level name."""
        levels = self._levels(quantity)
        if name not in levels:
            raise InputError(f"unknown {quantity} level {name!r}",
                             fix=f"use one of {', '.join(levels)}")
        return levels.index(name)

    def rank(self, quantity: str, name: str) -> str:
        """``low`` for the lowest bin, ``high`` for the highest, ``mid`` in between; ``na`` for
        the N/A level."""
        if name == NA and self.na:
            return "na"
        i, n = self.index(quantity, name), len(self._levels(quantity)) - self.na
        return "low" if i == 0 else ("high" if i == n - 1 else "mid")

    def _levels(self, quantity: str) -> tuple:
        if quantity == "dispersion":
            return self.dispersion_levels
        if quantity == "alignment":
            return self.alignment_levels
        raise InputError(f"unknown quantity {quantity!r}", fix="use dispersion or alignment")

    # -- codes ------------------------------------------------------------------------------
    def encode(self, cluster, dispersion_bin, alignment_bin):
        """Cell code(s) of cluster, Δ bin and J bin indices (ints or arrays)."""
        if isinstance(cluster, (int, np.integer)) and np.ndim(dispersion_bin) == 0:
            return (int(cluster) * self.per_cluster + int(dispersion_bin) * self.n_alignment
                    + int(alignment_bin))
        c = np.asarray(cluster, dtype=np.int64)
        d = np.asarray(dispersion_bin, dtype=np.int64)
        j = np.asarray(alignment_bin, dtype=np.int64)
        return c * self.per_cluster + d * self.n_alignment + j

    def split(self, code) -> tuple:
        """``(cluster, Δ bin index, J bin index)`` of a code (ints or arrays)."""
        if isinstance(code, (int, np.integer)):
            c, k = divmod(int(code), self.per_cluster)
            return c, k // self.n_alignment, k % self.n_alignment
        code = np.asarray(code, dtype=np.int64)
        c, k = np.divmod(code, self.per_cluster)
        return c, k // self.n_alignment, k % self.n_alignment

    def cluster_of(self, code):
        """The cluster of a code (int or array)."""
        return self.split(code)[0]

    def label(self, code) -> tuple:
        """``(cluster, Δ level, J level)`` of a code."""
        c, d, j = self.split(int(code))
        return (c, self.dispersion_levels[d], self.alignment_levels[j])

    def label_of(self, cluster: int, dispersion_bin: int, alignment_bin: int) -> tuple:
        """``(cluster, Δ level, J level)`` of bin indices."""
        return (int(cluster), self.dispersion_levels[int(dispersion_bin)],
                self.alignment_levels[int(alignment_bin)])

    def bin_pairs(self) -> list:
        """Every ``(Δ bin, J bin)`` index pair of a cluster's cells, in code order."""
        return [(d, j) for d in range(self.n_dispersion) for j in range(self.n_alignment)]

    def all_labels(self, n_clusters: int) -> tuple:
        """The label of every code ``0 .. n_cells − 1``."""
        return tuple(self.label(code) for code in range(self.n_cells(n_clusters)))


#: The default grid: 4 × 4 cells (Low/Med/High/N/A Δ and J).
GRID = CellGrid()
#: The default bin names, in code order.
LEVELS = GRID.dispersion_levels
