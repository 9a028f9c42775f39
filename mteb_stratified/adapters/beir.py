"""A BEIR ``EvaluateRetrieval``-compatible evaluator with tie-aware keys.

``TieAwareEvaluateRetrieval.evaluate(qrels, results, k_values)`` returns BEIR's four dicts
``(ndcg, _map, recall, precision)`` with BEIR's keys (``"NDCG@10"``, ``"MAP@10"``,
``"Recall@10"``, ``"P@10"``; values rounded to 5 decimals as BEIR does) **plus**, for each
key, ``"<key>_expected"``, ``"_min"``, ``"_max"``, ``"_range"``, ``"_bias"`` and
``"_oblivious"`` (unrounded).  ``evaluate_custom(..., metric="mrr")`` does the same for
``"MRR@k"``.  The plain keys are BEIR's own (pytrec_eval, tie-oblivious), so an existing script
keeps its numbers; ``<key>_oblivious`` equals them up to rounding.

Conventions: expected = mean over all orders of tied scores (uniform random tie-breaking);
min/max = worst/best tie order; oblivious = trec_eval's order (score desc, doc id desc);
range = max - min; bias = oblivious - expected.  ``ignore_identical_ids=True`` (BEIR's default)
drops documents whose id equals the query id before scoring, as BEIR does.
Called on an instance (``retriever.evaluate(...)``, BEIR's usual style), the evaluator keeps the
core ``EvaluationResult`` (per-query values, tie audit) in ``retriever.last_result``; called on
the class it keeps nothing (no process-wide state) — :func:`tie_aware_beir_scores` returns the
result with the scores.
"""

from __future__ import annotations

import logging
from typing import Mapping, Sequence

from mteb_stratified.naming import (BEIR_FAMILIES, STATS, beir_key, parse_measure,
                                    trec_eval_family, trec_eval_key)

logger = logging.getLogger(__name__)

__all__ = ["TieAwareEvaluateRetrieval", "tie_aware_beir_scores"]

#: The families of ``EvaluateRetrieval.evaluate``, in BEIR's return order (names: naming.py).
_EVALUATE_FAMILIES = ("nDCG", "AP", "R", "P")


def _drop_identical(results):
    return {q: {d: s for d, s in docs.items() if d != q} for q, docs in results.items()}


def tie_aware_beir_scores(qrels: Mapping, results: Mapping, k_values: Sequence[int], *,
                          families=_EVALUATE_FAMILIES, ignore_identical_ids: bool = True):
    """``({beir_key: {stat: value}}, EvaluationResult)`` for ``families`` (ir_measures names)
    at ``k_values``; keys as BEIR spells them (:func:`mteb_stratified.naming.beir_key`)."""
    from mteb_stratified import evaluate

    if ignore_identical_ids:
        results = _drop_identical(results)
    ks = sorted({int(k) for k in k_values})
    measures = [parse_measure(f"{name}@{k}") for name in families for k in ks]
    res = evaluate(qrels, results, measures, relevance_level=1, oblivious="trec_eval",
                   missing="skip", tie_cutoffs=ks)
    out = {beir_key(m): {stat: float(getattr(res[repr(m)], stat)) for stat in STATS}
           for m in measures}
    return out, res


def _base_class():
    try:
        from beir.retrieval.evaluation import EvaluateRetrieval

        return EvaluateRetrieval
    except ImportError:  # BEIR not installed: the class still works standalone
        return object


