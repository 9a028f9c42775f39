"""What a provider returns and raises: the contract between :mod:`.endpoint` and a provider."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Completion", "Transient", "Permanent", "Refused", "Misconfigured", "TooLarge",
           "DEFAULT_MAX_ANSWER_BYTES"]

#: the default bound on one answer's body, decoded (``ChatEndpoint(max_answer_bytes=...)``,
#: ``--max-answer-mib``): a chat completion of thousands of tokens is tens of KB
DEFAULT_MAX_ANSWER_BYTES = 8 << 20


@dataclass(frozen=True)
class Completion:
    """One answer: its text and token counts."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Transient(Exception):
    """A failure worth retrying; ``unreachable`` when no answer came back at all."""

    def __init__(self, message: str, retry_after: float | None = None, *,
                 unreachable: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable


class Permanent(Exception):
    """The server rejected this request (e.g. HTTP 400): retrying will not help."""


class Refused(Exception):
    """The server refused the credentials (HTTP 401/403)."""


class Misconfigured(Exception):
    """The endpoint is not where the settings point (HTTP 404, a redirect): every request would
    fail the same way, so the run stops at once.  ``fix`` says which setting to check."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


class TooLarge(Exception):
    """The answer's body (decoded) is larger than the bound: not read past it, never retried
    (the same request would get the same answer) and never cached."""

    def __init__(self, message: str, bound: int) -> None:
        super().__init__(message)
        self.bound = bound
