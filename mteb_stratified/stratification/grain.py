"""The evaluated strata of a query set: the structure's cluster tree cut so that every stratum
holds at least ``min_queries`` queries, as evenly as the tree allows (rules:
:mod:`mteb_stratified.core.stats.hierarchy`; ``cut="even"``, the default since issue #45, or
``"greedy"``, the bottom-up rule before it).

Estimates and chance tests use these strata; coverage (MSC, SCC) and the gap list stay at the
fine clusters.  A stratum is a unit of the tree, written ``L<level>.<unit>`` (level 0: the
fine cluster ``c<id>``), with ``(rest)`` when some of its clusters formed strata of their own
and ``+`` when it also took in clusters left over at the top (each joins its nearest stratum
in the tree).

* :func:`evaluated_strata` — the cut, the coarse :class:`~mteb_stratified.core.QueryStrata`,
  labels and weights;
* :func:`cell_strata` — the ``cell`` scheme at that grain: evaluated stratum × Δ bin × J bin,
  where a cell with fewer than ``min_queries`` queries joins the rest of its stratum, and a rest
  still short of ``min_queries`` joins the stratum's largest cell (so every cell stratum holds
  at least ``min_queries`` queries when its stratum does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..core import InputError, QueryStrata, StratifiedDesign
from ..core.stats.hierarchy import DEFAULT_MIN_QUERIES, TreeCut, check_min_queries
from ..core.stats.hierarchy import cut as cut_by

__all__ = ["EvaluatedStrata", "Grain", "GrainStratum", "evaluated_strata", "cell_strata",
           "estimation_design", "unit_name", "DEFAULT_MIN_QUERIES", "DEFAULT_CUT"]

#: The rule that cuts the tree: the most even strata it allows.  Chosen on NFCorpus dev, where it
#: costs no power (paired max-|z| at a gap of 0.10 in 20% of the queries, 1,000 draws: 0.71,
#: 0.77 and 0.87 at --min-queries 30, 40 and 50 under either rule) and gives strata of more even
#: size (docs/validity/strata-power.md).
DEFAULT_CUT = "even"


def unit_name(level: int, unit: int) -> str:
    """``c12`` for a fine cluster, ``L5.0`` for a unit of level 5."""
    return f"c{unit}" if level == 0 else f"L{level}.{unit}"


@dataclass(frozen=True)
class GrainStratum:
    """One evaluated stratum of a :class:`Grain`.

    Attributes
    ----------
    stratum : its index; name : ``L5.0 (rest)+``; label : the unit's top entities ("" none).
    level, unit : the tree node it stands for; rest : some of the node's clusters form strata
        of their own; absorbed : it took in clusters left over at the top.
    n : its queries; weight : its corpus weight; clusters : its fine clusters (a tuple).
    """

    stratum: int
    name: str
    label: str
    level: int
    unit: int
    rest: bool
    absorbed: bool
    n: int
    weight: float
    clusters: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(self.clusters))

    def to_dict(self) -> dict:
        """The JSON form (the keys of the ``grain.strata`` rows, in their order)."""
        return {"stratum": self.stratum, "name": self.name, "label": self.label,
                "level": self.level, "unit": self.unit, "rest": self.rest,
                "absorbed": self.absorbed, "n": self.n, "weight": self.weight,
                "clusters": list(self.clusters)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "GrainStratum":
        """The row :meth:`to_dict` wrote."""
        return cls(d["stratum"], d["name"], d["label"], d["level"], d["unit"], d["rest"],
                   d["absorbed"], d["n"], d["weight"], tuple(d["clusters"]))


@dataclass(frozen=True)
class Grain:
    """The evaluated grain in words and numbers (:meth:`EvaluatedStrata.grain`).

    Attributes
    ----------
    min_queries : the least queries of a stratum (``--min-queries``); start_level : the tree
        level the cut starts from; cut : the rule (:data:`DEFAULT_CUT` or ``"greedy"``).
    n_strata : the evaluated strata; levels : the tree levels they come from (sorted);
        short : fewer queries than ``min_queries`` (one stratum); n_queries : queries per
        stratum; why : the cut in words.
    strata : one :class:`GrainStratum` per evaluated stratum.
    """

    min_queries: int
    start_level: int
    cut: str
    n_strata: int
    levels: tuple
    short: bool
    n_queries: tuple
    why: str
    strata: tuple

    def __post_init__(self) -> None:
        for name in ("levels", "n_queries", "strata"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_dict(self) -> dict:
        """The JSON form (the block's ``grain``, keys in their order)."""
        return {"min_queries": self.min_queries, "start_level": self.start_level,
                "cut": self.cut, "n_strata": self.n_strata, "levels": list(self.levels),
                "short": self.short, "n_queries": list(self.n_queries), "why": self.why,
                "strata": [s.to_dict() for s in self.strata]}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Grain":
        """The grain :meth:`to_dict` wrote."""
        return cls(d["min_queries"], d["start_level"], d["cut"], d["n_strata"],
                   tuple(d["levels"]), d["short"], tuple(d["n_queries"]), d["why"],
                   tuple(GrainStratum.from_dict(s) for s in d["strata"]))


@dataclass(frozen=True, eq=False)
class EvaluatedStrata:
    """The strata a query set is estimated and tested on (module docstring).

    ``fine``: the queries' strata over the fine clusters; ``strata``: the same queries over the
    evaluated strata (``primary`` = stratum index); ``cut``; ``names[s]`` (``L5.0 (rest)``),
    ``labels[s]`` (the unit's top entities) and ``weights[s]`` (the sum of its fine clusters'
    stratum weights); ``fine_weights[c]``: fine cluster c's stratum weight.
    """

    fine: QueryStrata
    strata: QueryStrata
    cut: TreeCut
    names: tuple
    labels: tuple
    weights: np.ndarray
    fine_weights: np.ndarray
    rule: str = DEFAULT_CUT

    @property
    def n_strata(self) -> int:
        return self.cut.n_strata

    def mass(self) -> dict:
        return {s: float(w) for s, w in enumerate(self.weights)}

    def label(self, s: int) -> str:
        """``L5.0 (rest): cancer / cardiovascular disease / fruit``."""
        text = self.labels[s]
        return f"{self.names[s]}: {text}" if text else self.names[s]

    def describe(self) -> dict:
        """The grain in words and numbers, JSON-ready: :meth:`grain` as a dict."""
        return self.grain().to_dict()

    def grain(self) -> Grain:
        """The grain in words and numbers (a :class:`Grain`), for the block and the report."""
        cut = self.cut
        levels = sorted(set(cut.levels()))
        if cut.short:
            why = (f"the {self.fine.n_queries} queries are fewer than --min-queries "
                   f"{cut.min_queries}: one stratum, nothing to test across strata")
        elif self.rule == "greedy":
            why = (f"each fine cluster is merged into its parent in the cluster tree until the "
                   f"stratum holds ≥ {cut.min_queries} queries (--min-queries); level 0 is "
                   f"the {self.fine.n_clusters} fine clusters, the top level the whole corpus")
        else:
            why = (f"the cluster tree cut into the most even strata it allows that each hold "
                   f"≥ {cut.min_queries} queries (--min-queries; least Σ n², a stratum is a "
                   f"unit of the tree less the units below it that form their own); level 0 "
                   f"is the {self.fine.n_clusters} fine clusters, the top level the whole "
                   "corpus")
        return Grain(cut.min_queries, cut.start, self.rule, cut.n_strata, tuple(levels),
                     cut.short, tuple(int(x) for x in cut.n_queries), why,
                     tuple(GrainStratum(s, self.names[s], self.labels[s], lvl, u, r,
                                        bool(cut.absorbed[s]), int(n), float(self.weights[s]),
                                        tuple(np.flatnonzero(cut.stratum == s).tolist()))
                           for s, ((lvl, u), r, n) in enumerate(zip(cut.nodes, cut.rest,
                                                                    cut.n_queries))))


def evaluated_strata(strata: QueryStrata, artifact, *, min_queries: int = DEFAULT_MIN_QUERIES,
                     level: int = 0, cut: str = DEFAULT_CUT) -> EvaluatedStrata:
    """Cut ``artifact``'s cluster tree for the query counts of ``strata`` (module docstring).

    ``level``: the finest level the cut starts from (0: the fine clusters); a level the tree
    does not have is an :class:`InputError` naming the valid range.  ``cut``: ``"even"`` or
    ``"greedy"`` (:func:`mteb_stratified.core.stats.hierarchy.cut`).
    """
    m = check_min_queries(min_queries)
    tree = artifact.cluster_tree
    if tree.n_clusters != strata.n_clusters:
        raise InputError(f"the cluster tree has {tree.n_clusters} clusters, the strata "
                         f"{strata.n_clusters}", fix="stratify with the same structure artifact")
    counts = np.bincount(strata.primary, minlength=strata.n_clusters).astype(np.int64)
    rule = cut
    cut = cut_by(tree, counts, m, start=tree.check_level(level), rule=rule)
    mass = np.array([artifact.cluster_mass.get(c, 0.0) for c in range(strata.n_clusters)])
    weights = np.bincount(cut.stratum, weights=mass, minlength=cut.n_strata)
    names = tuple(unit_name(lvl, u) + (" (rest)" if r else "") + ("+" if a else "")
                  for (lvl, u), r, a in zip(cut.nodes, cut.rest, cut.absorbed))
    labels = tuple(artifact.unit_label(lvl, u) or "" for lvl, u in cut.nodes)
    return EvaluatedStrata(strata, strata.coarsen(cut.stratum, cut.n_strata), cut, names,
                           labels, weights, mass, rule)


def cell_strata(ev: EvaluatedStrata) -> tuple[list, dict]:
    """``(labels, weights)`` of the cell scheme at the evaluated grain (module docstring):
    one label ``(s, Δ level, J level)`` per query (``"rest"`` for pooled cells) and each
    label's weight W_s · n_cell / n_s."""
    st = ev.strata
    if not st.has_alignment:
        raise InputError("the 'cell' scheme needs the alignment J, which was not computed",
                         fix="pass query_entities and doc_entities to stratify(), or use "
                             "scheme='cluster'")
    m = ev.cut.min_queries
    grid = st.grid
    db, ab = st.dispersion_bin, st.alignment_bin
    cells = [(int(s), grid.level("dispersion", d), grid.level("alignment", a))
             for s, d, a in zip(st.primary.tolist(), db.tolist(), ab.tolist())]
    counts: dict = {}
    for c in cells:
        counts[c] = counts.get(c, 0) + 1
    out = list(cells)
    for s in range(ev.n_strata):
        own = {c: n for c, n in counts.items() if c[0] == s}
        keep = {c for c, n in own.items() if n >= m}
        rest = sum(n for c, n in own.items() if c not in keep)
        target = (s, "rest", "rest")
        if keep and 0 < rest < m:   # a short rest joins the stratum's largest cell
            target = max(keep, key=lambda c: (own[c], str(c)))
        elif not keep:
            target = (s, "all", "all")
        for i, c in enumerate(cells):
            if c[0] == s and c not in keep:
                out[i] = target
    n_s = np.bincount(st.primary, minlength=ev.n_strata)
    weights: dict = {}
    for lab in out:
        weights[lab] = weights.get(lab, 0.0) + ev.weights[lab[0]] / max(n_s[lab[0]], 1)
    return out, weights


def estimation_design(ev: EvaluatedStrata, scheme: str) -> StratifiedDesign:
    """The estimation design at the evaluated grain: a stratum per tree node (``cluster``), or
    per cell of it (``cell``, :func:`cell_strata`)."""
    if scheme == "cluster":
        return StratifiedDesign.from_strata(ev.strata, ev.mass(), scheme="cluster")
    labels, weights = cell_strata(ev)
    return StratifiedDesign.from_labels(labels, weights, queries=ev.strata.queries,
                                        scheme="cell",
                                        excluded=[e.qid for e in ev.strata.excluded])