class _hybridmethod:
    """A method callable on the class (as BEIR's static ``EvaluateRetrieval.evaluate``) and on an
    instance; it receives ``(cls, instance or None, ...)``."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, cls):
        import functools

        return functools.partial(self.func, cls, obj)


class TieAwareEvaluateRetrieval(_base_class()):
    """Drop-in for ``beir.retrieval.evaluation.EvaluateRetrieval`` (subclass when BEIR is
    installed), adding tie-aware keys to the returned dicts (see module doc)."""

    def __init__(self, retriever=None, k_values: Sequence[int] = (1, 3, 5, 10, 100, 1000),
                 score_function: str | None = "cos_sim"):
        if _base_class() is not object:
            super().__init__(retriever, list(k_values), score_function)
        else:
            self.retriever, self.k_values, self.score_function = retriever, list(k_values), score_function
            self.top_k = max(k_values)
        self.last_result = None  # the core EvaluationResult of the last evaluate() call

    @staticmethod
    def _plain(qrels, results, k_values, ignore_identical_ids):
        """BEIR's own numbers (pytrec_eval), computed as ``EvaluateRetrieval.evaluate`` does."""
        import pytrec_eval

        if ignore_identical_ids:
            results = _drop_identical(results)
        ks = list(k_values)
        ev = pytrec_eval.RelevanceEvaluator(
            qrels, {f"{trec_eval_family(name)}." + ",".join(map(str, ks))
                    for name in _EVALUATE_FAMILIES})
        scores = ev.evaluate(results)
        n = max(len(scores), 1)
        out = {}
        for name in _EVALUATE_FAMILIES:
            out[BEIR_FAMILIES[name]] = {
                beir_key(f"{name}@{k}"): round(sum(s[trec_eval_key(f"{name}@{k}")]
                                                   for s in scores.values()) / n, 5)
                for k in ks}
        return out

    @_hybridmethod
    def evaluate(cls, self, qrels, results, k_values: Sequence[int],
                 ignore_identical_ids: bool = True):
        """BEIR's ``(ndcg, _map, recall, precision)`` plus ``<key>_<stat>`` tie-aware keys.

        Both BEIR call styles work: ``EvaluateRetrieval.evaluate(qrels, results, k_values)`` and
        ``retriever.evaluate(qrels, results, retriever.k_values)`` (the latter also sets
        ``retriever.last_result``).
        """
        plain = cls._plain(qrels, results, k_values, ignore_identical_ids)
        tie, result = tie_aware_beir_scores(qrels, results, k_values,
                                            ignore_identical_ids=ignore_identical_ids)
        if self is not None:
            self.last_result = result
        dicts = []
        for name in _EVALUATE_FAMILIES:
            beir = BEIR_FAMILIES[name]
            d = dict(plain[beir])
            for key in list(plain[beir]):
                for stat, v in tie[key].items():
                    d[f"{key}_{stat}"] = v
            dicts.append(d)
        for d, name in zip(dicts, _EVALUATE_FAMILIES):
            beir = BEIR_FAMILIES[name]
            for k in k_values:
                logger.info("%s@%d: %.4f (expected %.4f, range %.4f)", beir, k, d[f"{beir}@{k}"],
                            d[f"{beir}@{k}_expected"], d[f"{beir}@{k}_range"])
        return tuple(dicts)

    @_hybridmethod
    def evaluate_custom(cls, self, qrels, results, k_values: Sequence[int], metric: str = "mrr",
                        ignore_identical_ids: bool = True):
        """``metric="mrr"``: ``{"MRR@k": ..., "MRR@k_expected": ...}``; other BEIR custom
        metrics are delegated to BEIR unchanged."""
        if metric.lower() not in ("mrr", "mrr@k", "mrr_cut"):
            if _base_class() is object:
                raise ValueError(f"metric {metric!r} needs BEIR installed (pip install beir)")
            return _base_class().evaluate_custom(qrels, results, k_values, metric)
        tie, result = tie_aware_beir_scores(
            qrels, results, k_values, families=("RR",), ignore_identical_ids=ignore_identical_ids)
        if self is not None:
            self.last_result = result
        out = {}
        for k in k_values:
            key = f"MRR@{k}"
            out[key] = round(tie[key]["oblivious"], 5)
            for stat, v in tie[key].items():
                out[f"{key}_{stat}"] = v
        return out
