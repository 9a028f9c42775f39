"""``mteb-stratified mteb ...`` hands over to mteb's CLI with the tasks registered."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest


def test_available_tasks_lists_ours():
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified.cli.mteb_wrapper",
                           "available-tasks", "-t", "StratifiedNFCorpus", "StratifiedFiQA"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "StratifiedNFCorpus" in proc.stdout and "StratifiedFiQA" in proc.stdout


def test_subparser_passes_everything_through():
    from mteb_stratified.cli import mteb_wrapper

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    mteb_wrapper.add_parser(sub)
    args = parser.parse_args(["mteb", "run", "-t", "X", "-m", "Y", "--dtype", "bf16", "--help"])
    assert args.mteb_args == ["run", "-t", "X", "-m", "Y", "--dtype", "bf16", "--help"]
    assert args.func is mteb_wrapper.run


def test_bad_model_kwargs_and_data_dir(tmp_path):
    from mteb_stratified.cli import mteb_wrapper
    from mteb_stratified.core.errors import InputError

    with pytest.raises(InputError, match="not valid JSON"):
        mteb_wrapper.run(argparse.Namespace(mteb_args=["run", "--model-kwargs", "{dtype"]))
    with pytest.raises(InputError, match="is not a folder"):
        mteb_wrapper.run(argparse.Namespace(mteb_args=["run", "--data-dir", str(tmp_path / "x")]))


def test_model_kwargs_reach_get_model(monkeypatch):
    import mteb
    from mteb_stratified.cli import mteb_wrapper

    seen = {}

    def fake_get_model(name, revision=None, device=None, **kw):
        seen.update(kw, name=name)
        raise SystemExit(0)

    monkeypatch.setattr(mteb, "get_model", fake_get_model)
    with pytest.raises(SystemExit):
        mteb_wrapper.run(argparse.Namespace(mteb_args=[
            "run", "-t", "StratifiedNFCorpus", "-m", "mteb-stratified/all-MiniLM-L6-v2",
            "--dtype", "bfloat16", "--score-dtype", "bfloat16"]))
    assert seen == {"dtype": "bfloat16", "score_dtype": "bfloat16",
                    "name": "mteb-stratified/all-MiniLM-L6-v2"}
