"""How well a query set covers a corpus' semantic structure: MSC, SCC and the gap list.

Our definitions (the paper does not publish them).  With C clusters, n_c the number of queries
whose primary cluster is c and w_c the cluster's corpus mass (its stratum weight: the share of
documents whose own stratum is c, the structure's clusters table ``mass``):

* **MSC** (minimum semantic coverage) = |{c : w_c > 0, n_c ≥ 1}| / |{c : w_c > 0}|, over the
  strata that exist: a cluster of weight 0 is no document's own stratum, carries nothing in a
  weighted estimate and cannot be covered by a query about one document, so it is not in the
  denominator; such clusters are listed apart (``weightless``, with the queries that land
  there anyway);
* **SCC** (sufficient corpus coverage) = Σ_{c : n_c ≥ n_min} w_c / Σ_c w_c, the share of corpus
  mass in clusters that hold at least ``n_min`` queries;
* **gaps**: the clusters with w_c > 0 and n_c = 0, heaviest corpus mass first (with their
  labels).

At **cell level** the units are the cells (cluster × Δ bin × J bin; 16 per cluster with the
default 4 × 4 grid of :mod:`.cells`, N/A levels included); a cell's mass is
w_c · share_c(Δ bin, J bin), with the within-cluster shares given (e.g. from a reference
distribution) or, by default, equal (1/16 with 4 × 4 cells); MSC counts the cells of positive
mass.

The **coverage schema** (:data:`COVERAGE_KEYS`) is every key :meth:`Coverage.to_dict` writes, with
what it counts; a report that gives part of it (``generate``'s before/after coverage,
:data:`SUMMARY_KEYS`, through :meth:`Coverage.summary`) uses the same keys with the same
meanings: ``units`` is every unit, weightless ones included; ``weighted_units`` the units of
positive mass, MSC's denominator (``covered / weighted_units`` = MSC).

``n_min`` defaults to :data:`DEFAULT_N_MIN` = 5: below 5 queries a stratum's t interval has
fewer than 4 degrees of freedom (t₀.₉₇₅ > 2.78) and says little, and 5 is the usual minimum cell
count for normal approximations.  It is configurable; ``n_min`` < 1 is an :class:`InputError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError
from .cells import GRID, CellGrid
from .strata import QueryStrata, check_scheme, mass_array

__all__ = ["DEFAULT_N_MIN", "COVERAGE_KEYS", "SUMMARY_KEYS", "Gap", "Coverage", "check_n_min",
           "cluster_coverage", "cell_coverage", "strata_coverage", "RecordedCoverage"]

#: Default minimum number of queries for a cluster (or cell) to count as sufficiently covered.
DEFAULT_N_MIN = 5

#: The coverage schema: every key of :meth:`Coverage.to_dict`, in its order, and what it holds.
#: One owner: a report giving part of a coverage takes these keys (:meth:`Coverage.summary`).
COVERAGE_KEYS = {
    "level": "the units: 'cluster' or 'cell'",
    "msc": "covered / weighted_units (module docstring)",
    "scc": "the corpus mass of the units holding at least n_min queries",
    "n_min": "the queries a unit needs to count in SCC",
    "units": "every unit (clusters or cells), weightless ones included",
    "weighted_units": "the units of positive mass: MSC's denominator",
    "weightless": "the units of mass 0 (no document's own stratum), left out of MSC",
    "weightless_queries": "the queries whose unit has mass 0",
    "covered": "the units of positive mass holding a query: MSC's numerator",
    "sufficient": "the units holding at least n_min queries",
    "uncovered_mass": "the corpus mass of the units without a query",
    "gaps": "how many units of positive mass hold no query",
    "top_gaps": "the heaviest gaps: [{stratum, mass, label}]",
}

#: The part of the schema a before/after coverage report gives per level (``generate``'s
#: ``coverage.json`` ``before`` and ``after``): :meth:`Coverage.summary` of these keys.
SUMMARY_KEYS = {
    "cluster": ("msc", "scc", "covered", "weighted_units", "weightless", "uncovered_mass"),
    "cell": ("msc", "scc", "covered", "weighted_units"),
}


@dataclass(frozen=True)
class Gap:
    """A cluster (or cell) without queries, with its corpus mass and label."""

    stratum: object
    mass: float
    label: str | None = None


@dataclass(frozen=True, eq=False)
class Coverage:
    """Coverage of ``units`` (clusters or cells) by a query set.

    ``query_counts`` and ``mass`` are aligned with ``units``; ``mass`` is normalised to sum 1.
    MSC, ``covered`` and ``weighted_units`` count only the units of positive mass; the others
    are ``weightless``.
    """

    level: str
    msc: float
    scc: float
    n_min: int
    units: tuple
    query_counts: np.ndarray
    mass: np.ndarray
    gaps: tuple

    @property
    def n_units(self) -> int:
        return len(self.units)

    @property
    def weighted_units(self) -> int:
        """Units of positive mass: MSC's denominator."""
        return int(np.count_nonzero(self.mass > 0))

    @property
    def covered(self) -> int:
        """Units of positive mass with at least one query: MSC's numerator."""
        return int(np.count_nonzero(self.query_counts[self.mass > 0]))

    @property
    def weightless(self) -> int:
        """Units of mass 0 (no document's own stratum), left out of MSC."""
        return int(np.count_nonzero(self.mass <= 0))

    @property
    def weightless_queries(self) -> int:
        """Queries whose unit has mass 0 (they count in no weighted estimate)."""
        return int(self.query_counts[self.mass <= 0].sum())

    @property
    def sufficient(self) -> int:
        """Units with at least ``n_min`` queries."""
        return int(np.count_nonzero(self.query_counts >= self.n_min))

    @property
    def uncovered_mass(self) -> float:
        """Corpus mass of the units without queries."""
        return float(self.mass[self.query_counts == 0].sum())

    def to_dict(self, top_gaps: int | None = 20) -> dict:
        """Every key of the coverage schema (:data:`COVERAGE_KEYS`), in its order;
        ``top_gaps``: the gaps listed (None: all)."""
        gaps = self.gaps if top_gaps is None else self.gaps[:top_gaps]
        return {"level": self.level, "msc": self.msc, "scc": self.scc, "n_min": self.n_min,
                "units": self.n_units, "weighted_units": self.weighted_units,
                "weightless": self.weightless, "weightless_queries": self.weightless_queries,
                "covered": self.covered, "sufficient": self.sufficient,
                "uncovered_mass": self.uncovered_mass, "gaps": len(self.gaps),
                "top_gaps": [{"stratum": g.stratum, "mass": g.mass, "label": g.label}
                             for g in gaps]}

    def summary(self, keys=None) -> dict:
        """``{key: value}`` of the schema keys ``keys`` (default: :data:`SUMMARY_KEYS` of this
        level), in that order, with the meanings of :meth:`to_dict`."""
        keys = SUMMARY_KEYS[self.level] if keys is None else tuple(keys)
        unknown = [k for k in keys if k not in COVERAGE_KEYS]
        if unknown:
            raise InputError(f"not keys of the coverage schema: {', '.join(unknown)}",
                             fix=f"choose among {', '.join(COVERAGE_KEYS)}")
        full = self.to_dict(top_gaps=0)
        return {k: full[k] for k in keys}


