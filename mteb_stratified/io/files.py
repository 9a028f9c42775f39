"""Reading runs and qrels: TREC run files, TREC qrels, BEIR qrels TSV and JSON dicts.

Every reader returns pytrec_eval-style dicts (``{qid: {docid: score}}`` for runs,
``{qid: {docid: grade}}`` for qrels) and reports bad input as :class:`InputError` with the file,
the line and the fix; :func:`read_run_arrays` streams a TREC run straight into
:class:`~mteb_stratified.core.ranking.arrays.RankingArrays`.

Text
----
Files are UTF-8, read line by line (lines end with ``\\n``; a ``\\r`` before it is dropped); a
leading byte order mark is ignored, two are refused; blank lines are skipped (:mod:`._text`:
the one reading of BOMs, blank lines, comments and whitespace, shared with the fast path).
Bad UTF-8 is reported with its line and its byte offset in the (decompressed) file.  A plain
TREC run (single spaces, 6 fields, ...: :mod:`._vectorised`) is parsed by pyarrow's C
reader instead, with the same result; any other file, and every error, goes through the line
reader, the reference.

Formats
-------
* TREC run: ``qid Q0 docid rank score tag``, whitespace separated.  The rank column is ignored,
  as trec_eval ignores it (order comes from the score); fields after the 6th are ignored, as
  trec_eval ignores them; fewer than 6 is an error.  A line whose first non-blank character
  is ``#`` is a comment (trec_eval's ``get_trec_results.c`` skips leading blanks, then a
  ``#`` line); :func:`write_run` so refuses query ids that start with ``#``.
* TREC qrels: ``qid iteration docid grade``.  A line with ``#`` in column 0 is a comment, as in
  trec_eval's ``get_qrels.c``; after leading blanks ``#`` is data (``  #x 0 d 1`` judges
  query ``#x``), as there.  (trec_eval skips only one comment line at a time; here any number
  of them is skipped.)
* BEIR qrels: tab separated ``query-id corpus-id score``.  The first line that is not a
  column-0 ``#`` line decides: 3 tab-separated fields (and not 4 whitespace separated ones) is
  BEIR, anything else TREC.  That line is a header, skipped, when its 3rd field is not a
  number (``query-id corpus-id score``, ``qid docid rel``, ...); BEIR's loader always skips
  the first line, here a headerless file keeps its first judgment.  BEIR has no comments:
  every line is data, so ``#q1<TAB>d1<TAB>1`` judges query ``#q1`` (as BEIR reads it) and a
  ``# note`` line is an error (it has not 3 columns).  Such a query never matches a TREC run,
  whose ``#`` lines are comments.
* JSON: one object ``{qid: {docid: number}}`` (pytrec_eval's dict shape; MTEB predictions); a
  key given twice in one object is an error (JSON would keep the last).  A file is JSON when
  its first non-blank character is ``{`` and its first line is not a valid run or qrels line
  (so a qid that starts with ``{`` stays TREC).

TREC fields are separated by ASCII whitespace, as trec_eval splits them; other Unicode spaces
are part of an id.

Numbers
-------
Every number is read by the one grammar of :mod:`mteb_stratified.io.numbers` (its docstring):
scores are what C's ``atof`` (trec_eval's score reader) reads in full, ASCII only and finite
(``1_000``, ``nan``, ``inf``, ``1e400`` are refused); grades in text files are integers,
optionally with a zero fraction, within ``±MAX_GRADE`` (an exponent or a fraction is refused:
trec_eval's ``atol`` would read only the digits before it); JSON values are JSON numbers.

Judgments given twice
---------------------
A qrels line that repeats an earlier one exactly (same query, document and grade) is kept once,
with an :class:`~mteb_stratified.core.errors.InputWarning`, as trec_eval keeps it; the same
(query, document) with another grade is an error.  A run that lists a (query, document) twice is
an error: a ranking holds a document once.

Files and lines
---------------
Only regular files are read: a folder, a named pipe (FIFO), a device such as ``/dev/zero`` or a
socket is refused at once, before a byte is read (a FIFO is opened without blocking).  A text
line may hold at most :data:`MAX_LINE_BYTES` (16 MiB) bytes: a longer one is refused at its line
number as soon as the reader has seen that many bytes without a line ending, so a file that is
not line text (zeros, a binary) costs at most that much memory.  JSON files, which may be one
long line, are read whole instead, bounded by the file's size (and, gzipped, by the ratio
below).

Gzip
----
Files may be gzip-compressed (detected by content, not by name); they are decompressed as they
are read, never whole.  A corrupt or truncated archive is an error, never a shorter file.  A
decompression bomb is refused early: once :data:`GZIP_FLOOR_BYTES` (16 MiB) have been
decompressed, the bytes out may never exceed ``max_gzip_ratio`` times the compressed bytes read
so far, so a bomb is refused after about 16 MiB of output, in well under a second.  Genuine runs
and qrels compress 3-15 times.  The ratio (default :data:`GZIP_RATIO` = 100) is the
``max_gzip_ratio`` keyword of every reader, else the environment variable
``MTEB_STRATIFIED_MAX_GZIP_RATIO`` (read at each call).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import math
import os
import re
import stat
import warnings
import zlib
from typing import Iterable, Iterator, Mapping

import numpy as np

from ..core.ranking.arrays import from_blocks, from_dicts
from ..core.errors import InputError, InputWarning
from . import _text
from ._judgments import Judgments
from ._vectorised import qrels_table as _fast_qrels, run_arrays as _fast_run_arrays
from ._vectorised import run_dict as _fast_run_dict
from .numbers import INTEGER, NUMBER, NUMBER_BYTES, json_number, parse_grade, parse_number
from .outputs import atomic_write

__all__ = ["read_run", "read_run_arrays", "read_qrels", "read_judgments", "write_run", "open_text",
           "numbered_lines", "read_bytes", "utf8_error", "parse_json", "GZIP_RATIO",
           "GZIP_FLOOR_BYTES", "GZIP_RATIO_ENV", "NUMBER", "INTEGER"]

#: Default bound of decompressed size / compressed size for gzip input.
GZIP_RATIO = 100.0
#: Decompressed sizes up to this never trip the ratio guard (beyond it the ratio is checked
#: against the compressed bytes read so far).
GZIP_FLOOR_BYTES = 16 * 2**20
#: The longest text line a line reader accepts, in bytes (without its line ending).
MAX_LINE_BYTES = 16 * 2**20
#: Environment variable that overrides :data:`GZIP_RATIO` (read at call time).
GZIP_RATIO_ENV = "MTEB_STRATIFIED_MAX_GZIP_RATIO"
#: A run that takes the dict path (interleaved and not plain) and is larger than this gets a
#: note: it is read whole into dicts, several times its size in memory.
DICT_NOTE_BYTES = 64 * 2**20


def _gzip_ratio(max_gzip_ratio: float | None) -> float:
    """The ratio in force: the keyword, else the environment variable, else the default."""
    if max_gzip_ratio is None:
        text = os.environ.get(GZIP_RATIO_ENV)
        if text is None:
            return GZIP_RATIO
        value = float(text) if NUMBER.fullmatch(text.strip()) else math.nan
        where = f"environment variable {GZIP_RATIO_ENV}={text!r}"
    else:
        where = f"max_gzip_ratio={max_gzip_ratio!r}"
        try:
            value = float(max_gzip_ratio)
        except (TypeError, ValueError):
            value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{where} is not a positive number",
                         fix="give the largest decompressed/compressed size ratio, e.g. 1000")
    return value


class _GuardedGzip(io.RawIOBase):
    """A gzip stream decompressed as it is read, with its errors as InputError and the bomb
    guard: beyond ``GZIP_FLOOR_BYTES`` out, at most ``ratio`` times the compressed bytes read so
    far (``raw.tell()``: the decompressor reads its input in 128 KiB blocks)."""

    def __init__(self, raw, path: str, ratio: float) -> None:
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw, self._path = raw, path
        self._ratio = ratio
        self.expanded = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            n = self._gz.readinto(buffer)
        except (EOFError, zlib.error, OSError) as exc:  # BadGzipFile is an OSError
            what = "the archive is truncated" if isinstance(exc, EOFError) else exc
            raise InputError(f"corrupt gzip data after {self.expanded} decompressed bytes "
                             f"({what})",
                             source=self._path,
                             fix="re-create or re-download the file") from None
        self.expanded += n
        if self.expanded > GZIP_FLOOR_BYTES:
            compressed = max(self._raw.tell(), 1)
            if self.expanded > self._ratio * compressed:
                raise InputError(
                    f"gzip data expands beyond {self._ratio:g} times its compressed size "
                    f"({compressed} compressed bytes read, already {self.expanded} bytes "
                    "decompressed): refused as a likely decompression bomb", source=self._path,
                    fix=f"if the file is genuine, raise the bound with max_gzip_ratio=... or the "
                        f"environment variable {GZIP_RATIO_ENV}")
        return n

    def close(self) -> None:
        self._gz.close()
        self._raw.close()
        super().close()


def _unreadable(path: str, exc: OSError) -> InputError:
    return InputError(f"cannot read the file ({exc.strerror or exc})", source=path,
                      fix="check that the file is readable (permissions, device)")


_NOT_REGULAR = ((stat.S_ISDIR, "is a folder, not a file", "give the file inside it"),
                (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file",
                 "write the data to a file first, then give that file"),
                (stat.S_ISCHR, "is a character device, not a regular file",
                 "give a run, qrels or data file"),
                (stat.S_ISBLK, "is a block device, not a regular file",
                 "give a run, qrels or data file"),
                (stat.S_ISSOCK, "is a socket, not a regular file", "give a regular file"))


def _open_regular(path: str) -> io.BufferedReader:
    """``path`` opened for reading if it is a regular file, else an InputError: the file is
    opened without blocking (a FIFO with no writer would block ``open``), checked with
    ``fstat`` (no race with a swapped path), then set back to blocking reads."""
    if not os.path.lexists(path):
        raise InputError("file not found", source=path, fix="check the path")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise InputError("is a folder, not a file", source=path, fix="give the file inside it")
    except FileNotFoundError:  # a link to nowhere
        raise InputError("file not found (a link to a missing file)", source=path,
                         fix="check the path") from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        message, fix = next(((m, f) for test, m, f in _NOT_REGULAR if test(mode)),
                            ("is not a regular file", "give a regular file"))
        raise InputError(message, source=path, fix=fix)
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return open(fd, "rb")


def _open_binary(path: str, max_gzip_ratio: float | None = None) -> io.BufferedIOBase:
    """A buffered binary stream of a regular file's (decompressed) bytes; every failure to open
    or read it is an InputError naming the file."""
    ratio = _gzip_ratio(max_gzip_ratio)
    raw = _open_regular(path)
    try:
        magic = raw.peek(2)[:2]
    except OSError as exc:
        raw.close()
        raise _unreadable(path, exc) from None
    if magic == b"\x1f\x8b":
        return io.BufferedReader(_GuardedGzip(raw, path, ratio), buffer_size=1 << 20)
    return raw


class _LineGuard(io.RawIOBase):
    """A binary stream that refuses, with the line number, a line longer than
    :data:`MAX_LINE_BYTES` as soon as that many bytes went by without a line ending (for
    readers that read text through ``io.TextIOWrapper``, such as :mod:`csv`)."""

    def __init__(self, raw, path: str) -> None:
        self._raw, self._path = raw, path
        self._line, self._run = 1, 0  # the current line, its bytes so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        if not n:
            return n
        data = memoryview(buffer)[:n].tobytes()
        first = data.find(b"\n")
        if first < 0:
            self._run += n
        else:
            if self._run + first > MAX_LINE_BYTES:
                raise long_line(self._path, self._line)
            if n > MAX_LINE_BYTES:  # a whole line may lie inside this block: look at each
                for offset, text in enumerate(data[first + 1:].split(b"\n")[:-1], start=1):
                    if len(text) > MAX_LINE_BYTES:
                        raise long_line(self._path, self._line + offset)
            self._line += data.count(b"\n")
            self._run = n - data.rfind(b"\n") - 1
        if self._run > MAX_LINE_BYTES:
            raise long_line(self._path, self._line)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def long_line(path: str, line: int) -> InputError:
    """The error of a line beyond :data:`MAX_LINE_BYTES`."""
    return InputError(f"line is longer than {MAX_LINE_BYTES // 2**20} MiB: not line text of "
                      "the expected kind (a binary, a JSON dump, no line endings?)", source=path,
                      line=line,
                      fix="give the text file itself (one record per line); a JSON object may "
                          "be one long line only in a .json run or qrels file")


def open_text(path: "str | os.PathLike", *, max_gzip_ratio: float | None = None) -> io.TextIOBase:
    """A UTF-8 text stream of a regular file (gzip decompressed as it is read, a leading BOM
    dropped, lines of at most :data:`MAX_LINE_BYTES`); a missing, irregular or unreadable file
    is an InputError.  Pass ``newline=""`` semantics to :mod:`csv` as it asks."""
    path = os.fspath(path)
    guarded = io.BufferedReader(_LineGuard(_open_binary(path, max_gzip_ratio), path))
    return io.TextIOWrapper(guarded, encoding="utf-8-sig", newline="")


def read_bytes(path: "str | os.PathLike", *, max_gzip_ratio: float | None = None) -> bytes:
    """All (decompressed) bytes of a file, under the same checks as the line readers."""
    path = os.fspath(path)
    try:
        with _open_binary(path, max_gzip_ratio) as fh:
            return fh.read()
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _utf8_error(exc: UnicodeDecodeError, path: str, line: int, offset: int) -> InputError:
    return InputError(f"not UTF-8 text ({exc.reason} at byte {offset} of the file)", source=path,
                      line=line, fix="save the file as UTF-8")


def utf8_error(path: "str | os.PathLike") -> InputError:
    """The FILE:LINE error of the file's first byte that is not UTF-8, for readers that met a
    UnicodeDecodeError without knowing the line (a file that decodes by now: no line)."""
    path = os.fspath(path)
    data = read_bytes(path)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _utf8_error(exc, path, data.count(b"\n", 0, exc.start) + 1, exc.start)
    return InputError("not UTF-8 text", source=path, fix="save the file as UTF-8")


def _raw_lines(path: str, comments: bool,
               max_gzip_ratio: float | None) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, raw bytes)`` of every non-blank line (and, with
    ``comments``, not a line whose first non-blank byte is ``#``: trec_eval's run comments),
    without the line ending; a leading BOM is dropped (:mod:`._text`: one reading of BOMs, blank
    lines and comments with the fast path).  A file without such a line, a second BOM, or a
    line beyond :data:`MAX_LINE_BYTES`, is an InputError."""
    pos = 0
    any_line = False
    limit = MAX_LINE_BYTES + 1
    try:
        with _open_binary(path, max_gzip_ratio) as fh:
            for number, raw in enumerate(iter(lambda: fh.readline(limit), b""), start=1):
                if len(raw) == limit and not raw.endswith(b"\n"):
                    raise long_line(path, number)
                start, pos = pos, pos + len(raw)
                if number == 1:
                    stripped = _text.first_line(raw, path)
                    raw, start = stripped, start + len(raw) - len(stripped)
                if _text.is_blank(raw) or (comments and _text.is_run_comment(raw)):
                    continue
                any_line = True
                yield number, start, raw.rstrip(b"\n").rstrip(b"\r")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if not any_line:
        raise InputError("file is empty", source=path,
                         fix="give a file with at least one line of data")


