"""A BEIR dataset folder: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``, ``qrels/<split>.tsv[.gz]``.

BEIR's own ``GenericDataLoader`` reads only uncompressed files; this loader takes either, checks
ids, and reports bad input with the file and line.  The text rules are those of :mod:`.files`
(UTF-8, a leading BOM ignored, gzip streamed under the decompression-bomb guard); each JSONL
line is one JSON object with an ``_id`` (duplicate keys and too deep nesting are errors).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources

from ..core.errors import InputError
from .files import numbered_lines, parse_json, read_qrels

__all__ = ["BeirDataset", "load_beir", "load_corpus", "qrels_splits", "bundled_path",
           "dataset_folder", "find_file", "read_jsonl"]


@dataclass(frozen=True, eq=False)
class BeirDataset:
    """Corpus ``{doc_id: {"title", "text"}}``, queries ``{qid: text}`` and qrels of one split.

    ``origins``: ``{qid: origin}`` for the queries whose ``queries.jsonl`` row says where they
    came from other than ``"original"`` (``"generated"``, as ``mteb-stratified generate``
    writes them); a query not in it is an original one.  ``folder``: where it was loaded from.
    """

    name: str
    corpus: dict
    queries: dict
    qrels: dict
    split: str
    origins: dict = field(default_factory=dict)
    folder: str | None = None

    def generated(self) -> list:
        """The judged queries of this split that are not original (sorted ids)."""
        return sorted(q for q in self.qrels if self.origins.get(q, "original") != "original")


def bundled_path(name: str = "nfcorpus") -> str:
    """Folder of a dataset bundled in the package (NFCorpus)."""
    path = resources.files("mteb_stratified") / "data" / name
    if not path.is_dir():
        raise InputError(f"no bundled dataset {name!r}", fix="bundled datasets: nfcorpus")
    return str(path)


def dataset_folder(spec: str) -> str:
    """The folder of a BEIR folder or a bundled dataset name (``nfcorpus``, also
    ``StratifiedNFCorpus``), or an :class:`InputError` saying which it is neither."""
    if os.path.isdir(spec):
        return spec
    name = spec.lower()
    if name.startswith("stratified"):
        name = name[len("stratified"):]
    try:
        return bundled_path(name)
    except InputError:
        raise InputError(f"corpus {spec!r} is neither a folder nor a bundled dataset",
                         fix="give a BEIR folder with corpus.jsonl[.gz], or nfcorpus") from None


def qrels_file(spec: str) -> str:
    """A qrels file path as given, or ``NAME:SPLIT`` for the qrels of a bundled dataset
    (``nfcorpus:test``), which works from any folder; a path that exists always wins."""
    name, sep, split = spec.partition(":")
    if os.path.exists(spec) or not sep or not name or "/" in spec or os.sep in spec:
        return spec
    try:
        folder = bundled_path(name.lower())
    except InputError:
        raise InputError(f"{spec}: no such qrels file, and {name!r} is not a bundled dataset",
                         fix="give a qrels file, or NAME:SPLIT of a bundled dataset, e.g. "
                             "nfcorpus:test") from None
    splits = sorted(f.split(".")[0] for f in os.listdir(os.path.join(folder, "qrels")))
    if split not in splits:
        raise InputError(f"the bundled dataset {name!r} has no split {split!r}",
                         fix=f"its splits: {', '.join(f'{name}:{s}' for s in splits)}")
    return find_file(os.path.join(folder, "qrels"), f"{split}.tsv")


def find_file(folder: str, stem: str) -> str:
    """``folder/stem`` or ``folder/stem.gz``, whichever exists (clear error if neither)."""
    for candidate in (stem, stem + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            return path
    raise InputError(f"{stem}(.gz) not found", source=folder,
                     fix="point at a BEIR folder holding corpus.jsonl, queries.jsonl and "
                         "qrels/<split>.tsv (optionally gzip-compressed)")


def read_jsonl(path: str, what: str) -> dict:
    """``{_id: row}`` of a JSONL(.gz) file; malformed lines and duplicate ids raise."""
    out: dict = {}
    for number, line in numbered_lines(path):
        row = parse_json(line, source=path, line=number)
        if not isinstance(row, dict) or "_id" not in row:
            raise InputError(f"{what} line has no '_id'", source=path, line=number,
                             fix='write {"_id": ..., "text": ...} per line')
        key = str(row["_id"])
        if key in out:
            raise InputError(f"{what} id {key!r} appears twice", source=path, line=number,
                             fix="give every id once")
        out[key] = row
    return out


def qrels_splits(folder: "str | os.PathLike") -> list[str]:
    """The split names of ``folder/qrels/<split>.tsv[.gz]``, sorted."""
    qdir = os.path.join(os.fspath(folder), "qrels")
    if not os.path.isdir(qdir):
        return []
    names = {f[:-len(ext)] for f in os.listdir(qdir) for ext in (".tsv", ".tsv.gz")
             if f.endswith(ext)}
    return sorted(names)


def load_corpus(folder: "str | os.PathLike") -> dict:
    """``{doc_id: {"title", "text"}}`` of a BEIR folder's ``corpus.jsonl[.gz]``."""
    raw = read_jsonl(find_file(os.fspath(folder), "corpus.jsonl"), "document")
    return {k: {"title": str(v.get("title", "") or ""), "text": str(v.get("text", "") or "")}
            for k, v in raw.items()}


def load_beir(folder: "str | os.PathLike", split: str = "test", *, corpus: bool = True,
              only_split_queries: bool = True) -> BeirDataset:
    """Load a BEIR folder; queries are limited to those judged in ``split`` by default."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise InputError("dataset folder not found", source=folder,
                         fix="give a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    qrels = read_qrels(find_file(os.path.join(folder, "qrels"), f"{split}.tsv"))
    raw_queries = read_jsonl(find_file(folder, "queries.jsonl"), "query")
    queries = {k: str(v.get("text", "")) for k, v in raw_queries.items()}
    origins = {k: str(v["origin"]) for k, v in raw_queries.items()
               if v.get("origin", "original") != "original"}
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise InputError(f"{len(missing)} judged queries have no text (e.g. {missing[:3]})",
                         source=folder, fix="queries.jsonl must hold every query of the qrels")
    empty = [q for q in qrels if not queries[q].strip()]
    if empty:
        raise InputError(f"{len(empty)} judged queries have empty text (e.g. {empty[:3]})",
                         source=folder, fix="give every query a non-empty text")
    if only_split_queries:
        queries = {q: queries[q] for q in qrels}
    docs: dict = {}
    if corpus:
        docs = load_corpus(folder)
    origins = {q: o for q, o in origins.items() if q in queries}
    return BeirDataset(os.path.basename(folder.rstrip("/")), docs, queries, qrels, split, origins,
                       folder)