def check_n_min(n_min) -> int:
    if isinstance(n_min, bool) or not float(n_min).is_integer() or n_min < 1:
        raise InputError(f"n_min must be an integer ≥ 1, got {n_min!r}",
                         fix=f"e.g. n_min={DEFAULT_N_MIN} (the default)")
    return int(n_min)


def _mass(cluster_mass, n_clusters: int | None = None) -> np.ndarray:
    w = mass_array(cluster_mass, n_clusters)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InputError("cluster_mass must be a non-empty 1-D array of finite masses ≥ 0, not "
                         "all 0", fix="use ClusterWeights.corpus_mass() of the structure")
    return w


def _primary(primary, C: int) -> np.ndarray:
    p = np.asarray(primary)
    if p.size and (p.dtype.kind not in "iu" or p.min() < 0 or p.max() >= C):
        raise InputError(f"primary clusters must be integers in [0, {C})",
                         fix="the queries were stratified with a different structure")
    return p.astype(np.int64).ravel()


def _label(labels, c: int) -> str | None:
    if labels is None:
        return None
    if isinstance(labels, Mapping):
        return labels.get(c)
    return labels[c] if c < len(labels) else None


def cluster_coverage(primary, cluster_mass, *, n_min: int = DEFAULT_N_MIN,
                     labels: Mapping | Sequence | None = None) -> Coverage:
    """MSC, SCC and the gap list over clusters (formulas: module docstring).

    ``primary``: each query's primary cluster; ``cluster_mass``: (C,) corpus mass (or
    ``{cluster: mass}``);
    ``labels``: cluster labels (mapping or sequence) for the gap list.
    """
    n_min = check_n_min(n_min)
    w = _mass(cluster_mass)
    C = len(w)
    counts = np.bincount(_primary(primary, C), minlength=C)
    w = w / w.sum()
    possible = w > 0
    empty = np.flatnonzero((counts == 0) & possible)
    order = empty[np.argsort(-w[empty], kind="stable")]
    gaps = tuple(Gap(int(c), float(w[c]), _label(labels, int(c))) for c in order)
    msc = float(np.count_nonzero(counts[possible]) / np.count_nonzero(possible))
    return Coverage("cluster", msc, float(w[counts >= n_min].sum()), n_min, tuple(range(C)),
                    counts, w, gaps)