def _decode(raw: bytes, path: str, number: int, start: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(exc, path, number, start + exc.start) from None


def numbered_lines(path: "str | os.PathLike", *,
                   max_gzip_ratio: float | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every non-blank line of a UTF-8 text file (gzip ok), without
    the line ending.  A file without such a line is an :class:`InputError`."""
    path = os.fspath(path)
    for number, start, raw in _raw_lines(path, False, max_gzip_ratio):
        yield number, _decode(raw, path, number, start)


_WS = _text.WHITESPACE.decode()
_WS_RE = re.compile(r"[ \t\n\r\v\f]+")


_NOT_WS = re.compile(r"[\x1c-\x1f]")  # str.split() splits there too; trec_eval does not


def _split(text: str) -> list[str]:
    """Fields separated by ASCII whitespace (as trec_eval; other Unicode spaces are data)."""
    if text.isascii() and _NOT_WS.search(text) is None:
        return text.split()  # the fast path: the same fields
    return _WS_RE.split(text.strip(_WS))


def parse_json(text: str, *, source: str, line: int | None = None):
    """``json.loads`` with every failure an InputError: syntax (with its line), nesting too
    deep, and an object that names a key twice (JSON would silently keep the last)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}",
                         source=source, line=exc.lineno if line is None else line,
                         fix="fix the JSON syntax, or give a TREC/BEIR text file") from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=source, line=line,
                         fix="give flat objects: {qid: {docid: number}} or one row per line")
    except _DuplicateKey as dup:
        raise InputError(f"JSON object lists key {dup.args[0]!r} twice", source=source, line=line,
                         fix="give every key once") from None


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def _is_json(text: str, kind: str) -> bool:
    """Whether a file whose first data line is ``text`` is JSON: it starts with ``{`` and is not
    a valid line of the TREC (or BEIR) format."""
    if not text.lstrip(_WS).startswith("{"):
        return False
    parts = _split(text)
    if kind == "score":
        return not (len(parts) >= 6 and NUMBER.fullmatch(parts[4]))
    tabs = text.split("\t")
    return not ((len(parts) == 4 and NUMBER.fullmatch(parts[3]))
                or (len(tabs) == 3 and NUMBER.fullmatch(tabs[2].strip(_WS))))


