"""The one LLM answer cache: records survive a reopen, and caches of the earlier layouts are
migrated in place with every answer kept (a paid call is never lost to a format change)."""

import sqlite3

from mteb_stratified.llm import AnswerCache, cache_key


def test_records_round_trip_and_count(tmp_path):
    path = str(tmp_path / "c.sqlite")
    cache = AnswerCache(path, table="calls")
    cache.put("k1", {"content": "hi"}, kind="write", prompt_tokens=3, completion_tokens=2)
    cache.put("k2", {"status": "failed", "error": "x"}, kind="extract", calls=2)
    cache.close()
    again = AnswerCache(path, table="calls")
    assert again.get("k1") == {"content": "hi", "prompt_tokens": 3, "completion_tokens": 2,
                               "calls": 1}
    assert again.get("nope") is None and again.count() == 2 and again.count("failed") == 1
    assert cache_key("m", "v1", "h") == cache_key("m", "v1", "h") != cache_key("m", "v2", "h")


def test_the_earlier_extractor_layout_is_migrated(tmp_path):
    path = str(tmp_path / "old.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT, prompt_version TEXT, "
                   "doc_hash TEXT, status TEXT, entities TEXT, raw TEXT, error TEXT, "
                   "prompt_tokens INTEGER, completion_tokens INTEGER, calls INTEGER)")
        db.execute("INSERT INTO answers VALUES ('k', 'm', 'entities-v1', 'h', 'ok', "
                   "'[[\"iron\", \"a metal\"]]', '{}', NULL, 10, 4, 1)")
    cache = AnswerCache(path, table="answers")
    assert cache.get("k") == {"status": "ok", "entities": [["iron", "a metal"]], "raw": "{}",
                              "error": None, "prompt_tokens": 10, "completion_tokens": 4,
                              "calls": 1}


def test_the_earlier_generation_layout_is_migrated(tmp_path):
    path = str(tmp_path / "old.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, kind TEXT, content TEXT, "
                   "prompt_tokens INTEGER, completion_tokens INTEGER)")
        db.execute("INSERT INTO calls VALUES ('k', 'judge', '{\"relevance\": 2}', 7, 1)")
    cache = AnswerCache(path, table="calls")
    assert cache.get("k")["content"] == '{"relevance": 2}'
    assert cache.count() == 1


def test_retry_failed_deletes_only_the_failures(tmp_path):
    """The extractor stores a failed document as ``status: failed``; retry_failed removes those
    (so the next run asks again) and keeps every answer, including the generator's records."""
    path = str(tmp_path / "c.sqlite")
    cache = AnswerCache(path, table="answers")
    cache.put("ok", {"status": "ok", "entities": [["iron", "a metal"]]}, prompt_tokens=5)
    cache.put("bad1", {"status": "failed", "entities": [], "error": "malformed JSON"})
    cache.put("bad2", {"status": "failed", "entities": [], "error": "HTTP 400"})
    cache.put("text", {"status": "ok", "entities": [], "raw": '"status": "failed"'})
    assert cache.retry_failed() == 2 and cache.retry_failed() == 0
    assert cache.get("bad1") is None and cache.get("bad2") is None
    assert cache.get("ok")["prompt_tokens"] == 5 and cache.count() == 2
    assert cache.count("failed") == 0 and cache.count("ok") == 2
    calls = AnswerCache(path, table="calls")
    calls.put("c", {"content": '{"status": "failed"}'})
    assert calls.retry_failed() == 0 and calls.count() == 1
