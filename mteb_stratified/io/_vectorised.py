"""The fast path of the TREC run readers (:func:`~mteb_stratified.io.files.read_run_arrays`,
:func:`~mteb_stratified.io.files.read_run`) and of the qrels reader (:func:`qrels_table`):
pyarrow's C CSV reader and vectorised checks, with no per-line Python code.

It reads *plain* TREC runs only: UTF-8, fields separated by one space, lines ending in ``\\n``
or ``\\r\\n``, exactly 6 non-empty fields, every score in the :data:`~.files.NUMBER` grammar and
finite, no (query, document) pair twice, no line starting with ``#``, no tab, vertical tab,
form feed, NUL or lone ``\\r``, no byte-order mark where pyarrow would drop it and the line
reader would not (:func:`_parse`; :mod:`._text` is the reading of these bytes both share).
The raw bytes are checked by C-level scans (``bytes.isascii``, ``in``, ``decode``), the
columns by pyarrow.compute and numpy.  Anything else makes the reader return None, and the
caller runs the exact line reader from the start: it is the reference of what a file means,
reports the FILE:LINE error or reads the unusual-but-valid file.  On the files it accepts the
result is that of the line reader, bit for bit.

pyarrow is imported when a file is read, never at import; without it the readers return None.
A run is read in blocks of whole queries (about 4 MiB, :func:`_blocks`), each checked, parsed
and joined with the qrels in a pool of worker threads (one per core, at most 4: pyarrow and
numpy release the GIL) and appended in file order to the three flat columns of the arrays,
reserved from an estimate of the file's lines.  Memory stays bounded: at most one block more
than the workers is in flight.  A run whose queries are not contiguous (one line out of order)
is read a second time and grouped by query on this path (:func:`_grouped`): a fraction of the
file's size more, never the line reader's dict.
"""

from __future__ import annotations

import io
import itertools
import os
import stat
from typing import Callable, Iterator, Mapping

import numpy as np

from ..core.ranking.arrays import MAX_GRADE, Column, assemble
from ..core.errors import InputError
from ._judgments import Judgments
from ._text import BOM as _BOM, WHITESPACE, first_line

#: Tests set this to False to force the line reader (the reference).
ENABLED = True

_BLOCK_BYTES = 1 << 22
# Bytes the line reader splits on (ASCII whitespace, :mod:`._text`) where pyarrow would not,
# and NUL; a lone '\r' is one too (checked apart).
_BYTES = tuple(bytes([c]) for c in WHITESPACE if c not in b" \n\r") + (b"\x00",)
# ... in BEIR qrels, whose fields are tab-separated and stripped of whitespace
_BEIR_BYTES = tuple(bytes([c]) for c in WHITESPACE if c not in b"\t\n\r") + (b"\x00",)
_COLUMNS = ["q", "x", "d", "r", "s", "t"]
#: The columns of TREC qrels (``qid iteration docid grade``) and of BEIR qrels TSV.
_QRELS_COLUMNS = {"trec": ["q", "x", "d", "g"], "beir": ["q", "d", "g"]}
#: A grade pyarrow reads as the line reader does: an integer without sign or fraction (others
#: go to the line reader).
_GRADE = "^-?[0-9]{1,18}$"


class _Irregular(Exception):
    """The file is not plain: hand over to the line reader."""


def _chunks(raw, size: int, refused: tuple = _BYTES) -> Iterator[bytes]:
    """The stream's bytes in chunks of whole lines (64 KiB, doubling up to about ``size``
    bytes, so a bad start is seen early; a leading BOM dropped as the line reader drops it,
    :func:`~._text.first_line`), each checked by C-level scans (:func:`_plain`, with the
    ``refused`` bytes).  Reading one chunk at a time keeps memory bounded (pyarrow's streaming
    reader reads ahead).  A read error, or a line longer than ``size``, is :class:`_Irregular`:
    the line reader reports it."""
    rest = b""
    first = True
    step = min(size, 1 << 16)
    while True:
        try:
            data = raw.read(step)
        except (InputError, OSError):
            raise _Irregular from None
        step = min(size, 2 * step)
        if first:  # one leading BOM dropped as the line reader drops it; two: it refuses them
            first = False
            try:
                data = first_line(data, "")
            except InputError:
                raise _Irregular from None
        if not data:
            if rest:
                yield _plain(rest, refused)  # the last line, without a line ending
            return
        end = data.rfind(b"\n") + 1
        if not end:
            rest += data
            if len(rest) > size:  # no run line is this long: the line reader says so
                raise _Irregular
            continue
        yield _plain(rest + data[:end] if rest else data[:end], refused)
        rest = data[end:]


