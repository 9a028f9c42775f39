"""LLM extractor without a model: JSON repair, retries, re-ask, failure records, cache, errors.

A fault-injecting proxy answers with synthetic completions here (fast); the same extractor
against a real model server is in ``test_llm_server.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai")

from mteb_stratified.core.errors import InputError  # noqa: E402
from mteb_stratified.structure.extractors import Entity, EntityExtractor  # noqa: E402
from mteb_stratified.structure.llm import (AnswerCache, LLMExtractor, parse_entities,  # noqa
                                           repair_json)

from ._proxy import BAD_JSON, GARBAGE, FaultProxy  # noqa: E402

GOOD = '{"entities": [{"name": "Vitamin D", "description": "a nutrient"}]}'


@pytest.mark.parametrize("text,expected", [
    (GOOD, [Entity("Vitamin D", "a nutrient")]),
    (BAD_JSON, [Entity("vitamin d", "a nutrient")]),                      # fences, quotes, comma
    ('{entities: [{name: "iron"}]}', [Entity("iron", "")]),               # bare keys
    ('Here: {"entities": [{"name": "zinc", "description": "metal"}, {"name": "cop',
     [Entity("zinc", "metal"), Entity("cop", "")]),                       # truncated answer
    ('["calcium", "magnesium"]', [Entity("calcium"), Entity("magnesium")]),
    ('{"entities": []}', []),
    (GARBAGE, None), ("", None), ('{"entities": [1, 2]}', None)])
def test_parse_entities_repairs_or_gives_up(text, expected):
    assert parse_entities(text) == expected


def test_repair_json_returns_none_without_json():
    assert repair_json("no json here") is None


def _extractor(url, tmp_path, **kw):
    kw.setdefault("backoff", 0.01)
    return LLMExtractor(base_url=url, model="m", api_key="none", cache_path=str(
        tmp_path / "cache.sqlite"), **kw)


def test_retries_every_transport_fault_then_caches(tmp_path):
    with FaultProxy(None, hold_s=2.0) as proxy:
        proxy.synthetic = GOOD
        proxy.faults.extend(["429", "cut", "timeout", "500", "malformed_body"])
        ex = _extractor(proxy.url, tmp_path, timeout=0.5, concurrency=1)
        assert isinstance(ex, EntityExtractor)
        out = ex.extract(["doc one", "doc two"])
        assert out == [[Entity("Vitamin D", "a nutrient")]] * 2
        assert proxy.applied == ["429", "cut", "timeout", "500", "malformed_body"]
        assert ex.usage()["retries"] == 5 and ex.usage()["requests"] == 7
        assert ex.failures == {}
        before = proxy.received
        assert ex.extract(["doc two", "doc one"]) == out  # from the cache
        assert proxy.received == before and ex.usage()["cached"] == 2
    # a new extractor on the same cache file makes no request either (resume)
    with FaultProxy(None) as proxy:
        ex = _extractor(proxy.url, tmp_path)
        assert ex.extract(["doc one"]) == [[Entity("Vitamin D", "a nutrient")]]
        assert proxy.received == 0


def test_malformed_json_is_reasked_then_recorded_as_failure(tmp_path):
    with FaultProxy(None) as proxy:
        proxy.synthetic = GARBAGE
        ex = _extractor(proxy.url, tmp_path, price_in=1.0, price_out=2.0)
        out = ex.extract(["a document"])
        assert out == [[]]
        assert list(ex.failures) == [0] and "malformed JSON" in ex.failures[0]
        u = ex.usage()
        assert u["reasks"] == 1 and u["requests"] == 2 and u["failed_docs"] == 1
        assert u["prompt_tokens"] == 20 and u["cost_usd"] == pytest.approx(40 / 1e6)
        # the failure is cached: no repeated paid call, still reported
        n = proxy.received
        assert ex.extract(["a document"]) == [[]] and proxy.received == n
        assert 0 in ex.failures
        # ... unless asked to retry failures
        proxy.synthetic = GOOD
        ex2 = _extractor(proxy.url, tmp_path, retry_failed=True)
        assert ex2.extract(["a document"]) == [[Entity("Vitamin D", "a nutrient")]]
    assert AnswerCache(str(tmp_path / "cache.sqlite")).count() == 1


def test_repairable_content_needs_no_reask(tmp_path):
    with FaultProxy(None) as proxy:
        proxy.synthetic = BAD_JSON
        ex = _extractor(proxy.url, tmp_path)
        assert ex.extract(["x"]) == [[Entity("vitamin d", "a nutrient")]]
        assert ex.usage()["reasks"] == 0 and proxy.received == 1


def test_concurrency_limit_and_order(tmp_path):
    with FaultProxy(None) as proxy:
        proxy.synthetic = GOOD
        ex = _extractor(proxy.url, tmp_path, concurrency=3)
        texts = [f"document {i}" for i in range(9)]
        assert len(ex.extract(texts)) == 9 and proxy.received == 9


def test_missing_key_and_model_are_clear_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(InputError, match="no API key") as err:
        LLMExtractor(base_url="http://127.0.0.1:9/v1", model="m")
    assert "OPENAI_API_KEY" in str(err.value) and "--extractor offline" in str(err.value)
    with pytest.raises(InputError, match="no model"):
        LLMExtractor(base_url="http://127.0.0.1:9/v1", api_key="k")


def test_unreachable_endpoint_is_a_clear_error(tmp_path):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    ex = _extractor(f"http://127.0.0.1:{port}/v1", tmp_path, max_retries=2, timeout=2)
    from mteb_stratified.core.errors import EndpointUnreachable

    # not InputError: the user's input is fine, the server is not there
    with pytest.raises(EndpointUnreachable, match="kept failing") as err:
        ex.extract(["doc"])
    assert "--base-url" in str(err.value) and "rerun to resume" in str(err.value)
