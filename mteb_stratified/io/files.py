"""Reading runs and qrels: TREC run files, TREC qrels, BEIR qrels TSV and JSON dicts.

Every reader returns pytrec_eval-style dicts (``{qid: {docid: score}}`` for runs,
``{qid: {docid: grade}}`` for qrels) and reports bad input as :class:`InputError` with the file,
the line and the fix.  Files may be gzip-compressed (detected by content, not by name).

Formats
-------
* TREC run: ``qid Q0 docid rank score tag``, whitespace separated (the rank column is ignored,
  as trec_eval ignores it; order comes from the score).
* TREC qrels: ``qid iteration docid grade``.
* BEIR qrels: tab separated ``query-id corpus-id score`` with that header line.
* JSON: one object ``{qid: {docid: number}}`` (pytrec_eval's dict shape; MTEB predictions).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from typing import Iterator

from ..core.errors import InputError

__all__ = ["read_run", "read_qrels", "write_run", "open_text", "numbered_lines"]

_BEIR_HEADER = ("query-id", "corpus-id", "score")


def open_text(path: "str | os.PathLike") -> io.TextIOBase:
    """Open a text file, transparently un-gzipping it; a missing file is an InputError."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", source=path, fix="check the path")
    if os.path.isdir(path):
        raise InputError("is a folder, not a file", source=path, fix="give the file inside it")
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        # decompress whole, so a truncated archive fails before any line is used
        try:
            with gzip.open(path, "rb") as fh:
                data = fh.read()
        except (gzip.BadGzipFile, EOFError, OSError) as exc:
            raise InputError(f"corrupt gzip data ({exc})", source=path,
                             fix="re-create or re-download the file") from None
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="")
    return open(path, "r", encoding="utf-8", newline="")