def _allowed(grid: CellGrid, quantity: str) -> str:
    levels = grid.dispersion_levels if quantity == "dispersion" else grid.alignment_levels
    return f"{'/'.join(str(i) for i in range(len(levels)))} ({'/'.join(levels)})"


def cell_coverage(primary, dispersion_bin, alignment_bin, cluster_mass, *,
                  n_min: int = DEFAULT_N_MIN, cell_shares=None,
                  labels: Mapping | Sequence | None = None, grid: CellGrid = GRID) -> Coverage:
    """MSC, SCC and gaps over the cells (cluster, Δ bin, J bin) (module docstring).

    ``cell_shares``: (C, n_Δ, n_J) within-cluster shares (rows normalised); default equal.
    Cells are labelled ``(c, Δ level, J level)`` by ``grid`` (:mod:`.cells`).
    """
    n_min = check_n_min(n_min)
    w = _mass(cluster_mass)
    C = len(w)
    k = grid.per_cluster
    p = _primary(primary, C)
    db = np.asarray(dispersion_bin).astype(np.int64).ravel()
    ab = np.asarray(alignment_bin).astype(np.int64).ravel()
    if not (len(db) == len(ab) == len(p)):
        raise InputError(f"{len(p)} primary clusters, {len(db)} Δ bins, {len(ab)} J bins",
                         fix="pass one entry per query in each array")
    if len(p) and (db.min() < 0 or db.max() >= grid.n_dispersion or ab.min() < 0
                   or ab.max() >= grid.n_alignment):
        raise InputError(f"bins must be {_allowed(grid, 'dispersion')} for Δ and "
                         f"{_allowed(grid, 'alignment')} for J, for every query",
                         fix="compute J for every query (query and document entities), and "
                             "pass the grid of the bins the strata used (grid=strata.grid)")
    if cell_shares is None:
        share = np.full((C, k), 1 / k)
    else:
        share = np.asarray(cell_shares, dtype=np.float64)
        if share.shape != (C, *grid.shape) or np.any(share < 0) or \
                not np.all(np.isfinite(share)):
            raise InputError(f"cell_shares must be a non-negative {(C, *grid.shape)} array, got "
                             f"shape {share.shape}", fix="one share table per cluster")
        share = share.reshape(C, k)
        tot = share.sum(axis=1, keepdims=True)
        share = np.where(tot > 0, share / np.where(tot > 0, tot, 1), 1 / k)
    mass = (w[:, None] * share).ravel()
    mass = mass / mass.sum()
    counts = np.bincount(grid.encode(p, db, ab), minlength=grid.n_cells(C))
    possible = mass > 0
    units = grid.all_labels(C)
    empty = np.flatnonzero((counts == 0) & possible)
    order = empty[np.argsort(-mass[empty], kind="stable")]
    gaps = tuple(Gap(units[i], float(mass[i]), _label(labels, int(grid.cluster_of(int(i)))))
                 for i in order)
    msc = float(np.count_nonzero(counts[possible]) / max(np.count_nonzero(possible), 1))
    return Coverage("cell", msc, float(mass[counts >= n_min].sum()), n_min, units, counts, mass,
                    gaps)


