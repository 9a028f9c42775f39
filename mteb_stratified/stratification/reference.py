"""**Our rule** for the corpus' fixed Δ and J cut-points: quantiles of Δ and J over a
reference query pool of the corpus, never the evaluated query set.

:func:`reference_bins` takes the 1/3 and 2/3 quantiles (Low/Med/High; k quantiles give k + 1
bins) of Δ and of J over a *reference query pool* (by default every judged query of the dataset's non-test splits, e.g. NFCorpus dev),
computed once when the structure is built and stored in the artifact's ``metadata.json``
(``bins``), with the exact and (optionally) the soft J cut-points, so every query set over a
corpus — the test split, a subset, generated queries — is binned the same way.
"""

from __future__ import annotations

from ..core import Bins, InputError
from .dataset import SOFT_TAU, strata_for_dataset

__all__ = ["reference_bins"]


def _quantile_text(quantiles) -> str:
    """``1/3, 2/3`` for the default, else the numbers (``0.25, 0.5, 0.75``)."""
    qs = [float(q) for q in quantiles]
    if len(qs) == 2 and abs(qs[0] - 1 / 3) < 1e-12 and abs(qs[1] - 2 / 3) < 1e-12:
        return "1/3, 2/3"
    return ", ".join(f"{q:g}" for q in qs)


def reference_bins(artifact, datasets, *, soft: bool = False, tau: float = SOFT_TAU,
                   level: float = 1, quantiles: tuple = (1 / 3, 2 / 3), extractor=None,
                   embedding_model: str | None = None) -> dict:
    """Our rule for the corpus' fixed cut-points, from a reference query pool (JSON-ready).

    ``datasets``: BEIR datasets (``load_beir``) of the artifact's corpus, e.g. its dev split.
    Every judged query with a relevant document is stratified (query entities by ``extractor``,
    e.g. the one that built the artifact; None: the artifact's recorded one; the soft J with the
    artifact's embedding model, the packaged one or the user's ``embedding_model``); the
    cut-points are the ``quantiles`` of Δ and of J over that pool::

        Δ cuts = Q_Δ(1/3), Q_Δ(2/3);   J cuts = Q_J(1/3), Q_J(2/3)   (and Q_Jsoft with ``soft``)

    Store the result as the artifact's bins (``artifact.with_bins(bins)``, a new artifact saved
    once: the ``structure`` command does) and every later query set over the corpus is binned
    with it.  Queries of different datasets are kept apart (ids prefixed by split).
    """
    datasets = list(datasets)
    if not datasets:
        raise InputError("no reference query pool", fix="pass at least one judged split, e.g. dev")
    pooled_qrels: dict = {}
    pooled_queries: dict = {}
    for ds in datasets:
        for q, judged in ds.qrels.items():
            if q in ds.queries:
                pooled_qrels[(ds.split, q)] = judged
                pooled_queries[(ds.split, q)] = ds.queries[q]
    corpus = datasets[0].corpus
    pool = _PoolDataset(corpus, pooled_queries, pooled_qrels)
    qids = list(pooled_queries)
    texts = [pooled_queries[q] for q in qids]
    entities = dict(zip(qids, artifact.extract_entities_batch(texts, extractor)))
    base = Bins()
    out: dict = {}
    n = None
    for variant in (("exact", "soft") if soft else ("exact",)):
        st = strata_for_dataset(artifact, pool, bins=base, level=level, alignment=variant,
                                tau=tau, check_corpus=False, query_entities=entities,
                                embedding_model=embedding_model)
        if st.n_queries == 0:
            raise InputError("no reference query has a relevant document in the structure",
                             fix="use a judged split of this corpus as the reference pool")
        b = Bins.from_reference(st.dispersion, st.alignment, quantiles=quantiles)
        out["dispersion"] = list(b.dispersion)
        out["alignment" if variant == "exact" else "alignment_soft"] = list(b.alignment)
        n = (st.n_queries, len(st.excluded))
    splits = sorted({ds.split for ds in datasets})
    out.update({
        "source": f"ours: {_quantile_text(quantiles)} quantiles of Δ and J over the {n[0]} judged "
                  "queries of the "
                  f"reference split(s) {', '.join(splits)}",
        "reference": {"splits": splits, "n_queries": n[0], "excluded": n[1],
                      "quantiles": [float(x) for x in quantiles], "level": level},
    })
    if soft:
        out["tau"] = float(tau)
    return out


class _PoolDataset:
    """A minimal dataset view (corpus, queries, qrels) for :func:`reference_bins`."""

    def __init__(self, corpus, queries, qrels):
        self.corpus, self.queries, self.qrels = corpus, queries, qrels


