"""Tie-aware MTEB scores from a core ``EvaluationResult`` (numpy and the core only, no mteb).

Keys (names: :mod:`mteb_stratified.naming`): MTEB reports ``{family}_at_{k}``
(``ndcg_at_10``); the tie-aware columns add a suffix:

* ``_expected`` - the expectation over all orderings of tied documents (uniformly random
  tie-breaking), the value a tie-aware evaluation reports;
* ``_min`` / ``_max`` - the worst / best tie-breaking;
* ``_oblivious`` - the value under trec_eval's order (score descending, then doc id descending,
  scores as float32), i.e. what stock MTEB / pytrec_eval report;
* ``_range`` = max - min, how much tie-breaking alone can move the score;
* ``_bias`` = oblivious - expected, how far the stock figure sits from the tie-aware one.

(``map_at_k`` is trec_eval's ``map_cut.k``, AP@k with all relevant documents in the
denominator.)  The tie audit adds, for each k: ``ties_query_share_at_{k}`` (share of queries
with a tie group of ≥ 2 documents reaching into the top k), ``ties_mean_group_size_at_{k}``
(documents per tie group over the groups reaching into the top k; 1.0 = no ties) and
``ties_max_group_size_at_{k}``, and once per split: ``ties_depth_extended_queries`` (queries
whose list the exact search widened past the depth to keep a whole tie group),
``ties_truncated_queries`` (queries whose last tie group may continue past the depth: always 0
with the exact search) and ``ties_distinct_scores_per_query``.

The BEIR evaluator (:mod:`mteb_stratified.adapters.beir`) uses the same core evaluation with
BEIR's keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from mteb_stratified.io.lock import file_lock
from mteb_stratified.io.outputs import atomic_write
from mteb_stratified.naming import AUDIT_KEYS, STATS, audit_key, mteb_measures, tie_key

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
    return evaluate(qrels, run, mteb_measures(ks),
                          missing="skip", relevance_level=relevance_level, oblivious="trec_eval",
                          depth=depth, tie_cutoffs=ks, whole_list_audit=True)


def tie_aware_scores(result, k_values: Sequence[int], *, top_k: int | None = None,
                     run: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, float]:
    """Flatten a core ``EvaluationResult`` into MTEB score keys (module docstring).

    With ``top_k`` and ``run``, also counts the queries whose list was widened past ``top_k``.
    """
    out: dict[str, float] = {}
    for measure in mteb_measures(k_values):
        m = result[repr(measure)]
        for stat in STATS:
            out[tie_key(measure, stat)] = float(getattr(m, stat))
    for k in sorted({int(k) for k in k_values}):
        stats = result.tie_stats(k)
        for field in AUDIT_KEYS:
            out[audit_key(field, k)] = float(stats[field])
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
    share one prediction folder.  The read, update and write hold the file's lock
    (:func:`~mteb_stratified.io.lock.file_lock`), so two runs sharing the folder both land.
    """
    frame = result.to_dataframe()
    frame.insert(0, "hf_split", hf_split)
    frame.insert(0, "hf_subset", hf_subset)
    frame.insert(0, "revision", revision)
    frame.insert(0, "model", model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path, what="mteb run (per-query rows)"):
        _merge_write(path, frame, hf_subset=hf_subset, hf_split=hf_split, model=model,
                     revision=revision)
    return path


def _merge_write(path: Path, frame, *, hf_subset: str, hf_split: str, model: str,
                 revision: str) -> None:
    """:func:`write_per_query`'s update of ``path`` with ``frame`` (the caller holds the lock)."""
    import pandas as pd

    if path.exists():
        old = pd.read_csv(path, dtype={"qid": str, "hf_subset": str, "hf_split": str,
                                       "model": str, "revision": str}, keep_default_na=False)
        for col in ("model", "revision"):  # a file written before these columns existed
            if col not in old:
                old.insert(0, col, "")
        same = (old["hf_subset"] == hf_subset) & (old["hf_split"] == hf_split)
        same &= ((old["model"] == model) & (old["revision"] == revision)) | (old["model"] == "")
        frame = pd.concat([old[~same], frame], ignore_index=True)
    with atomic_write(path, encoding="utf-8", newline="") as fh:
        frame.to_csv(fh, index=False)
