"""The task of a precision audit: a BEIR folder, the bundled NFCorpus, or any MTEB task.

:func:`load_task` turns what the user typed (``precision-sweep --task T``) into a
:class:`SweepTask`, trying in order:

1. an existing folder: a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``,
   each optionally gzip-compressed), read by :func:`mteb_stratified.io.load_beir`;
2. a bundled dataset name (``nfcorpus``);
3. an MTEB retrieval or reranking task name (``SciFact``, ``StratifiedNFCorpus``), loaded
   through mteb (``mteb.get_task(T).load_data()``), so a hub task works where the hub is
   reachable. A reranking task's ``top_ranked`` lists become the first stage.

Anything else is an :class:`InputError` with the closest names. :func:`candidates_from_run`
reads a first stage from a TREC run: each query's top ``depth`` documents in trec_eval order
(score descending, then document id descending).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...core.errors import InputError
from ...io import BeirDataset, bundled_path, load_beir, qrels_splits

__all__ = ["SweepTask", "load_task", "candidates_from_run", "top_candidates", "BUNDLED_TASKS"]

BUNDLED_TASKS = ("nfcorpus",)


@dataclass(frozen=True, eq=False)
class SweepTask:
    """A task's data and where it came from.

    ``source`` is ``"folder"``, ``"bundled"`` or ``"mteb"``; ``top_ranked`` is the task's own
    first stage (``{qid: [doc ids]}``, MTEB reranking tasks) or None.
    """

    name: str
    dataset: BeirDataset
    source: str
    location: str
    top_ranked: "dict | None" = None

    def metadata(self) -> dict:
        return {"task": self.name, "task_source": self.source, "task_location": self.location,
                "split": self.dataset.split}


def _folder_task(folder: str, split: "str | None", name: str, source: str) -> SweepTask:
    splits = qrels_splits(folder)
    chosen = split or "test"
    if chosen not in splits:
        if not splits:
            raise InputError("no qrels/<split>.tsv in the folder", source=folder,
                             fix="a BEIR folder holds corpus.jsonl, queries.jsonl and "
                                 "qrels/test.tsv (optionally .gz)")
        raise InputError(f"no qrels for split {chosen!r} (splits here: {', '.join(splits)})",
                         source=folder, fix=f"pass --split {splits[0]}")
    return SweepTask(name, load_beir(folder, chosen), source, os.path.abspath(folder))


def _retrieval_names(registry) -> list:
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    return sorted(n for n, c in registry.items()
                  if isinstance(c, type) and issubclass(c, AbsTaskRetrieval))


def _suggest(spec: str, names) -> list:
    """Up to 6 names closest to ``spec`` (case-insensitive), every spelling of a match kept."""
    lower: dict = {}
    for n in names:
        lower.setdefault(n.lower(), []).append(n)
    close = difflib.get_close_matches(spec.lower(), list(lower), n=5, cutoff=0.6)
    return [n for c in close for n in lower[c]][:6]


def _not_a_task(spec: str, names) -> InputError:
    near = _suggest(spec, list(BUNDLED_TASKS) + list(names))
    hint = f"did you mean {', '.join(near)}? " if near else ""
    return InputError(
        f"task {spec!r} is neither a folder ({os.path.abspath(spec)} does not exist), a bundled "
        f"dataset ({', '.join(BUNDLED_TASKS)}) nor an MTEB retrieval or reranking task",
        fix=f"{hint}give a BEIR folder, nfcorpus, or an MTEB task name (see "
            "mteb.get_tasks(task_types=['Retrieval', 'Reranking']))")


def _mteb_task(spec: str, split: "str | None", subset: "str | None") -> SweepTask:
    try:
        import mteb
    except ImportError:
        raise _not_a_task(spec, []) from None
    from importlib import import_module

    from ..mteb.registration import try_register

    try_register()  # the Stratified* tasks, also where the auto-load hook is not installed
    registry = getattr(import_module("mteb.get_tasks"), "_TASKS_REGISTRY", None)
    if registry is None:  # another mteb layout: its public list (slower: it builds every task)
        registry = {t.metadata.name: type(t) for t in mteb.get_tasks()}
    names = _retrieval_names(registry)
    exact = {n.lower(): n for n in registry}
    name = spec if spec in registry else exact.get(spec.lower())
    if name is None:
        raise _not_a_task(spec, names)
    if name not in names:
        raise InputError(f"MTEB task {name!r} is a {registry[name].metadata.type} task, not "
                         "retrieval or reranking",
                         fix="the audit ranks documents: give a retrieval or reranking task")
    task = mteb.get_task(name)
    try:
        task.load_data()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - hub/network/dataset errors, reported plainly
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise InputError(
            f"MTEB task {name!r} could not be loaded through mteb ({type(exc).__name__}: {first}; "
            f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE') or 'unset'})",
            fix="make the Hugging Face hub reachable (and unset HF_HUB_OFFLINE), or download "
                "the dataset as a BEIR folder and pass --task /path/to/folder; the bundled "
                "copy of NFCorpus is --task nfcorpus") from None
    data = task.dataset
    subsets = list(data)
    chosen = subset or ("default" if "default" in subsets else (subsets[0] if len(subsets) == 1
                                                                else None))
    if chosen not in subsets:
        raise InputError(f"MTEB task {name!r} has subsets {', '.join(map(str, subsets))}",
                         fix="pick one with --hf-subset")
    splits = list(data[chosen])
    want = split or next((s for s in task.metadata.eval_splits if s in splits), None)
    if want not in splits:
        raise InputError(f"MTEB task {name!r} has no split {want!r} (splits: {', '.join(splits)})",
                         fix=f"pass --split {splits[0]}" if splits else "check the task")
    dataset, top = mteb_split_to_beir(data[chosen][want], name, want)
    return SweepTask(name, dataset, "mteb", f"mteb:{name}/{chosen}/{want}", top)


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):  # conversational queries: the turns, in order
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def mteb_split_to_beir(split_data, name: str, split: str) -> tuple:
    """``(BeirDataset, top_ranked or None)`` of one mteb 2 split (``RetrievalSplitData``).

    Queries are kept when they are judged; ``top_ranked`` (reranking tasks) is kept for them.
    Conversational queries are their turns joined by newlines; an instruction-retrieval query is
    followed by its instruction.
    """
    corpus = {}
    for row in split_data["corpus"]:
        corpus[str(row["id"])] = {"title": _text(row.get("title")), "text": _text(row.get("text"))}
    queries = {}
    for row in split_data["queries"]:  # an instruction task's instruction follows its query
        text, instruction = _text(row.get("text")), _text(row.get("instruction"))
        queries[str(row["id"])] = f"{text} {instruction}".strip() if instruction else text
    qrels = {str(q): {str(d): int(g) for d, g in docs.items()}
             for q, docs in (split_data.get("relevant_docs") or {}).items()}
    qrels = {q: docs for q, docs in qrels.items() if docs and q in queries}
    if not qrels:
        raise InputError(f"MTEB task {name!r} ({split}) has no judged query with text",
                         fix="pick another split or task")
    queries = {q: queries[q] for q in qrels}
    top = split_data.get("top_ranked")
    if top:
        top = {str(q): [str(d) for d in docs] for q, docs in top.items() if str(q) in qrels}
    return BeirDataset(name, corpus, queries, qrels, split), (top or None)


def load_task(spec: str, split: "str | None" = None, *, subset: "str | None" = None) -> SweepTask:
    """The :class:`SweepTask` of a folder, a bundled name or an MTEB task name (see module doc)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("empty task", fix="give a BEIR folder, nfcorpus or an MTEB task name")
    if os.path.isdir(spec):
        return _folder_task(spec, split, os.path.basename(os.path.abspath(spec)), "folder")
    if os.path.exists(spec):
        raise InputError("the task is a file, not a folder", source=spec,
                         fix="give the BEIR folder that holds corpus.jsonl, queries.jsonl, qrels/")
    if spec.lower() in BUNDLED_TASKS:
        return _folder_task(bundled_path(spec.lower()), split, spec.lower(), "bundled")
    return _mteb_task(spec, split, subset)


