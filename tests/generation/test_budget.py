"""``generate`` on an LLM-built structure: every request sent is counted and bounded by the
budget (generation calls, the structure's extraction of generated queries, retries), a rerun
repeats no paid call, and the endpoint recorded in the artifact is never contacted."""

from __future__ import annotations

import json
import os
import re

import pytest

from mteb_stratified.cli import main as cli_main

from ._chat import ChatServer, llm_copy

pytest.importorskip("openai")


def _cmd(folder, structure, url, out, budget, *extra):
    return ["generate", "--dataset", folder, "--structure", structure, "--budget", str(budget),
            "--out", str(out), "--no-progress", "--model", "my-model", "--api-key", "none",
            "--base-url", url, "--no-dense", "--max-pool", "2", "--seed", "3", *extra]


def test_the_budget_bounds_every_request_and_a_rerun_sends_none(slice_paths, tmp_path,
                                                                 capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "the-users-secret")
    folder, structure = slice_paths
    their_cache = str(tmp_path / "elsewhere" / "cache.sqlite")
    with ChatServer() as theirs, ChatServer() as mine:
        art = llm_copy(structure, str(tmp_path / "llm-structure"), base_url=theirs.url,
                       cache_path=their_cache)
        out = tmp_path / "out"
        assert cli_main.main(_cmd(folder, art, mine.url, out, 20, "--json")) == 0
        captured = capsys.readouterr()
        usage = json.loads(captured.out.strip().splitlines()[-1])["usage"]
        extracted = sum(1 for c in map(json.loads, open(out / "candidates.jsonl"))
                        if "query_entities" in c)
        assert extracted >= 1  # the structure's extractor read generated queries (requests)
        assert mine.count == usage["paid_calls"] <= usage["calls"] <= 20
        assert "different extractor" in captured.err
        # the same command again: everything from the cache, nothing sent
        first = open(out / "candidates.jsonl").read()
        assert cli_main.main(_cmd(folder, art, mine.url, out, 20)) == 0
        text = capsys.readouterr().out
        assert re.search(r"LLM calls (\d+) of 20 \(0 requests sent", text), text
        assert mine.count == usage["paid_calls"]
        assert open(out / "candidates.jsonl").read() == first
        # a larger budget resumes: only new requests, and the server saw what was printed
        before = mine.count
        assert cli_main.main(_cmd(folder, art, mine.url, out, 30, "--json")) == 0
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["usage"]
        assert mine.count - before == again["paid_calls"] <= 30 - usage["calls"]
        assert again["calls"] <= 30
    assert theirs.count == 0 and not os.path.exists(their_cache)


class _Flaky:
    """Fails ``fails`` times with a retryable error, then answers; counts every request."""

    def __init__(self, fails: int) -> None:
        self.fails, self.received = fails, 0

    def complete(self, **request):
        from mteb_stratified.llm import Completion, Transient
        self.received += 1
        if self.received <= self.fails:
            raise Transient("HTTP 503", retry_after=0)
        return Completion('{"query": "q"}', 3, 1)


def _budgeted(provider, cache, budget):
    from mteb_stratified.generation import BudgetedCalls
    from mteb_stratified.llm import ChatEndpoint
    return BudgetedCalls(ChatEndpoint(None, "m", "k", provider=provider, backoff=0.0),
                         cache, max_calls=budget)


def test_retries_are_counted_bounded_and_remembered_by_the_cache(tmp_path):
    from mteb_stratified.generation import BudgetExhausted, CallCache
    msgs = [{"role": "user", "content": "x"}]
    # two retries before the answer: three requests, three calls
    flaky, cache = _Flaky(2), CallCache(str(tmp_path / "c.sqlite"))
    calls = _budgeted(flaky, cache, 5)
    assert calls.chat("write", msgs, max_tokens=8) == '{"query": "q"}'
    u = calls.usage()
    assert flaky.received == u["paid_calls"] == u["calls"] == 3 and u["retries"] == 2
    # a rerun answers from the cache: nothing sent, the same three calls spent
    again = _budgeted(_Flaky(0), cache, 5)
    again.chat("write", msgs, max_tokens=8)
    assert again.usage()["paid_calls"] == 0 and again.usage()["calls"] == 3
    # the budget stops the retries themselves: the server never sees more than the budget
    stingy = _Flaky(10)
    with pytest.raises(BudgetExhausted):
        _budgeted(stingy, None, 2).chat("write", msgs, max_tokens=8)
    assert stingy.received == 2


def test_retry_failed_asks_again_for_failed_query_entities(slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    art = llm_copy(structure, str(tmp_path / "llm-structure"), base_url="http://127.0.0.1:9/v1",
                   cache_path=str(tmp_path / "x.sqlite"))
    out = tmp_path / "out"
    with ChatServer(garbage=True) as bad:
        assert cli_main.main(_cmd(folder, art, bad.url, out, 60)) == 2
    assert "no JSON" in capsys.readouterr().err
    with ChatServer() as good:
        assert cli_main.main(_cmd(folder, art, good.url, out, 60, "--retry-failed")) == 0
        err = capsys.readouterr().err
        assert "--retry-failed: 12 failed answers cleared" in err
        assert good.count >= 12
