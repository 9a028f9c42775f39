"""Cluster quality figures anyone can rerun on an artifact (ours; stored in ``metadata.json``).

A cluster's **terms** are its 10 most distinctive terms by class-based TF-IDF (:mod:`.terms`);
its **top entities** are its 10 entities found in the most documents (ties by name), kept for
provenance and measured beside the terms ("the old labels").

* **topic coherence**: NPMI (Bouma 2009; Lau, Newman & Baldwin, EACL 2014) of a cluster's terms
  over the corpus documents (document co-occurrence: one window per document), as Röder, Both &
  Hinneburg (WSDM 2015) define it and gensim's ``CoherenceModel(coherence="c_npmi")`` computes
  it, with p(t) the share of documents containing t and ε = 10⁻¹²::

      NPMI(a, b) = ln((p(a, b) + ε) / (p(a) p(b))) / (−ln(p(a, b) + ε))

  averaged over the pairs of a cluster, then over clusters weighted by their documents (the
  clusters table ``mass``: the share of documents whose own stratum is the cluster);
* **grab-bag mass share**: the share of the documents in clusters whose terms co-occur in
  documents no more than independent ones would (mean NPMI ≤ 0).  Measured on the documents,
  not by the rule that built the clusters, so it is not 0 by construction;
* the same two figures for **every level of the cluster tree** (``levels``; ``"0"``: the
  leaves, the fine clusters) from its units' own terms, and for the old labels (the top
  entities, co-occurring as entities of a document) under the same computation
  (``labels_before``);
* **generic mass share**: the share of the stratum weight in *generic clusters*, a cluster
  being generic when at least half of its top entities are generic phrases by the corpus'
  generic-phrase test (:mod:`.specificity`; 0 by construction when generic phrases are left
  out of the clusters: then it only checks the filter);
* **seed stability**: the adjusted Rand index (Hubert & Arabie 1985) of the document → own
  stratum assignment between Leiden runs (:mod:`.describe`);
* the **heaviest clusters** with their labels, weights, NPMI and generic share.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adjusted_rand", "term_npmi", "terms_npmi", "term_coherence", "entity_presence",
           "cluster_quality", "top_entities", "EPSILON", "GENERIC_TOP", "GENERIC_SHARE"]

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
    ai, bi = ai.reshape(-1), bi.reshape(-1)

    def pairs(x):
        x = x.astype(np.float64)
        return float((x * (x - 1) / 2).sum())

    # the contingency table's non-empty cells only (a dense one is k_a x k_b: 10^4 x 10^4 at
    # a million documents); every count is an integer, so the sums are exact in any order
    _, cells = np.unique(ai * (int(bi.max()) + 1) + bi, return_counts=True)
    s = pairs(cells)
    sa, sb = pairs(np.bincount(ai)), pairs(np.bincount(bi))
    expected = sa * sb / (n * (n - 1) / 2)
    top = 0.5 * (sa + sb)
    return 1.0 if top == expected else (s - expected) / (top - expected)


#: gensim's ε (``gensim.topic_coherence.direct_confirmation_measure.EPSILON``): NPMI of a pair
#: that never co-occurs is ln(ε / (p(a) p(b))) / (−ln ε), not −1, as Röder et al. define it.
EPSILON = 1e-12


def term_npmi(presence, columns) -> float:
    """Mean NPMI over the pairs of the terms at ``columns`` of ``presence`` (a 0/1 document ×
    term matrix: document co-occurrence, one window per document), with ε (:data:`EPSILON`)::

        NPMI(a, b) = ln((p(a, b) + ε) / (p(a) p(b))) / (−ln(p(a, b) + ε))

    the definition of Röder, Both & Hinneburg (WSDM 2015; gensim's ``c_npmi``, Palmetto);
    NaN with fewer than 2 terms."""
    cols = list(columns)
    if len(cols) < 2:
        return float("nan")
    n_docs = presence.shape[0]
    sub = presence[:, cols].astype(np.float64)
    co = np.asarray((sub.T @ sub).todense()) / n_docs
    p = np.diag(co).copy()
    i, j = np.triu_indices(len(cols), k=1)
    pab = co[i, j] + EPSILON
    vals = np.log(pab / (p[i] * p[j])) / -np.log(pab)
    return float(vals.mean())


def terms_npmi(terms, presence, index: dict) -> float:
    """:func:`term_npmi` of ``terms`` by name (``index``: term -> column; a term not there is
    left out)."""
    return term_npmi(presence, [index[t] for t in terms if t in index])


def term_coherence(units, presence, index: dict) -> dict:
    """Document-weighted NPMI and grab-bag share of ``units`` (``(terms, documents)`` pairs)
    over ``presence`` (:func:`term_npmi`; ``index``: term -> column)."""
    scored = []
    for terms, w in units:
        v = terms_npmi(terms, presence, index)
        if not math.isnan(v) and w > 0:
            scored.append((v, float(w)))
    total = sum(w for _, w in scored)
    if not total:
        return {"npmi_weighted": float("nan"), "grab_bag_share": float("nan"), "units": 0}
    return {"npmi_weighted": sum(v * w for v, w in scored) / total,
            "grab_bag_share": sum(w for v, w in scored if v <= 0) / total,
            "units": len(scored)}


def top_entities(entities: list, top: int = GENERIC_TOP) -> dict:
    """``{cluster: its top entities}`` from entity rows (``name``, ``cluster``, ``doc_freq``)."""
    by: dict = {}
    for r in entities:
        if int(r["cluster"]) >= 0:
            by.setdefault(int(r["cluster"]), []).append((-int(r["doc_freq"]), r["name"]))
    return {c: [n for _, n in sorted(v)[:top]] for c, v in by.items()}


def entity_presence(doc_entities: dict, names) -> tuple:
    """``(presence, index)``: the 0/1 document × entity matrix of ``names`` (documents in
    sorted id order) and the column of each name, for :func:`term_coherence`."""
    from scipy import sparse

    from .namelists import NameLists

    index = {n: i for i, n in enumerate(sorted(set(names)))}
    ids = doc_entities.ids if isinstance(doc_entities, NameLists) else None
    if ids is not None and all(ids[i] < ids[i + 1] for i in range(len(ids) - 1)):
        # the driver's codes (rows: its ids, sorted), without a Python list per document
        col = np.array([index.get(n, -1) for n in doc_entities.names] or [-1], dtype=np.int64)
        c = col[doc_entities.codes]
        r = doc_entities.doc_index()[c >= 0]
        key = np.unique(r * max(len(index), 1) + c[c >= 0])   # each (document, name) once
        return sparse.csc_matrix((np.ones(key.size), (key // max(len(index), 1),
                                                      key % max(len(index), 1))),
                                 shape=(len(ids), len(index))), index
    rows, cols = [], []
    for r, d in enumerate(sorted(doc_entities)):
        for e in set(doc_entities[d]):
            col = index.get(e)
            if col is not None:
                rows.append(r)
                cols.append(col)
    presence = sparse.csc_matrix((np.ones(len(rows)), (rows, cols)),
                                 shape=(len(doc_entities), len(index)))
    return presence, index


def cluster_quality(clusters: list, entities: list, doc_entities: dict, texts: dict, *,
                    term_counts, generic_test=None, heaviest: int = 15,
                    levels: list = ()) -> dict:
    """The quality figures of a structure's clusters (JSON-ready; module docstring).

    ``clusters``: the clusters table rows (``id``, ``label``, ``mass``, ``terms``);
    ``entities``: the entity rows (``name``, ``cluster``, ``doc_freq``); ``doc_entities``:
    ``{doc_id: names}`` of every document of ``texts`` (the corpus texts, for the
    generic-phrase test, or pass a fitted ``generic_test``); ``term_counts``: the documents'
    :class:`~.terms.TermCounts`; ``levels``: the cluster_levels rows (``level``, ``mass``,
    ``terms``, ``top_entities``).
    """
    from .specificity import GenericTest, WordStats

    if generic_test is None:
        generic_test = GenericTest(WordStats.of_texts(texts[d] for d in sorted(texts)))
    tops = top_entities(entities)
    presence = term_counts.presence().tocsc()
    index = {t: i for i, t in enumerate(term_counts.terms.tolist())}
    # the old labels: their entities' documents (only of the entities they name)
    wanted = {e for top in tops.values() for e in top}
    wanted.update(e for r in levels for e in r.get("top_entities", []))
    from .namelists import NameLists

    ids = sorted(texts)
    if isinstance(doc_entities, NameLists) and doc_entities.ids == ids:
        docs_all = doc_entities        # every document's codes, read as they are held
    else:
        docs_all = {d: doc_entities.get(d, ()) for d in ids}
    e_presence, e_index = entity_presence(docs_all, wanted)

    rows = []
    for c in clusters:
        top = tops.get(int(c["id"]), [])
        share = float(np.mean([generic_test.is_generic(n) for n in top])) if top else 0.0
        rows.append({"id": int(c["id"]), "label": c.get("label", ""), "mass": float(c["mass"]),
                     "npmi": terms_npmi(c.get("terms", []), presence, index),
                     "entity_npmi": terms_npmi(top, e_presence, e_index),
                     "generic_share": share, "generic": share >= GENERIC_SHARE})
    total = sum(r["mass"] for r in rows)
    scored = [r for r in rows if not math.isnan(r["npmi"])]
    rows_by_mass = sorted(rows, key=lambda r: (-r["mass"], r["id"]))
    units = {0: [(c.get("terms", []), c.get("top_entities") or tops.get(int(c["id"]), []),
                  c["mass"]) for c in clusters]}
    for r in levels:
        units.setdefault(int(r["level"]), []).append(
            (r.get("terms", []), r.get("top_entities", []), r["mass"]))

    def figures(level_units):
        new = term_coherence([(t, w) for t, _, w in level_units], presence, index)
        old = term_coherence([(e, w) for _, e, w in level_units], e_presence, e_index)
        return {"npmi_weighted": new["npmi_weighted"],
                "grab_bag_mass_share": new["grab_bag_share"], "units": new["units"],
                "n_units": len(level_units), "entity_npmi_weighted": old["npmi_weighted"],
                "entity_grab_bag_mass_share": old["grab_bag_share"]}

    tree = {str(lvl): figures(u) for lvl, u in sorted(units.items())}
    leaves = tree["0"]
    return {
        "npmi_weighted": leaves["npmi_weighted"],
        "grab_bag_mass_share": leaves["grab_bag_mass_share"],
        "npmi_median": float(np.median([r["npmi"] for r in scored])) if scored
        else float("nan"),
        "labels_before": {"npmi_weighted": leaves["entity_npmi_weighted"],
                          "grab_bag_mass_share": leaves["entity_grab_bag_mass_share"]},
        "levels": tree,
        "generic_mass_share": (sum(r["mass"] for r in rows if r["generic"]) / total
                               if total else 0.0),
        "clusters": len(rows),
        "rule": (f"terms: the {len(clusters[0].get('terms', [])) if clusters else 0} most "
                 "distinctive by class-based TF-IDF; NPMI of the terms over the corpus "
                 "documents (document co-occurrence, epsilon 1e-12: gensim's c_npmi), weighted "
                 "by documents; grab bag: mean NPMI <= 0; levels: the cluster tree's units "
                 "('0': the leaves); labels_before and entity_*: the same figures for the top "
                 f"entities (the 10 in the most documents); generic cluster: at least "
                 f"{GENERIC_SHARE:.0%} of its {GENERIC_TOP} top entities are generic phrases "
                 f"(every word with RIDF < {generic_test.max_ridf} bits and in >= "
                 f"{generic_test.min_doc_share:.0%} of the documents)"),
        "heaviest": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                     for r in rows_by_mass[:heaviest]],
    }
