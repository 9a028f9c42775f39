"""The OpenAI-compatible chat-completions provider (OpenAI, vLLM, llama.cpp, transformers serve).

:meth:`OpenAIProvider.complete` sends one request and sorts every failure of the ``openai``
client into the kinds of :mod:`.transport`: :class:`~.transport.Transient` (worth retrying: 429 with
its ``Retry-After``, timeouts, 5xx, 408/409, malformed bodies), ``Transient(unreachable=True)``
(no connection at all, or no whole answer within ``timeout``), :class:`~.transport.Refused`
(401/403: the key), :class:`~.transport.Misconfigured` (404 or a redirect: the base URL or
model) and :class:`~.transport.Permanent` (any other 4xx).  Another provider implements the
same method.

The HTTP client follows no redirect (neither the key nor the prompt goes anywhere but
``base_url``), bounds each whole request, body included, by ``timeout``, and each answer's
body by ``max_answer_bytes`` (counted as it is read, decompressed included; over it:
:class:`~.transport.TooLarge`, and nothing more is read).  Token counts the
server gets wrong (missing, negative, not numbers) count as 0: the answer is kept, never asked
for again.
"""

from __future__ import annotations

import importlib
import threading
import time
import zlib

from .._optional import require
from .transport import (DEFAULT_MAX_ANSWER_BYTES, Completion, Misconfigured, Permanent, Refused,
                        TooLarge, Transient)

__all__ = ["OpenAIProvider"]

_DEADLINE = "mteb_stratified.deadline"  # request extension: when the whole answer is due


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB ({n:,} bytes)"


def _over(bound: int, what: str) -> TooLarge:
    return TooLarge(f"the answer is larger than the bound of {_mib(bound)}: {what}", bound)


class _Inflate:
    """One gzip or deflate layer of a body, decoded with a bound on its output (a small
    compressed body can stand for gigabytes)."""

    def __init__(self, coding: str, bound: int) -> None:
        self.coding, self.bound, self.out = coding, bound, 0
        # gzip: its own header; deflate: a zlib stream, else (some servers) raw deflate
        self.z = zlib.decompressobj(zlib.MAX_WBITS | (0 if coding == "deflate" else 16))
        self.first = True

    def feed(self, data: bytes, flush: bool = False) -> bytes:
        """The output of ``data``; with ``flush`` (the body's end), all the rest too."""
        room = self.bound - self.out + 1
        try:
            part = self.z.decompress(data, room) if data else b""
        except zlib.error:
            if not (self.first and self.coding == "deflate" and data):
                raise
            self.z = zlib.decompressobj(-zlib.MAX_WBITS)
            part = self.z.decompress(data, room)
        self.first = self.first and not data
        if flush and len(part) < room:
            part += self.z.flush(room - len(part))
        self.out += len(part)
        if self.out > self.bound:
            raise _over(self.bound, f"over {self.out:,} bytes once decompressed ({self.coding})"
                                    "; stopped there")
        return part


def _http_client(openai, timeout: float, max_bytes: int):
    """``openai.DefaultHttpxClient`` without redirects, with a deadline on the whole answer
    (the library's own timeout bounds each read, so a server dripping its body would hold a
    call for ever) and a bound on its size: a ``Content-Length`` over ``max_bytes`` is refused
    before the body is read, any other body is counted as it is read (decompressed here, with
    the same bound) and not read past the bound."""
    base = next(c for c in openai.DefaultHttpxClient.__mro__
                if not c.__module__.startswith("openai"))  # httpx (or its successor's) Client
    http = importlib.import_module(base.__module__.split(".")[0])

    class Bounded(http.SyncByteStream):
        def __init__(self, stream, deadline: float, codings: list) -> None:
            self.stream, self.deadline = stream, deadline
            self.layers = [_Inflate(c, max_bytes) for c in reversed(codings)]

        def _decode(self, chunk: bytes, flush: bool = False) -> bytes:
            try:
                for layer in self.layers:  # at the end, each layer's tail goes to the next,
                    chunk = layer.feed(chunk, flush)  # which is flushed too
            except zlib.error as exc:
                raise http.DecodingError(f"the body does not decompress: {exc}") from None
            return chunk

        def __iter__(self):
            raw = 0
            for chunk in self.stream:
                if time.monotonic() > self.deadline:
                    raise http.ReadTimeout(f"no whole answer within {timeout:g} s")
                raw += len(chunk)
                if raw > max_bytes:
                    raise _over(max_bytes, f"over {raw:,} bytes; stopped reading there")
                chunk = self._decode(chunk)
                if chunk:
                    yield chunk
            tail = self._decode(b"", flush=True) if self.layers else b""
            if tail:
                yield tail

        def close(self) -> None:
            self.stream.close()

    def stamp(request) -> None:
        request.extensions[_DEADLINE] = time.monotonic() + timeout

    def bound(response) -> None:
        length = response.headers.get("content-length", "")
        if length.strip().isdigit() and int(length) > max_bytes:
            raise _over(max_bytes, f"Content-Length is {int(length):,} bytes; not read")
        codings = [c.strip().lower() for c in response.headers.get("content-encoding", "")
                   .split(",") if c.strip().lower() not in ("", "identity")]
        codings = ["gzip" if c == "x-gzip" else c for c in codings]
        unknown = sorted(set(codings) - {"gzip", "deflate"})
        if unknown:
            raise http.DecodingError(f"Content-Encoding {', '.join(unknown)} was not asked for")
        if codings:  # decoded (bounded) by Bounded, not again by the client
            del response.headers["content-encoding"]
        response.stream = Bounded(response.stream, response.request.extensions[_DEADLINE],
                                  codings)

    return openai.DefaultHttpxClient(follow_redirects=False, timeout=timeout,
                                     headers={"Accept-Encoding": "gzip, deflate"},
                                     event_hooks={"request": [stamp], "response": [bound]})


