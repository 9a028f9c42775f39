"""What ``mteb-stratified generate`` writes: a BEIR folder whose original splits are untouched
and whose generated queries stand in a split of their own.

* ``corpus.jsonl.gz`` — the corpus, unchanged;
* ``queries.jsonl`` — every query of the source folder, marked ``"origin": "original"`` (other
  fields kept), then the accepted generated queries (``"origin": "generated"`` with their
  provenance: target, seed documents, model, prompt version, verifier verdict, seed);
* ``qrels/<split>.tsv[.gz]`` for every split of the source — **copied byte for byte**: the
  evaluated split holds only the original queries and qrels, and so does every other split;
* ``qrels/generated.tsv`` — the generated queries' qrels: load them as the split
  ``generated`` (``load_beir(out, "generated")``, ``beir_task(out, split="generated")``);
* only with ``merge_into=S`` (``--merge-into-split S``, never by default): ``qrels/S.tsv`` =
  S's original qrels, then the generated ones; :func:`merge_changes` says what that changes.
  Even then ``stratify`` and ``report`` read each query's origin and keep the generated ones
  out of the original queries' estimates (:data:`..stratification.GENERATED_APART`);
* ``candidates.jsonl`` — every candidate with its status and rejection reason;
* ``coverage.json`` — MSC and SCC before/after, counts by reason, usage, and which split
  holds what (``splits``); :func:`write_dataset` returns it as ``report``, and ``generate``
  has its Markdown written beside it, ``coverage.md``
  (:func:`mteb_stratified.report.generation.coverage_markdown`).

The files are written by :func:`mteb_stratified.io.beir.write_beir`, all as one unit (a kill
leaves the old files or some of the new ones, never an old one beside a new one); this module
says what goes in them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from ..core import InputError
from ..io.beir import find_file, qrels_splits, read_jsonl, write_beir
from ..io.files import read_qrels
from ..io.outputs import dumps_json
from .config import GenerationConfig
from .result import GenerationResult

__all__ = ["GENERATED_SPLIT", "SELECTED_SPLIT", "SMOKE_TEST", "check_splits", "merge_changes",
           "write_dataset", "provenance_of", "selection_provenance"]

#: The split the generated queries are written to.
GENERATED_SPLIT = "generated"
#: The split the selected (real, held-back) queries are written to (:mod:`.select`).
SELECTED_SPLIT = "selected"
#: What a template run's output says it is.
SMOKE_TEST = ("pipeline smoke test: entity-template queries judged by a lexical rule, not "
              "evaluation data")


def check_splits(folder: str | None, split: str, merge_into: str | None = None) -> list[str]:
    """The source's splits, once checked: none may be called ``generated`` (that is where the
    generated queries go: a source that already has one is the output of an earlier run), and
    ``merge_into`` must be one of them.  :class:`InputError` otherwise (exit 2)."""
    splits = qrels_splits(folder) if folder else [split]
    for name in (GENERATED_SPLIT, SELECTED_SPLIT):
        if name in splits:
            raise InputError(f"the dataset already has a split {name!r} (qrels/{name}.tsv): "
                             f"{name} queries are written there", source=folder,
                             fix="generate from the original BEIR folder, not from the output "
                                 "of an earlier generate")
    if merge_into is not None and merge_into not in splits:
        raise InputError(f"--merge-into-split {merge_into!r}: the dataset has no such split",
                         source=folder, fix=f"choose one of {', '.join(splits)}")
    return splits


def merge_changes(split: str, n_original: int, result: GenerationResult) -> str:
    """The line ``--merge-into-split`` prints: what the merged split now holds."""
    n_add = len(result.accepted)
    n_rel = sum(len(r.qrels) for r in result.accepted)
    if _selection(result):
        froms = sorted({r.from_split for r in result.accepted})
        return (f"--merge-into-split {split}: qrels/{split}.tsv now holds its {n_original} "
                f"original queries and {n_add} real queries selected from "
                f"{', '.join(froms) or 'the pool'} ({n_rel} human qrels); an evaluation of "
                f"split {split!r} scores both as one query set (they are real queries, so "
                f"stratify pools them); the split as it was is not in this folder any more "
                f"(the source keeps it)")
    return (f"--merge-into-split {split}: qrels/{split}.tsv now holds its {n_original} original "
            f"queries and {n_add} generated ones ({n_rel} generated qrels); an evaluation of "
            f"split {split!r} scores both, while stratify and report keep the generated "
            f"queries out of the original estimates (origin in queries.jsonl); the original "
            f"qrels are not in this folder any more (the source keeps them)")


def _selection(result: GenerationResult) -> bool:
    """A selection run's result (:mod:`.select`), not a generation's."""
    return bool(result.pool)


def _source_queries(dataset) -> dict:
    """``{qid: row}`` of every query of the source (all splits), else of the loaded split."""
    if dataset.folder:
        return read_jsonl(find_file(dataset.folder, "queries.jsonl"), "query")
    return {q: {"_id": q, "text": t} for q, t in dataset.queries.items()}


def write_dataset(out: str, dataset, result: GenerationResult, *, provenance: dict,
                  merge_into: str | None = None, markdown=None) -> dict:
    """Write the output folder (module docstring), all its files as one unit; return its
    paths, ``splits`` and the ``coverage.json`` ``report``.  ``markdown``: a function of that
    report giving ``coverage.md``'s text (``generate`` passes
    :func:`mteb_stratified.report.generation.coverage_markdown`), written in the same unit.

    ``dataset``: the :class:`~mteb_stratified.io.BeirDataset` generated for; its ``folder``
    (set by ``load_beir``) is where the splits are copied from; without one (a dataset built
    in memory) only its own split is written, from its qrels.
    """
    splits = check_splits(dataset.folder, dataset.split, merge_into)
    source = _source_queries(dataset)
    selection = _selection(result)
    new_split = SELECTED_SPLIT if selection else GENERATED_SPLIT
    _check_new_ids(result, source, selection)
    rows, added = _query_rows(source, result, provenance, selection)
    copied, qrels = _split_qrels(dataset, splits, merge_into)
    qrels[new_split] = added
    merged = None
    if merge_into is not None:
        orig = (read_qrels(find_file(os.path.join(dataset.folder, "qrels"),
                                     f"{merge_into}.tsv"))
                if dataset.folder else dataset.qrels)
        qrels[merge_into] = {**orig, **added}
        merged = merge_changes(merge_into, len(orig), result)
    split_info = {"evaluated": dataset.split, "added": new_split,
                  "kind": "selected" if selection else "generated",
                  "copied_byte_for_byte": [n for n in splits if n != merge_into],
                  "merged_into": merge_into, "merge_changes": merged}
    report = _coverage_report(dataset, result, provenance, split_info)
    extra = [("candidates.jsonl", "".join(json.dumps(c.to_dict(), ensure_ascii=False,
                                                     sort_keys=True)
                                          + "\n" for c in result.candidates).encode("utf-8")),
             ("coverage.json", (dumps_json(report, indent=1, sort_keys=True) + "\n")
              .encode("utf-8"))]
    if markdown is not None:
        extra.append(("coverage.md", markdown(report).encode("utf-8")))
    # one unit: a kill never leaves this run's queries beside the last run's qrels or report
    write_beir(out, corpus=dataset.corpus, queries=rows, copied=copied, qrels=qrels,
               extra=extra)
    return {"queries": os.path.join(out, "queries.jsonl"),
            "coverage": os.path.join(out, "coverage.json"), "splits": split_info,
            "report": report}


def _check_new_ids(result: GenerationResult, source: dict, selection: bool) -> None:
    """An :class:`InputError` when a generated query id is already a query id of the source
    (a selection's queries are the source's own)."""
    gen_ids = [] if selection else [rec.query_id for rec in result.accepted]
    clash = sorted(set(gen_ids) & set(source))
    if clash:
        raise InputError(f"{len(clash)} generated query ids are already query ids of the "
                         f"dataset (e.g. {clash[:3]})",
                         fix="rename those queries in the dataset's queries.jsonl, or generate "
                             "with another --seed (the ids are gen-<seed>-<n>)")


def _query_rows(source: dict, result: GenerationResult, provenance: dict,
                selection: bool) -> tuple[list, dict]:
    """``(rows of queries.jsonl, qrels of the added split)``: every source query with its
    origin (a selected one also says where it was selected from), then the generated queries
    with their provenance."""
    chosen = {rec.query_id: rec for rec in result.accepted} if selection else {}
    rows = []
    for q, row in source.items():
        row = {**row, "origin": row.get("origin", "original")}
        if q in chosen:   # a real query: it keeps its row, and says where it was selected from
            rec = chosen[q]
            row["selected"] = {"from_split": rec.from_split, "target": rec.target,
                               "landed": rec.landed, "match": rec.match, "step": rec.step}
        rows.append(row)
    added: dict = {q: rec.qrels for q, rec in chosen.items()}
    for rec in ([] if selection else result.accepted):
        meta = {"target": rec.target, "target_label": rec.target_label, "landed": rec.landed,
                "seed_docs": rec.seed_docs, "terms": rec.terms, "seed": rec.seed,
                "attempt": rec.attempt, "dispersion": rec.dispersion,
                "alignment": rec.alignment, "query_entities": rec.query_entities,
                "pool": rec.pool, "qrel_rules": rec.qrel_rules}
        meta.update(provenance)
        meta["verdict"] = rec.verifier  # the verifier's answer (its settings: "verifier")
        if _smoke_test(provenance):
            meta["label"] = SMOKE_TEST
        rows.append({"_id": rec.query_id, "text": rec.query, "origin": GENERATED_SPLIT,
                     "metadata": meta})
        added[rec.query_id] = rec.qrels
    return rows, added


def _split_qrels(dataset, splits: list, merge_into: str | None) -> tuple[dict, dict]:
    """``(copied, written)``: every split but ``merge_into``, as ``{split: source file}`` to
    copy byte for byte, or, for a dataset built in memory, ``{split: its qrels}`` to write."""
    copied, written = {}, {}
    for name in splits:
        if name == merge_into:
            continue
        if dataset.folder:
            copied[name] = find_file(os.path.join(dataset.folder, "qrels"), f"{name}.tsv")
        else:
            written[name] = dataset.qrels
    return copied, written


def _smoke_test(provenance: dict) -> bool:
    """A template run's provenance: its output is labelled :data:`SMOKE_TEST`."""
    return (provenance.get("generator") or {}).get("kind") == "offline-synthetic"


