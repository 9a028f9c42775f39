"""``mteb-stratified generate``: clear errors (exit 2, no traceback) before any LLM call, on
both paths (offline without --base-url, the LLM with it)."""

from __future__ import annotations

import glob
import socket

import pytest

from mteb_stratified.cli import main as cli_main


def _closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _gen(tmp_path, *extra, dataset="nfcorpus"):
    """The offline path: no LLM option."""
    return ["generate", "--dataset", dataset, "--out", str(tmp_path / "o"), "--no-progress",
            *extra]


def _llm(tmp_path, *extra, dataset="nfcorpus"):
    """The LLM path, pointed at a closed localhost port."""
    return _gen(tmp_path, "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--model", "m",
                "--api-key", "none", *extra, dataset=dataset)


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "mteb-stratified generate: error:" in err, err
    return err


def test_budget_zero(tmp_path, capsys):
    assert cli_main.main(_llm(tmp_path, "--structure", "bundled", "--budget", "0")) == 2
    err = _error(capsys)
    assert "argument --budget: must be an integer >= 1, got 0" in err


def test_missing_structure(tmp_path, capsys):
    assert cli_main.main(_gen(tmp_path, "--structure", str(tmp_path / "nope"))) == 2
    err = _error(capsys)
    assert "not a structure artifact" in err and "mteb-stratified structure" in err


def test_structure_of_another_corpus(tmp_path, capsys, slice_paths):
    folder, structure = slice_paths
    assert cli_main.main(_gen(tmp_path, "--structure", structure)) == 2
    assert "fingerprint" in _error(capsys)
    # the reverse: the bundled structure on the slice
    assert cli_main.main(_gen(tmp_path, "--structure", "bundled", dataset=folder)) == 2
    assert "fingerprint" in _error(capsys)


@pytest.mark.parametrize("extra,named", [
    (("--budget", "5"), "--budget"), (("--concurrency", "4"), "--concurrency"),
    (("--model", "m", "--api-key", "none"), "--model, --api-key"),
    (("--judge-batch", "2"), "--judge-batch"), (("--cache", "c.sqlite"), "--cache")])
def test_llm_options_without_base_url(tmp_path, capsys, extra, named):
    assert cli_main.main(_gen(tmp_path, "--structure", "bundled", *extra)) == 2
    err = _error(capsys)
    verb = "apply" if "," in named else "applies"
    assert f"{named} {verb} only to the LLM path" in err and "no --base-url" in err
    assert "fix: add --base-url URL" in err


def test_base_url_needs_a_budget(tmp_path, capsys):
    assert cli_main.main(_llm(tmp_path, "--structure", "bundled")) == 2
    err = _error(capsys)
    assert "--base-url needs a --budget" in err and "fix: add e.g. --budget 200" in err


@pytest.mark.slow
def test_no_api_key(tmp_path, capsys, monkeypatch, slice_paths):
    """Refused before any work: the dense pooling's corpus embedding (about 10 min for the
    bundled NFCorpus on 2 cores) is not computed for a command that cannot run."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    folder, structure = slice_paths
    args = [a for a in _llm(tmp_path, "--structure", structure, "--budget", "5", dataset=folder)
            if a not in ("--api-key", "none")]
    assert cli_main.main(args) == 2
    err = _error(capsys)
    assert "no API key for the query generator" in err and "OPENAI_API_KEY" in err
    assert not glob.glob(str(tmp_path / "o" / ".work" / "doc-emb-*.npy")), \
        "the corpus was embedded for dense pooling before the missing key was reported"


@pytest.mark.slow
def test_unreachable_server(tmp_path, capsys, slice_paths):
    pytest.importorskip("openai")
    folder, structure = slice_paths
    args = _llm(tmp_path, "--structure", structure, "--budget", "5", "--max-retries", "1",
                "--no-dense", dataset=folder)
    assert cli_main.main(args) == 2
    err = _error(capsys)
    assert "kept failing" in err and "--base-url" in err
    assert "\n  check: " in err  # how to check the server


def test_merge_into_a_split_the_dataset_lacks(tmp_path, capsys):
    assert cli_main.main(_gen(tmp_path, "--structure", "bundled", "--merge-into-split",
                              "train")) == 2
    err = _error(capsys)
    assert "--merge-into-split 'train': the dataset has no such split" in err
    assert "choose one of dev, test" in err
    assert not (tmp_path / "o").exists()  # refused before any work


def test_a_dataset_that_already_has_a_generated_split(tmp_path, capsys, slice_paths):
    import shutil
    folder, structure = slice_paths
    again = tmp_path / "again"
    shutil.copytree(folder, again)
    (again / "qrels" / "generated.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert cli_main.main(_gen(tmp_path, "--structure", structure, dataset=str(again))) == 2
    err = _error(capsys)
    assert "already has a split 'generated'" in err and "not from the output of" in err


def test_the_command_only_maps_flags():
    """cli/generate.py parses flags, calls generation.run once and prints: it keeps no state
    on ``args``, imports from the core only errors and constants, and nothing of io or json."""
    import ast
    import os

    import mteb_stratified
    path = os.path.join(os.path.dirname(mteb_stratified.__file__), "cli", "generate.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    assigned = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id == "args"]
    assert assigned == []
    core, banned = set(), []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            module = ("." * n.level) + (n.module or "")
            if module in ("..core", "..core.rng"):
                core |= {a.name for a in n.names}
            if module.startswith("..io") or module == "json":
                banned.append(module)
        elif isinstance(n, ast.Import):
            banned += [a.name for a in n.names if a.name == "json"]
    assert core <= {"InputError", "DEFAULT_N_MIN", "MAX_SEED"} and banned == []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "generate"]
    assert len(calls) == 1
