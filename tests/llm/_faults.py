"""Test support: a local OpenAI-compatible chat server that answers with scripted faults.

``FakeOpenAI.faults`` is a queue of fault names (the keys of :data:`FAULTS`), applied one each to
the next ``POST .../chat/completions``; an empty queue (or ``"ok"``) answers a good completion
whose content is ``FakeOpenAI.answer`` (a string, or a function of the request's messages).
``paid`` counts the requests that got a real completion (what an upstream would bill);
``requests`` keeps (headers, lower-cased, and body) of every chat request; ``auth_seen`` records the
``Authorization`` headers received (the redirect target checks it).  With ``hold_after = K``
good answers after the K-th are held (never sent) until the server stops: a job killed then
has exactly K answers.

The synthetic completion body is the one of the extraction tests' proxy
(:func:`structure._proxy._completion`).
"""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
import time
import zlib
from collections import deque
from http.server import BaseHTTPRequestHandler

from structure._proxy import LocalServer, _completion  # noqa: F401  (tests/ is on sys.path)

GOOD = '{"entities": [{"name": "vitamin d", "description": "a nutrient"}]}'
KEY = "sk-fault-test-SECRET-4f2b9c"  # the API key of these tests: must never leak


def _raw(content: str, **changes) -> dict:
    data = json.loads(_completion(content))
    data.update(changes)
    return data


def _send(h, status: int, body: bytes, ctype: str = "application/json", headers=None):
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def _json(status: int, data, headers=None):
    return lambda h, srv, good: _send(h, status, json.dumps(data).encode(), headers=headers)


def _good(h, srv, good):
    srv.count_paid()  # before sending: the client may check the moment it has the answer
    _send(h, 200, good)


def _paid(build):
    """A fault that still delivers a real completion (billed): ``build(good) -> (status,
    body, content type, headers)``."""
    def fault(h, srv, good):
        srv.count_paid()
        _send(h, *build(good))
    return fault


def _cut(h, srv, good):
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def _reset(h, srv, good):
    h.close_connection = True
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.connection.close()


