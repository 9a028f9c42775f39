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


@pytest.mark.parametrize("argv, said", [
    (["-t", "StratifiedNFCorpsu", "-m", "mteb-stratified/all-MiniLM-L6-v2"],
     "no task named 'StratifiedNFCorpsu' (did you mean StratifiedNFCorpus"),
    (["-t", "StratifiedNFCorpus", "-m", "mteb-stratified/all-MiniLM-L6-v2-bf61"],
     "registers no model of that name (did you mean mteb-stratified/all-MiniLM-L6-v2-bf16"),
    (["-t", "StratifiedNFCorpus", "-m", "sentence-transformers/all-MiniLM-L6-v3"],
     "the Hugging Face hub is offline (HF_HUB_OFFLINE) (did you mean "
     "sentence-transformers/all-MiniLM-L6-v2"),
])
def test_a_wrong_task_or_model_name_is_a_clear_error(tmp_path, argv, said):
    """Before, a misspelt task ended in mteb's KeyError traceback and a misspelt model in an
    HF offline error; now exit 2 before anything loads, with the nearest names."""
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified.cli.main", "mteb", "run",
                           *argv, "--output-folder", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert said in proc.stderr and "fix:" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_a_local_model_folder_and_an_online_hub_name_pass_the_check(tmp_path, monkeypatch):
    from mteb_stratified.cli.mteb_wrapper import check_run_names

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_run_names(argparse.Namespace(tasks=["StratifiedNFCorpus"], model=str(tmp_path)))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    check_run_names(argparse.Namespace(tasks=None, model="someone/some-model"))
