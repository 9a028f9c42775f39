"""Fault-injection catalogue for the LLM paths: every fault a server can make, and its outcome.

A local fake OpenAI server (:mod:`._faults`) answers with one scripted fault each; the real
client path (:class:`~mteb_stratified.llm.ChatEndpoint` over the ``openai`` client) meets it.
Each test id reads ``FAULT=>OUTCOME``; the outcomes are:

* ``retried-ok``: the job gets the right answer after one retry, and the server answered (was
  "paid") exactly once: no call is repeated once answered;
* ``answered-once``: the answer is usable as it came: one request, one paid call, token counts
  never negative;
* an error, at once or after the retries: ``InputError`` for the user's settings (key, base URL,
  model), ``EndpointError``/``EndpointUnreachable`` for a server that keeps failing,
  ``Permanent`` for a rejected request (recorded by the caller); through the CLI: exit 2, one
  message with what to check, no traceback.

No error message, log record or file written ever holds the API key.  A second server (the
redirect target) checks that no request, and no key, is sent anywhere but ``--base-url``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import types

import pytest

pytest.importorskip("openai")

from mteb_stratified.cli import main as cli_main  # noqa: E402
from mteb_stratified.core.errors import (EndpointError, EndpointUnreachable,  # noqa: E402
                                         InputError)
from mteb_stratified.llm import ChatEndpoint, Permanent, endpoint  # noqa: E402
from mteb_stratified.llm.endpoint import REASK_ECHO_CHARS  # noqa: E402
from mteb_stratified.llm.cache import AnswerCache  # noqa: E402
from mteb_stratified.structure.extractors import Entity  # noqa: E402
from mteb_stratified.structure.llm import LLMExtractor  # noqa: E402

from ._extract_job import run  # noqa: E402
from ._faults import FAULTS, GOOD, HUGE, KEY, FakeOpenAI, free_port  # noqa: E402

MESSAGES = [{"role": "user", "content": "Vitamin D and calcium."}]
RETRIES = 2

# fault -> why a retry is right (then: the right answer, 2 requests, 1 paid)
RETRIED = {
    "429": "rate limited, Retry-After: 0",
    "429-no-retry-after": "rate limited, backoff only",
    "429-huge-retry-after": "Retry-After: 86400 capped at max_backoff, not slept",
    "429-date-retry-after": "Retry-After as an HTTP date: backoff",
    "500": "server error", "502": "bad gateway (an HTML page)", "503": "overloaded",
    "504": "gateway timeout",
    "timeout": "no answer within --timeout", "refused-mid-run": "connection reset (RST)",
    "cut-before-headers": "closed before any header", "cut-after-headers": "closed mid-body",
    "drip": "body dripping past --timeout: the whole answer is bounded",
    "body-cut-mid-json": "a complete HTTP body holding half a JSON document",
    "malformed-json": "not JSON", "empty-body": "200 with no body",
    "json-string-body": "a JSON string, not an object", "html-200": "200 with an HTML page",
    "empty-choices": "choices: []", "choice-without-message": "a choice without message",
    "content-null": "message.content null", "non-utf8-body": "bytes that are not UTF-8",
    "bad-gzip": "Content-Encoding: gzip on a plain body",
    "echo-key-500": "a 500 quoting the key back",
}
# fault -> the token counts kept (1 request, 1 paid: the answer is used as it came)
ANSWERED_ONCE = {
    "gzip": (10, 5), "text-plain": (10, 5), "several-mb": (10, 5), "wrong-model": (10, 5),
    "usage-missing": (0, 0), "usage-negative": (0, 0), "usage-strings": (10, 0),
}
# faults (as many as sent) -> (error, text it says, requests sent)
FAILS = {
    "400": (("400",), Permanent, "HTTP 400", 1),
    "401": (("401",), InputError, "refused the API key", 1),
    "403": (("403",), InputError, "refused the API key", 1),
    "404": (("404",), InputError, "--base-url", 1),
    "307-other-host": (("307-other-host",), InputError, "redirected", 1),
    "302-other-host": (("302-other-host",), InputError, "redirected", 1),
    "429-always": (("429",) * 3, EndpointError, "429 rate limited", 3),
    "500-always": (("500",) * 3, EndpointError, "HTTP 500", 3),
    "timeout-always": (("timeout",) * 3, EndpointUnreachable, "no answer from the server", 3),
    "cut-always": (("cut-before-headers",) * 3, EndpointUnreachable, "no answer", 3),
}
# runaway answers (64 MiB; the bound is 8 MiB) -> what the error says of how it was stopped
TOO_LARGE = {"huge-content-length": "Content-Length is 67,1[0-9,]+ bytes; not read",
             "huge-chunked": "stopped reading there",
             "huge-gzip": r"once decompressed \(gzip\); stopped there"}


@pytest.fixture
def servers():
    """The fake server, whose redirects point at a second one that must receive nothing."""
    with FakeOpenAI() as other, FakeOpenAI(hold_s=1.5) as srv:
        srv.redirect_to = f"http://localhost:{other.port}"
        yield srv
        assert other.requests == [] and other.auth_seen == []


def _endpoint(url, **kw):
    kw = {"timeout": 0.5, "max_retries": RETRIES, "backoff": 0.01, "max_backoff": 0.1, **kw}
    return ChatEndpoint(url, "m", KEY, **kw)


def test_the_catalogue_covers_every_fault():
    tried = (set(RETRIED) | set(ANSWERED_ONCE) | {f for c in FAILS.values() for f in c[0]}
             | set(TOO_LARGE))
    assert tried | {"ok", "echo-key-400", "echo-key-401"} == set(FAULTS)
    assert len(RETRIED) + len(ANSWERED_ONCE) + len(FAILS) >= 40


@pytest.mark.parametrize("fault", [pytest.param(f, id=f"{f}=>retried-ok") for f in RETRIED])
def test_fault_is_retried_then_answered_once(servers, fault):
    servers.faults.append(fault)
    e = _endpoint(servers.url, timeout=1.0)
    start = time.monotonic()
    done = e.chat(MESSAGES)
    assert time.monotonic() - start < 5  # capped, bounded: never the server's pace
    assert done.content == GOOD
    assert len(servers.requests) == 2 and servers.paid == 1
    u = e.usage()
    assert (u["requests"], u["retries"]) == (2, 1)
    assert (u["prompt_tokens"], u["completion_tokens"]) == (10, 5)


@pytest.mark.parametrize("fault,tokens", [pytest.param(f, t, id=f"{f}=>answered-once")
                                          for f, t in ANSWERED_ONCE.items()])
def test_usable_answer_is_taken_as_it_came(servers, fault, tokens):
    servers.faults.append(fault)
    e = _endpoint(servers.url, timeout=10.0)  # (a 6 MB body on a loaded machine)
    done = e.chat(MESSAGES)
    assert done.content == GOOD and (done.prompt_tokens, done.completion_tokens) == tokens
    assert len(servers.requests) == 1 and servers.paid == 1
    u = e.usage()
    assert (u["requests"], u["prompt_tokens"], u["completion_tokens"]) == (1, *tokens)
    assert u["cost_usd"] >= 0


@pytest.mark.parametrize("name", [pytest.param(n, id=f"{n}=>{FAILS[n][1].__name__}")
                                  for n in FAILS])
def test_fault_is_a_clear_error(servers, name):
    faults, error, text, sent = FAILS[name]
    servers.faults.extend(faults)
    with pytest.raises(error, match=text) as err:
        _endpoint(servers.url).chat(MESSAGES)
    assert len(servers.requests) == sent and servers.paid == 0
    if error is EndpointError:
        assert not isinstance(err.value, EndpointUnreachable)
    if error is not Permanent:
        assert servers.url in str(err.value)
        assert ("fix:" if error is InputError else "check:") in str(err.value)


def test_connection_refused_is_unreachable():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointUnreachable, match="no answer from the server") as err:
        _endpoint(url).chat(MESSAGES)
    assert url in str(err.value) and "curl" in str(err.value)


def test_huge_retry_after_waits_max_backoff_not_hours(servers, monkeypatch):
    """Default settings: Retry-After: 86400 sleeps 30 s (max_backoff), not a day."""
    slept = []
    monkeypatch.setattr(endpoint, "time", types.SimpleNamespace(sleep=slept.append))
    servers.faults.append("429-huge-retry-after")
    e = ChatEndpoint(servers.url, "m", KEY, timeout=2.0)
    assert e.chat(MESSAGES).content == GOOD
    assert slept == [30.0] and servers.paid == 1


# -- runaway answers: a bound on each answer, and on what a re-ask sends back ------------------

@pytest.mark.parametrize("fault", [pytest.param(f, id=f"{f}=>EndpointError-at-the-bound")
                                   for f in TOO_LARGE])
def test_runaway_answer_is_refused_at_the_bound(servers, fault):
    """#46.8: a 64 MiB answer (Content-Length, chunked, or a gzip bomb) is refused at the 8 MiB
    bound, at once: one request (not retried), a message with the size, the bound and the
    option that raises it."""
    servers.faults.append(fault)
    start = time.monotonic()
    with pytest.raises(EndpointError, match=TOO_LARGE[fault]) as err:
        _endpoint(servers.url, timeout=20.0).chat(MESSAGES)
    assert time.monotonic() - start < 15
    text = str(err.value)
    assert not isinstance(err.value, EndpointUnreachable) and len(servers.requests) == 1
    assert "larger than the bound of 8 MiB" in text and "--max-answer-mib" in text
    assert servers.url in text and "check:" in text and KEY not in text


_PEAK = """
import json, resource, sys
sys.path.insert(0, {root!r})
from mteb_stratified.core.errors import EndpointError
from mteb_stratified.llm import ChatEndpoint
e = ChatEndpoint({url!r}, "m", {key!r}, timeout=30, max_retries=0)
m = [{{"role": "user", "content": "x"}}]
e.chat(m)  # a good answer first: the client and its imports are in the baseline
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
out = {{"base": peak()}}
for fault in {faults!r}:
    try:
        out[fault] = "kept %d characters" % len(e.chat(m).content)
    except EndpointError as exc:
        out[fault] = str(exc).splitlines()[0]