def _plain(chunk: bytes, refused: tuple = _BYTES) -> bytes:
    """``chunk`` (whole lines), unless a byte the line reader splits on or keeps where pyarrow
    would not (``refused``: tab, vertical tab, form feed, NUL for runs; a lone CR) or bad UTF-8
    makes it :class:`_Irregular`.  Empty fields (runs of spaces, a leading or trailing space) and
    comment lines are seen in the columns instead (:func:`_scan`): scans for byte pairs are
    slow."""
    if any(b in chunk for b in refused):
        raise _Irregular
    if b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"):
        raise _Irregular
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            raise _Irregular from None
    return chunk


def _parse(pa, chunk: bytes, columns: list = _COLUMNS, delimiter: str = " ") -> list:
    """The record batches of a chunk of run lines (or qrels lines: ``columns``, ``delimiter``),
    parsed by pyarrow's C CSV reader: ids as bytes, scores as float64 (no null spellings: an
    empty or non-numeric score is an error); a chunk of blank lines has none.  pyarrow drops a
    byte-order mark at the start of every buffer it parses, where the line reader keeps it in
    an id (or refuses a second one at the start of the file): such a chunk is
    :class:`_Irregular`."""
    from pyarrow import csv

    if chunk.startswith(_BOM):
        raise _Irregular
    try:
        table = csv.read_csv(
            pa.BufferReader(chunk),
            read_options=csv.ReadOptions(column_names=columns, use_threads=False,
                                         block_size=len(chunk) + 1),
            parse_options=csv.ParseOptions(delimiter=delimiter, quote_char=False,
                                           double_quote=False,
                                           escape_char=False, newlines_in_values=False),
            convert_options=csv.ConvertOptions(
                strings_can_be_null=False, check_utf8=False,
                column_types={c: pa.float64() if c == "s" else pa.binary() for c in columns},
                null_values=[]))
    except pa.ArrowInvalid:
        if chunk.strip():
            raise _Irregular from None  # not 6 (qrels: 4 or 3) fields on every line
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


def _query_start(chunk: bytearray, end: int) -> int:
    """Where the lines of the last query of ``chunk[:end]`` (whole lines) begin: the first line
    from which every line starts with the last line's query id and a space, found by bisection
    over the line starts (about 22 steps in 4 MiB; trailing blank lines are skipped); 0 when
    that is the first.  Exact where the queries are contiguous; where they are not, a query
    comes in two blocks, which :func:`_streamed` sees as interleaved."""
    while end and chunk[end - 1] in b"\r\n":
        end -= 1
    last = chunk.rfind(b"\n", 0, end) + 1
    space = chunk.find(b" ", last, end)
    key = chunk[last:space + 1] if space >= 0 else chunk[last:end]
    lo, hi = 0, last  # the line at hi starts with key
    while lo < hi:
        mid = (lo + hi) // 2
        at = mid if mid == 0 or chunk[mid - 1] == 10 else chunk.find(b"\n", mid) + 1
        if at >= hi or chunk.startswith(key, at):
            hi = mid
        else:
            lo = mid + 1
    return lo if lo == 0 or chunk[lo - 1] == 10 else chunk.find(b"\n", lo) + 1


def _read_into(raw, buffer: bytearray, start: int) -> int:
    """Fill ``buffer[start:]`` from the stream (fewer bytes at its end): the bytes read; a read
    error is :class:`_Irregular` (the line reader reports it)."""
    at = start
    with memoryview(buffer) as view:
        while at < len(buffer):
            with view[at:] as free:
                try:
                    got = raw.readinto(free)
                except (InputError, OSError):
                    raise _Irregular from None
            if not got:
                break
            at += got
    return at - start


