"""Fuzzing ``mteb-stratified evaluate`` on mutated and random run and qrels files, in process:
it prints a result (exit 0) or a clear error (exit 2: ``FILE:LINE: message`` and a fix, no
traceback), and the same output with the vectorised run reader as with the line reader."""

import gzip

from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.cli.main import main
from mteb_stratified.io import _vectorised
from tests.io.test_fuzz_readers import DATA, FUZZ, MUTATION, VALID_QRELS, VALID_RUN, mutate

MEASURES = ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100"]


def evaluate(capsys, qrels: str, run: str, fast: bool, zero: bool) -> tuple:
    """``(exit status, stdout, stderr)`` of the CLI, with the fast path on or off."""
    _vectorised.ENABLED = fast
    try:
        code = main(["evaluate", "--qrels", qrels, "--run", run, "--per-query", "--json",
                     "--measures", *MEASURES] + (["-c"] if zero else []))
    finally:
        _vectorised.ENABLED = True
    out, err = capsys.readouterr()
    return code, out, err


def _without_warnings(err: str) -> str:
    """stderr less the CLI's input warnings (a repeated qrels line: kept once, with a warning)
    and their fix lines."""
    kept, skip = [], False
    for line in err.splitlines(keepends=True):
        if line.startswith("mteb-stratified evaluate: warning: "):
            skip = True
            continue
        if skip and line.startswith("  fix: "):
            continue
        skip = False
        kept.append(line)
    return "".join(kept)


@FUZZ
@given(run_ops=st.lists(MUTATION, max_size=3), qrels_ops=st.lists(MUTATION, max_size=1),
       noise=st.one_of(st.none(), DATA), gz=st.booleans(), zero=st.booleans())
def test_evaluate_never_crashes(tmp_path, capsys, run_ops, qrels_ops, noise, gz, zero):
    run_data = mutate(VALID_RUN, run_ops) if noise is None else noise
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_bytes(gzip.compress(run_data) if gz else run_data)
    qrels.write_bytes(mutate(VALID_QRELS, qrels_ops))
    code, out, err = evaluate(capsys, str(qrels), str(run), True, zero)
    assert "Traceback" not in err
    assert (code, out, err) == evaluate(capsys, str(qrels), str(run), False, zero)
    err = _without_warnings(err)
    if code == 0:
        assert out.startswith("{") and not err
    else:
        assert code == 2 and not out
        assert err.startswith("mteb-stratified evaluate: error: ") and "\n  fix: " in err
        assert str(run) in err or str(qrels) in err or "share no query id" in err


def test_a_valid_pair_evaluates(tmp_path, capsys):
    """The fuzzed pair without mutation: a result, so mutations are what makes errors."""
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_bytes(VALID_RUN)
    qrels.write_bytes(VALID_QRELS)
    code, out, err = evaluate(capsys, str(qrels), str(run), True, False)
    assert code == 0 and '"nDCG@10"' in out and not err


def test_a_bad_line_is_named(tmp_path, capsys):
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_bytes(VALID_RUN.replace(b"q1 Q0 d3 4 0.5", b"q1 Q0 d3 4 nan"))
    qrels.write_bytes(VALID_QRELS)
    code, out, err = evaluate(capsys, str(qrels), str(run), True, False)
    assert code == 2 and f"{run}:9: score is nan" in err and "fix: " in err