out["peak"] = peak()
print(json.dumps(out))
"""


def test_runaway_answers_stay_small_in_memory(tmp_path):
    """#46.8: three 64 MiB answers (Content-Length, chunked, gzip) read by a child process: its
    peak memory grows by less than 40 MiB (8 MiB bound; it held 2.2 GB for three 300 MiB
    answers)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with FakeOpenAI() as srv:
        srv.faults.extend(["ok", *TOO_LARGE])
        code = _PEAK.format(root=root, url=srv.url, key=KEY, faults=list(TOO_LARGE))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    for fault in TOO_LARGE:
        assert "larger than the bound" in out[fault], out
    grew = out["peak"] - out["base"]
    assert grew < 40 < HUGE >> 20, f"peak memory grew {grew} MiB for {HUGE >> 20} MiB answers"


def test_runaway_answer_stops_the_extractor_and_is_never_cached(tmp_path):
    """#46.8: an over-bound answer stops the run (no failure record, nothing of it kept): the
    cache stays empty and small."""
    with FakeOpenAI() as srv:
        srv.faults.append("huge-chunked")
        ex = LLMExtractor(base_url=srv.url, model="m", api_key=KEY, timeout=20.0,
                          max_retries=2, backoff=0.01, concurrency=1,
                          cache_path=str(tmp_path / "cache.sqlite"))
        with pytest.raises(EndpointError, match="larger than the bound"):
            ex.extract(["doc"])
        assert len(srv.requests) == 1 and ex.failures == {}
    assert AnswerCache(str(tmp_path / "cache.sqlite")).count() == 0
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) < 1 << 20