def strata_coverage(strata: QueryStrata, cluster_mass, *, scheme: str = "cluster",
             n_min: int = DEFAULT_N_MIN, labels: Mapping | Sequence | None = None,
             cell_shares=None) -> Coverage:
    """Coverage of a :class:`QueryStrata` at cluster (``scheme="cluster"``) or cell level."""
    check_scheme(scheme)
    n_min = check_n_min(n_min)
    cluster_mass = _mass(cluster_mass, strata.n_clusters)
    if len(cluster_mass) != strata.n_clusters:
        raise InputError(f"cluster_mass has {len(cluster_mass)} clusters, the strata "
                         f"{strata.n_clusters}", fix="use the structure the strata came from")
    if scheme == "cluster":
        return cluster_coverage(strata.primary, cluster_mass, n_min=n_min, labels=labels)
    if not strata.has_alignment:
        raise InputError("cell coverage needs the alignment J, which was not computed",
                         fix="pass query_entities and doc_entities to stratify(), or use "
                             "scheme='cluster'")
    return cell_coverage(strata.primary, strata.dispersion_bin, strata.alignment_bin,
                         cluster_mass, n_min=n_min, cell_shares=cell_shares, labels=labels,
                         grid=strata.grid)


#: The figures of a coverage block that :class:`RecordedCoverage` keeps as recorded.
_COVERAGE_COUNTS = ("units", "weighted_units", "weightless", "weightless_queries", "covered",
                    "sufficient", "uncovered_mass", "gaps")


@dataclass(frozen=True, eq=False)
class RecordedCoverage(Coverage):
    """A :class:`Coverage` as a results file records it
    (:meth:`from_dict`): ``level``, ``msc``, ``scc``, ``n_min`` and every count as written;
    ``gaps`` holds the listed gaps only (``n_gaps``: all of them).  The per-unit arrays are
    not in the JSON: ``units``, ``query_counts`` and ``mass`` are empty."""

    recorded: Mapping = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "recorded", MappingProxyType(dict(self.recorded)))

    @property
    def n_units(self) -> int:
        return self.recorded["units"]

    @property
    def weighted_units(self) -> int:
        return self.recorded["weighted_units"]

    @property
    def covered(self) -> int:
        return self.recorded["covered"]

    @property
    def weightless(self) -> int:
        return self.recorded["weightless"]

    @property
    def weightless_queries(self) -> int:
        return self.recorded["weightless_queries"]

    @property
    def sufficient(self) -> int:
        return self.recorded["sufficient"]

    @property
    def uncovered_mass(self) -> float:
        return self.recorded["uncovered_mass"]

    @property
    def n_gaps(self) -> int:
        """Every gap, listed or not."""
        return self.recorded["gaps"]

    def to_dict(self, top_gaps: int | None = 20) -> dict:
        """The JSON form (:meth:`Coverage.to_dict`, the gap count as recorded)."""
        d = super().to_dict(top_gaps)
        d["gaps"] = self.n_gaps
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> "RecordedCoverage":
        """The coverage block :meth:`Coverage.to_dict` wrote."""
        gaps = tuple(Gap(tuple(g["stratum"]) if isinstance(g["stratum"], list) else g["stratum"], g["mass"], g["label"])
                     for g in d["top_gaps"])
        return cls(d["level"], d["msc"], d["scc"], d["n_min"], (), np.zeros(0, int),
                   np.zeros(0), gaps, {k: d[k] for k in _COVERAGE_COUNTS})
