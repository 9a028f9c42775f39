"""A BEIR dataset folder: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``, ``qrels/<split>.tsv[.gz]``.

BEIR's own ``GenericDataLoader`` reads only uncompressed files; this loader takes either, checks
ids, and reports bad input with the file and line.  The text rules are those of :mod:`.files`
(UTF-8, a leading BOM ignored, gzip streamed under the decompression-bomb guard); each JSONL
line is one JSON object with an ``_id`` (duplicate keys and too deep nesting are errors).

:func:`write_beir` writes such a folder (all its files as one unit, :mod:`.outputs`): what
``mteb-stratified generate`` writes its output with.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import resources

from ..core.errors import InputError
from .files import numbered_lines, parse_json, read_qrels
from .outputs import gzip_bytes, write_together

__all__ = ["BeirDataset", "load_beir", "load_corpus", "qrels_splits", "bundled_path",
           "dataset_folder", "find_file", "read_jsonl", "write_beir", "qrels_tsv"]


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


def write_beir(folder: "str | os.PathLike", *, corpus: dict | None = None, queries=None,
               copied: dict | None = None, qrels: dict | None = None,
               extra: "list[tuple[str, bytes]] | None" = None) -> dict:
    """Write a BEIR folder as one unit (:func:`~.outputs.write_together`: a kill leaves the
    old files or some of the new ones, never an old file beside a new one); each part is
    written only when given:

    * ``corpus`` ``{doc_id: fields}`` → ``corpus.jsonl.gz``: one ``{"_id": doc_id, **fields}``
      line per document, sorted by id, gzip with no timestamp (the same corpus, the same bytes);
    * ``queries``, rows (dicts with an ``_id``) → ``queries.jsonl``, one line each, in order;
    * ``copied`` ``{split: path}`` → each qrels file copied **byte for byte** into ``qrels/``
      under its own file name (``.tsv`` or ``.tsv.gz``);
    * ``qrels`` ``{split: {qid: {doc_id: grade}}}`` → ``qrels/<split>.tsv``: the header, then
      the queries in their order, each query's documents sorted (:func:`qrels_tsv`);
    * ``extra`` ``[(file name, bytes)]``: more files of the folder written in the same unit
      (``generate``'s ``coverage.json``).

    Rows are JSON with non-ASCII kept (UTF-8).  A split name must be one file name: a name from
    a data file cannot choose where we write (:class:`InputError` otherwise).  Returns the
    paths written: ``{"corpus", "queries", "qrels": {split: path}}`` (None for a part not
    given).
    """
    folder = os.fspath(folder)
    qdir = os.path.join(folder, "qrels")
    for split in [*(copied or ()), *(qrels or ())]:
        _check_split_name(split)
    os.makedirs(qdir, exist_ok=True)
    out: dict = {"corpus": None, "queries": None, "qrels": {}}
    files: list = []
    if corpus is not None:
        out["corpus"] = os.path.join(folder, "corpus.jsonl.gz")
        lines = "".join(json.dumps({"_id": d, **corpus[d]}, ensure_ascii=False) + "\n"
                        for d in sorted(corpus))
        files.append((out["corpus"], gzip_bytes(lines.encode("utf-8"))))
    if queries is not None:
        out["queries"] = os.path.join(folder, "queries.jsonl")
        files.append((out["queries"], ("\n".join(json.dumps(row, ensure_ascii=False)
                                                  for row in queries) + "\n").encode("utf-8")))
    for split, src in (copied or {}).items():
        out["qrels"][split] = os.path.join(qdir, os.path.basename(src))
        with open(src, "rb") as fin:
            files.append((out["qrels"][split], fin.read()))
    for split, judged in (qrels or {}).items():
        out["qrels"][split] = os.path.join(qdir, f"{split}.tsv")
        files.append((out["qrels"][split], qrels_tsv(judged).encode("utf-8")))
    for name, data in extra or ():
        files.append((os.path.join(folder, os.path.basename(name)), data))
    write_together(files)
    return out


def qrels_tsv(qrels: dict) -> str:
    """``{qid: {doc_id: grade}}`` as a BEIR qrels TSV: the header, then one line per judgment,
    the queries in their order, each query's documents sorted."""
    rows = ["query-id\tcorpus-id\tscore"]
    for q in qrels:
        for d, g in sorted(qrels[q].items()):
            rows.append(f"{q}\t{d}\t{int(g)}")
    return "\n".join(rows) + "\n"


def _check_split_name(split) -> None:
    """An :class:`InputError` unless ``split`` names one file in ``qrels/``."""
    name = str(split)
    if (not name or name in (".", "..") or "\0" in name
            or any(sep and sep in name for sep in (os.sep, os.altsep, "/"))):
        raise InputError(f"split name {name[:60]!r} cannot be a qrels file name",
                         fix="name splits with no path separator (e.g. test, dev, generated)")
