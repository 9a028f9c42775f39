"""The fast path of the TREC run readers (:func:`~mteb_stratified.io.files.read_run_arrays`,
:func:`~mteb_stratified.io.files.read_run`): pyarrow's C CSV reader and vectorised checks, with
no per-line Python code.

It reads *plain* TREC runs only: UTF-8, fields separated by one space, lines ending in ``\\n``
or ``\\r\\n``, exactly 6 non-empty fields, every score in the :data:`~.files.NUMBER` grammar and
finite, queries contiguous, no (query, document) pair twice, no line starting with ``#``, no tab,
vertical tab, form feed, NUL or lone ``\\r``.  The raw bytes are checked by C-level scans
(``bytes.isascii``, ``in``, ``decode``), the columns by pyarrow.compute and numpy.  Anything
else makes the reader return None, and the caller runs the exact line reader from the start: it
is the reference of what a file means, reports the FILE:LINE error or reads the
unusual-but-valid file.  On the files it accepts the result is that of the line reader, bit for
bit.

pyarrow is imported when a file is read, never at import; without it the readers return None.
Memory stays bounded: the file is read in chunks of whole lines, and each chunk's complete
queries are reduced at once to the three flat columns of the arrays.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator, Mapping

import numpy as np

from ..core.arrays import MAX_GRADE, Column, assemble
from ..core.errors import InputError

#: Tests set this to False to force the line reader (the reference).
ENABLED = True

_BLOCK_BYTES = 1 << 22
_BOM = b"\xef\xbb\xbf"
# Bytes the line reader splits on (or keeps) where pyarrow would not; a lone '\r' is one too.
_BYTES = (b"\t", b"\x0b", b"\x0c", b"\x00")
_COLUMNS = ["q", "x", "d", "r", "s", "t"]


class _Irregular(Exception):
    """The file is not plain: hand over to the line reader."""


def _chunks(raw, size: int) -> Iterator[bytes]:
    """The stream's bytes in chunks of whole lines (64 KiB, doubling up to about ``size``
    bytes, so a bad start is seen early; a leading BOM dropped, as the line reader drops it),
    each checked by C-level scans (:func:`_plain`).  Reading one chunk at a time keeps memory
    bounded (pyarrow's streaming reader reads ahead).  A read error, or a line longer than
    ``size``, is :class:`_Irregular`: the line reader reports it."""
    rest = b""
    first = True
    step = min(size, 1 << 16)
    while True:
        try:
            data = raw.read(step)
        except (InputError, OSError):
            raise _Irregular from None
        step = min(size, 2 * step)
        if first:
            first = False
            data = data[len(_BOM):] if data.startswith(_BOM) else data
        if not data:
            if rest:
                yield _plain(rest)  # the last line, without a line ending
            return
        end = data.rfind(b"\n") + 1
        if not end:
            rest += data
            if len(rest) > size:  # no run line is this long: the line reader says so
                raise _Irregular
            continue
        yield _plain(rest + data[:end] if rest else data[:end])
        rest = data[end:]


def _plain(chunk: bytes) -> bytes:
    """``chunk`` (whole lines), unless a byte the line reader splits on or keeps where pyarrow
    would not (tab, vertical tab, form feed, NUL, a lone CR) or bad UTF-8 makes it
    :class:`_Irregular`.  Empty fields (runs of spaces, a leading or trailing space) and
    comment lines are seen in the columns instead (:func:`_scan`): scans for byte pairs are
    slow."""
    if any(b in chunk for b in _BYTES):
        raise _Irregular
    if b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"):
        raise _Irregular
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            raise _Irregular from None
    return chunk


def _parse(pa, chunk: bytes) -> list:
    """The record batches of a chunk of run lines, parsed by pyarrow's C CSV reader: ids as
    bytes, scores as float64 (no null spellings: an empty or non-numeric score is an error);
    a chunk of blank lines has none."""
    from pyarrow import csv

    try:
        table = csv.read_csv(
            pa.BufferReader(chunk),
            read_options=csv.ReadOptions(column_names=_COLUMNS, use_threads=False,
                                         block_size=len(chunk) + 1),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                           escape_char=False, newlines_in_values=False),
            convert_options=csv.ConvertOptions(
                strings_can_be_null=False, check_utf8=False,
                column_types={c: pa.float64() if c == "s" else pa.binary() for c in _COLUMNS},
                null_values=[]))
    except pa.ArrowInvalid:
        if chunk.strip():
            raise _Irregular from None  # not 6 fields on every line
        return []
    return table.to_batches()


def _batches(pa, raw) -> Iterator:
    """The record batches of the whole stream, each chunk read, checked and parsed one chunk
    ahead in a worker thread (pyarrow's parser and file reads release the GIL), so parsing
    overlaps the joins; the chunks keep their order."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = _chunks(raw, _BLOCK_BYTES)

    def parse_next():
        chunk = next(chunks, None)
        return None if chunk is None else _parse(pa, chunk)

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(parse_next)
        while (batches := ahead.result()) is not None:
            ahead = pool.submit(parse_next)
            yield from batches


class _Join:
    """The run joined with the qrels one block of complete queries at a time, as
    :func:`~mteb_stratified.core.arrays.from_blocks` joins them."""

    def __init__(self, qrels: Mapping) -> None:
        self.qrels = qrels
        self.run_qids: dict = {}
        self.qids: list = []
        self.sizes: list = []
        # scores, grades, tie-break of the kept rows, flat
        self.columns = [Column(np.float64), Column(np.float64), Column(np.int64)]
        self.judged: list = []  # judged grades of the kept rows, in row order
        self.counts: list = []

    def grades(self, names: list) -> tuple:
        """The judgments of these queries: their dicts, grades as ``_judged`` reads them
        (float64, finite, within MAX_GRADE; anything else is for the line reader to report) and
        counts."""
        rels = [self.qrels[q] for q in names]
        counts = np.fromiter(map(len, rels), dtype=np.int64, count=len(rels))
        try:
            values = np.fromiter(itertools.chain.from_iterable(r.values() for r in rels),
                                 dtype=np.float64, count=int(counts.sum()))
        except (TypeError, ValueError, OverflowError):
            raise _Irregular from None
        if not (np.isfinite(values).all() and (np.abs(values) <= MAX_GRADE).all()):
            raise _Irregular
        self.judged.append(values)
        self.counts.append(counts)
        return rels, values, counts

    def add(self, pa, pc, d, scores: np.ndarray, starts: np.ndarray, names: list) -> None:
        """Join the lines of complete queries: doc ids ``d`` (pyarrow binary), their scores,
        where each query begins and its id."""
        n = len(d)
        self.run_qids.update(dict.fromkeys(names))
        sizes = np.diff(starts, append=n)
        row = np.repeat(np.arange(len(names)), sizes)
        # doc ids as codes ranked in byte order; (row, rank) is then one sortable integer key
        enc = pc.dictionary_encode(d)
        width = len(enc.dictionary)
        rank = np.empty(width, dtype=np.int64)
        rank[_numpy(pc.sort_indices(enc.dictionary), np.uint64)] = np.arange(width)
        key = row * width + rank[_numpy(pc.cast(enc.indices, pa.int64()), np.int64)]
        order = np.argsort(key)
        key = key[order]
        if (key[1:] == key[:-1]).any():
            raise _Irregular  # a document listed twice for a query
        tiebreak = np.empty(n, dtype=np.int64)
        tiebreak[order] = np.arange(n)
        tiebreak -= starts[row]
        kept = np.fromiter((q in self.qrels for q in names), dtype=bool, count=len(names))
        if not kept.any():
            return
        kept_names = [q for q, k in zip(names, kept) if k]
        rels, values, counts = self.grades(kept_names)
        grades = np.full(n, -np.inf)
        try:
            docs = _binary(pa, itertools.chain.from_iterable(rels))
        except (pa.ArrowException, TypeError, UnicodeError, AttributeError):
            raise _Irregular from None  # ids a file cannot hold: the line reader matches none
        found_in = pc.index_in(docs, value_set=enc.dictionary)  # int32, null when absent
        code = np.where(_numpy(pc.cast(pc.is_valid(found_in), pa.uint8()), np.uint8),
                        _numpy(found_in, np.int32, nulls=True), -1).astype(np.int64)
        jkey = np.repeat(np.flatnonzero(kept), counts) * width + rank[code]
        found = code >= 0
        at = np.minimum(np.searchsorted(key, jkey), n - 1)
        hit = found & (key[at] == jkey)
        grades[order[at[hit]]] = values[hit]
        lines = kept[row]
        everything = lines.all()
        for column, flat in zip(self.columns, (scores, grades, tiebreak)):
            column.extend(flat if everything else flat[lines])
        self.qids += kept_names
        self.sizes.append(sizes[kept])

    def finish(self, missing: str) -> tuple | None:
        """``(RankingArrays, left_out)``, or None where from_blocks raises (the line reader
        then gives its error)."""
        if not self.run_qids or not self.qids:
            return None
        only_run = sorted(q for q in self.run_qids if q not in self.qrels)
        only_qrels = sorted(q for q in self.qrels if q not in self.run_qids)
        qids = list(self.qids)
        if missing == "zero" and only_qrels:
            self.grades(only_qrels)
            qids += only_qrels
            self.sizes.append(np.zeros(len(only_qrels), dtype=np.int64))
        return assemble(qids, np.concatenate(self.sizes), self.columns,
                        np.concatenate(self.judged), np.concatenate(self.counts), only_run,
                        only_qrels, missing)


def _starts(pc, q) -> np.ndarray:
    """Where each query's lines begin in ``q`` (the first is 0)."""
    change = (_numpy(pc.cast(pc.not_equal(q[1:], q[:-1]), "uint8"), np.uint8).astype(bool)
              if len(q) > 1 else np.zeros(0, bool))
    return np.concatenate([[0], np.flatnonzero(change) + 1])


def _numpy(array, dtype, nulls: bool = False) -> np.ndarray:
    """A pyarrow array as a numpy view of its data buffer (``to_numpy``, ``np.asarray`` and
    ``pa.scalar`` would import pandas, a second of start-up, where it is installed); an array
    with nulls is :class:`_Irregular` unless ``nulls`` (their entries are then arbitrary)."""
    if array.null_count and not nulls:
        raise _Irregular
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * np.dtype(dtype).itemsize)


def _arrow(pa, values: np.ndarray):
    """An int64 numpy array as a pyarrow array, built from its buffer (``pa.array`` would
    import pandas, see :func:`_numpy`)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _binary(pa, texts):
    """Python strings as a pyarrow binary array of their UTF-8 bytes (built from buffers, see
    :func:`_arrow`); a string UTF-8 cannot hold raises UnicodeError."""
    data = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, data), dtype=np.int64, count=len(data)), out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), len(data),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def _scores(column) -> np.ndarray:
    """A score column as float64, every score finite.  pyarrow's CSV reader parsed it: its float
    grammar is :data:`~.files.NUMBER` plus the spellings of NaN and infinity (refused here as
    not finite), and it rounds correctly, as Python's ``float`` (tests/io check both)."""
    scores = _numpy(column, np.float64)
    if not np.isfinite(scores).all():
        raise _Irregular
    return scores


def _scan(open_binary: Callable, take: Callable) -> bool:
    """Read a plain run (module docstring) one block of complete queries at a time, calling
    ``take(pa, pc, doc ids, scores, starts, query ids)`` on each; False when pyarrow is missing
    or the file is not plain (the caller then runs the line reader)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return False
    try:
        raw = open_binary()
    except (InputError, OSError):
        return False
    seen: set = set()

    def segment(q, d, scores) -> None:
        if not len(q):
            return
        starts = _starts(pc, q)
        names = q.take(_arrow(pa, starts)).cast(pa.string()).to_pylist()
        if len(set(names)) != len(names) or not seen.isdisjoint(names):
            raise _Irregular  # interleaved queries
        if any(name.startswith("#") for name in names):
            raise _Irregular  # a comment line (every '#' line starts a query block of its own)
        seen.update(names)
        take(pa, pc, d, scores, starts, names)

    try:
        pending = None
        for batch in _batches(pa, raw):
            q, d, s = (batch.column(name) for name in ("q", "d", "s"))
            for name in ("q", "x", "d", "r", "t"):  # an empty field: spaces the reader splits on
                if pc.min(pc.binary_length(batch.column(name))).as_py() == 0:
                    raise _Irregular
            scores = _scores(s)
            if pending is not None:
                q, d = (pa.concat_arrays([a, b]) for a, b in zip(pending[:2], (q, d)))
                scores = np.concatenate([pending[2], scores])
            cut = _starts(pc, q)[-1]  # the last query may go on in the next block
            segment(q[:cut], d[:cut], scores[:cut])
            pending = (q[cut:], d[cut:], scores[cut:])
        if pending is not None:
            segment(*pending)
    except (_Irregular, pa.ArrowException):
        return False
    finally:
        raw.close()
    return True


def run_arrays(open_binary: Callable, qrels: Mapping, missing: str) -> tuple | None:
    """``(RankingArrays, left_out)`` of a plain TREC run (module docstring) joined with
    ``qrels``, as the line reader gives them; None when the file is not plain, when pyarrow is
    missing, or when the join would raise (the caller then runs the line reader).

    ``open_binary()`` opens the file's (decompressed) bytes.
    """
    if not ENABLED or missing not in ("skip", "zero"):
        return None
    qrels = {q: d for q, d in qrels.items() if d}
    if not qrels:
        return None
    join = _Join(qrels)
    if not _scan(open_binary, join.add):
        return None
    try:
        return join.finish(missing)
    except _Irregular:  # a qrels-only query's grades: the line reader reports them
        return None


def run_dict(open_binary: Callable) -> dict | None:
    """``{qid: {docid: score}}`` of a plain TREC run, as the line reader gives it (the same
    order); None when the file is not plain or pyarrow is missing (see :func:`run_arrays`)."""
    if not ENABLED:
        return None
    run: dict = {}

    def take(pa, pc, d, scores, starts, names) -> None:
        docs, values = d.cast(pa.string()).to_pylist(), scores.tolist()
        ends = [*starts[1:].tolist(), len(docs)]
        for name, lo, hi in zip(names, starts.tolist(), ends):
            run[name] = dict(zip(docs[lo:hi], values[lo:hi]))
            if len(run[name]) != hi - lo:
                raise _Irregular  # a document listed twice for a query

    return run if _scan(open_binary, take) and run else None
