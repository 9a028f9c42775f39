"""``generation.run``: the whole command as one library call, a frozen :class:`Outcome` out (the
gate and the usage built by the library, the notices told through ``notify``)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.generation import GenerationConfig, LLMOptions, Outcome, RunConfig, run


ENDPOINT = {"base_url": "http://x/v1", "model": "m", "api_key": "k", "timeout": 5.0,
            "max_retries": 0, "price_in": None, "price_out": None, "max_answer_bytes": 10_000,
            "cache_path": "answers.sqlite"}


def test_the_config_refuses_a_writer_without_its_path():
    with pytest.raises(InputError, match="needs the LLM options"):
        RunConfig(dataset="d", structure="s", out="o", writer="llm")
    with pytest.raises(InputError, match="runs offline"):
        RunConfig(dataset="d", structure="s", out="o", writer="template",
                  llm=LLMOptions(ENDPOINT, budget=5))
    with pytest.raises(InputError, match="not one of select, template, llm"):
        RunConfig(dataset="d", structure="s", out="o", writer="tmpl")
    cfg = RunConfig(dataset="d", structure="s", out="o", writer="llm",
                    llm=LLMOptions(ENDPOINT, budget=5))
    assert (cfg.n_dense, cfg.dense) == (4, True)          # the LLM path pools dense by default
    assert RunConfig(dataset="d", structure="s", out="o").dense is False   # offline: BM25 only
    with pytest.raises(TypeError):
        cfg.llm.endpoint["base_url"] = "elsewhere"        # the settings cannot change under it


def test_the_config_infers_the_writer_and_refuses_misuse_before_any_work():
    """No writer: llm with LLM options, else select (the CLI's rule); settings that would fail
    late (a partial endpoint, pool splits for another writer, a panel not of pairs) are refused
    when the config is made."""
    assert RunConfig(dataset="d", structure="s", out="o").writer == "select"
    assert RunConfig(dataset="d", structure="s", out="o",
                     llm=LLMOptions(ENDPOINT, budget=5)).writer == "llm"
    with pytest.raises(InputError, match="lack model"):
        LLMOptions({k: v for k, v in ENDPOINT.items() if k != "model"}, budget=5)
    with pytest.raises(InputError, match="pool_splits"):
        RunConfig(dataset="d", structure="s", out="o", writer="template", pool_splits=("dev",))
    with pytest.raises(InputError, match="pairs"):
        RunConfig(dataset="d", structure="s", out="o", panel={"e5": "runs/e5.trec"})


def test_run_refuses_parts_that_are_not_callable(tmp_path):
    with pytest.raises(InputError, match="coverage_markdown must be callable"):
        run(RunConfig(dataset="d", structure="s", out=str(tmp_path)), bm25_run=print,
            coverage_markdown="coverage.md")


def test_run_returns_what_it_wrote(slice_paths, tmp_path):
    """A selection through the library: the Outcome holds the gate and the summary that
    coverage.json and --json carry, and the notices arrive through ``notify`` in order."""
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.report.generation import coverage_markdown

    folder, structure = slice_paths
    said: list = []
    out = str(tmp_path / "sel")
    outcome = run(RunConfig(dataset=folder, structure=structure, out=out,
                            generation=GenerationConfig(seed=0), show_progress=False),
                  bm25_run=bm25_run, coverage_markdown=coverage_markdown, notify=said.append)
    assert isinstance(outcome, Outcome)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.lines = ()
    report = json.load(open(outcome.written["coverage"], encoding="utf-8"))
    assert report["gate"]["verdict"] == outcome.verdict == outcome.gate.verdict
    assert report["gate"]["panel"] == list(outcome.gate.panel)
    assert report["gate"] == outcome.gate.to_dict()
    assert said == [f"validity gate: {outcome.verdict}"]
    assert not outcome.usage and outcome.usage.to_dict() == {} and report["usage"] == {}
    assert outcome.summary["writer"] == "select" and outcome.summary["out"] == out
    assert outcome.summary["counts"] == report["counts"]
    assert outcome.summary["after"] == report["after"]
    assert outcome.lines[0].startswith(f"{out}: {report['pool']['selected']} real judged")
    assert "weighted_units" in report["after"]["cluster"]
    assert "units" not in report["after"]["cluster"]
