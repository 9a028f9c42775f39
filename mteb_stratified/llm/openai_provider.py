"""The OpenAI-compatible chat-completions provider (OpenAI, vLLM, llama.cpp, transformers serve).

:meth:`OpenAIProvider.complete` sends one request and sorts every failure of the ``openai``
client into the kinds of :mod:`.transport`: :class:`~.transport.Transient` (worth retrying: 429 with
its ``Retry-After``, timeouts, 5xx, 408/409, malformed bodies), ``Transient(unreachable=True)``
(no connection at all), :class:`~.transport.Refused` (401/403: the key) and
:class:`~.transport.Permanent` (any other 4xx).  Another provider implements the same method.
"""

from __future__ import annotations

from .._optional import require
from .transport import Completion, Permanent, Refused, Transient

__all__ = ["OpenAIProvider"]


class OpenAIProvider:
    """One ``openai.OpenAI`` client (its own retries off: :class:`.endpoint.ChatEndpoint`
    retries)."""

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float,
                 client=None) -> None:
        self.base_url, self.api_key, self.timeout = base_url, api_key, float(timeout)
        self._client = client

    def _client_or_new(self):
        if self._client is None:
            openai = require("openai", "llm")
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                         max_retries=0, timeout=self.timeout)
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
            return Completion(content, int(getattr(usage, "prompt_tokens", 0) or 0),
                              int(getattr(usage, "completion_tokens", 0) or 0))
        except Transient:
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
            raise Transient(f"{type(exc).__name__}: {exc}", unreachable=True) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise Transient(f"HTTP {exc.status_code}: {exc}") from None
            if exc.status_code in (401, 403):
                raise Refused(f"the endpoint refused the API key (HTTP {exc.status_code})") \
                    from None
            raise Permanent(f"HTTP {exc.status_code}: {exc}") from None
        except (openai.APIResponseValidationError, ValueError, AttributeError,
                TypeError) as exc:  # (json.JSONDecodeError is a ValueError)
            raise Transient(f"malformed response body: {type(exc).__name__}: {exc}") from None
