"""Test support: a fault-injecting HTTP proxy in front of an OpenAI-compatible server.

Faults are queued and applied to the next ``POST .../chat/completions`` requests, one each:

* ``"429"``: answer 429 with ``Retry-After: 0`` (upstream not called);
* ``"500"``: answer 500 (upstream not called);
* ``"timeout"``: hold the connection for ``hold_s`` seconds, then close it without an answer;
* ``"cut"``: close the connection at once without an answer;
* ``"malformed_body"``: answer 200 with a truncated JSON body (upstream not called);
* ``"bad_json_content"`` / ``"garbage_content"``: forward upstream, then replace the message
  content with repairable JSON / with text that holds no JSON.

``upstream`` counts the chat requests forwarded to the real server (the "paid" calls);
``bodies`` keeps the body of every chat request received, in order.  With ``hold_after = K``,
the requests that come once K have been let through are held, never forwarded (their bodies in
``held``), until the proxy stops: a client killed then has exactly those requests in flight.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BAD_JSON = "```json\n{'entities': [{'name': 'vitamin d', 'description': 'a nutrient',},\n"
GARBAGE = "Sure! The entities are vitamin d and calcium."


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) at ``self.url`` (``.../v1``) while
    ``with``-entered; subclasses build their handler class and call :meth:`_serve`."""

    def _serve(self, handler, poll_s: float = 0.5) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(poll_s,),
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class FaultProxy(LocalServer):
    def __init__(self, upstream_url: str | None, hold_s: float = 3.0) -> None:
        self.upstream_url = upstream_url.rstrip("/") if upstream_url else None
        self.hold_s = hold_s
        self.faults: deque = deque()
        self.lock = threading.Lock()
        self.upstream = 0        # chat requests forwarded to the real server
        self.received = 0        # chat requests received
        self.applied: list = []  # faults applied, in order
        self.synthetic: str | None = None  # answer content without calling upstream
        self.bodies: list = []   # the body of every chat request received
        self.hold_after: int | None = None
        self.held: list = []     # bodies of the requests held (hold_after)
        self.passed = 0          # requests let through while hold_after was set
        self.release = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status, body: bytes, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _forward(self, body: bytes):
                req = urllib.request.Request(proxy.upstream_url + self.path, data=body,
                                             method="POST",
                                             headers={"Content-Type": "application/json"})
                with proxy.lock:
                    proxy.upstream += 1
                try:
                    with urllib.request.urlopen(req, timeout=600) as r:
                        return r.status, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.read()

            def do_GET(self):
                if proxy.upstream_url is None:
                    return self._send(200, b'{"status":"ok"}')
                with urllib.request.urlopen(proxy.upstream_url + self.path, timeout=30) as r:
                    self._send(r.status, r.read())

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with proxy.lock:
                    proxy.received += 1
                    proxy.bodies.append(body)
                    hold = proxy.hold_after is not None and proxy.passed >= proxy.hold_after
                    if hold:
                        proxy.held.append(body)
                    elif proxy.hold_after is not None:
                        proxy.passed += 1
                    fault = None if hold or not proxy.faults else proxy.faults.popleft()
                    if fault:
                        proxy.applied.append(fault)
                if hold:
                    proxy.release.wait(600)
                    self.close_connection = True
                    return None
                if fault == "429":
                    return self._send(429, b'{"error":{"message":"rate limited"}}',
                                      {"Retry-After": "0"})
                if fault == "500":
                    return self._send(500, b'{"error":{"message":"boom"}}')
                if fault == "cut":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if fault == "timeout":
                    time.sleep(proxy.hold_s)
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return None
                if fault == "malformed_body":
                    whole = _completion('{"entities": []}')
                    return self._send(200, whole[: len(whole) // 2])
                if proxy.synthetic is not None and fault is None:
                    return self._send(200, _completion(proxy.synthetic))
                status, answer = self._forward(body)
                if fault in ("bad_json_content", "garbage_content") and status == 200:
                    data = json.loads(answer)
                    data["choices"][0]["message"]["content"] = (
                        BAD_JSON if fault == "bad_json_content" else GARBAGE)
                    answer = json.dumps(data).encode()
                return self._send(status, answer)

        self._serve(Handler)

    def __exit__(self, *exc):
        self.release.set()
        super().__exit__(*exc)


def _completion(content: str, model: str = "synthetic") -> bytes:
    return json.dumps({
        "id": "synthetic", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
