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
  (429, 5xx, malformed bodies);
* :class:`~mteb_stratified.core.errors.InputError` — the key was refused (401/403), the
  endpoint is not where the settings point (404, a redirect), or no model or key was given:
  the user's settings;
* :class:`Permanent` — the request itself was rejected (other 4xx); callers record it.

:func:`ask_json` is the re-ask path shared by the entity extractor and query generation: one
call, a parse, and one re-ask with a fixed prompt when the answer holds nothing usable.

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
from .transport import Completion, Misconfigured, Permanent, Refused, Transient

__all__ = ["ChatEndpoint", "Completion", "Transient", "Permanent", "Refused", "Misconfigured",
           "ask_json", "resolve_settings", "DEFAULT_REASK"]

DEFAULT_REASK = "That was not valid JSON. Reply with only the JSON object and nothing else."


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
                 client=None, provider=None) -> None:
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
        self.api_key = key
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.price_in = float(price_in)
        self.price_out = float(price_out)
        self.temperature = float(temperature)
        if provider is None:
            provider = OpenAIProvider(self.base_url, self.api_key, self.timeout, client=client)
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
        except (Transient, Permanent, Refused, Misconfigured) as exc:
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


def ask_json(call: Callable[[list, int], str], messages: list, *,
             parse: Callable[[str], object], reask: str = DEFAULT_REASK,
             on_reask: Callable[[], None] | None = None) -> tuple:
    """``(parsed or None, last answer, calls made)``: ``call(messages, attempt)`` then
    ``parse(answer)``; when that gives None, one re-ask (the answer and ``reask`` appended).

    ``call`` decides how an attempt is sent (cached, budgeted, ...); ``attempt`` is 0, then 1
    for the re-ask.
    """
    content = call(messages, 0)
    data = parse(content or "")
    if data is not None:
        return data, content, 1
    if on_reask is not None:
        on_reask()
    messages = messages + [{"role": "assistant", "content": content or ""},
                           {"role": "user", "content": reask}]
    content = call(messages, 1)
    return parse(content or ""), content, 2
