"""Independent pure-Python reference implementations for the core's tests.

Written from trec_eval's definitions, not from the core: one ranked list of grades in, one
number out.  Nothing here imports ``mteb_stratified``.

* ``grade`` of a retrieved document: its qrels judgment, ``None`` when unjudged;
* relevant: judged and ``grade >= level`` (unjudged never relevant);
* ``R``: number of judged documents of the query (retrieved or not) with ``grade >= level``;
* gain: ``grade`` (``dcg='log2'``) or ``2**grade - 1`` (``'exp-log2'``) when ``grade > 0``, else 0;
* ``DCG@k = sum_{p<=k} gain(p) / log2(p + 1)``; ``IDCG@k`` from the ideal order of all judged
  grades of the query (``ideal='qrels'``) or of the candidates only (``ideal='candidates'``);
* no cutoff = the whole list.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections import Counter
from dataclasses import dataclass

__all__ = ["Query", "RefMeasure", "ref_value", "brute_force", "tie_groups_of",
           "trec_eval_ranking", "float32", "MEASURE_SPECS"]


def float32(x: float) -> float:
    """Round a Python float to the nearest float32 (what trec_eval stores); beyond the float32
    range it overflows to +-inf, as a C cast does."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # struct refuses to overflow; a C (float) cast gives +-inf
        return math.copysign(math.inf, x)


@dataclass(frozen=True)
class RefMeasure:
    """Reference measure: family name, cutoff (None = whole list), dcg kind, rel level (None = default)."""

    name: str  # nDCG RR R P AP Success
    k: int | None = None
    dcg: str = "log2"
    rel: int | None = None

    def text(self) -> str:
        s = self.name
        if self.name == "nDCG" and self.dcg != "log2":
            s += f"(dcg='{self.dcg}')"
        elif self.rel is not None:
            s += f"(rel={self.rel})"
        if self.k is not None:
            s += f"@{self.k}"
        return s


MEASURE_SPECS = ("nDCG", "RR", "R", "P", "AP", "Success")


@dataclass(frozen=True)
class Query:
    """One query: candidates ``docs`` with ``scores`` and ``grades`` (None = unjudged) and all
    judged grades of the query in ``qrels`` (a dict doc -> grade, retrieved or not)."""

    docs: tuple
    scores: tuple
    qrels: dict

    def grade(self, doc):
        return self.qrels.get(doc)


def _gain(g, dcg: str) -> float:
    if g is None or g <= 0:
        return 0.0
    return float(g) if dcg == "log2" else 2.0 ** g - 1.0


def _dcg(grades, k, dcg):
    top = grades if k is None else grades[:k]
    return sum(_gain(g, dcg) / math.log2(p + 1) for p, g in enumerate(top, start=1))


def ref_value(m: RefMeasure, ranked, qrels_grades, cand_grades, level, ideal="qrels") -> float:
    """Value of measure ``m`` for the ranked grades ``ranked`` (None = unjudged)."""
    lv = level if m.rel is None else m.rel
    rel = [g is not None and g >= lv for g in ranked]
    n_rel = sum(1 for g in qrels_grades if g >= lv)
    k = m.k
    top = rel if k is None else rel[:k]
    if m.name == "nDCG":
        pool = qrels_grades if ideal == "qrels" else [g for g in cand_grades if g is not None]
        ideal_grades = sorted(pool, reverse=True)
        idcg = _dcg(ideal_grades, k, m.dcg)
        return _dcg(list(ranked), k, m.dcg) / idcg if idcg > 0 else 0.0
    if m.name == "P":
        return sum(top) / k
    if m.name == "R":
        return sum(top) / n_rel if n_rel else 0.0
    if m.name == "AP":
        if not n_rel:
            return 0.0
        hits, total = 0, 0.0
        for p, r in enumerate(top, start=1):
            if r:
                hits += 1
                total += hits / p
        return total / n_rel
    if m.name == "RR":
        for p, r in enumerate(top, start=1):
            if r:
                return 1.0 / p
        return 0.0
    if m.name == "Success":
        return 1.0 if any(top) else 0.0
    raise ValueError(m.name)


def tie_groups_of(docs, scores):
    """Tie groups (lists of docs) in descending score order; exact float equality."""
    by_score: dict = {}
    for d, s in zip(docs, scores):
        by_score.setdefault(s, []).append(d)
    return [by_score[s] for s in sorted(by_score, reverse=True)]


def trec_eval_ranking(docs, scores):
    """trec_eval's order: float32 score descending, then doc id descending (byte order)."""
    pairs = sorted(zip(docs, scores), key=lambda ds: (float32(ds[1]), ds[0].encode("utf-8")),
                   reverse=True)
    return [d for d, _ in pairs]


def brute_force(query: Query, measures, level, ideal="qrels"):
    """Enumerate every ordering of every tie group (product over groups of permutations).

    Returns ``(expected, min, max)``: lists aligned with ``measures``.  The mean is taken over
    all orderings (each distinct grade sequence weighted by how many orderings produce it).
    """
    groups = tie_groups_of(query.docs, query.scores)
    counts: Counter = Counter()
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        counts[tuple(query.grade(d) for grp in choice for d in grp)] += 1
    total = sum(counts.values())
    qrels_grades = list(query.qrels.values())
    cand_grades = [query.grade(d) for d in query.docs]
    exp, lo, hi = [], [], []
    values = {seq: [ref_value(m, seq, qrels_grades, cand_grades, level, ideal) for m in measures]
              for seq in counts}
    for j in range(len(measures)):
        col = [(values[seq][j], c) for seq, c in counts.items()]
        exp.append(math.fsum(v * c for v, c in col) / total)
        lo.append(min(v for v, _ in col))
        hi.append(max(v for v, _ in col))
    return exp, lo, hi
