"""One transport for every LLM call: an OpenAI-compatible chat endpoint with retries, error
mapping and usage accounting, and the one re-ask path for answers that hold no JSON.

:class:`ChatEndpoint` takes its endpoint, model and key from the caller's arguments, else from
the environment (``OPENAI_BASE_URL``, ``OPENAI_MODEL``, ``OPENAI_API_KEY``) — never from a data
file.  :meth:`ChatEndpoint.chat` sends one chat request through a provider
(:class:`~.openai_provider.OpenAIProvider` by default) and retries what is worth retrying with
exponential backoff and jitter (``Retry-After`` honoured).  What still fails is reported as:

* :class:`~mteb_stratified.core.errors.EndpointUnreachable` — no answer at all on any try
  (connection refused, DNS, timeouts): it says how to check the server;
* :class:`~mteb_stratified.core.errors.EndpointError` — the server answered, but kept failing
  (429, 5xx, malformed bodies), or sent an answer larger than ``max_answer_bytes``
  (``--max-answer-mib``; not read past the bound, not retried, never cached);
* :class:`~mteb_stratified.core.errors.InputError` — the key was refused (401/403), the
  endpoint is not where the settings point (404, a redirect), or no model or key was given,
  or the key cannot be sent in an HTTP header (a line break, a space, a character that is not
  ASCII; refused before any request): the user's settings;
* :class:`Permanent` — the request itself was rejected (other 4xx); callers record it.

:func:`ask_json` is the re-ask path shared by the entity extractor and query generation: one
call, a parse, and one re-ask with a fixed prompt when the answer holds nothing usable (the
answer sent back is cut at :data:`REASK_ECHO_CHARS` characters: a re-ask is never the size of a
runaway answer).

To add a provider (another API than OpenAI's): give it ``complete(model=..., messages=...,
temperature=..., max_tokens=...) -> Completion`` raising the exceptions below, and pass it as
``ChatEndpoint(provider=...)``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Callable

from ..core.errors import EndpointError, EndpointUnreachable, InputError
from .openai_provider import OpenAIProvider
from .transport import (DEFAULT_MAX_ANSWER_BYTES, Completion, Misconfigured, Permanent, Refused,
                        TooLarge, Transient)

__all__ = ["ChatEndpoint", "Completion", "Transient", "Permanent", "Refused", "Misconfigured",
           "TooLarge", "ask_json", "resolve_settings", "DEFAULT_REASK", "REASK_ECHO_CHARS",
           "DEFAULT_MAX_ANSWER_BYTES", "check_api_key"]

DEFAULT_REASK = "That was not valid JSON. Reply with only the JSON object and nothing else."
#: the most characters of a bad answer sent back in its re-ask (an answer of thousands of
#: tokens is shorter; what is cut is said in the message)
REASK_ECHO_CHARS = 16_384

_NAMES = {"\n": "a line break (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab",
          " ": "a space", "\x00": "a NUL byte"}


def check_api_key(key: str, source: str) -> None:
    """Refuse (:class:`InputError`, naming ``source``: the option or variable it came from) a
    key that cannot be sent in an HTTP header: anything but printable ASCII without spaces.
    The key itself is never quoted, only the position and kind of the character."""
    for i, ch in enumerate(key):
        if "!" <= ch <= "~":
            continue
        kind = _NAMES.get(ch) or (f"the character {ch!r} (U+{ord(ch):04X})" if ch.isprintable()
                                  else f"the control character U+{ord(ch):04X}")
        where = ("at its end" if i == len(key) - 1 else "at its start" if i == 0
                 else f"at character {i + 1} of {len(key)}")
        fix = ("remove it: a key read from a file keeps the file's line break, e.g. "
               "OPENAI_API_KEY=\"$(tr -d '\\r\\n' < key.txt)\"" if ch in "\r\n" else
               "remove the whitespace: an API key holds none" if ch.isspace() else
               "an HTTP header carries ASCII only: copy the key again from its source "
               "(a typographic character may have replaced one of its own)")
        raise InputError(f"the API key holds {kind} {where}, which an HTTP header cannot "
                         "carry (nothing was sent)", source=source, fix=fix)


def resolve_settings(base_url: str | None = None, model: str | None = None,
                     api_key: str | None = None) -> tuple:
    """``(base_url, model, api_key)`` as a :class:`ChatEndpoint` takes them: each argument, else
    the environment (``OPENAI_BASE_URL``, ``OPENAI_MODEL``, ``OPENAI_API_KEY``); None or empty
    where neither gives one.  The one place those variables are read."""
    return (base_url or os.environ.get("OPENAI_BASE_URL") or None,
            model or os.environ.get("OPENAI_MODEL"),
            api_key or os.environ.get("OPENAI_API_KEY"))


class ChatEndpoint:
    """An OpenAI-compatible chat endpoint: configuration, retries, errors, token/cost usage.

    ``what`` names the caller in messages ("the LLM extractor"); ``alternative`` is what to
    suggest when no endpoint is usable.  ``client`` (an ``openai.OpenAI``-like object) or
    ``provider`` replace the default provider, e.g. in tests.
    """

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, *, max_tokens: int = 512, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5, max_backoff: float = 30.0,
                 price_in: float = 0.0, price_out: float = 0.0, temperature: float = 0.0,
                 what: str = "the LLM endpoint",
                 alternative: str = "point --base-url at a running OpenAI-compatible server",
                 client=None, provider=None,
                 max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> None:
        self.what, self.alternative = what, alternative
        self.base_url, self.model, key = resolve_settings(base_url, model, api_key)
        if not self.model:
            raise InputError(f"no model given for {what}",
                             fix=f"pass --model NAME (or set OPENAI_MODEL), or {alternative}")
        if not key and client is None and provider is None:
            raise InputError(
                f"no API key for {what}",
                fix="set OPENAI_API_KEY or pass --api-key (any value, e.g. 'none', for a "
                    f"local server), or {alternative}")
        if key and client is None and provider is None:
            check_api_key(key, "--api-key" if api_key else "$OPENAI_API_KEY")
        self.api_key = key
        if int(max_answer_bytes) < 1:
            raise InputError(f"the bound on an answer's size must be positive, got "
                             f"{max_answer_bytes}", fix="e.g. --max-answer-mib 8")
        self.max_answer_bytes = int(max_answer_bytes)
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.price_in = float(price_in)
        self.price_out = float(price_out)
        self.temperature = float(temperature)
        if provider is None:
            provider = OpenAIProvider(self.base_url, self.api_key, self.timeout, client=client,
                                      max_answer_bytes=self.max_answer_bytes)
        self.provider = provider
        self._lock = threading.Lock()
        self._usage = {"requests": 0, "retries": 0, "reasks": 0, "cached": 0,
                       "prompt_tokens": 0, "completion_tokens": 0, "failed_docs": 0}

    @property
    def where(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def usage(self) -> dict:
        """Requests sent, retries, re-asks, tokens and cost so far."""
        with self._lock:
            u = dict(self._usage)
        u["cost_usd"] = round(u["prompt_tokens"] * self.price_in / 1e6
                              + u["completion_tokens"] * self.price_out / 1e6, 6)
        return u

    def count(self, **kw) -> None:
        """Add to the usage counters (thread-safe)."""
        with self._lock:
            for k, v in kw.items():
                self._usage[k] = self._usage.get(k, 0) + v

    def _complete(self, messages: list, max_tokens: int | None) -> Completion:
        """One provider call; the key is blanked out of what it raises (a server may quote it
        back in an error body, and messages end up in logs, caches and reports)."""
        try:
            return self.provider.complete(
                model=self.model, messages=messages, temperature=self.temperature,
                max_tokens=self.max_tokens if max_tokens is None else max_tokens)
        except (Transient, Permanent, Refused, Misconfigured, TooLarge) as exc:
            key = self.api_key or ""
            if len(key) >= 8:  # shorter ones are placeholders ("none") for local servers
                exc.args = tuple(str(a).replace(key, "***") for a in exc.args)
            raise

    def chat(self, messages: list, *, max_tokens: int | None = None) -> Completion:
        """One chat completion, with retries (module docstring for what can be raised)."""
        last: Transient | None = None
        answered = False  # did any try get an HTTP answer back?
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.count(retries=1)
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                delay *= 0.5 + random.random() / 2
                if last is not None and last.retry_after is not None:
                    delay = max(delay, min(self.max_backoff, last.retry_after))
                time.sleep(delay)
            self.count(requests=1)
            try:
                done = self._complete(messages, max_tokens)
            except Transient as exc:
                last = exc
                answered |= not exc.unreachable
                continue
            except Refused as exc:
                raise InputError(str(exc), source=self.where,
                                 fix="check OPENAI_API_KEY / --api-key") from None
            except Misconfigured as exc:
                raise InputError(str(exc), source=self.where, fix=exc.fix) from None
            except TooLarge as exc:
                raise self._too_large(exc) from None
            self.count(prompt_tokens=done.prompt_tokens, completion_tokens=done.completion_tokens)
            return done
        check = (f"that the server runs and answers at {self.where} (e.g. curl "
                 f"{self.where.rstrip('/')}/models) and that --base-url is right; answers "
                 "received so far are cached (rerun to resume), or "
                 f"{self.alternative}")
        if not answered:
            raise EndpointUnreachable(
                f"{self.what} kept failing after {self.max_retries} retries: no answer from "
                f"the server ({last})", endpoint=self.where, check=check)
        raise EndpointError(f"{self.what} kept failing after {self.max_retries} retries "
                            f"({last})", endpoint=self.where, check=check)

    def _too_large(self, exc: TooLarge) -> EndpointError:
        """An answer over the bound: the run stops (not retried: the same request would get
        the same answer; nothing of it is cached)."""
        mib = exc.bound / (1 << 20)
        return EndpointError(
            f"{self.what} got an answer it did not keep: {exc}",
            endpoint=self.where,
            check=f"the server (a chat completion of {self.max_tokens} tokens is a few KB: a "
                  "much larger one is a server or proxy fault); if such answers are expected, "
                  f"raise --max-answer-mib (now {mib:g}); answers received so far are cached "
                  "(rerun to resume)")


def ask_json(call: Callable[[list, int], str], messages: list, *,
             parse: Callable[[str], object], reask: str = DEFAULT_REASK,
             on_reask: Callable[[], None] | None = None) -> tuple:
    """``(parsed or None, last answer, calls made)``: ``call(messages, attempt)`` then
    ``parse(answer)``; when that gives None, one re-ask (the answer and ``reask`` appended).

    ``call`` decides how an attempt is sent (cached, budgeted, ...); ``attempt`` is 0, then 1
    for the re-ask, which carries at most :data:`REASK_ECHO_CHARS` characters of the answer.
    """
    content = call(messages, 0)
    data = parse(content or "")
    if data is not None:
        return data, content, 1
    if on_reask is not None:
        on_reask()
    echo = content or ""
    if len(echo) > REASK_ECHO_CHARS:
        echo = (echo[:REASK_ECHO_CHARS]
                + f"\n[... {len(echo) - REASK_ECHO_CHARS:,} more characters not repeated]")
    messages = messages + [{"role": "assistant", "content": echo},
                           {"role": "user", "content": reask}]
    content = call(messages, 1)
    return parse(content or ""), content, 2
