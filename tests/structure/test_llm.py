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


# -- issue #30, finding 7: each answer committed as it arrives; --retry-failed says what it sends
def _is_reask(body: bytes) -> bool:
    import json
    return any(m["role"] == "assistant" for m in json.loads(body)["messages"])


def test_a_first_answer_is_stored_before_its_reask_and_a_rerun_reasks_from_it(tmp_path):
    """An interrupted re-ask (held by the proxy, never answered) leaves the first answer in the
    cache as a partial record; a rerun re-asks from it and sends no first request again."""
    import threading
    import time
    with FaultProxy(None) as proxy:
        proxy.synthetic = GARBAGE
        proxy.hold_after = 1  # the first answer comes; its re-ask is held
        first = _extractor(proxy.url, tmp_path, timeout=30, max_retries=0)
        ended: list = []

        def interrupted():  # its held re-ask is cut when the proxy stops: it raises then
            try:
                first.extract(["a document"])
            except Exception as exc:  # noqa: BLE001 - the "kill"
                ended.append(exc)
        thread = threading.Thread(target=interrupted, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not proxy.held:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _is_reask(proxy.held[0])
        cache = AnswerCache(str(tmp_path / "cache.sqlite"))
        key = first._key("a document")
        stored = cache.get(key)  # committed before the re-ask was sent
        assert stored["status"] == "partial" and stored["first"] == GARBAGE
        assert stored["calls"] == 1 and stored["prompt_tokens"] == 10
        # the rerun (the first run "killed" with its re-ask in flight)
        proxy.hold_after, proxy.synthetic = None, GOOD
        rerun = _extractor(proxy.url, tmp_path)
        plan = rerun.plan(["a document"])
        assert plan == {"documents": 1, "cached": 0, "new": 0, "failed": 0, "partial": 1,
                        "first_requests": 0}
        n = len(proxy.bodies)
        assert rerun.extract(["a document"]) == [[Entity("Vitamin D", "a nutrient")]]
        sent = proxy.bodies[n:]
        assert len(sent) == 1 and sent[0] == proxy.held[0]  # only the re-ask in flight, again
        record = cache.get(key)
        # the record's requests and tokens are the document's: both calls, across the runs
        assert record["status"] == "ok" and record["calls"] == 2
        assert record["prompt_tokens"] == 20
        u = rerun.usage()
        assert u["requests"] == 1 and u["reasks"] == 1 and u["cached"] == 0
        assert u["cached_calls"] == 1
    thread.join(30)
    assert len(ended) == 1 and cache.get(key)["status"] == "ok"  # the cut run stored nothing


def test_the_same_text_twice_in_a_batch_is_asked_once(tmp_path):
    with FaultProxy(None) as proxy:
        proxy.synthetic = GOOD
        ex = _extractor(proxy.url, tmp_path, concurrency=2)
        out = ex.extract(["same", "other", "same"])
        assert out == [[Entity("Vitamin D", "a nutrient")]] * 3 and proxy.received == 2


def _corpus(folder, n: int) -> str:
    """``n`` real NFCorpus documents as a BEIR folder."""
    import json
    import os
    from importlib import resources
    from mteb_stratified.io.beir import load_corpus
    corpus = load_corpus(str(resources.files("mteb_stratified") / "data" / "nfcorpus"))
    os.makedirs(folder)
    with open(os.path.join(folder, "corpus.jsonl"), "w", encoding="utf-8") as fh:
        for doc_id in sorted(corpus)[:n]:
            fh.write(json.dumps({"_id": doc_id, **corpus[doc_id]}) + "\n")
    return str(folder)


def test_retry_failed_says_what_it_will_send_then_sends_exactly_that(tmp_path, capsys):
    """The finding: after a run in which every document failed, ``--retry-failed`` printed "8
    failed answers cleared" and sent 40 requests.  Now it counts, before sending, the documents
    of this corpus it will ask (failed before, never answered), and the server sees exactly
    that many first requests."""
    import json
    from mteb_stratified.cli.main import main
    folder = _corpus(tmp_path / "beir", 6)
    with FaultProxy(None) as proxy:
        def run(*extra, limit=None):
            argv = ["structure", "--corpus", folder, "--out", str(tmp_path / "art"),
                    "--extractor", "llm", "--base-url", proxy.url, "--model", "m",
                    "--api-key", "none", "--cache", str(tmp_path / "cache.sqlite"),
                    "--min-doc-freq", "1", "--min-cluster-size", "1", "--no-progress",
                    "--json", "--bins-splits", "none", *extra]
            n = len(proxy.bodies)
            code = main(argv + (["--limit", str(limit)] if limit else []))
            out, err = capsys.readouterr()
            sent = proxy.bodies[n:]
            return code, err, [b for b in sent if not _is_reask(b)], sent
        proxy.synthetic = GARBAGE  # every answer without JSON: every document fails
        code, err, firsts, sent = run(limit=2)  # a first run over 2 of the 6 documents
        assert code == 2 and "failed for all" in err and "Traceback" not in err
        assert "2 documents to ask (2 never answered): 2 first requests" in err
        assert len(firsts) == 2 and len(sent) == 4  # each re-asked once
        proxy.synthetic = GOOD
        code, err, firsts, sent = run("--retry-failed")
        assert ("6 documents to ask (4 never answered; 2 failed before, asked again "
                "(--retry-failed)): 6 first requests") in err, err
        assert len(firsts) == 6 and len(sent) == 6  # exactly what it said: no re-ask needed
        assert "failed answers cleared" not in err
        # a rerun has nothing to send, and says nothing of sending
        code2, err, firsts, sent = run("--retry-failed")
        assert sent == [] and "documents to ask" not in err
    assert code == code2
