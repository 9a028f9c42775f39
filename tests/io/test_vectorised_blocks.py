"""The blocks of the vectorised run reader (#48.5): the stream is read in blocks of whole queries
(each read cut where its last query begins, a query longer than a block held whole), parsed and
joined in worker threads and taken in file order.  The blocks hold every byte once, in order;
no contiguous query is split between two blocks; a query that is split (the run is interleaved)
is grouped instead; the number of workers does not change a bit of the result."""

import gzip
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mteb_stratified.io import _vectorised, files
from mteb_stratified.io.files import read_qrels, read_run_arrays

QIDS = st.text("qab1_", min_size=1, max_size=4)


def lines_of(queries, eol="\n"):
    """Run lines, query after query: ``queries`` is a list of (qid, number of documents)."""
    return "".join(f"{q} Q0 d{j} {j} {(j * 7) % 5 / 4} t{eol}"
                   for q, n in queries for j in range(n))


def blocks(data: bytes, size: int) -> list:
    return [bytes(b) for b in _vectorised._blocks(io.BytesIO(data), size)]


@st.composite
def grouped_runs(draw):
    qids = draw(st.lists(QIDS, min_size=1, max_size=8, unique=True))
    queries = [(q, draw(st.integers(1, 40))) for q in qids]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = lines_of(queries, eol)
    if draw(st.booleans()):
        text = text[:-len(eol)]  # the last line without an ending
    return text.encode(), queries


@settings(max_examples=200, deadline=None)
@given(case=grouped_runs(), size=st.integers(40, 700), bom=st.booleans())
def test_blocks_hold_every_byte_once_and_whole_queries(case, size, bom):
    data, queries = case
    got = blocks(b"\xef\xbb\xbf" + data if bom else data, size)
    assert b"".join(got) == data  # one leading byte-order mark dropped, nothing else
    owner = {}
    for i, block in enumerate(got):
        for line in block.splitlines():
            assert owner.setdefault(line.split(b" ")[0], i) == i  # a query in one block only
    assert all(got)


def test_query_start_is_where_the_last_query_begins():
    chunk = bytearray(lines_of([("q1", 3), ("q2", 2), ("q10", 4)]).encode())
    first_q10 = chunk.index(b"q10 ")
    assert _vectorised._query_start(chunk, len(chunk)) == first_q10
    one = bytearray(lines_of([("q1", 5)]).encode())
    assert _vectorised._query_start(one, len(one)) == 0  # one query: held whole
    blank = chunk + b"\n\r\n"  # trailing blank lines are skipped
    assert _vectorised._query_start(blank, len(blank)) == first_q10
    prefix = bytearray(lines_of([("q", 2), ("q1", 3)]).encode())  # 'q' is a prefix of 'q1'
    assert _vectorised._query_start(prefix, len(prefix)) == prefix.index(b"q1 ")


def test_a_query_longer_than_a_block_is_held_whole():
    data = lines_of([("a", 2), ("long", 500), ("b", 3)]).encode()
    got = blocks(data, 256)
    assert b"".join(got) == data
    assert sum(b"long " in block for block in got) == 1  # one block holds all its lines


def test_a_line_longer_than_a_block_is_handed_over():
    data = b"q1 Q0 " + b"d" * 300 + b" 1 0.5 t\n"
    with pytest.raises(_vectorised._Irregular):
        blocks(data, 128)


def write_run(path, text, gz=False):
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return str(path)


def arrays_bytes(path, qrels):
    arrays, left = read_run_arrays(path, qrels)
    return (arrays.qids, left, *(getattr(arrays, name).tobytes() for name in
                                 ("scores", "grades", "tiebreak", "n_candidates",
                                  "qrels_grades")))


@pytest.mark.parametrize("gz", [False, True])
def test_the_workers_do_not_change_the_result(tmp_path, monkeypatch, gz):
    """1, 2 and 4 workers, blocks of 200 bytes or one block, the size known (a plain file: the
    columns reserved from an estimate) or not (gzip): the arrays of the line reader, bit for
    bit."""
    rng = np.random.default_rng(0)
    queries = [(f"q{i}", int(rng.integers(1, 30))) for i in range(60)]
    path = write_run(tmp_path / "run", lines_of(queries), gz)
    qrels = {q: {f"d{j}": int(rng.integers(0, 3)) for j in range(0, 40, 3)}
             for q, _ in queries[::2]}
    monkeypatch.setattr(_vectorised, "ENABLED", False)
    want = arrays_bytes(path, qrels)
    monkeypatch.setattr(_vectorised, "ENABLED", True)
    monkeypatch.setattr(files, "_run_records", None)  # the line reader would crash
    for workers in (1, 2, 4):
        for size in (200, 1 << 22):
            monkeypatch.setattr(_vectorised, "_workers", lambda: workers)
            monkeypatch.setattr(_vectorised, "_BLOCK_BYTES", size)
            assert arrays_bytes(path, qrels) == want, (workers, size)


def test_a_query_split_across_blocks_is_grouped(tmp_path, monkeypatch):
    """A query that comes back after others, blocks apart: the fast path groups it (a second
    pass), with the line reader's result."""
    text = lines_of([("q1", 5), ("q2", 30), ("q3", 30)]) + "q1 Q0 e1 1 0.5 t\nq1 Q0 e2 2 0.5 t\n"
    path = write_run(tmp_path / "run", text)
    qrels = read_qrels(write_run(tmp_path / "qrels", "q1 0 d1 1\nq3 0 d2 2\n"))
    monkeypatch.setattr(_vectorised, "_BLOCK_BYTES", 256)
    grouped = []
    real = _vectorised._grouped
    monkeypatch.setattr(_vectorised, "_grouped", lambda *a: grouped.append(1) or real(*a))
    got = arrays_bytes(path, qrels)
    assert grouped == [1]
    monkeypatch.setattr(_vectorised, "ENABLED", False)
    assert got == arrays_bytes(path, qrels)
