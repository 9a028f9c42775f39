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
* ``coverage.json`` / ``coverage.md`` — MSC and SCC before/after, counts by reason, usage, and
  which split holds what (``splits``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import asdict

from ..core import InputError
from ..io.beir import find_file, qrels_splits, read_jsonl
from ..io.markdown import md_cell
from ..io.outputs import atomic_write, dumps_json
from .loop import REASONS, GenerationConfig, GenerationResult

__all__ = ["GENERATED_SPLIT", "SELECTED_SPLIT", "SMOKE_TEST", "check_splits", "merge_changes",
           "write_dataset", "coverage_markdown", "provenance_of", "selection_provenance"]

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
    n_rel = sum(len(r["qrels"]) for r in result.accepted)
    if _selection(result):
        froms = sorted({r["from_split"] for r in result.accepted})
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


def _write_atomic(path: str, text: str, *, gz: bool = False) -> None:
    """Write ``text`` through a temp file unique to the process (:func:`atomic_write`)."""
    data = text.encode("utf-8")
    with atomic_write(path, "wb") as raw:
        if gz:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
                fh.write(data)
        else:
            raw.write(data)


def _copy_atomic(src: str, dst: str) -> None:
    with open(src, "rb") as fin, atomic_write(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)


def _qrels_tsv(qrels: dict) -> str:
    rows = ["query-id\tcorpus-id\tscore"]
    for q in qrels:
        for d, g in sorted(qrels[q].items()):
            rows.append(f"{q}\t{d}\t{int(g)}")
    return "\n".join(rows) + "\n"


def _source_queries(dataset) -> dict:
    """``{qid: row}`` of every query of the source (all splits), else of the loaded split."""
    if dataset.folder:
        return read_jsonl(find_file(dataset.folder, "queries.jsonl"), "query")
    return {q: {"_id": q, "text": t} for q, t in dataset.queries.items()}


def write_dataset(out: str, dataset, result: GenerationResult, *, provenance: dict,
                  merge_into: str | None = None) -> dict:
    """Write the output folder (module docstring); return its paths and ``splits``.

    ``dataset``: the :class:`~mteb_stratified.io.BeirDataset` generated for; its ``folder``
    (set by ``load_beir``) is where the splits are copied from; without one (a dataset built
    in memory) only its own split is written, from its qrels.
    """
    splits = check_splits(dataset.folder, dataset.split, merge_into)
    source = _source_queries(dataset)
    selection = _selection(result)
    new_split = SELECTED_SPLIT if selection else GENERATED_SPLIT
    gen_ids = [] if selection else [rec["query_id"] for rec in result.accepted]
    clash = sorted(set(gen_ids) & set(source))
    if clash:
        raise InputError(f"{len(clash)} generated query ids are already query ids of the "
                         f"dataset (e.g. {clash[:3]})",
                         fix="rename those queries in the dataset's queries.jsonl, or generate "
                             "with another --seed (the ids are gen-<seed>-<n>)")
    qdir = os.path.join(out, "qrels")
    os.makedirs(qdir, exist_ok=True)
    corpus_lines = "".join(json.dumps({"_id": d, **dataset.corpus[d]}, ensure_ascii=False) + "\n"
                           for d in sorted(dataset.corpus))
    _write_atomic(os.path.join(out, "corpus.jsonl.gz"), corpus_lines, gz=True)
    chosen = {rec["query_id"]: rec for rec in result.accepted} if selection else {}
    lines = []
    for q, row in source.items():
        row = {**row, "origin": row.get("origin", "original")}
        if q in chosen:   # a real query: it keeps its row, and says where it was selected from
            rec = chosen[q]
            row["selected"] = {"from_split": rec["from_split"], "target": rec["target"],
                               "landed": rec["landed"], "match": rec["match"],
                               "step": rec["step"]}
        lines.append(json.dumps(row, ensure_ascii=False))
    gen_qrels: dict = {q: rec["qrels"] for q, rec in chosen.items()}
    for rec in ([] if selection else result.accepted):
        meta = {k: rec[k] for k in ("target", "target_label", "landed", "seed_docs", "terms",
                                    "seed", "attempt", "dispersion", "alignment",
                                    "query_entities", "pool", "qrel_rules")}
        meta.update(provenance)
        meta["verdict"] = rec["verifier"]  # the verifier's answer (its settings: "verifier")
        if (provenance.get("generator") or {}).get("kind") == "offline-synthetic":
            meta["label"] = SMOKE_TEST
        lines.append(json.dumps({"_id": rec["query_id"], "text": rec["query"],
                                 "origin": GENERATED_SPLIT, "metadata": meta},
                                ensure_ascii=False))
        gen_qrels[rec["query_id"]] = rec["qrels"]
    _write_atomic(os.path.join(out, "queries.jsonl"), "\n".join(lines) + "\n")
    copied = []
    for name in splits:
        if name == merge_into:
            continue
        if dataset.folder:
            src = find_file(os.path.join(dataset.folder, "qrels"), f"{name}.tsv")
            _copy_atomic(src, os.path.join(qdir, os.path.basename(src)))
        else:
            _write_atomic(os.path.join(qdir, f"{name}.tsv"), _qrels_tsv(dataset.qrels))
        copied.append(name)
    _write_atomic(os.path.join(qdir, f"{new_split}.tsv"), _qrels_tsv(gen_qrels))
    merged = None
    if merge_into is not None:
        from ..io.files import read_qrels
        orig = (read_qrels(find_file(os.path.join(dataset.folder, "qrels"),
                                     f"{merge_into}.tsv"))
                if dataset.folder else dataset.qrels)
        _write_atomic(os.path.join(qdir, f"{merge_into}.tsv"), _qrels_tsv({**orig, **gen_qrels}))
        merged = merge_changes(merge_into, len(orig), result)
    _write_atomic(os.path.join(out, "candidates.jsonl"),
                  "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n"
                          for c in result.candidates))
    split_info = {"evaluated": dataset.split, "added": new_split,
                  "kind": "selected" if selection else "generated",
                  "copied_byte_for_byte": copied, "merged_into": merge_into,
                  "merge_changes": merged}
    report = {"split": dataset.split, "before": result.coverage_before,
              "after": result.coverage_after, "counts": result.counts(),
              "stop_reason": result.stop_reason, "usage": result.usage,
              "targets": result.targets,
              "infeasible_cells": result.infeasible,
              "provenance": provenance, "splits": split_info}
    if selection:
        report["pool"], report["unfilled"] = result.pool, result.unfilled
    if result.gate:
        report["gate"] = result.gate
    if (provenance.get("generator") or {}).get("kind") == "offline-synthetic":
        report["label"] = SMOKE_TEST
    _write_atomic(os.path.join(out, "coverage.json"),
                  dumps_json(report, indent=1, sort_keys=True) + "\n")
    _write_atomic(os.path.join(out, "coverage.md"), coverage_markdown(report))
    return {"queries": os.path.join(out, "queries.jsonl"),
            "coverage": os.path.join(out, "coverage.json"), "splits": split_info}


