"""Readers take regular files only, read bounded lines, and refuse a gzip bomb early; qrels
lines given twice are kept once with a warning when identical (as trec_eval keeps them) and
refused when their grades differ.  (The CLI's time and memory on the same inputs:
tests/cli/test_bad_inputs.py, ``test_refused_fast_and_small``.)"""

from __future__ import annotations

import gzip
import os
import threading
import warnings

import pytest

from mteb_stratified.cli.main import main
from mteb_stratified.core.errors import InputError, InputWarning
from mteb_stratified.io import files, read_qrels, read_run
from mteb_stratified.io.beir import read_jsonl as _read_jsonl
from mteb_stratified.io.mteb_results import read_per_query_csv

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"


def read_jsonl(path):
    return _read_jsonl(path, "corpus")


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


@pytest.mark.parametrize("reader", [read_run, read_qrels, read_jsonl, read_per_query_csv,
                                    files.read_bytes])
def test_a_fifo_is_refused_without_blocking(tmp_path, reader):
    """``open()`` of a FIFO blocks until a writer comes: the reader must not wait for one."""
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    done = []

    def read():
        try:
            reader(fifo)
        except BaseException as exc:  # noqa: BLE001 - the test looks at what it was
            done.append(exc)
        else:
            done.append(None)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    if not done:  # unblock a reader stuck in open() so the test run can go on
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"{reader.__name__} blocked on a FIFO")
    assert isinstance(done[0], InputError), done[0]
    assert "named pipe" in done[0].message and done[0].source == fifo


def _error(reader, path):
    try:
        reader(path)
    except InputError as exc:
        return exc
    raise AssertionError("no InputError")


@pytest.mark.parametrize("reader", [read_run, read_qrels, read_jsonl, files.read_bytes])
def test_a_device_is_refused_before_a_byte_is_read(reader):
    err = _error(reader, "/dev/zero")
    assert "character device" in err.message and err.source == "/dev/zero" and err.fix


@pytest.mark.parametrize("reader", [read_run, read_qrels, read_jsonl, read_per_query_csv])
def test_a_line_beyond_the_maximum_is_refused_at_its_line(tmp_path, monkeypatch, reader):
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1000)
    path = _write(tmp_path, "f", "x" * 5000 + "\nq1 Q0 d1 1 0.5 t\n")
    err = _error(reader, path)
    assert "longer than" in err.message and err.line == 1 and err.source == path


def test_a_long_line_in_a_gzip_file_too(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1000)
    path = _write(tmp_path, "f.gz", gzip.compress(b"q1 0 d1 1\n" * 3 + b"y" * 5000))
    assert _error(read_qrels, path).line == 4


def test_the_gzip_ratio_is_checked_on_the_first_megabytes(tmp_path, monkeypatch):
    """A bomb is refused once GZIP_FLOOR_BYTES are out, not when it has expanded to 100 times
    the whole file (5 GiB of zeros in 5.2 MB of gzip: 520 MB before)."""
    monkeypatch.setattr(files, "GZIP_FLOOR_BYTES", 1 << 20)
    member = gzip.compress(b"\0" * (8 << 20))
    path = _write(tmp_path, "bomb.gz", member * 50)  # 400 MiB
    stream = files._open_binary(path)
    with pytest.raises(InputError, match="decompression bomb"):
        while stream.read(1 << 16):
            pass
    assert stream.raw.expanded < 4 << 20  # refused within the first 4 MiB, not at 400 MiB


def test_a_genuine_gzip_run_is_read(tmp_path):
    lines = "".join(f"q{q} Q0 d{d} {d + 1} {1 / (d + 1)!r} run\n" for q in range(50)
                    for d in range(2000))
    path = _write(tmp_path, "run.gz", gzip.compress(lines.encode()))
    assert len(lines) > files.GZIP_FLOOR_BYTES / 8  # several MiB, several times compressed
    run = read_run(path)
    assert len(run) == 50 and len(run["q7"]) == 2000


def test_identical_judgments_are_kept_once_with_a_warning(tmp_path):
    path = _write(tmp_path, "q.txt", QRELS + "q1 0 d1 1\nq2 0 d3 2\n")
    with pytest.warns(InputWarning, match=r"2 judgment line\(s\) repeat") as caught:
        assert read_qrels(path) == read_qrels(_write(tmp_path, "clean.txt", QRELS))
    warning = caught[0].message
    assert warning.source == path and warning.line == 4 and "line 4 repeats line 1" in str(warning)


def test_a_beir_duplicate_too(tmp_path):
    path = _write(tmp_path, "q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t1\n")
    with pytest.warns(InputWarning):
        assert read_qrels(path) == {"q1": {"d1": 1}}


def test_conflicting_judgments_stay_an_error(tmp_path):
    path = _write(tmp_path, "q.txt", QRELS + "q1 0 d1 2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        err = _error(read_qrels, path)
    assert err.line == 4 and "different grades (1 on line 1, 2 here)" in err.message


def test_the_cli_prints_the_warning_as_one_plain_line(tmp_path, capsys):
    qrels = _write(tmp_path, "q.txt", QRELS + "q1 0 d1 1\n")
    run = _write(tmp_path, "r.trec", "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.1 t\nq2 Q0 d3 1 1 t\n")
    assert main(["evaluate", "--qrels", qrels, "--run", run]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"mteb-stratified evaluate: warning: {qrels}:4: 1 judgment line(s)")
    assert "Traceback" not in err and "InputWarning" not in err
    # and again on a second call in the same process: warnings are not once per location
    assert main(["evaluate", "--qrels", qrels, "--run", run]) == 0
    assert "warning:" in capsys.readouterr().err
