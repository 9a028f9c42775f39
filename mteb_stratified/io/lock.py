"""One job per output folder: an advisory lock on ``<folder>/.lock`` while a job writes there.

:func:`folder_lock` takes ``fcntl.flock`` on the file, which the kernel frees when the holder
ends in any way (SIGKILL and crashes included): a lock file left behind holds nothing and never
blocks.  A job that ends (done or failed) removes the file while it still holds it, so nothing is
left in the folder; a job that waited on the removed file locks the new one instead.  The holder writes its pid, start time and command into the file, so a second job is
told who has the folder.  Where ``fcntl`` is missing (Windows) no lock is taken and a warning
says so: two jobs on one folder are then not stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Iterator

from ..core.errors import InputError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__all__ = ["folder_lock", "LOCK_NAME"]

LOCK_NAME = ".lock"
_POLL_S = 0.1


@contextlib.contextmanager
def folder_lock(path: "str | os.PathLike", *, wait: float = 0.0, what: str = "") -> Iterator:
    """Hold the lock of the folder ``path`` (created if missing) while the block runs.

    Parameters
    ----------
    path : the output folder.
    wait : seconds to wait for another job to let go; 0 refuses at once.
    what : the command recorded for the message another job gets (default: the program's
        name only: its arguments may hold an API key, and the lock file is readable).

    Raises
    ------
    InputError
        When another process still holds the folder after ``wait`` seconds (the message names
        its pid, start time and command), or the folder cannot be created.
    """
    path = os.fspath(path)
    lock = os.path.join(path, LOCK_NAME)
    if fcntl is None:
        fd = _open(path, lock)
        print(f"warning: {path}: folders cannot be locked on this platform; make sure no "
              "other job writes to it", file=sys.stderr, flush=True)
    else:
        fd = _open_locked(path, lock, float(wait))
    try:
        if fcntl is not None:
            _record_holder(fd, what or os.path.basename(sys.argv[0] or "python"))
        yield path
    finally:
        if fcntl is not None:
            _remove(lock)  # while held: no lock file is left behind, whatever the outcome
        os.close(fd)  # frees the lock


def _open(path: str, lock: str) -> int:
    try:
        os.makedirs(path, exist_ok=True)
        return os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"the output folder cannot be created or locked ({exc.strerror})",
                         source=path, fix="choose a writable --out folder") from None


def _open_locked(path: str, lock: str, wait: float) -> int:
    """A descriptor of ``lock`` holding its flock.  A holder removes the file as it lets go,
    so a job that waited on the removed file tries again on the file now at ``lock``: the
    lock is held only when the descriptor is still the file at the path."""
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        fd = _open(path, lock)
        try:
            _acquire(fd, path, wait, deadline)
            try:
                if os.path.samestat(os.fstat(fd), os.stat(lock)):
                    return fd
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _remove(lock: str) -> None:
    try:
        os.unlink(lock)
    except OSError:  # already gone, or a read-only folder: the flock still frees it
        pass


def _acquire(fd: int, path: str, wait: float, deadline: float) -> None:
    """flock ``fd``, polling until ``deadline`` (``wait``: the seconds the user allowed, for
    the message)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(_POLL_S, left))
    waited = f" after waiting {wait:g} s" if wait > 0 else ""
    raise InputError(f"the folder is in use by another mteb-stratified job "
                     f"({_describe_holder(fd)}){waited}", source=path,
                     fix="wait for it to finish, or use another --out folder")


def _record_holder(fd: int, command: str) -> None:
    note = json.dumps({"pid": os.getpid(), "command": command,
                       "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, note.encode("utf-8") + b"\n")
    os.fsync(fd)


def _describe_holder(fd: int) -> str:
    """``pid N, started at T, command C`` from the lock file (which anyone may have written:
    shown only, with control characters replaced)."""
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        note = json.loads(os.read(fd, 8192).decode("utf-8", "replace"))
    except ValueError:
        note = None
    if not isinstance(note, dict):
        return "pid unknown"
    parts = [f"{label}{_printable(note[key])}" for key, label in
             (("pid", "pid "), ("started", "started at "), ("command", "command "))
             if key in note]
    return ", ".join(parts) or "pid unknown"


def _printable(value, limit: int = 200) -> str:
    text = "".join(c if c.isprintable() else "?" for c in str(value))
    return text if len(text) <= limit else text[:limit] + "..."