def _coverage_report(dataset, result: GenerationResult, provenance: dict,
                     split_info: dict) -> dict:
    """What ``coverage.json`` holds (module docstring)."""
    report = {"split": dataset.split, "before": result.coverage_before.to_dict(),
              "after": result.coverage_after.to_dict(), "counts": result.counts().to_dict(),
              "stop_reason": result.stop_reason, "usage": result.usage.to_dict(),
              "targets": result.targets.to_dict(),
              "infeasible_cells": list(result.infeasible),
              "provenance": provenance, "splits": split_info}
    if _selection(result):
        report["pool"] = result.pool.to_dict()
        report["unfilled"] = [u.to_dict() for u in result.unfilled]
    if result.gate:
        report["gate"] = result.gate.to_dict()
    if _smoke_test(provenance):
        report["label"] = SMOKE_TEST
    return report


def selection_provenance(cfg: GenerationConfig, artifact, pool_splits) -> dict:
    """What a selection run records (:mod:`.select`): the rule, the pool, the settings."""
    return {"selection": {"rule": "coverage-aware selection of real judged queries "
                                  "(mteb_stratified.generation.select)",
                          "pool_splits": list(pool_splits)},
            "config": asdict(cfg), "structure_fingerprint": artifact.corpus_fingerprint}


def provenance_of(writer, judge, verifier, cfg: GenerationConfig, artifact) -> dict:
    """What every generated query records about how it was made."""
    return {"generator": writer.params(), "judge": judge.params(),
            "verifier": verifier.params(), "config": asdict(cfg),
            "structure_fingerprint": artifact.corpus_fingerprint}
