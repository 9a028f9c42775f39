"""Tie-aware scores for one MTEB split: the core evaluator, flattened into MTEB's score keys.

This module imports numpy and the numeric core only, never mteb, so the BEIR evaluator and the
leaderboard can share it.  Key names and their meaning: :mod:`._keys`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from ._keys import FAMILIES, STATS, measure_name, score_key

__all__ = ["tie_aware_evaluation", "tie_aware_scores", "write_per_query"]


def tie_aware_evaluation(qrels: Mapping[str, Mapping[str, int]],
                         run: Mapping[str, Mapping[str, float]], k_values: Sequence[int], *,
                         relevance_level: int = 1, exact_depth: bool = False,
                         depth: int | None = None):
    """Evaluate ``run`` against ``qrels`` with the core, for every MTEB family at ``k_values``.

    ``exact_depth=True`` says the run kept every document tied with its last one (the exact
    search), so no query's last tie group can continue past the cut; otherwise ``depth`` (the
    search's top-k) is the run's depth for the core's truncated-tie flag.
    Returns the core's ``EvaluationResult``.
    """
    from mteb_stratified import evaluate

    ks = sorted({int(k) for k in k_values})
    if exact_depth:
        depth = max((len(r) for r in run.values()), default=0) + 1  # no list is "at the depth"
    # pytrec_eval (hence MTEB) averages over the queries present in the run: "skip" matches it
    return evaluate(qrels, run, [measure_name(f, k) for f in FAMILIES for k in ks],
                          missing="skip", relevance_level=relevance_level, oblivious="trec_eval",
                          depth=depth, tie_cutoffs=ks)


def tie_aware_scores(result, k_values: Sequence[int], *, top_k: int | None = None,
                     run: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, float]:
    """Flatten a core ``EvaluationResult`` into MTEB score keys (see :mod:`._keys`).

    With ``top_k`` and ``run``, also counts the queries whose list was widened past ``top_k``.
    """
    out: dict[str, float] = {}
    for family in FAMILIES:
        for k in sorted({int(k) for k in k_values}):
            m = result[measure_name(family, k)]
            for stat in STATS:
                out[score_key(family, k, stat)] = float(getattr(m, stat))
    for k in sorted({int(k) for k in k_values}):
        stats = result.tie_stats(k)
        out[f"ties_query_share_at_{k}"] = float(stats["tied_query_share"])
        out[f"ties_mean_group_size_at_{k}"] = float(stats["mean_tie_group_size"])
        out[f"ties_max_group_size_at_{k}"] = float(stats["max_tie_group_size"])
    out["ties_distinct_scores_per_query"] = float(
        result.tie_stats(sorted(int(k) for k in k_values)[0])["distinct_scores_per_query"])
    out["ties_truncated_queries"] = float(result.truncated_tie_queries)
    if top_k is not None and run is not None:
        out["ties_depth_extended_queries"] = float(sum(len(r) > top_k for r in run.values()))
    return out


def write_per_query(result, path: Path, *, hf_subset: str, hf_split: str,
                    model: str = "", revision: str = "") -> Path:
    """Write (or update) the per-query file: one CSV row per query and measure.

    Columns: ``model, revision, hf_subset, hf_split, qid, measure, expected, min, max,
    oblivious, range, bias`` (``model``/``revision`` as in mteb's results folder, so
    ``stratify`` and ``report`` find the rows of a TaskResult file).  Rows of the same model,
    revision, subset and split are replaced, others kept, so several models and subsets can
    share one prediction folder.
    """
    import pandas as pd

    frame = result.to_dataframe()
    frame.insert(0, "hf_split", hf_split)
    frame.insert(0, "hf_subset", hf_subset)
    frame.insert(0, "revision", revision)
    frame.insert(0, "model", model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        old = pd.read_csv(path, dtype={"qid": str, "hf_subset": str, "hf_split": str,
                                       "model": str, "revision": str}, keep_default_na=False)
        for col in ("model", "revision"):  # a file written before these columns existed
            if col not in old:
                old.insert(0, col, "")
        same = (old["hf_subset"] == hf_subset) & (old["hf_split"] == hf_split)
        same &= ((old["model"] == model) & (old["revision"] == revision)) | (old["model"] == "")
        frame = pd.concat([old[~same], frame], ignore_index=True)
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)
    return path
