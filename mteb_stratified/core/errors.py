"""Input errors that say what is wrong, where, and how to fix it."""

from __future__ import annotations

__all__ = ["InputError", "InputWarning", "EndpointError", "EndpointUnreachable"]


class InputError(ValueError):
    """Bad user input: a malformed file, a bad score, an unknown measure.

    ``str(err)`` reads ``"<source>:<line>: <message> (fix: <fix>)"``; the parts that are unknown
    are left out.  The CLI prints it and exits with status 2, without a traceback.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 fix: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.fix = fix
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.source is not None:
            where = f"{self.source}:{self.line}: " if self.line is not None else f"{self.source}: "
        text = where + self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class InputWarning(UserWarning):
    """Input that is read, but not as written: e.g. a qrels line given twice, kept once (as
    trec_eval keeps it).  Raised with :func:`warnings.warn`; ``str(w)`` reads like
    :class:`InputError`'s, and the CLI prints it as ``warning: <source>:<line>: <message>``."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 fix: str | None = None) -> None:
        self.message, self.source, self.line, self.fix = message, source, line, fix
        super().__init__(InputError._format(self))


class EndpointError(Exception):
    """A server the user pointed at (an LLM endpoint) did not do its part: it refused, kept
    failing or could not be reached.  Not bad input: the message says what happened and how to
    check the server.  The CLI prints it and exits with status 2, without a traceback.

    ``str(err)`` reads ``"<endpoint>: <message> (check: <check>)"``.
    """

    def __init__(self, message: str, *, endpoint: str | None = None,
                 check: str | None = None) -> None:
        self.message, self.endpoint, self.check = message, endpoint, check
        text = (f"{endpoint}: " if endpoint else "") + message
        if check:
            text += f"\n  check: {check}"
        super().__init__(text)


class EndpointUnreachable(EndpointError):
    """No answer at all: connection refused, DNS failure, timeouts on every try."""
