"""Step 1 of the structure pipeline: extract and normalise every document's entities,
checkpointed so that a rerun after a crash resumes.

Each document gives one row ``{"doc_id", "entities": [[name, description], ...], "n_raw",
"abbreviations"[, "failed"]}``: the extractor's raw entities normalised with the abbreviations
the document itself defines (:func:`.normalise.normalised_names`, the same step queries go
through).  With a work folder, rows are appended to ``extraction.jsonl`` per chunk (fsynced);
``work.json`` holds the key of the corpus, extractor and normaliser settings, and a different
key starts over.  The work folder and its files are never followed through a symbolic link
(one planted there is an :class:`InputError`), so nothing outside the output folder is written.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterator

import numpy as np

from ..core.errors import InputError
from ..io.lock import open_no_follow
from ..io.outputs import atomic_write
from .fingerprint import corpus_fingerprint, settings_hash
from .normalise import NORMALISER_VERSION, find_abbreviations, normalised_names

__all__ = ["Checkpoint", "extract_documents", "extract_rows", "normalised_rows", "plan_words",
           "progress_bar"]


class Checkpoint:
    """Append-only JSONL of per-document extraction results, resumable after a crash."""

    def __init__(self, work: str, key: str) -> None:
        self.path = os.path.join(work, "extraction.jsonl")
        meta = os.path.join(work, "work.json")
        _work_folder(work)
        if os.path.exists(meta) and _work_key(meta) != key:  # other settings: start over
            os.remove(meta)
            if os.path.exists(self.path):
                os.remove(self.path)
        if not os.path.exists(meta):
            with atomic_write(meta) as fh:
                json.dump({"key": key}, fh)

    def scan(self) -> Iterator[tuple[dict, int]]:
        """``(row, byte offset)`` of every good row, in file order; a torn or foreign tail
        (a crash, a full disk) is cut off the file once the scan ends."""
        if not os.path.lexists(self.path):  # a dangling link is refused below
            return
        good = 0
        with os.fdopen(open_no_follow(self.path, os.O_RDONLY), "rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # torn last line from a crash
                try:
                    row = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    break
                if not isinstance(row, dict) or not isinstance(row.get("doc_id"), str):
                    break  # not a row of ours: keep what came before it
                yield row, good
                good += len(line)
        fd = open_no_follow(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, good)
        finally:
            os.close(fd)

    def load(self) -> dict:
        """``{doc_id: row}`` of every good row (a later row of a document wins)."""
        return {row["doc_id"]: row for row, _ in self.scan()}

    def append(self, rows: list[dict]) -> list[int]:
        """Append ``rows`` (fsynced); returns each one's byte offset in the file."""
        offsets = []
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        with os.fdopen(open_no_follow(self.path, flags), "ab") as fh:
            at = fh.seek(0, os.SEEK_END)
            for row in rows:
                line = (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode()
                offsets.append(at)
                fh.write(line)
                at += len(line)
            fh.flush()
            os.fsync(fh.fileno())
        return offsets


def _work_folder(work: str) -> None:
    """Create the work folder ``work``; one that is a symbolic link (it would put our files
    outside the output folder) or a file is an :class:`InputError`."""
    if os.path.islink(work):
        raise InputError("refusing to write through a symbolic link: the work folder must be "
                         "the output folder's own", source=work,
                         fix="remove the link, then run again")
    try:
        os.makedirs(work, exist_ok=True)
    except FileExistsError:
        raise InputError("the work folder is a file, not a folder", source=work,
                         fix="remove or move the file, then run again") from None


def _work_key(meta: str):
    """The settings key of a checkpoint's ``work.json`` (None when it cannot be read: the
    checkpoint then starts over, since the rows cannot be trusted to match the settings)."""
    try:
        with open(meta, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    return data.get("key") if isinstance(data, dict) else None


def progress_bar(total: int, desc: str, enabled: bool, unit: str = "doc"):
    """A tqdm bar on stderr, or None (disabled, or tqdm missing)."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)


def extract_rows(extractor, doc_ids: list, texts: dict, cfg) -> list[dict]:
    """The rows of ``doc_ids`` (module docstring): one ``extractor.extract`` call on their
    texts, each document's names normalised with the abbreviations it defines itself.

    The per-document step every engine runs (:mod:`.engine`): in this process, or in a worker
    of a cluster.  ``texts`` maps at least ``doc_ids`` to their texts.
    """
    raw = extractor.extract([texts[d] for d in doc_ids])
    return normalised_rows(doc_ids, raw, dict(getattr(extractor, "failures", {}) or {}), texts,
                           cfg)


def normalised_rows(doc_ids: list, raw: list, failures: dict, texts: dict, cfg) -> list[dict]:
    """The rows of ``doc_ids`` from the extractor's ``raw`` entities (one list per document)
    and its ``failures`` (position -> reason): :func:`extract_rows` after the extractor ran."""
    rows = []
    for i, (doc_id, ents) in enumerate(zip(doc_ids, raw)):
        abbreviations = find_abbreviations(texts[doc_id])
        names = normalised_names(ents, abbreviations, min_chars=cfg.min_chars,
                                 max_words=cfg.max_words)
        row = {"doc_id": doc_id, "entities": [[n, names[n]] for n in names],
               "n_raw": len(ents), "abbreviations": abbreviations}
        if i in failures:
            row["failed"] = failures[i]
        rows.append(row)
    return rows


def plan_words(plan: dict, checkpointed: int = 0) -> str:
    """An LLM extraction plan (:meth:`~.llm.LLMExtractor.plan`) in one sentence."""
    parts = [f"{plan['new']} never answered"]
    if plan["failed"]:
        parts.append(f"{plan['failed']} failed before, asked again (--retry-failed)")
    if plan["partial"]:
        parts.append(f"{plan['partial']} re-asked from a stored first answer")
    reask = "one re-ask for each answer without JSON"
    kept = f"{plan['cached']} answered from the cache" + (
        f", {checkpointed} checkpointed" if checkpointed else "")
    return (f"LLM extraction: {plan['new'] + plan['failed'] + plan['partial']} documents to ask "
            f"({'; '.join(parts)}): {plan['first_requests']} first requests, then {reask}; "
            f"{kept}")


def extract_documents(texts: dict, extractor, cfg, work: str | None, progress: bool,
                      report, retry_failed: bool = False, engine=None):
    """``{doc_id: row}`` for every document of ``texts`` (module docstring): with ``work``, a
    :class:`~.rows.CheckpointRows` that reads them from the checkpoint when asked (the rows
    are never all held), else a dict; ``report`` gets
    ``resumed_docs`` and ``extracted_docs``.  ``retry_failed``: checkpointed rows of failed
    documents are extracted again.

    ``engine`` (:mod:`.engine`; default: this process) runs :func:`extract_rows` on chunks of
    ``cfg.chunk_size`` documents and yields their rows in any order; each row is checkpointed
    as it arrives, a row repeated by a retried worker is kept once, and a document without a
    row is an error.
    """
    ids = list(texts)
    done: dict = {}
    ckpt = None
    if work is not None:
        key = settings_hash({"fp": corpus_fingerprint({d: texts[d] for d in ids}),
                             "extractor": [extractor.name, extractor.version, extractor.params()],
                             "normaliser": NORMALISER_VERSION, "min_chars": cfg.min_chars,
                             "max_words": cfg.max_words})
        ckpt = Checkpoint(work, key)
        for row, offset in ckpt.scan():  # done: each document's row offset, not its row
            done[row["doc_id"]] = None if retry_failed and row.get("failed") else offset
        done = {d: offset for d, offset in done.items() if offset is not None}
    report.resumed_docs = len(done)
    todo = [d for d in ids if d not in done]
    if todo and hasattr(extractor, "plan"):  # an extractor that pays per answer: say what
        report.llm_plan = extractor.plan([texts[d] for d in todo])
        if getattr(report, "announce", None) is not None:
            report.announce(plan_words(report.llm_plan, len(done)))
    todo_set, fresh = set(todo), set()
    # an engine with its own progress bars (Ray Data's) shows them instead of this one
    bar = progress_bar(len(ids), "extract",
                       progress and not getattr(engine, "progress_bars", False))
    if bar is not None:
        bar.update(len(done))
    chunks = [todo[start:start + cfg.chunk_size] for start in range(0, len(todo), cfg.chunk_size)]
    results = (engine.extract(chunks, texts, extractor, cfg) if engine is not None else
               (extract_rows(extractor, chunk, texts, cfg) for chunk in chunks))
    for rows in results:
        new = [r for r in rows if r["doc_id"] in todo_set and r["doc_id"] not in fresh]
        offsets = ckpt.append(new) if ckpt is not None and new else new
        for row, kept in zip(new, offsets):
            done[row["doc_id"]] = kept
            fresh.add(row["doc_id"])
        report.extracted_docs += len(new)
        if bar is not None:
            bar.update(len(new))
    missing = [d for d in todo if d not in fresh]
    if missing:  # an engine that lost documents: never a silently smaller corpus
        raise RuntimeError(f"the {getattr(engine, 'name', 'extraction')} engine returned no "
                           f"row for {len(missing)} documents (e.g. {missing[:3]})")
    if bar is not None:
        bar.close()
    if ckpt is None:
        return done
    from .rows import CheckpointRows
    return CheckpointRows(ckpt.path, ids, np.fromiter((done[d] for d in ids), dtype=np.int64,
                                                      count=len(ids)))
