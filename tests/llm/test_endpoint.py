"""The LLM transport: error mapping and the one re-ask path (no model needed: a local socket
and a scripted provider)."""

import socket

import pytest

from mteb_stratified.core.errors import EndpointError, EndpointUnreachable, InputError
from mteb_stratified.llm import ChatEndpoint, Completion, Refused, Transient, ask_json
from mteb_stratified.llm.json_repair import repair_json


class Scripted:
    """A provider answering from a script: strings are answers, exceptions are raised."""

    def __init__(self, *script):
        self.script, self.sent = list(script), []

    def complete(self, *, model, messages, temperature, max_tokens):
        self.sent.append(messages)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return Completion(item, 5, 2)


def _endpoint(provider, **kw):
    return ChatEndpoint("http://127.0.0.1:9/v1", "m", "k", provider=provider, backoff=0.0,
                        **kw)


def test_retries_then_answers_and_counts():
    p = Scripted(Transient("HTTP 500"), Transient("429", retry_after=0.0), "ok")
    e = _endpoint(p, max_retries=3)
    assert e.chat([{"role": "user", "content": "x"}]).content == "ok"
    u = e.usage()
    assert u["requests"] == 3 and u["retries"] == 2 and u["prompt_tokens"] == 5


def test_no_answer_at_all_is_unreachable_not_bad_input():
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{port.getsockname()[1]}/v1"
    port.close()
    e = ChatEndpoint(url, "m", "none", max_retries=1, backoff=0.0, timeout=2)
    with pytest.raises(EndpointUnreachable) as err:
        e.chat([{"role": "user", "content": "x"}])
    assert not isinstance(err.value, InputError)
    text = str(err.value)
    assert url in text and "check:" in text and "curl" in text and "--base-url" in text


def test_a_server_that_answers_but_keeps_failing_is_an_endpoint_error():
    e = _endpoint(Scripted(Transient("HTTP 503"), Transient("HTTP 503")), max_retries=1)
    with pytest.raises(EndpointError) as err:
        e.chat([])
    assert not isinstance(err.value, EndpointUnreachable) and "HTTP 503" in str(err.value)


def test_a_refused_key_is_the_users_input():
    with pytest.raises(InputError, match="refused the API key"):
        _endpoint(Scripted(Refused("the endpoint refused the API key (HTTP 401)"))).chat([])


def test_ask_json_reasks_once():
    calls = []

    def call(messages, attempt):
        calls.append((attempt, len(messages)))
        return "no json" if attempt == 0 else '{"a": 1}'

    data, content, n = ask_json(call, [{"role": "user", "content": "q"}], parse=repair_json)
    assert data == {"a": 1} and n == 2 and calls == [(0, 1), (1, 3)]
    data, _, n = ask_json(lambda m, a: "nothing", [], parse=repair_json)
    assert data is None and n == 2


def test_ask_json_sends_back_at_most_reask_echo_chars():
    """#46.8: the re-ask carries an answer of REASK_ECHO_CHARS characters whole, and of a longer
    one only its first REASK_ECHO_CHARS, with the count of what was left out."""
    from mteb_stratified.llm.endpoint import REASK_ECHO_CHARS

    for size, cut in ((REASK_ECHO_CHARS, 0), (REASK_ECHO_CHARS + 1, 1), (10 ** 7, None)):
        sent = []
        answer = "x" * size

        def call(messages, attempt):
            sent.append(messages)
            return answer if attempt == 0 else '{"a": 1}'

        assert ask_json(call, [], parse=repair_json)[0] == {"a": 1}
        echo = sent[1][0]["content"]
        assert echo.startswith("x" * REASK_ECHO_CHARS) and len(echo) < REASK_ECHO_CHARS + 100
        if cut == 0:
            assert echo == answer
        else:
            assert f"[... {size - REASK_ECHO_CHARS:,} more characters not repeated]" in echo
