"""The budget counts alike on every path: a cached answer's tokens count whether the generator
or a shared extractor (the structure's) took it from its cache, so a resumed run stops under
--max-tokens-total where an uninterrupted one did; and each stored answer's ``calls`` is that
call's own requests, whatever another thread sends meanwhile."""

from __future__ import annotations

import threading

import pytest

from mteb_stratified.generation import BudgetedCalls, BudgetExhausted, CallCache
from mteb_stratified.llm import ChatEndpoint, Completion
from mteb_stratified.structure.llm import LLMExtractor

ENTITIES = '{"entities": [{"name": "vitamin d", "description": "a nutrient"}]}'


class _Answers:
    """Answers by role: the extractor's entities cost 30 tokens, a query 4."""

    def __init__(self) -> None:
        self.received = 0

    def complete(self, *, messages, **request):
        self.received += 1
        if messages[0]["content"].startswith("You extract entities"):
            return Completion(ENTITIES, 20, 10)
        return Completion('{"query": "q"}', 3, 1)


def _session(folder, provider, *, max_calls: int, max_tokens: int | None):
    """A generator's budgeted calls with the structure's extractor shared, caches in folder."""
    calls = BudgetedCalls(ChatEndpoint(None, "m", "k", provider=provider),
                          CallCache(str(folder / "generate.sqlite")), max_calls=max_calls,
                          max_tokens=max_tokens)
    extractor = LLMExtractor(model="m", provider=provider, concurrency=1,
                             cache_path=str(folder / "entities.sqlite"))
    calls.share(extractor)
    return calls, extractor


def _steps(calls, extractor, n: int = 40) -> list:
    """Up to n steps of (write a query, read its entities) until the budget stops; the
    queries written."""
    done = []
    try:
        for i in range(n):
            calls.chat("write", [{"role": "user", "content": f"query {i}"}], max_tokens=8)
            extractor.extract([f"generated query {i}"])
            done.append(i)
    except BudgetExhausted:
        pass
    return done


def test_a_resumed_run_stops_under_the_token_budget_where_an_uninterrupted_one_did(tmp_path):
    once, resumed = tmp_path / "once", tmp_path / "resumed"
    once.mkdir(), resumed.mkdir()
    uninterrupted = _steps(*_session(once, _Answers(), max_calls=1000, max_tokens=200))
    assert 0 < len(uninterrupted) < 40  # the token budget stopped it: 34 tokens a step
    # interrupted after a few calls (the call budget), then rerun: the cached answers' tokens
    # count again, the extractor's as well as the generator's
    first = _steps(*_session(resumed, _Answers(), max_calls=4, max_tokens=200))
    assert len(first) < len(uninterrupted)
    server = _Answers()
    calls, extractor = _session(resumed, server, max_calls=1000, max_tokens=200)
    assert _steps(calls, extractor) == uninterrupted
    assert calls.usage()["tokens"] >= 200
    # a rerun of the finished run sends nothing and stops at the same step
    again = _Answers()
    assert _steps(*_session(once, again, max_calls=1000, max_tokens=200)) == uninterrupted
    assert again.received == 0


def test_per_answer_calls_count_this_calls_requests_only(tmp_path):
    """While the generator's request is in flight, a shared extractor (concurrency 4) sends 4
    requests from its threads: the generator's stored answer still took 1 request."""
    sent, release = threading.Semaphore(0), threading.Event()
    box: dict = {}

    class Extracting:
        def complete(self, **request):
            sent.release()
            release.wait(10)
            return Completion(ENTITIES, 20, 10)

    class Writing:
        def complete(self, **request):  # meanwhile, the extractor sends from its threads
            box["thread"] = threading.Thread(
                target=lambda: extractor.extract([f"text {i}" for i in range(4)]))
            box["thread"].start()
            for _ in range(4):
                assert sent.acquire(timeout=10)
            return Completion('{"query": "q"}', 3, 1)

    cache = CallCache(str(tmp_path / "generate.sqlite"))
    calls = BudgetedCalls(ChatEndpoint(None, "m", "k", provider=Writing()), cache,
                          max_calls=100)
    extractor = LLMExtractor(model="m", provider=Extracting(), concurrency=4,
                             cache_path=str(tmp_path / "entities.sqlite"))
    calls.share(extractor)
    msgs = [{"role": "user", "content": "x"}]
    try:
        calls.chat("write", msgs, max_tokens=8)
    finally:
        release.set()
        box["thread"].join(10)
    assert calls.usage()["paid_calls"] == 5
    assert cache.get(calls.key("write", msgs, 8))["calls"] == 1


@pytest.mark.parametrize("retry_failed", [False, True])
def test_a_failed_cached_extraction_counts_its_tokens_only_when_reused(tmp_path, retry_failed):
    """Under the extractor's retry_failed a failed answer is asked again, not reused: its
    tokens then count as the new request's, not twice."""
    class Garbage:
        def complete(self, **request):
            return Completion("no JSON", 20, 10)

    calls, extractor = _session(tmp_path, Garbage(), max_calls=100, max_tokens=None)
    extractor.extract(["a text"])  # failed after a re-ask: 2 requests, 60 tokens
    assert calls.tokens == 60
    again, extractor = _session(tmp_path, Garbage(), max_calls=100, max_tokens=None)
    extractor.retry_failed = retry_failed
    extractor.extract(["a text"])
    assert again.tokens == 60 and again.usage()["paid_calls"] == (2 if retry_failed else 0)


def test_a_cached_extraction_past_the_budget_is_refused(tmp_path):
    """The shared extractor's cache hits are checked like the generator's: once the budget is
    spent, a cached entity answer raises instead of taking a call past it."""
    calls, extractor = _session(tmp_path, _Answers(), max_calls=100, max_tokens=None)
    extractor.extract(["a generated query"])  # cached now
    server = _Answers()
    calls, extractor = _session(tmp_path, server, max_calls=1, max_tokens=None)
    calls.chat("write", [{"role": "user", "content": "x"}], max_tokens=8)
    with pytest.raises(BudgetExhausted):
        extractor.extract(["a generated query"])
    assert calls.spent == 1 == server.received