def _tokens(value) -> int:
    """A token count from a response: a non-negative integer, else 0."""
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return max(n, 0)


class OpenAIProvider:
    """One ``openai.OpenAI`` client (its own retries off: :class:`.endpoint.ChatEndpoint`
    retries)."""

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float,
                 client=None, max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> None:
        self.base_url, self.api_key, self.timeout = base_url, api_key, float(timeout)
        self.max_answer_bytes = int(max_answer_bytes)
        self._client = client
        self._lock = threading.Lock()

    def _client_or_new(self):
        """The one client, made at the first request (threads that send at once share it: its
        connection pool is thread-safe)."""
        with self._lock:
            if self._client is None:
                openai = require("openai", "llm")
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                             max_retries=0, timeout=self.timeout,
                                             http_client=_http_client(openai, self.timeout,
                                                                      self.max_answer_bytes))
            return self._client

    def complete(self, *, model: str, messages: list, temperature: float,
                  max_tokens: int) -> Completion:
        openai = require("openai", "llm")
        client = self._client_or_new()
        try:
            resp = client.chat.completions.create(model=model, messages=messages,
                                                  temperature=temperature, max_tokens=max_tokens)
            if isinstance(resp, str) or not getattr(resp, "choices", None):
                raise Transient("response body has no choices")
            content = resp.choices[0].message.content
            if content is None:
                raise Transient("response has no message content")
            usage = getattr(resp, "usage", None)
            return Completion(content, _tokens(getattr(usage, "prompt_tokens", 0)),
                              _tokens(getattr(usage, "completion_tokens", 0)))
        except (Transient, TooLarge):
            raise
        except openai.RateLimitError as exc:
            retry_after = None
            try:
                retry_after = float(exc.response.headers.get("retry-after"))
            except (TypeError, ValueError, AttributeError):
                pass
            raise Transient(f"429 rate limited: {exc}", retry_after) from None
        except openai.APITimeoutError as exc:
            raise Transient(f"{type(exc).__name__}: {exc}", unreachable=True) from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, TooLarge):  # (openai < 3 wraps what a read raises)
                raise exc.__cause__ from None
            raise Transient(f"{type(exc).__name__}: {exc}", unreachable=True) from None
        except openai.APIStatusError as exc:
            code = exc.status_code
            if code >= 500 or code in (408, 409):
                raise Transient(f"HTTP {code}: {exc}") from None
            if code in (401, 403):
                raise Refused(f"the endpoint refused the API key (HTTP {code})") from None
            if code == 404:
                raise Misconfigured(
                    f"HTTP 404 (no such path or model): {exc}",
                    "check --base-url (most servers want it to end in /v1) and --model (GET "
                    "<base-url>/models lists the server's models)") from None
            if 300 <= code < 400:
                where = exc.response.headers.get("location", "")
                raise Misconfigured(
                    f"the endpoint redirected (HTTP {code}) to {where!r}; redirects are not "
                    "followed, so that neither the key nor the documents go elsewhere",
                    "set --base-url to the server's own address") from None
            raise Permanent(f"HTTP {code}: {exc}") from None
        except (openai.APIResponseValidationError, ValueError, AttributeError,
                TypeError) as exc:  # (json.JSONDecodeError is a ValueError)
            raise Transient(f"malformed response body: {type(exc).__name__}: {exc}") from None
