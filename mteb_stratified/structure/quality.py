"""Cluster quality figures anyone can rerun on an artifact (ours; stored in ``metadata.json``).

A cluster's **top entities** are its 10 entities found in the most documents (ties by name):
the ones that carry its mass, as a topic model's top words do.

* **generic mass share**: the share of the stratum weight (clusters table ``mass``) that lies in
  *generic clusters*, a cluster being generic when at least half of its top entities are
  generic phrases by the corpus' generic-phrase test (:mod:`.specificity`);
* **topic coherence** NPMI (Bouma 2009; Lau, Newman & Baldwin, EACL 2014) of a cluster's top
  entities over the corpus documents, with p(e) the share of documents containing e::

      NPMI(e, f) = ln(p(e, f) / (p(e) p(f))) / (−ln p(e, f)),   −1 when p(e, f) = 0

  averaged over the pairs of a cluster, then over clusters weighted by stratum weight;
* **grab-bag mass share**: the share of the stratum weight in clusters whose top entities
  co-occur in documents no more than independent ones would (mean NPMI ≤ 0): "blood / mutant /
  mitosis / organ / reason".  Measured on the documents, not by the rule that built the
  clusters, so it is not 0 by construction (the generic mass share is, when generic phrases
  are left out of the clusters: then it only checks the filter);
* the same NPMI and grab-bag share for every **level of the cluster tree** (its units' top
  entities, weighted by their stratum weight): the coherence of the strata a report shows;
* **seed stability**: the adjusted Rand index (Hubert & Arabie 1985) of the document → own
  stratum assignment between Leiden runs with two seeds;
* the **heaviest clusters** with their labels, weights, NPMI and generic share.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adjusted_rand", "npmi", "cluster_quality", "top_entities", "GENERIC_TOP",
           "GENERIC_SHARE", "coherence"]

#: Top entities judged per cluster, and the generic share from which a cluster is generic.
GENERIC_TOP = 10
GENERIC_SHARE = 0.5


def adjusted_rand(a, b) -> float:
    """ARI of two labelings of the same items (1: identical partitions, ~0: chance)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("two labelings of the same items are needed")
    n = a.size
    if n < 2:
        return 1.0
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1), dtype=np.float64)
    np.add.at(table, (ai, bi), 1)

    def pairs(x):
        return float((x * (x - 1) / 2).sum())

    s = pairs(table)
    sa, sb = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    expected = sa * sb / (n * (n - 1) / 2)
    top = 0.5 * (sa + sb)
    return 1.0 if top == expected else (s - expected) / (top - expected)


def npmi(top: list, doc_sets: dict, n_docs: int) -> float:
    """Mean NPMI over the pairs of ``top`` (module docstring); NaN with fewer than 2."""
    vals = []
    for i in range(len(top)):
        a = doc_sets.get(top[i], frozenset())
        for j in range(i + 1, len(top)):
            b = doc_sets.get(top[j], frozenset())
            both = len(a & b)
            if both == 0:
                vals.append(-1.0)
                continue
            pab = both / n_docs
            if pab >= 1.0:
                vals.append(1.0)
                continue
            vals.append(math.log(pab / ((len(a) / n_docs) * (len(b) / n_docs))) / -math.log(pab))
    return float(np.mean(vals)) if vals else float("nan")


def top_entities(entities: list, top: int = GENERIC_TOP) -> dict:
    """``{cluster: its top entities}`` from entity rows (``name``, ``cluster``, ``doc_freq``)."""
    by: dict = {}
    for r in entities:
        if int(r["cluster"]) >= 0:
            by.setdefault(int(r["cluster"]), []).append((-int(r["doc_freq"]), r["name"]))
    return {c: [n for _, n in sorted(v)[:top]] for c, v in by.items()}


