"""One job per output folder: an advisory lock on ``<folder>/.lock`` while a job writes there.

:func:`folder_lock` takes ``fcntl.flock`` on the file, which the kernel frees when the holder
ends in any way (SIGKILL and crashes included): a lock file left behind holds nothing and never
blocks.  A job that ends (done or failed) removes the file while it still holds it, so nothing is
left in the folder; a job that waited on the removed file locks the new one instead.  The
holder writes its pid, start time and command into the file, so a second job is told who has
the folder.  Where ``fcntl`` is missing (Windows) no lock is taken and a warning
says so: two jobs on one folder are then not stopped.

:func:`file_lock` does the same for one file that several jobs update by reading it, changing
it and writing it back (a per-query CSV of a shared prediction folder, a results file that
``stratify`` updates in place): the lock is on ``.<name>.lock`` next to it, and a second job
waits for the first (``timeout`` seconds, then a clear error), so both updates land.

:func:`open_no_follow` opens a lock, work or output file without following a symbolic link:
a link (or a file with another hard link, or not a regular file) planted where we write is
refused with an :class:`InputError` naming the path, so nothing outside the folder is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from typing import Iterator

from ..core.errors import InputError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__all__ = ["folder_lock", "file_lock", "open_no_follow", "LOCK_NAME"]

LOCK_NAME = ".lock"
_POLL_S = 0.1
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FOLDER_BUSY = ("the folder is in use by another mteb-stratified job",
                "wait for it to finish, or use another --out folder")


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


def open_no_follow(path: "str | os.PathLike", flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags, mode)`` that never follows a symbolic link at ``path``: a link,
    something that is not a regular file, or a file with another hard link (writing it would
    change a file elsewhere) is an :class:`InputError` naming ``path``.  Other OSErrors
    propagate."""
    path = os.fspath(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if not os.path.islink(path):
            raise
        raise _planted(path, "a symbolic link") from exc
    info = os.fstat(fd)
    problem = ("not a regular file" if not stat.S_ISREG(info.st_mode) else
               f"a file with {info.st_nlink} hard links" if info.st_nlink > 1 else "")
    if problem:
        os.close(fd)
        raise _planted(path, problem)
    return fd


def _planted(path: str, what: str) -> InputError:
    return InputError(f"refusing to write through {what}: a file written here must be the "
                      "folder's own", source=path,
                      fix="remove it (nothing outside the folder is ever written through it), "
                          "then run again")


def _open(path: str, lock: str) -> int:
    try:
        os.makedirs(path, exist_ok=True)
        return open_no_follow(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"the folder cannot be created or locked ({exc.strerror})",
                         source=path, fix="make the folder writable, or choose another one "
                                          "(--out for an output folder)") from None


def _open_locked(path: str, lock: str, wait: float, busy: tuple = _FOLDER_BUSY) -> int:
    """A descriptor of ``lock`` holding its flock.  A holder removes the file as it lets go,
    so a job that waited on the removed file tries again on the file now at ``lock``: the
    lock is held only when the descriptor is still the file at the path.  ``busy``: the
    message and fix when another job holds it past ``wait``."""
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        fd = _open(path, lock)
        try:
            _acquire(fd, path, wait, deadline, busy)
            try:
                if os.path.samestat(os.fstat(fd), os.stat(lock)):
                    return fd
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


@contextlib.contextmanager
def file_lock(target: "str | os.PathLike", *, timeout: float = 120.0,
              what: str = "") -> Iterator[str]:
    """Hold the lock of the file ``target`` while the block reads, changes and writes it back.

    The lock is an ``flock`` on ``.<name>.lock`` in ``target``'s folder (created if missing,
    removed on release, freed by the kernel however its holder ends); a second job waits for
    it up to ``timeout`` seconds.  Without ``fcntl`` (Windows) nothing is locked.

    Raises
    ------
    InputError
        When another job still holds it after ``timeout`` seconds (the message names it), the
        folder cannot be created, or a link is planted at the lock file's path.
    """
    target = os.fspath(target)
    folder = os.path.dirname(os.path.abspath(target))
    lock = os.path.join(folder, f".{os.path.basename(target)}.lock")
    if fcntl is None:
        yield target
        return
    busy = (f"{target} is being updated by another mteb-stratified job",
            "wait for it to finish, then run again")
    fd = _open_locked(folder, lock, float(timeout), busy)
    try:
        _record_holder(fd, what or os.path.basename(sys.argv[0] or "python"))
        yield target
    finally:
        _remove(lock)
        os.close(fd)


def _remove(lock: str) -> None:
    try:
        os.unlink(lock)
    except OSError:  # already gone, or a read-only folder: the flock still frees it
        pass


def _acquire(fd: int, path: str, wait: float, deadline: float, busy: tuple) -> None:
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
    raise InputError(f"{busy[0]} ({_describe_holder(fd)}){waited}", source=path, fix=busy[1])


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
    from .markdown import term_cell  # the one escape of a string printed to a terminal

    text = term_cell(value)
    return text if len(text) <= limit else text[:limit] + "..."