def _line_of(path: str, qid: str, doc: str) -> "int | None":
    from ...io.files import numbered_lines

    for number, line in numbered_lines(path):
        parts = line.split()
        if len(parts) >= 3 and parts[0] == qid and parts[2] == doc:
            return number
    return None


def _top(scores, doc_ids: Sequence[str], order: np.ndarray, depth: int) -> list:
    """The ``depth`` best of one query's scores in trec_eval order (score, then doc id,
    descending); ``order`` sorts ``doc_ids`` by id descending."""
    s = np.asarray(scores, dtype=np.float64)[order]
    top = order[np.argsort(-s, kind="stable")[:depth]]
    return [doc_ids[i] for i in top]


def top_candidates(doc_ids: Sequence[str], scores: Sequence, depth: int) -> list:
    """Per query, the top ``depth`` of ``doc_ids`` by score (ties: doc id descending)."""
    order = np.array(sorted(range(len(doc_ids)), key=lambda i: doc_ids[i], reverse=True),
                     dtype=np.int64)
    return [_top(row, doc_ids, order, depth) for row in scores]


def candidates_from_run(path: str, qids: list, corpus: dict, depth: int) -> tuple:
    """``(qids kept, candidates)`` from a TREC run: per query, its top ``depth`` documents in
    trec_eval order (score descending, then doc id descending).

    Queries without a line in the run are left out (the caller reports them); a document id
    that is not in the corpus is an error at its line.
    """
    from ...io import read_run

    run = read_run(path)
    kept, out = [], []
    for q in qids:
        docs = run.get(q)
        if not docs:
            continue
        for d in docs:
            if d not in corpus:
                raise InputError(f"document {d!r} of query {q!r} is not in the task's corpus",
                                 source=path, line=_line_of(path, q, d),
                                 fix="the first-stage run must rank documents of this task")
        ids = list(docs)
        kept.append(q)
        out.append(top_candidates(ids, [[docs[d] for d in ids]], depth)[0])
    if not kept:
        raise InputError(f"the run has none of the task's {len(qids)} judged queries",
                         source=path, fix="give the first-stage run of this task's queries")
    return kept, out