def coverage_markdown(report: dict) -> str:
    b, a, n = report["before"], report["after"], report["counts"]
    rows = [f"# Coverage-aware generation ({md_cell(report['split'])})", "",
            "| | queries | MSC | SCC | cell MSC | cell SCC |", "|---|---|---|---|---|---|"]
    for name, cov in (("before", b), ("after", a)):
        rows.append(f"| {name} | {cov['n_queries']} | {cov['cluster']['msc']:.3f} | "
                    f"{cov['cluster']['scc']:.3f} | {cov['cell']['msc']:.3f} | "
                    f"{cov['cell']['scc']:.3f} |")
    if report.get("gate"):
        rows[1:1] = ["", f"**Validity gate: {report['gate']['verdict']}**"]
    if report.get("label"):
        rows[0:0] = [f"**{report['label']}**", ""]
    sp = report.get("splits") or {}
    if sp:
        where = (f"Split {md_cell(sp['added'])} holds the {sp['kind']} queries; "
                 + (f"they were also merged into {md_cell(sp['merged_into'])} "
                    "(--merge-into-split). " if sp.get("merged_into") else
                    f"{md_cell(sp['evaluated'])} and every other split hold only their original "
                    "queries (qrels copied byte for byte). ")
                 + f"\"after\" counts the original and the {sp['kind']} queries together: it "
                 "is coverage, not an evaluation.")
        rows += ["", where]
    pool = report.get("pool")
    if pool:
        c = pool["ceiling"]
        rows += ["", f"Pool: {pool['queries']} judged queries of "
                     f"{', '.join(md_cell(x) for x in pool['splits'])}; {pool['selected']} "
                     f"selected. The pool's own ceiling (every pool query added): MSC "
                     f"{c['msc']:.3f}, SCC {c['scc']:.3f}."]
        empty = [u for u in report.get("unfilled", ()) if u["pool_queries_left"] == 0]
        if empty:
            rows += ["", "Strata the pool cannot fill (short of n_min, no pool query left):", "",
                     "| cluster | mass | queries | label |", "|---|---|---|---|"]
            rows += [f"| {u['cluster']} | {u['mass']:.3f} | {u['queries']} | "
                     f"{md_cell(u['label'] or '')} |" for u in empty[:20]]
    t = report.get("targets") or {}
    if t:
        rows += ["", f"Targets: MSC ≥ {t['msc']:.3f} (ceiling {t['ceiling_msc']:.3f}: every "
                     f"document a query; {t['msc'] / t['ceiling_msc']:.0%} of it) and SCC ≥ "
                     f"{t['scc']:.3f} (every document a query: {t['ceiling_scc_documents']:.3f})."
                 if t['ceiling_msc'] > 0 else ""]
    rows += ["", f"Candidates: {n['generated']}, accepted {n['accepted']} "
                 f"({n['accepted_in_target_cell']} in their target cell), rejected "
                 f"{n['rejected']}.", ""]
    if n["rejected_by_reason"]:
        rows += ["| rejection reason | n | meaning |", "|---|---|---|"]
        rows += [f"| {r} | {k} | {REASONS.get(r, '')} |" for r, k in
                 n["rejected_by_reason"].items()]
    rows += ["", f"Stop: {report['stop_reason']}.", ""]
    if report.get("gate"):
        from .gate import gate_markdown
        rows += gate_markdown(report["gate"], md_cell) + [""]
    u = report.get("usage") or {}
    if u:
        rows.append(f"LLM calls: {u.get('calls')} ({u.get('paid_calls')} sent, "
                    f"{u.get('cached_calls')} from the cache), tokens {u.get('tokens')}, "
                    f"cost ${u.get('cost_usd')}.")
    return "\n".join(rows) + "\n"


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
