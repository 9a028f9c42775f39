"""Human-readable cluster labels: the entities that carry each cluster's mass.

A cluster's top entities are its members found in the most documents; ties go to the more
central one (centrality = the summed similarity of its edges inside its own cluster, its
within-cluster strength), then the name.  The label is the first few of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["within_cluster_strength", "cluster_top_entities"]


def within_cluster_strength(n: int, src, dst, weight, labels) -> np.ndarray:
    labels = np.asarray(labels)
    src, dst, weight = np.asarray(src), np.asarray(dst), np.asarray(weight, dtype=np.float64)
    same = labels[src] == labels[dst]
    strength = np.zeros(n, dtype=np.float64)
    np.add.at(strength, src[same], weight[same])
    np.add.at(strength, dst[same], weight[same])
    return np.round(strength, 6)


def cluster_top_entities(labels, strength, doc_freq, names, top: int = 10) -> dict:
    """``{cluster: [entity names, most documents first]}`` (clusters with id >= 0)."""
    labels = np.asarray(labels)
    order = sorted(range(len(names)), key=lambda i: (-doc_freq[i], -strength[i], names[i]))
    out: dict = {}
    for i in order:
        c = int(labels[i])
        if c < 0:
            continue
        members = out.setdefault(c, [])
        if len(members) < top:
            members.append(names[i])
    return {c: out[c] for c in sorted(out)}