def coherence(units, doc_sets: dict, n_docs: int) -> dict:
    """Weighted NPMI and grab-bag share of ``units`` (``(top entities, weight)`` pairs)."""
    scored = [(npmi(top, doc_sets, n_docs), float(w)) for top, w in units]
    scored = [(v, w) for v, w in scored if not math.isnan(v)]
    total = sum(w for _, w in scored)
    if not total:
        return {"npmi_weighted": float("nan"), "grab_bag_mass_share": float("nan"), "units": 0}
    return {"npmi_weighted": sum(v * w for v, w in scored) / total,
            "grab_bag_mass_share": sum(w for v, w in scored if v <= 0) / total,
            "units": len(scored)}


def cluster_quality(clusters: list, entities: list, doc_entities: dict, texts: dict, *,
                    generic_test=None, heaviest: int = 15, levels: list = ()) -> dict:
    """The quality figures of a structure's clusters (JSON-ready; module docstring).

    ``clusters``: the clusters table rows (``id``, ``label``, ``mass``); ``entities``: the
    entity rows (``name``, ``cluster``, ``doc_freq``); ``doc_entities``: ``{doc_id: names}``;
    ``texts``: the corpus texts, for the generic-phrase test (or pass a fitted
    ``generic_test``).
    """
    from .specificity import GenericTest, WordStats

    n_docs = len(texts)
    if generic_test is None:
        generic_test = GenericTest(WordStats.of_texts(texts[d] for d in sorted(texts)))
    tops = top_entities(entities)
    # the documents of the entities NPMI is taken over (the top ones): not of every entity
    wanted = {e for top in tops.values() for e in top}
    wanted.update(e for r in levels for e in r.get("top_entities", []))
    doc_sets: dict = {}
    for d, names in doc_entities.items():
        for e in names:
            if e in wanted:
                doc_sets.setdefault(e, set()).add(d)
    rows = []
    for c in clusters:
        top = tops.get(int(c["id"]), [])
        share = float(np.mean([generic_test.is_generic(n) for n in top])) if top else 0.0
        rows.append({"id": int(c["id"]), "label": c.get("label", ""), "mass": float(c["mass"]),
                     "npmi": npmi(top, doc_sets, n_docs), "generic_share": share,
                     "generic": share >= GENERIC_SHARE})
    total = sum(r["mass"] for r in rows)
    scored = [r for r in rows if not math.isnan(r["npmi"])]
    wsum = sum(r["mass"] for r in scored)
    rows_by_mass = sorted(rows, key=lambda r: (-r["mass"], r["id"]))
    by_level: dict = {}
    for r in levels:
        by_level.setdefault(int(r["level"]), []).append((r.get("top_entities", []), r["mass"]))
    tree = {str(lvl): coherence(units, doc_sets, n_docs) | {"n_units": len(units)}
            for lvl, units in sorted(by_level.items())}
    grab = coherence([(tops.get(int(c["id"]), []), c["mass"]) for c in clusters], doc_sets,
                     n_docs)
    return {
        "grab_bag_mass_share": grab["grab_bag_mass_share"],
        "levels": tree,
        "generic_mass_share": (sum(r["mass"] for r in rows if r["generic"]) / total
                               if total else 0.0),
        "npmi_weighted": (sum(r["mass"] * r["npmi"] for r in scored) / wsum if wsum
                          else float("nan")),
        "npmi_median": float(np.median([r["npmi"] for r in scored])) if scored
        else float("nan"),
        "clusters": len(rows),
        "rule": (f"generic cluster: at least {GENERIC_SHARE:.0%} of its {GENERIC_TOP} top "
                 f"entities are generic phrases (every word with RIDF < "
                 f"{generic_test.max_ridf} bits and in >= {generic_test.min_doc_share:.0%} of "
                 "the documents; 0 by construction when generic phrases are left out of the "
                 "clusters); top entities: the 10 in the most documents; NPMI over the corpus "
                 "documents, weighted by stratum weight; grab bag: mean NPMI <= 0; levels: the "
                 "cluster tree's units"),
        "heaviest": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                     for r in rows_by_mass[:heaviest]],
    }