def test_reask_sends_back_a_bounded_part_of_the_answer(tmp_path):
    """#46.8: a 7 MiB answer without JSON (under the 8 MiB bound) is re-asked with at most
    REASK_ECHO_CHARS of it, never the whole (each re-ask was as large as the answer)."""
    garbage = "Sure! " + "no json here. " * ((7 << 20) // 14)
    with FakeOpenAI(answer=lambda m: GOOD if len(m) > 2 else garbage) as srv:
        ex = LLMExtractor(base_url=srv.url, model="m", api_key=KEY, timeout=30.0,
                          max_retries=1, backoff=0.01, concurrency=1,
                          cache_path=str(tmp_path / "cache.sqlite"))
        assert ex.extract(["doc"]) == [[Entity("vitamin d", "a nutrient")]]
        assert srv.paid == 2 and ex.usage()["reasks"] == 1
        first, reask = (len(body) for _, body in srv.requests)
        echo = json.loads(srv.requests[1][1])["messages"][-2]
    assert echo["role"] == "assistant" and echo["content"].startswith(garbage[:REASK_ECHO_CHARS])
    assert f"{len(garbage) - REASK_ECHO_CHARS:,} more characters not repeated" in echo["content"]
    assert reask - first < 2 * REASK_ECHO_CHARS < len(garbage) // 100


def test_cli_max_answer_mib_bounds_the_answer(tmp_path, capsys):
    """#46.8: ``structure --max-answer-mib 1``: a 64 MiB answer stops the run with exit 2 and
    one message naming the bound and the option; the cache holds nothing of it (only the
    other document's answer, if it was in flight)."""
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(_TWO_DOCS)
    with FakeOpenAI() as srv:
        srv.faults.append("huge-chunked")
        code = cli_main.main(["structure", "--corpus", str(folder), "--out",
                              str(tmp_path / "o"), "--extractor", "llm", "--model", "m",
                              "--api-key", KEY, "--base-url", srv.url, "--timeout", "20",
                              "--max-answer-mib", "1", "--concurrency", "1", "--no-progress"])
        sent = len(srv.requests)
    err = capsys.readouterr().err
    assert code == 2 and sent <= 2, err  # (the next document may be in flight)
    assert "larger than the bound of 1 MiB" in err and "--max-answer-mib (now 1)" in err
    assert "Traceback" not in err and KEY not in err
    cache = tmp_path / "o" / "llm_cache.sqlite"
    assert AnswerCache(str(cache)).count() <= sent - 1 and cache.stat().st_size < 1 << 20


# -- a key that cannot be sent: refused before any request, naming where it came from ---------

BAD_KEYS = {"e-acute": ("sk-caf\u00e9-123", "'é' \\(U\\+00E9\\)", "ASCII only"),
            "newline": ("sk-abc-123\n", r"a line break \(\\n\) at its end", "tr -d"),
            "crlf": ("sk-abc-123\r\n", r"a carriage return", "tr -d"),
            "space-inside": ("sk-abc 123", "a space at character 7 of 10", "whitespace")}


@pytest.mark.parametrize("how", ["env", "option"])
@pytest.mark.parametrize("name", [pytest.param(n, id=f"key-{n}=>InputError") for n in BAD_KEYS])
def test_a_key_that_cannot_be_sent_is_refused_before_any_request(servers, monkeypatch, name,
                                                                   how):
    """#46.13f/#46.13g: a key with 'é' (was: "malformed response body") or a newline (was: "no
    answer from the server", nothing sent) is an InputError naming $OPENAI_API_KEY or
    --api-key, with the fix; no request is made and the key is not quoted."""
    key, says, fix = BAD_KEYS[name]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(InputError, match=says) as err:
        ChatEndpoint(servers.url, "m", key if how == "option" else None, max_retries=1,
                     backoff=0.01, timeout=2).chat(MESSAGES)
    text = str(err.value)
    source = "--api-key" if how == "option" else "$OPENAI_API_KEY"
    assert text.startswith(f"{source}: the API key holds") and fix in text
    assert "nothing was sent" in text and key.strip() not in text
    assert servers.requests == [] and servers.auth_seen == []


# -- the re-ask path (through the extractor: its cache records what was paid) -----------------

GARBAGE = "Sure! The entities are vitamin d and calcium."
REPAIRABLE = "```json\n{'entities': [{'name': 'vitamin d', 'description': 'a nutrient',},\n"


def _extractor(srv, tmp_path, **kw):
    return LLMExtractor(base_url=srv.url, model="m", api_key=KEY, timeout=2.0, max_retries=1,
                        backoff=0.01, cache_path=str(tmp_path / "cache.sqlite"), **kw)


def test_content_without_json_is_reasked_then_recorded_as_failure(tmp_path):
    """garbage-content=>reasked-once-then-failure-record (cached: never paid for again)."""
    with FakeOpenAI(answer=GARBAGE) as srv:
        ex = _extractor(srv, tmp_path)
        assert ex.extract(["doc"]) == [[]] and "malformed JSON" in ex.failures[0]
        assert srv.paid == 2 and ex.usage()["reasks"] == 1
        assert ex.extract(["doc"]) == [[]] and srv.paid == 2 and 0 in ex.failures


def test_content_without_json_then_json_on_reask(tmp_path):
    """garbage-then-json=>reasked-ok (2 paid calls, the re-ask carries the answer)."""
    with FakeOpenAI(answer=lambda m: GOOD if len(m) > 2 else GARBAGE) as srv:
        ex = _extractor(srv, tmp_path)
        assert ex.extract(["doc"]) == [[Entity("vitamin d", "a nutrient")]]
        assert srv.paid == 2 and ex.failures == {}
        sent = json.loads(srv.requests[1][1])["messages"]
        assert sent[-2] == {"role": "assistant", "content": GARBAGE}


def test_repairable_json_needs_no_reask(tmp_path):
    """repairable-json=>answered-once (no re-ask)."""
    with FakeOpenAI(answer=REPAIRABLE) as srv:
        ex = _extractor(srv, tmp_path)
        assert ex.extract(["doc"]) == [[Entity("vitamin d", "a nutrient")]]
        assert srv.paid == 1 and ex.usage()["reasks"] == 0


def test_404_stops_the_extractor_instead_of_caching_failures(tmp_path):
    """404=>InputError at once: no document gets a (cached) failure record for a wrong URL."""
    with FakeOpenAI() as srv:
        srv.faults.extend(["404"] * 3)
        ex = _extractor(srv, tmp_path, concurrency=1)
        with pytest.raises(InputError, match="--model"):
            ex.extract(["a", "b", "c"])
        assert len(srv.requests) <= 2
        assert AnswerCache(str(tmp_path / "cache.sqlite")).count() == 0


# -- the CLI: exit 2, one message, no traceback, no key ----------------------------------------

# two documents (one is refused: a structure of one document means nothing), asked one at a time
_TWO_DOCS = "".join(json.dumps({"_id": i, "title": "t", "text": f"Vitamin D and {i}."}) + "\n"
                    for i in ("a", "b"))
CLI_FAULTS = {"401": "refused the API key", "404": "--base-url", "307-other-host": "redirected",
              "echo-key-500": "kept failing", "echo-key-401": "refused the API key"}


@pytest.mark.parametrize("fault", [pytest.param(f, id=f"cli-{f}=>exit-2") for f in CLI_FAULTS])
def test_cli_exits_2_with_one_clear_message(servers, tmp_path, capsys, fault):
    servers.faults.extend([fault] * 2)
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(_TWO_DOCS)
    code = cli_main.main(["structure", "--corpus", str(folder), "--out", str(tmp_path / "o"),
                          "--extractor", "llm", "--model", "m", "--api-key", KEY,
                          "--base-url", servers.url, "--max-retries", "1", "--timeout", "2",
                          "--concurrency", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert CLI_FAULTS[fault] in err and servers.url in err
    assert ("fix:" in err) or ("check:" in err)
    assert "Traceback" not in err and KEY not in err


# -- the key never leaks -----------------------------------------------------------------------

def test_api_key_never_in_errors_logs_or_files(tmp_path, caplog):
    """echo-key-400/401/500=>errors, logs and files without the key (the server quotes it)."""
    caplog.set_level(logging.DEBUG)
    texts = []
    with FakeOpenAI() as srv:
        srv.faults.extend(["echo-key-400", "echo-key-401"])
        ex = _extractor(srv, tmp_path)
        assert ex.extract(["doc one"]) == [[]]  # 400: a failure record, cached
        texts.append(ex.failures[0])
        with pytest.raises(InputError) as refused:
            ex.extract(["doc two"])
        texts.append(str(refused.value))
        srv.faults.extend(["echo-key-500"] * 3)
        with pytest.raises(EndpointError) as failing:
            _endpoint(srv.url).chat(MESSAGES)
        texts.append(str(failing.value))
        assert all(h.get("authorization") == f"Bearer {KEY}" for h, _ in srv.requests)
    assert "***" in texts[0] and "***" in texts[2]
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert written and any(b"***" in data for data in written)
    for text in texts + [caplog.text] + [r.getMessage() for r in caplog.records]:
        assert KEY not in text
    assert all(KEY.encode() not in data for data in written)


# -- SIGKILL mid-run: resume pays for nothing twice ---------------------------------------------

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_extract_job.py")
DOCS = [f"document {i} is about nutrient {i}" for i in range(8)]


def _answer(messages):
    """Entities that name the document asked about (so a mix-up would show)."""
    n = messages[-1]["content"].split("nutrient ")[-1].split()[0]
    return json.dumps({"entities": [{"name": f"nutrient {n}", "description": "x"}]})


def _job(srv, tmp_path, tag):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["OPENAI_API_KEY"] = KEY
    return subprocess.Popen([sys.executable, JOB, srv.url, str(tmp_path / f"{tag}.sqlite"),
                             str(tmp_path / f"{tag}.json"), str(tmp_path / "docs.json")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _committed(path) -> int:
    """Answers the running job has committed (read-only: the job owns the cache)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return db.execute("SELECT count(*) FROM answers").fetchone()[0]
    except sqlite3.Error:  # not created yet, or busy
        return 0


def _asked(srv):
    """How many times each document was asked for."""
    seen = [json.loads(body)["messages"][-1]["content"] for _, body in srv.requests]
    return {d: sum(d in s for s in seen) for d in DOCS}


def test_sigkill_then_rerun_pays_no_answer_twice(tmp_path, monkeypatch):
    (tmp_path / "docs.json").write_text(json.dumps(DOCS))
    answered = 3
    with FakeOpenAI(answer=_answer) as srv:
        srv.hold_after = answered  # the 4th request hangs: the job is killed waiting for it
        job = _job(srv, tmp_path, "run")
        deadline = time.monotonic() + 30
        while len(srv.requests) <= answered or _committed(tmp_path / "run.sqlite") < answered:
            assert job.poll() is None and time.monotonic() < deadline, job.communicate()
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
        job.wait(10)
        assert job.returncode == -signal.SIGKILL and not (tmp_path / "run.json").exists()
        srv.hold_after = None
        rerun = _job(srv, tmp_path, "run")
        assert rerun.wait(60) == 0, rerun.communicate()
        asked = _asked(srv)
        # answered before the kill: asked once; the one in flight: again; the rest: once
        assert [asked[d] for d in DOCS] == [1] * answered + [2] + [1] * (len(DOCS) - 4)
        assert srv.paid == len(DOCS)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        fresh = run(srv.url, str(tmp_path / "fresh.sqlite"), DOCS)  # uninterrupted, own cache
    resumed = json.loads((tmp_path / "run.json").read_text())
    assert resumed == fresh == [[[f"nutrient {i}", "x"]] for i in range(len(DOCS))]
    assert all(KEY.encode() not in p.read_bytes() for p in tmp_path.iterdir())
