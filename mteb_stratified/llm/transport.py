"""What a provider returns and raises: the contract between :mod:`.endpoint` and a provider."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Completion", "Transient", "Permanent", "Refused", "Misconfigured"]


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