def _blocks(raw, size: int, check: Callable = bool) -> Iterator[bytearray]:
    """The stream's bytes in blocks of whole queries, each read straight into its own buffer
    (no copy of the bulk of the bytes): a read (64 KiB, doubling up to ``size`` bytes, so a bad
    start is seen early) goes after the bytes held back from the buffer before, and the
    buffer is cut where its last query begins (:func:`_query_start`): its lines, which may go
    on, and a partial line are held back.  The whole lines of a query longer than a buffer are
    held whole until it ends.  A leading BOM is dropped as the line reader drops it
    (:func:`~._text.first_line`); a line longer than ``size`` is :class:`_Irregular` (the
    line reader reports it).  The blocks are checked by :func:`_block`, and the whole lines of
    the first read by ``check`` too where they are held back, so a bad start is seen early."""
    held, whole, step, reads = b"", [], min(size, 1 << 16), 0
    while True:
        buffer = bytearray(len(held) + step)  # every buffer starts at the start of a line
        buffer[:len(held)] = held
        got = _read_into(raw, buffer, len(held))
        del buffer[len(held) + got:]
        reads += 1
        if reads == 1:  # one leading BOM dropped as the line reader drops it; two: it refuses them
            head = bytes(buffer[:8])
            try:
                kept = first_line(head, "")
            except InputError:
                raise _Irregular from None
            del buffer[:len(head) - len(kept)]
        step = min(size, 2 * step)
        if not got:
            if whole or held:
                yield b"".join([*whole, held])
            return
        end = buffer.rfind(b"\n") + 1
        if len(buffer) - end > size:  # no run line is this long: the line reader says so
            raise _Irregular
        cut = _query_start(buffer, end) if end else 0
        with memoryview(buffer)[cut or end:] as tail:
            held = bytes(tail)  # the last query's lines and a partial line, or the latter
        del buffer[cut or end:]
        if not cut:  # one query's lines so far: held whole
            if buffer:
                if reads == 1:
                    check(bytes(buffer))
                whole.append(buffer)
            continue
        yield b"".join([*whole, buffer]) if whole else buffer
        whole = []