def _read_json(path: str, kind: str, max_gzip_ratio: float | None) -> dict:
    data = _text.first_line(read_bytes(path, max_gzip_ratio=max_gzip_ratio), path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _utf8_error(exc, path, data.count(b"\n", 0, exc.start) + 1, exc.start) from None
    obj = parse_json(text, source=path)
    if not isinstance(obj, dict) or not obj:
        raise InputError(f"expected a non-empty JSON object {{qid: {{docid: {kind}}}}}",
                         source=path, fix="write the file as pytrec_eval-style nested dicts")
    for qid, docs in obj.items():
        if not isinstance(docs, dict):
            raise InputError(f"query {qid!r} maps to {type(docs).__name__}, not an object",
                             source=path, fix=f"write {{qid: {{docid: {kind}}}}}")
        for doc, value in docs.items():
            docs[doc] = json_number(value, kind, f"document {doc!r} for query {qid!r}", source=path)
    return obj


def _twice(path: str, line: int, first: int, qid: str, doc: str, verb: str) -> InputError:
    return InputError(f"document {doc!r} {verb} twice for query {qid!r} (first on line {first})",
                      source=path, line=line, fix="keep one line per (query, document)")


def _put(table: dict, seen_at: dict, qid: str, doc: str, value, path: str, number: int,
         verb: str) -> None:
    """Store ``table[qid][doc] = value``; a second line for the same pair is an error."""
    docs = table.setdefault(qid, {})
    if doc in docs:
        raise _twice(path, number, seen_at[(qid, doc)], qid, doc, verb)
    docs[doc] = value
    seen_at[(qid, doc)] = number


def _run_records(path: str, lines: Iterable[tuple[int, int, bytes]]) -> Iterator[tuple]:
    """``(line, qid, doc, score)`` of each raw TREC run line, checked.  Fields are split on
    ASCII whitespace in bytes (the hot loop: a line is decoded whole only to check UTF-8)."""
    for number, start, raw in lines:
        parts = raw.split()
        if not raw.isascii():
            _decode(raw, path, number, start)
        if len(parts) < 6:
            line = raw.decode()
            raise InputError(f"expected 6 columns 'qid Q0 docid rank score tag', found "
                             f"{len(parts)}: {line[:80]!r}", source=path, line=number,
                             fix="write run lines as 'qid Q0 docid rank score tag'")
        qid, doc = parts[0].decode(), parts[2].decode()
        text = parts[4]
        score = (float(text) if NUMBER_BYTES.fullmatch(text)
                 else parse_number(text.decode(), "score", source=path, line=number))
        if not math.isfinite(score):
            raise InputError(f"score {text.decode()[:40]!r} of document {doc!r} for query "
                             f"{qid!r} overflows", source=path, line=number,
                             fix="write scores within ±1.7e308")
        yield number, qid, doc, score


def _first_line(path: str, max_gzip_ratio):
    """The text of a run file's first data line, and an iterator over all its raw data lines
    (comments skipped as trec_eval skips them)."""
    lines = _raw_lines(path, True, max_gzip_ratio)
    try:
        first = next(lines)
        text = _decode(first[2], path, first[0], first[1])
    except BaseException:
        lines.close()  # the file now, not when a cycle with the error is collected
        raise

    def every():
        try:
            yield first
            yield from lines
        finally:
            lines.close()
    return text, every()


def read_run(path: "str | os.PathLike", *, max_gzip_ratio: float | None = None) -> dict:
    """Read a TREC run file (or a JSON run) into ``{qid: {docid: score}}``; a plain TREC run
    goes through pyarrow's C reader (:mod:`._vectorised`), any other through the line reader."""
    path = os.fspath(path)
    fast = _fast_run_dict(lambda: _open_binary(path, max_gzip_ratio))
    if fast is not None:
        return fast
    first, lines = _first_line(path, max_gzip_ratio)
    with contextlib.closing(lines):  # closed on an error too (a file left open warns)
        if _is_json(first, "score"):
            return _read_json(path, "score", max_gzip_ratio)
        run: dict = {}
        seen_at: dict = {}
        for number, qid, doc, score in _run_records(path, lines):
            _put(run, seen_at, qid, doc, score, path, number, "is listed")
    return run


class _Interleaved(Exception):
    """A query's lines are not contiguous: the streaming reader hands over to the dict one."""


def _run_blocks(path: str, lines: Iterable[tuple[int, int, bytes]]) -> Iterator[tuple]:
    """``(qid, doc ids, scores)`` per query of a run whose lines are grouped by query."""
    done: set = set()
    qid, seen = None, {}
    scores: list = []
    for number, q, doc, score in _run_records(path, lines):
        if q != qid:
            if qid is not None:
                yield qid, list(seen), np.array(scores, dtype=np.float64)
                done.add(qid)
            if q in done:
                raise _Interleaved
            qid, seen, scores = q, {}, []
        if doc in seen:
            raise _twice(path, number, seen[doc], q, doc, "is listed")
        seen[doc] = number
        scores.append(score)
    if qid is not None:
        yield qid, list(seen), np.array(scores, dtype=np.float64)


def read_run_arrays(path: "str | os.PathLike", qrels: dict, *, missing: str = "skip",
                    qrels_name: str = "qrels", run_name: str | None = None,
                    max_gzip_ratio: float | None = None) -> tuple:
    """A run file joined with ``qrels`` straight into ``(RankingArrays, left_out)``.

    The same result as ``from_dicts(qrels, read_run(path), ...)``, streamed: a plain TREC run
    is parsed by pyarrow's C reader in blocks, vectorised (:mod:`._vectorised`); any other run
    (and any error, reported with its line) takes the line reader, whose lines grouped by query
    go one query at a time into numpy buffers.  Either way peak memory stays near the size of
    the arrays.  Interleaved queries (and JSON runs) take the dict path.
    """
    path = os.fspath(path)
    fast = _fast_run_arrays(lambda: _open_binary(path, max_gzip_ratio), qrels, missing)
    if fast is not None:
        return fast
    names = dict(missing=missing, qrels_name=qrels_name, run_name=run_name or path)
    first, lines = _first_line(path, max_gzip_ratio)
    with contextlib.closing(lines):
        if not _is_json(first, "score"):
            try:
                return from_blocks(qrels, _run_blocks(path, lines), **names)
            except _Interleaved:
                _dict_note(path)
    return from_dicts(qrels, read_run(path, max_gzip_ratio=max_gzip_ratio), **names)


def _dict_note(path: str) -> None:
    """Say why a large run takes the dict path (#46.11): its queries are not contiguous and it
    is not plain, so the fast path cannot group it."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return
    if size > DICT_NOTE_BYTES:
        warnings.warn(InputWarning(
            f"the run's queries are not contiguous and it is not a plain run (fields separated "
            f"by single spaces, 6 per line, no comment lines): it is read whole into memory, "
            f"about 8 times its {size / 2**20:.0f} MiB", source=path,
            fix="sort it by query (e.g. LC_ALL=C sort -s -k1,1) and write its fields separated "
                "by single spaces; it then streams"), stacklevel=3)


def read_qrels(path: "str | os.PathLike", *, max_gzip_ratio: float | None = None) -> dict:
    """Read TREC qrels, BEIR qrels TSV or JSON qrels into ``{qid: {docid: grade}}``; a plain
    TREC or BEIR file goes through pyarrow's C reader (:mod:`._vectorised`), any other through
    the line reader."""
    judgments = read_judgments(path, max_gzip_ratio=max_gzip_ratio)
    return judgments.to_dict() if isinstance(judgments, Judgments) else judgments


def read_judgments(path: "str | os.PathLike", *,
                   max_gzip_ratio: float | None = None) -> Mapping[str, dict]:
    """:func:`read_qrels`' judgments, kept as columns where the vectorised reader takes the file
    (:class:`~._judgments.Judgments`: a read-only Mapping equal to that dict, whose doc ids stay
    one pyarrow id table for :func:`read_run_arrays`' join), else the line reader's dict."""
    path = os.fspath(path)
    fast = _fast_qrels(lambda: _open_binary(path, max_gzip_ratio))
    return fast if fast is not None else _read_qrels_lines(path, max_gzip_ratio)


def _read_qrels_lines(path: str, max_gzip_ratio: float | None) -> dict:
    """The line reader of qrels: the reference of what a file means, with every error and
    warning."""
    lines = _raw_lines(path, False, max_gzip_ratio)
    with contextlib.closing(lines):  # closed on an error too (a file left open warns)
        return _qrels_of_lines(path, max_gzip_ratio, lines)


def _qrels_of_lines(path: str, max_gzip_ratio: float | None, lines) -> dict:
    head = []  # the '#' lines before the first data line: comments, unless the file is BEIR
    for body in lines:
        if not _text.is_qrels_comment(body[2]):
            break
        head.append(body)
    else:
        raise InputError("file is empty (only comment lines)", source=path,
                         fix="give a file with at least one judgment line")
    first = _decode(body[2], path, body[0], body[1])
    if _is_json(first, "grade"):
        return _read_json(path, "grade", max_gzip_ratio)
    tabs = [p.strip(_WS) for p in first.split("\t")]
    beir = len(tabs) == 3 and len(_split(first)) != 4
    header = body[0] if beir and NUMBER.fullmatch(tabs[2]) is None else None
    qrels: dict = {}
    seen_at: dict = {}
    repeats: list = []  # (line, the line it repeats)
    for number, start, raw in itertools.chain(head, [body], lines):
        if number == header or (not beir and _text.is_qrels_comment(raw)):
            continue
        line = _decode(raw, path, number, start)
        if beir:
            parts = [p.strip(_WS) for p in line.split("\t")]
            if len(parts) != 3:
                note = " (BEIR qrels have no comment lines)" if raw.startswith(b"#") else ""
                raise InputError(f"expected 3 tab-separated columns 'query-id corpus-id score', "
                                 f"found {len(parts)}: {line[:80]!r}{note}", source=path,
                                 line=number,
                                 fix="write BEIR qrels as query-id<TAB>corpus-id<TAB>score")
            qid, doc, grade_text = parts
        else:
            parts = _split(line)
            if len(parts) != 4:
                raise InputError(f"expected 4 columns 'qid iteration docid relevance', found "
                                 f"{len(parts)}: {line[:80]!r}", source=path, line=number,
                                 fix="write TREC qrels lines as 'qid 0 docid relevance'")
            qid, _, doc, grade_text = parts
        grade = parse_grade(grade_text, source=path, line=number)
        docs = qrels.setdefault(qid, {})
        if doc not in docs:
            docs[doc] = grade
            seen_at[(qid, doc)] = number
        elif docs[doc] == grade:  # the same judgment again: kept once, as trec_eval keeps it
            repeats.append((number, seen_at[(qid, doc)]))
        else:
            raise InputError(f"document {doc!r} is judged twice for query {qid!r} with different "
                             f"grades ({docs[doc]} on line {seen_at[(qid, doc)]}, {grade} here)",
                             source=path, line=number,
                             fix="keep one judgment per (query, document): decide which grade "
                                 "is right")
    if repeats:
        first, of = repeats[0]
        warnings.warn(InputWarning(
            f"{len(repeats)} judgment line(s) repeat an earlier line exactly (the first: line "
            f"{first} repeats line {of}); each is kept once, as trec_eval keeps it", source=path,
            line=first, fix="drop the repeated lines to silence this"), stacklevel=4)
    if not qrels:
        raise InputError("no judgments (only a header)", source=path,
                         fix="give at least one judgment line")
    return qrels


def write_run(run: dict, path: "str | os.PathLike", tag: str = "mteb-stratified") -> None:
    """Write ``{qid: {docid: score}}`` as a TREC run (ranked by score, then doc id descending).

    Scores are written with ``repr`` so they read back bit-identical (ties survive the trip).
    Ids must be non-empty without whitespace, query ids must not start with ``#`` (the line
    would read back as a comment) nor U+FEFF (on the first line it would read back as the
    byte-order mark), and scores finite, so the file reads back the same:
    anything else is an InputError, not a file that reads back differently.
    """
    for name in [tag, *run, *(d for docs in run.values() for d in docs)]:
        if not isinstance(name, str) or not name or _WS_RE.search(name):
            raise InputError(f"id {str(name)[:40]!r} cannot be written to a TREC run",
                             fix="ids and the tag must be non-empty strings without whitespace")
    for qid in run:
        if qid.startswith("#"):
            raise InputError(f"query id {qid[:40]!r} cannot be written to a TREC run: a line "
                             "starting with # is a comment to trec_eval and to read_run",
                             fix="rename the query so that its id does not start with #")
        if qid.startswith("\ufeff"):
            raise InputError(f"query id {qid[:40]!r} cannot be written to a TREC run: it starts "
                             "with U+FEFF, which reads back as the file's byte-order mark",
                             fix="rename the query so that its id does not start with U+FEFF")
    with atomic_write(path, "w", encoding="utf-8") as fh:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], _Desc(kv[0])))
            for rank, (doc, score) in enumerate(ranked, start=1):
                if not math.isfinite(score):
                    raise InputError(f"score {score!r} of document {doc!r} for query {qid!r} is "
                                     "not finite", fix="give finite scores")
                fh.write(f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}\n")


class _Desc(str):
    """A string that sorts descending (doc id descending among equal scores, as trec_eval)."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)