def _cut_after_headers(h, srv, good):
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(good)))
    h.end_headers()
    h.wfile.write(good[: len(good) // 3])
    h.wfile.flush()
    _cut(h, srv, good)


def _hold(h, srv, good):
    time.sleep(srv.hold_s)
    _cut(h, srv, good)


def _drip(h, srv, good):
    """Headers at once, then the body one byte every 50 ms (each read well within a read
    timeout, the whole far beyond it)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(good)))
    h.end_headers()
    try:
        for i in range(len(good)):
            h.wfile.write(good[i:i + 1])
            h.wfile.flush()
            time.sleep(0.05)
        srv.count_paid()
    except OSError:  # the client gave up: that is the point
        h.close_connection = True


def _redirect(status):
    def fault(h, srv, good):
        _send(h, status, b"", headers={"Location": srv.redirect_to + h.path})
    return fault


def _echo_key(status):
    """An error body that quotes the Authorization header back (a careless server)."""
    def fault(h, srv, good):
        auth = h.headers.get("Authorization", "")
        _send(h, status, json.dumps({"error": {"message": f"bad request from {auth}"}}).encode())
    return fault


def _huge(h, content: bytes, *, chunked: bool, headers=None):
    """A completion whose answer is ``content`` repeated to :data:`HUGE` bytes, written 1 MiB
    at a time (the server never holds it whole), with a Content-Length or chunked."""
    head, tail = _completion("@@").split(b"@@")
    n = HUGE // len(content)
    size = len(head) + n * len(content) + len(tail)
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    if chunked:
        h.send_header("Transfer-Encoding", "chunked")
    else:
        h.send_header("Content-Length", str(size))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    block = content * max(1, (1 << 20) // len(content))
    parts = [head] + [block] * (n * len(content) // len(block)) + [tail]
    try:
        for part in parts:
            h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        if chunked:
            h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()
    except OSError:  # the client stopped reading: that is the point
        h.close_connection = True


def _gzip_bomb(h, srv, good):
    """A small gzip body that decompresses to a :data:`HUGE` completion."""
    head, tail = _completion("@@").split(b"@@")
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = z.compress(head) + b"".join(z.compress(b"x" * (1 << 20)) for _ in range(HUGE >> 20))
    _send(h, 200, body + z.compress(tail) + z.flush(), headers={"Content-Encoding": "gzip"})


HUGE = 64 << 20  # bytes of a runaway answer's content (the bound is 8 MiB by default)
HTML = b"<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"

#: fault name -> handler(handler, server, good completion bytes)
FAULTS = {
    "ok": _good,
    "429": _json(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"}),
    "429-no-retry-after": _json(429, {"error": {"message": "rate limited"}}),
    "429-huge-retry-after": _json(429, {"error": {"message": "slow down"}},
                                  {"Retry-After": "86400"}),
    "429-date-retry-after": _json(429, {"error": {"message": "slow down"}},
                                  {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}),
    "500": _json(500, {"error": {"message": "boom"}}),
    "502": lambda h, srv, good: _send(h, 502, HTML, "text/html"),
    "503": _json(503, {"error": {"message": "overloaded"}}, {"Retry-After": "0"}),
    "504": _json(504, {"error": {"message": "gateway timeout"}}),
    "400": _json(400, {"error": {"message": "context length exceeded"}}),
    "401": _json(401, {"error": {"message": "invalid api key"}}),
    "403": _json(403, {"error": {"message": "forbidden"}}),
    "404": _json(404, {"error": {"message": "model 'm' not found"}}),
    "307-other-host": _redirect(307),
    "302-other-host": _redirect(302),
    "timeout": _hold,
    "refused-mid-run": _reset,
    "cut-before-headers": _cut,
    "cut-after-headers": _cut_after_headers,
    "drip": _drip,
    "body-cut-mid-json": lambda h, srv, good: _send(h, 200, good[: len(good) // 2]),
    "malformed-json": lambda h, srv, good: _send(h, 200, b'{"choices": [{"message": {'),
    "empty-body": lambda h, srv, good: _send(h, 200, b""),
    "json-string-body": lambda h, srv, good: _send(h, 200, b'"hello"'),
    "html-200": lambda h, srv, good: _send(h, 200, HTML, "text/html"),
    "empty-choices": lambda h, srv, good: _send(
        h, 200, json.dumps(_raw("", choices=[])).encode()),
    "choice-without-message": lambda h, srv, good: _send(
        h, 200, json.dumps(_raw("", choices=[{"index": 0, "finish_reason": "stop"}])).encode()),
    "content-null": lambda h, srv, good: _send(h, 200, json.dumps(_raw("", choices=[
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": None}}])).encode()),
    "non-utf8-body": lambda h, srv, good: _send(h, 200, good.replace(b"vitamin", b"vit\xff\xfe")),
    "bad-gzip": lambda h, srv, good: _send(h, 200, good, headers={"Content-Encoding": "gzip"}),
    # faults that still deliver the answer (billed once: must not be asked again)
    "gzip": _paid(lambda good: (200, gzip.compress(good), "application/json",
                                {"Content-Encoding": "gzip"})),
    "text-plain": _paid(lambda good: (200, good, "text/plain", None)),
    "several-mb": _paid(lambda good: (200, json.dumps(
        {**json.loads(good), "padding": "x" * (6 << 20)}).encode(), "application/json", None)),
    "wrong-model": _paid(lambda good: (200, json.dumps(
        {**json.loads(good), "model": "some-other-model"}).encode(), "application/json", None)),
    "usage-missing": _paid(lambda good: (200, json.dumps(
        {k: v for k, v in json.loads(good).items() if k != "usage"}).encode(),
        "application/json", None)),
    "usage-negative": _paid(lambda good: (200, json.dumps({**json.loads(good), "usage": {
        "prompt_tokens": -10, "completion_tokens": -5, "total_tokens": -15}}).encode(),
        "application/json", None)),
    "usage-strings": _paid(lambda good: (200, json.dumps({**json.loads(good), "usage": {
        "prompt_tokens": "10", "completion_tokens": "many", "total_tokens": None}}).encode(),
        "application/json", None)),
    # runaway answers: refused at the bound, never read whole, never retried
    "huge-content-length": lambda h, srv, good: _huge(h, b"x", chunked=False),
    "huge-chunked": lambda h, srv, good: _huge(h, b"x", chunked=True),
    "huge-gzip": _gzip_bomb,
    "echo-key-400": _echo_key(400),
    "echo-key-401": _echo_key(401),
    "echo-key-500": _echo_key(500),
}


class FakeOpenAI(LocalServer):
    """``with FakeOpenAI() as srv:`` a chat server at ``srv.url`` (see the module docstring)."""

    def __init__(self, answer=GOOD, hold_s: float = 2.0, redirect_to: str = "") -> None:
        self.answer = answer
        self.hold_s = hold_s
        self.redirect_to = redirect_to
        self.faults: deque = deque()
        self.lock = threading.Lock()
        self.requests: list = []
        self.auth_seen: list = []
        self.paid = 0
        self.hold_after: int | None = None
        self.release = threading.Event()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                srv.auth_seen.append(self.headers.get("Authorization"))
                _send(self, 200, b'{"object": "list", "data": []}')

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with srv.lock:
                    srv.auth_seen.append(self.headers.get("Authorization"))
                    srv.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    fault = srv.faults.popleft() if srv.faults else "ok"
                messages = json.loads(body or b"{}").get("messages", [])
                answer = srv.answer(messages) if callable(srv.answer) else srv.answer
                if fault == "ok" and srv.hold_after is not None and srv.paid >= srv.hold_after:
                    srv.release.wait(60)
                    return _cut(self, srv, b"")
                FAULTS[fault](self, srv, _completion(answer))

        self._serve(Handler, poll_s=0.05)

    def count_paid(self) -> None:
        with self.lock:
            self.paid += 1

    def __exit__(self, *exc):
        self.release.set()
        super().__exit__(*exc)


def free_port() -> int:
    """A local port where nothing listens (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