def _workers() -> int:
    """Worker threads that parse and prepare blocks: the cores this process may use, at most
    4 (the file's reading and the in-order joins are one thread besides)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _stream_size(raw) -> int | None:
    """The size in bytes of a stream that is a plain regular file, else None (gzip, pipes)."""
    if not (isinstance(raw, io.BufferedReader) and isinstance(raw.raw, io.FileIO)):
        return None
    try:
        status = os.fstat(raw.fileno())
    except (OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _block(pa, pc, chunk: bytes, reader) -> tuple | None:
    """A block of whole queries' lines (:func:`_blocks`) checked (:func:`_plain`), parsed and
    prepared (``reader.prepare``), in a worker thread: ``(query ids, lines, bytes, prepared)``,
    or None for a block without lines.  A comment line is :class:`_Irregular`, a query twice
    in the block :class:`_Interleaved`."""
    batches = _parse(pa, _plain(chunk))
    if not batches:
        return None
    batch = (batches[0] if len(batches) == 1 else
             pa.Table.from_batches(batches).combine_chunks().to_batches()[0])
    q, d, scores = _columns(pa, pc, batch)
    starts = _starts(pc, q)
    names = q.take(_arrow(pa, starts)).cast(pa.string()).to_pylist()
    if any(name.startswith("#") for name in names):
        raise _Irregular  # a comment line (every '#' line starts a query block of its own)
    if len(set(names)) != len(names):
        raise _Interleaved
    return names, len(d), len(chunk), reader.prepare(pa, pc, d, scores, starts, names)


def _streamed(pa, pc, raw, reader) -> None:
    """Read a run whose queries are contiguous one block of whole queries at a time
    (:func:`_blocks`): each block checked, parsed and prepared (:func:`_block`) in a pool of
    worker threads (pyarrow's parser and compute functions and numpy's sorts release the GIL,
    so blocks are parsed on every core), then taken in file order (``reader.take``), at most
    one block more than the workers in flight.  :class:`_Interleaved` where a query comes in
    two blocks.  From the first block's lines per byte, ``reader.reserve`` gets an estimate of
    the file's lines (a plain file's size is known)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    workers, total = _workers(), _stream_size(raw)
    seen: set = set()
    ahead: deque = deque()

    def take(done) -> None:
        nonlocal total
        if done is None:
            return
        names, lines, size, prepared = done
        if not seen.isdisjoint(names):
            raise _Interleaved
        seen.update(names)
        if total:  # 10% over the first block's lines per byte; at most 12 bytes a line
            reader.reserve(min(total // 12, int(total * lines / size * 1.1)) + 1024)
            total = None
        reader.take(prepared)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for block in _blocks(raw, _BLOCK_BYTES, lambda lines: _parse(pa, _plain(lines))):
            ahead.append(pool.submit(_block, pa, pc, block, reader))
            if len(ahead) > workers:
                take(ahead.popleft().result())
        while ahead:
            take(ahead.popleft().result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ranks(pa, pc, d) -> tuple:
    """``(codes, width, rank)`` of the doc ids ``d``: each id's dictionary code (int32), the
    dictionary's size and each code's rank in byte order (int64)."""
    enc = pc.dictionary_encode(d)
    width = len(enc.dictionary)
    rank = np.empty(width, dtype=np.int64)
    rank[_numpy(pc.sort_indices(enc.dictionary), np.uint64)] = np.arange(width)
    return enc, width, rank


def _sorted_keys(key: np.ndarray, bits: int) -> tuple:
    """``(key sorted, the lines in that order)`` for non-negative int64 keys below
    ``2**bits``: one sort of the keys with each line's index in their low bits where both fit
    in 63 bits (numpy sorts plain int64 keys with SIMD, about twice as fast as ``argsort``),
    else an ``argsort``.  Keys are distinct or the caller refuses them, so the order is
    deterministic either way."""
    n = len(key)
    low = max(int(n - 1).bit_length(), 1)
    if bits + low > 63:
        order = np.argsort(key, kind="stable")
        return key[order], order
    packed = key << low
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    return packed >> low, packed & ((1 << low) - 1)


class _Join:
    """The run joined with the qrels (:class:`~._judgments.Judgments`: doc ids as one pyarrow id
    table, grades as an array) one block of complete queries at a time, as
    :func:`~mteb_stratified.core.ranking.arrays.from_blocks` joins them; the ids stay pyarrow
    arrays and integer codes throughout.  :meth:`prepare` does a block's work and may run in any
    thread
    (it only reads the qrels); :meth:`take` appends its result, block after block in file
    order."""

    def __init__(self, judgments: Judgments) -> None:
        self.qrels = judgments
        self.run_qids: dict = {}
        self.qids: list = []
        self.sizes: list = []
        # scores, grades, tie-break of the kept rows, flat
        self.columns = [Column(np.float64), Column(np.float64), Column(np.int64)]
        self.judged: list = []  # judged grades of the kept rows, in row order
        self.counts: list = []

    def grades(self, pa, names: list) -> tuple:
        """The judgments of these queries: doc ids, grades as ``_judged`` reads them (float64,
        finite, within MAX_GRADE; anything else is for the line reader to report) and
        counts."""
        docs, values, counts = self.qrels.rows(pa, names)
        if not (np.isfinite(values).all() and (np.abs(values) <= MAX_GRADE).all()):
            raise _Irregular
        return docs, values, counts

    def prepare(self, pa, pc, d, scores: np.ndarray, starts: np.ndarray, names: list) -> tuple:
        """A block of complete queries: doc ids ``d`` (pyarrow binary), their scores, where
        each query begins and its id, as ``(query ids, kept)``; ``kept`` is None where no query
        is judged, else the judged queries' ids, sizes, flat scores, grades and tie-breaks,
        judged grades and their counts.  The tie-break ranks the doc ids of each query in byte
        order: one sort of the (query, doc id rank) keys, which also finds a document listed
        twice (:class:`_Irregular`)."""
        n = len(d)
        sizes = np.diff(starts, append=n)
        row = np.repeat(np.arange(len(names), dtype=np.int64), sizes)
        enc, width, rank = _ranks(pa, pc, d)
        shift = int(width - 1).bit_length()
        key, order = _sorted_keys((row << shift) | rank[_numpy(enc.indices, np.int32)],
                                  shift + int(len(names) - 1).bit_length())
        if (key[1:] == key[:-1]).any():
            raise _Irregular  # a document listed twice for a query
        index = self.qrels.index
        kept = np.fromiter((q in index for q in names), dtype=bool, count=len(names))
        if not kept.any():
            return names, None
        tiebreak = np.empty(n, dtype=np.int64)
        tiebreak[order] = np.arange(n)
        tiebreak -= starts[row]
        kept_names = [q for q, k in zip(names, kept) if k]
        docs, values, counts = self.grades(pa, kept_names)
        grades = np.full(n, -np.inf)
        found_in = pc.index_in(docs, value_set=enc.dictionary)  # int32, null when absent
        code = np.where(_numpy(pc.cast(pc.is_valid(found_in), pa.uint8()), np.uint8),
                        _numpy(found_in, np.int32, nulls=True), -1).astype(np.int64)
        jkey = (np.repeat(np.flatnonzero(kept), counts) << shift) | rank[code]
        at = np.minimum(np.searchsorted(key, jkey), n - 1)
        hit = (code >= 0) & (key[at] == jkey)
        grades[order[at[hit]]] = values[hit]
        flats = (scores, grades, tiebreak)
        if not kept.all():
            lines = kept[row]
            flats = tuple(flat[lines] for flat in flats)
        return names, (kept_names, sizes[kept], flats, values, counts)

    def take(self, prepared: tuple) -> None:
        """Append a prepared block (:meth:`prepare`)."""
        names, kept = prepared
        self.run_qids.update(dict.fromkeys(names))
        if kept is None:
            return
        kept_names, sizes, flats, values, counts = kept
        for column, flat in zip(self.columns, flats):
            column.extend(flat)
        self.qids += kept_names
        self.sizes.append(sizes)
        self.judged.append(values)
        self.counts.append(counts)

    def reserve(self, lines: int) -> None:
        """Room for about this many lines in each column (:meth:`Column.reserve`)."""
        for column in self.columns:
            column.reserve(lines)

    def finish(self, pa, missing: str) -> tuple | None:
        """``(RankingArrays, left_out)``, or None where from_blocks raises (the line reader
        then gives its error)."""
        if not self.run_qids or not self.qids:
            return None
        only_run = sorted(q for q in self.run_qids if q not in self.qrels)
        only_qrels = sorted(q for q in self.qrels if q not in self.run_qids)
        qids = list(self.qids)
        if missing == "zero" and only_qrels:
            _, values, counts = self.grades(pa, only_qrels)
            self.judged.append(values)
            self.counts.append(counts)
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


def _scores(column) -> np.ndarray:
    """A score column as float64, every score finite.  pyarrow's CSV reader parsed it: its float
    grammar is :data:`~.files.NUMBER` plus the spellings of NaN and infinity (refused here as
    not finite), and it rounds correctly, as Python's ``float`` (tests/io check both)."""
    scores = _numpy(column, np.float64)
    if not np.isfinite(scores).all():
        raise _Irregular
    return scores


class _Interleaved(Exception):
    """A query's lines are not contiguous: the scan starts again, grouping them
    (:func:`_grouped`)."""


def _has_empty(column) -> bool:
    """Whether a binary column (no nulls) holds an empty value: two equal offsets."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=len(column) + 1,
                            offset=column.offset * 4)
    return bool((offsets[1:] == offsets[:-1]).any())


def _columns(pa, pc, batch) -> tuple:
    """The query ids, doc ids and scores of a record batch of run lines; an empty field or a
    score that is not finite is :class:`_Irregular`."""
    for name in ("q", "x", "d", "r", "t"):  # an empty field: spaces the line reader splits on
        if _has_empty(batch.column(name)):
            raise _Irregular
    return batch.column("q"), batch.column("d"), _scores(batch.column("s"))


def _grouped(pa, pc, raw, reader) -> None:
    """Read a run whose queries are interleaved: every line's query as an integer code (in
    order of first appearance), its doc id and score, then the lines grouped by a stable sort of
    the codes, handed to ``reader`` one block of whole queries at a time.  The line reader's
    dict has the same order (queries by first appearance, each query's lines in file order).
    Memory: the doc ids as read (once more while they are joined into one array), 20 bytes a
    line, and one block; a fraction of the file's size, where the dict of the line reader takes
    8 times it."""
    index: dict = {}  # query id -> code, in order of first appearance
    codes, docs, scores = [], [], []
    for batch in _batches(pa, raw):
        q, d, s = _columns(pa, pc, batch)
        enc = pc.dictionary_encode(q)
        seen = enc.dictionary.cast(pa.string()).to_pylist()  # this batch's queries
        lut = np.fromiter((index.setdefault(n, len(index)) for n in seen), dtype=np.int64,
                          count=len(seen))
        codes.append(lut[_numpy(enc.indices, np.int32)].astype(np.int32))
        docs.append(d)
        scores.append(s)
    names = list(index)
    if not names:
        return
    if any(name.startswith("#") for name in names):
        raise _Irregular  # a comment line
    code = np.concatenate(codes)
    codes.clear()
    bounds = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.bincount(code, minlength=len(names)), out=bounds[1:])
    order = np.argsort(code, kind="stable")
    del code
    flat = np.concatenate(scores)
    scores.clear()
    docs = pa.concat_arrays(docs)
    rows, lo = max(_BLOCK_BYTES // 64, 1), 0
    while lo < len(names):
        hi = max(int(np.searchsorted(bounds, bounds[lo] + rows, side="right")) - 1, lo + 1)
        at = order[bounds[lo]:bounds[hi]]
        reader.take(reader.prepare(pa, pc, docs.take(_arrow(pa, at)), flat[at],
                                   bounds[lo:hi] - bounds[lo], names[lo:hi]))
        lo = hi


def _scan(open_binary: Callable, start: Callable) -> bool:
    """Read a plain run (module docstring) into the reader ``start()`` gives (its ``prepare``
    and ``take``, :class:`_Join`), one block of complete queries at a time; a run whose
    queries are interleaved is read again, grouped (:func:`_grouped`), into a fresh
    ``start()``.  False when pyarrow is missing or the file is not plain (the caller then runs
    the line reader)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return False
    for read in (_streamed, _grouped):
        try:
            raw = open_binary()
        except (InputError, OSError):
            return False
        try:
            read(pa, pc, raw, start())
            return True
        except _Interleaved:
            continue
        except (_Irregular, pa.ArrowException):
            return False
        finally:
            raw.close()
    return False


def run_arrays(open_binary: Callable, qrels: Mapping, missing: str) -> tuple | None:
    """``(RankingArrays, left_out)`` of a plain TREC run (module docstring) joined with
    ``qrels``, as the line reader gives them; None when the file is not plain, when pyarrow is
    missing, or when the join would raise (the caller then runs the line reader).

    ``open_binary()`` opens the file's (decompressed) bytes.
    """
    if not ENABLED or missing not in ("skip", "zero"):
        return None
    try:
        import pyarrow as pa
    except ImportError:
        return None
    try:
        judgments = Judgments.from_mapping(pa, qrels)
    except (TypeError, ValueError, OverflowError, UnicodeError, AttributeError,
            pa.ArrowException):
        return None  # grades or ids a file cannot hold: the line reader says what it makes of them
    if not judgments:
        return None
    joins: list = []

    def start() -> _Join:
        joins[:] = [_Join(judgments)]  # a second scan (grouped) drops the first one's join
        return joins[0]

    if not _scan(open_binary, start):
        return None
    try:
        return joins[0].finish(pa, missing)
    except _Irregular:  # a qrels-only query's grades: the line reader reports them
        return None


class _Dict:
    """``{qid: {docid: score}}`` of a run, as the line reader gives it (the reader of
    :func:`run_dict`; :class:`_Join` says what ``prepare`` and ``take`` do)."""

    def __init__(self) -> None:
        self.run: dict = {}

    def prepare(self, pa, pc, d, scores, starts, names) -> tuple:
        return names, d.cast(pa.string()).to_pylist(), scores.tolist(), starts.tolist()

    def take(self, prepared: tuple) -> None:
        names, docs, values, starts = prepared
        for name, lo, hi in zip(names, starts, [*starts[1:], len(docs)]):
            self.run[name] = dict(zip(docs[lo:hi], values[lo:hi]))
            if len(self.run[name]) != hi - lo:
                raise _Irregular  # a document listed twice for a query

    def reserve(self, lines: int) -> None:
        """Nothing to reserve in a dict."""


def run_dict(open_binary: Callable) -> dict | None:
    """``{qid: {docid: score}}`` of a plain TREC run, as the line reader gives it (the same
    order); None when the file is not plain or pyarrow is missing (see :func:`run_arrays`)."""
    if not ENABLED:
        return None
    readers: list = []

    def start() -> _Dict:
        readers[:] = [_Dict()]
        return readers[0]

    return readers[0].run if _scan(open_binary, start) and readers[0].run else None


def _qrels_kind(chunk: bytes) -> tuple | None:
    """``(kind, header)`` of a qrels file whose first chunk is ``chunk``, as
    :func:`~.files.read_qrels` decides them from the first line: ``"beir"`` (3 tab-separated
    fields; ``header`` when the third is not a number) or ``"trec"``; None where the line
    reader must decide (a leading blank or ``#`` line, JSON, or not one of the two)."""
    from .numbers import NUMBER

    first = chunk.split(b"\n", 1)[0]
    first = first[:-1] if first.endswith(b"\r") else first
    if not first or first.startswith((b"#", b"{")):
        return None
    if b"\t" not in first:
        return "trec", False
    tabs = first.split(b"\t")
    if len(tabs) != 3 or b" " in first:
        return None
    return "beir", NUMBER.fullmatch(tabs[2].decode("utf-8", "replace")) is None


def _qrels_columns(pa, pc, raw) -> tuple:
    """The qid, doc id and grade columns of a plain qrels stream (see :func:`qrels_table`)."""
    chunks = _chunks(raw, _BLOCK_BYTES, ())
    first = next(chunks, b"")
    kind = _qrels_kind(first)
    if kind is None:
        raise _Irregular
    if kind[1]:  # the BEIR header line
        first = first.split(b"\n", 1)[1] if b"\n" in first else b""
    columns, delimiter = _QRELS_COLUMNS[kind[0]], "\t" if kind[0] == "beir" else " "
    refused = _BEIR_BYTES if kind[0] == "beir" else _BYTES
    q, d, g = [], [], []
    for chunk in itertools.chain([first], chunks):
        if any(b in chunk for b in refused):  # (_chunks checked line endings and UTF-8)
            raise _Irregular
        for batch in _parse(pa, chunk, columns, delimiter):
            for name in columns:  # an empty field: whitespace the line reader splits on
                if pc.min(pc.binary_length(batch.column(name))).as_py() == 0:
                    raise _Irregular
            grade = batch.column("g")
            if not pc.all(pc.match_substring_regex(grade, _GRADE)).as_py():
                raise _Irregular
            q.append(batch.column("q"))
            d.append(batch.column("d"))
            g.append(_numpy(pc.cast(pc.cast(grade, pa.string()), pa.int64()), np.int64))
    if not q:
        raise _Irregular  # no judgment: the line reader says so
    return pa.concat_arrays(q), pa.concat_arrays(d), np.concatenate(g)


def qrels_table(open_binary: Callable) -> Judgments | None:
    """The :class:`~._judgments.Judgments` of a plain qrels file, as
    :func:`~.files.read_qrels` reads it; None when pyarrow is missing or the file is not plain
    (the caller then runs the line reader, which reports errors and warnings).

    Plain: TREC qrels with fields separated by one space (4 per line), or BEIR qrels TSV with
    one tab (3 per line, an optional header, no space anywhere), UTF-8, lines ending in
    ``\\n`` or ``\\r\\n``, no comment line, every grade an integer within ``±MAX_GRADE``
    without sign or fraction, no (query, document) judged twice (a repeat is a warning or an
    error of the line reader).  The ids never become Python objects: the doc ids stay one
    pyarrow id table, and only the query ids are decoded.
    """
    if not ENABLED:
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    try:
        raw = open_binary()
    except (InputError, OSError):
        return None
    try:
        q, d, grades = _qrels_columns(pa, pc, raw)
        if (np.abs(grades) > MAX_GRADE).any():
            raise _Irregular
        qenc, denc = pc.dictionary_encode(q), pc.dictionary_encode(d)
        qids = qenc.dictionary.cast(pa.string()).to_pylist()  # in order of first appearance
        if any(qid.startswith("#") for qid in qids):
            raise _Irregular  # a TREC comment, or a BEIR '#' query: the line reader decides
        qcode = _numpy(qenc.indices, np.int32).astype(np.int64)
        pair = np.sort(qcode * len(denc.dictionary) + _numpy(denc.indices, np.int32))
        if (pair[1:] == pair[:-1]).any():
            raise _Irregular  # a judgment given twice
        order = np.argsort(qcode, kind="stable")
        starts = np.zeros(len(qids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(qcode, minlength=len(qids)), out=starts[1:])
        return Judgments(qids, starts, d.take(_arrow(pa, order)), grades[order])
    except (_Irregular, pa.ArrowException):
        return None
    finally:
        raw.close()
