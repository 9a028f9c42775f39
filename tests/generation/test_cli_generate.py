"""``mteb-stratified generate``: clear errors (exit 2) before any LLM call."""

from __future__ import annotations

import socket

import pytest

from mteb_stratified.cli import main as cli_main


def _gen(tmp_path, *extra):
    return ["generate", "--dataset", "nfcorpus", "--out", str(tmp_path / "o"), "--no-progress",
            "--model", "m", "--api-key", "none", *extra]


def test_budget_zero(tmp_path, capsys):
    assert cli_main.main(_gen(tmp_path, "--structure", "bundled", "--budget", "0")) == 2
    err = capsys.readouterr().err
    assert "argument --budget: must be an integer >= 1, got 0" in err


def test_missing_structure(tmp_path, capsys):
    assert cli_main.main(_gen(tmp_path, "--structure", str(tmp_path / "nope"),
                              "--budget", "5")) == 2
    err = capsys.readouterr().err
    assert "not a structure artifact" in err and "mteb-stratified structure" in err


def test_structure_of_another_corpus(tmp_path, capsys, slice_paths):
    _, structure = slice_paths
    assert cli_main.main(_gen(tmp_path, "--structure", structure, "--budget", "5")) == 2
    assert "fingerprint" in capsys.readouterr().err


def test_no_api_key(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = [a for a in _gen(tmp_path, "--structure", "bundled", "--budget", "5")
            if a not in ("--api-key", "none")]
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert "no API key for the query generator" in err and "OPENAI_API_KEY" in err


@pytest.mark.slow
def test_unreachable_server(tmp_path, capsys, slice_paths):
    pytest.importorskip("openai")
    folder, structure = slice_paths
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    args = ["generate", "--dataset", folder, "--structure", structure, "--budget", "5",
            "--out", str(tmp_path / "o"), "--no-progress", "--model", "m", "--api-key", "none",
            "--base-url", f"http://127.0.0.1:{port}/v1", "--max-retries", "1", "--no-dense"]
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert "kept failing" in err and "--base-url" in err
