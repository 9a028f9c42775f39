"""The one reading of the bytes around the data of a run or qrels file, shared by the line
reader (:mod:`.files`, the reference) and its fast path (:mod:`._vectorised`): byte-order
marks, line ends, blank lines, comments and field separators.  The fast path reads a file only
where pyarrow's reading of it is this one and hands any other file to the line reader;
tests/io/test_fuzz_readers.py checks that the two agree on mutated and random bytes.

Byte-order marks
    A file may start with one UTF-8 byte-order mark (``EF BB BF``), the encoding mark: it is
    dropped.  A second one right after it is refused at line 1 (:func:`first_line`): it
    belongs to no valid id, no tool writes it on purpose, and a reader that kept it in the first
    id would silently lose that query's judgments (trec_eval keeps both marks in the id).
    U+FEFF anywhere else (a zero-width no-break space) is data, at the start of a line too.
Lines
    A line ends with ``\\n``; a ``\\r`` before it is dropped; a lone ``\\r`` is whitespace
    inside a line.  A line of ASCII whitespace only is blank (:func:`is_blank`) and skipped.
Fields
    Fields are separated by runs of ASCII whitespace (:data:`WHITESPACE`), as trec_eval splits
    them.  Every other character is data: NBSP, U+0085, U+2028, U+200B, U+FEFF, the
    information separators ``\\x1c``-``\\x1f``.
Comments
    In a TREC run, a line whose first non-blank byte is ``#`` (:func:`is_run_comment`, as
    trec_eval's ``get_trec_results.c``); in TREC qrels, a line with ``#`` in column 0
    (:func:`is_qrels_comment`, as ``get_qrels.c``).  BEIR qrels have no comments.
"""

from __future__ import annotations

from ..core.errors import InputError

#: The UTF-8 byte-order mark.
BOM = b"\xef\xbb\xbf"
#: ASCII whitespace, the field separators (what ``bytes.split()`` and ``bytes.strip()`` use).
WHITESPACE = b" \t\n\r\x0b\x0c"


def first_line(raw: bytes, path: str) -> bytes:
    """A file's first line without its byte-order mark; a second mark right after the first is
    an :class:`InputError` at line 1."""
    marks = 0
    while raw.startswith(BOM):
        raw, marks = raw[len(BOM):], marks + 1
    if marks > 1:
        raise InputError(f"the file starts with {marks} byte-order marks (U+FEFF): one is the "
                         "UTF-8 encoding mark, the others would be part of the first id",
                         source=path, line=1,
                         fix="remove the extra byte-order marks at the start of the file "
                             "(save it as UTF-8 with at most one)")
    return raw


def is_blank(raw: bytes) -> bool:
    """Whether a line holds ASCII whitespace only (it is skipped)."""
    return not raw.strip(WHITESPACE)


def is_run_comment(raw: bytes) -> bool:
    """Whether a TREC run line is a comment: its first non-blank byte is ``#``."""
    return raw.lstrip(WHITESPACE).startswith(b"#")


def is_qrels_comment(raw: bytes) -> bool:
    """Whether a TREC qrels line is a comment: ``#`` in column 0."""
    return raw.startswith(b"#")
