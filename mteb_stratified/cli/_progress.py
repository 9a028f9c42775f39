"""Progress lines for the long steps of a command (``stratify``, ``report``), on stderr.

Each step writes ``\\r<command>: <step> …`` when it starts and ``\\r<command>: <step>: 3.2 s``
with a newline when it ends, so a terminal shows one line per step that turns from "…" into its
time, and a log keeps one line per step.  The leading carriage return marks the line as
progress, as a progress bar's: stdout stays the command's result, and the docs' console blocks
leave such lines out.  ``enabled=False`` (``--no-progress``) writes nothing.
"""

from __future__ import annotations

import contextlib
import sys
import time

from ..io.markdown import term_cell

__all__ = ["Steps"]


class Steps:
    """``with steps("loading the structure"): ...`` prints the step and its time."""

    def __init__(self, command: str, *, enabled: bool = True, stream=None) -> None:
        self.command = command
        self.enabled = enabled
        self.stream = stream

    @contextlib.contextmanager
    def __call__(self, label: str):
        if not self.enabled:
            yield
            return
        out = self.stream or sys.stderr
        text = f"{self.command}: {term_cell(label)}"
        out.write(f"\r{text} …")
        out.flush()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            out.write(f"\r{text}: {time.perf_counter() - t0:.1f} s\n")
            out.flush()