def numbered_lines(path: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every non-blank line of a text file (gzip ok), without the
    line ending; an empty file is an :class:`InputError`."""
    any_line = False
    try:
        with open_text(path) as fh:
            for number, line in enumerate(fh, start=1):
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                any_line = True
                yield number, text
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=path,
                         fix="save the file as UTF-8") from None
    if not any_line:
        raise InputError("file is empty", source=path,
                         fix="give a file with at least one line of data")


def _is_json(path: str) -> bool:
    with open_text(path) as fh:
        head = fh.read(64).lstrip()
    return head.startswith("{")


def _read_json(path: str, kind: str) -> dict:
    try:
        with open_text(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", source=path, line=exc.lineno,
                         fix="fix the JSON syntax, or give a TREC/BEIR text file") from None
    if not isinstance(data, dict) or not data:
        raise InputError(f"expected a non-empty JSON object {{qid: {{docid: {kind}}}}}",
                         source=path, fix="write the file as pytrec_eval-style nested dicts")
    for qid, docs in data.items():
        if not isinstance(docs, dict):
            raise InputError(f"query {qid!r} maps to {type(docs).__name__}, not an object",
                             source=path, fix=f"write {{qid: {{docid: {kind}}}}}")
        for doc, value in docs.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"{kind} of document {doc!r} for query {qid!r} is not a number: "
                                 f"{value!r}", source=path, fix=f"every {kind} must be a number")
            if kind == "score" and not math.isfinite(value):
                raise InputError(f"score of document {doc!r} for query {qid!r} is {value}",
                                 source=path, fix="replace NaN/inf scores by finite numbers")
            if kind == "grade" and value != int(value):
                raise InputError(f"grade {value!r} of document {doc!r} for query {qid!r} is not "
                                 "an integer", source=path, fix="use integer grades such as 0, 1, 2")
    return data


def _put(table: dict, seen_at: dict, qid: str, doc: str, value, path: str, number: int,
         verb: str) -> None:
    """Store ``table[qid][doc] = value``; a second line for the same pair is an error."""
    docs = table.setdefault(qid, {})
    if doc in docs:
        raise InputError(f"document {doc!r} {verb} twice for query {qid!r} (first on line "
                         f"{seen_at[(qid, doc)]})", source=path, line=number,
                         fix="keep one line per (query, document)")
    docs[doc] = value
    seen_at[(qid, doc)] = number


def read_run(path: "str | os.PathLike") -> dict:
    """Read a TREC run file (or a JSON run) into ``{qid: {docid: score}}``."""
    path = os.fspath(path)
    if _is_json(path):
        return _read_json(path, "score")
    run: dict = {}
    seen_at: dict = {}
    for number, line in numbered_lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise InputError(f"expected 6 columns 'qid Q0 docid rank score tag', found "
                             f"{len(parts)}: {line[:80]!r}", source=path, line=number,
                             fix="write run lines as 'qid Q0 docid rank score tag'")
        qid, _, doc, _, score_text, _ = parts
        try:
            score = float(score_text)
        except ValueError:
            raise InputError(f"score {score_text!r} is not a number", source=path, line=number,
                             fix="the 5th column must be a number") from None
        if not math.isfinite(score):
            raise InputError(f"score is {score_text} for document {doc!r} of query {qid!r}",
                             source=path, line=number,
                             fix="replace NaN/inf scores by finite numbers (or drop the line)")
        _put(run, seen_at, qid, doc, score, path, number, "is listed")
    return run


def _parse_grade(text: str, path: str, number: int) -> int:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"relevance {text!r} is not a number", source=path, line=number,
                         fix="relevance grades must be integers such as 0, 1, 2") from None
    if not math.isfinite(value) or value != int(value):
        raise InputError(f"relevance {text!r} is not an integer", source=path, line=number,
                         fix="relevance grades must be integers such as 0, 1, 2")
    return int(value)


def read_qrels(path: "str | os.PathLike") -> dict:
    """Read TREC qrels, BEIR qrels TSV (with header) or JSON qrels into ``{qid: {docid: grade}}``."""
    path = os.fspath(path)
    if _is_json(path):
        return _read_json(path, "grade")
    qrels: dict = {}
    seen_at: dict = {}
    fmt = None
    for number, line in numbered_lines(path):
        if fmt is None:
            header = tuple(p.strip().lower() for p in line.split("\t"))
            if header == _BEIR_HEADER:
                fmt = "beir"
                continue
            fmt = "beir" if len(line.split("\t")) == 3 else "trec"
        if fmt == "beir":
            parts = [p.strip() for p in line.split("\t")]
            if len(parts) != 3:
                raise InputError(f"expected 3 tab-separated columns 'query-id corpus-id score', "
                                 f"found {len(parts)}: {line[:80]!r}", source=path, line=number,
                                 fix="write BEIR qrels as query-id<TAB>corpus-id<TAB>score")
            qid, doc, grade_text = parts
        else:
            parts = line.split()
            if len(parts) != 4:
                raise InputError(f"expected 4 columns 'qid iteration docid relevance', found "
                                 f"{len(parts)}: {line[:80]!r}", source=path, line=number,
                                 fix="write TREC qrels lines as 'qid 0 docid relevance'")
            qid, _, doc, grade_text = parts
        grade = _parse_grade(grade_text, path, number)
        _put(qrels, seen_at, qid, doc, grade, path, number, "is judged")
    if not qrels:
        raise InputError("no judgments (only a header)", source=path,
                         fix="give at least one judgment line")
    return qrels


def write_run(run: dict, path: "str | os.PathLike", tag: str = "mteb-stratified") -> None:
    """Write ``{qid: {docid: score}}`` as a TREC run (ranked by score, then doc id descending).

    Scores are written with ``repr`` so they read back bit-identical (ties survive the trip).
    """
    with open(path, "w", encoding="utf-8") as fh:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], _Desc(kv[0])))
            for rank, (doc, score) in enumerate(ranked, start=1):
                fh.write(f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}\n")


class _Desc(str):
    """A string that sorts descending (doc id descending among equal scores, as trec_eval)."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)
