"""Where the program writes, and what it writes there: output paths, atomic writes, valid JSON.

* :func:`output_dir` / :func:`output_file` check an ``--out`` argument before any work is done,
  so a path of the wrong kind (a file where a folder is wanted, a folder where a file is
  wanted, a parent that is a file) is an :class:`InputError` with the fix, not a traceback
  after minutes of work.
* :func:`safe_name` turns a user-supplied name (a task name, a system name) into one path
  component: it never contains a separator, ``..`` or a drive, so a name read from a data file
  cannot choose where we read or write.
* :func:`atomic_write` writes through a temp file unique to the process and thread (two jobs on
  one folder never share a temp name) and renames it into place; :func:`atomic_write_text`
  writes a whole text that way, as UTF-8 (gzip-compressed without a timestamp on request, so
  the same text gives the same bytes).  A writer holds an ``flock`` on its temp file until
  the rename, so a temp file nobody holds is an orphan of a killed writer:
  :func:`remove_orphan_temps` removes those (the first write of a process to a file removes
  that file's own).
* :func:`write_together` writes several files as one unit: all to temp files first, then the
  old files removed, then the new ones renamed in; a kill leaves the old files or some of the
  new ones, never an old file beside a new one.
* :func:`json_safe` / :func:`dumps_json` (from :mod:`..core.jsonsafe`): JSON that is always
  valid JSON. Non-finite floats
  (NaN, ±inf; Python's or numpy's) become ``null``, numpy scalars and arrays become plain
  numbers and lists; ``allow_nan=False`` then guarantees no bare ``NaN``/``Infinity`` is ever
  printed.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import stat
import tempfile
import threading
from typing import Iterator

try:
    import fcntl
except ImportError:  # Windows: temp files are not held, and orphans are not removed
    fcntl = None

from ..core.errors import InputError
from ..core.jsonsafe import dumps_json, json_safe

__all__ = ["output_dir", "output_file", "safe_name", "atomic_write", "atomic_write_text",
           "write_together", "remove_orphan_temps", "fsync_dir", "gzip_bytes", "json_safe",
           "dumps_json"]


def _check_parent(path: str, option: str) -> None:
    """An InputError when the folders above ``path`` cannot hold it (a component is a file)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise InputError(f"{option} cannot be created: {parent} is a file, not a folder",
                         source=path, fix=f"give {option} a path under an existing folder")


def output_dir(path: "str | os.PathLike", *, option: str = "--out") -> str:
    """``path`` as an output folder: it is a folder or can be made one (not made here)."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"{option} is a file, but a folder is needed here", source=path,
                         fix=f"give {option} a folder path (it is created if missing)")
    _check_parent(path, option)
    return path


def output_file(path: "str | os.PathLike", *, option: str = "--out") -> str:
    """``path`` as an output file: not a folder, and its parent is (or can be) a folder."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise InputError(f"{option} is a folder, but a file is needed here", source=path,
                         fix=f"give {option} a file path, e.g. {os.path.join(path, 'report.html')}")
    _check_parent(path, option)
    return path


_UNSAFE = re.compile(r"[^A-Za-z0-9._=+@-]+")


def safe_name(name: str, *, max_len: int = 120) -> str:
    """One safe path component for a user-supplied ``name``.

    Characters outside ``[A-Za-z0-9._=+@-]`` (separators, ``:``, spaces, control characters)
    become ``_``; leading dots are dropped (no ``..``, no hidden files); an empty result is
    ``_``. Names that are already safe (``NFCorpus``, ``StratifiedNFCorpus``) are unchanged.
    """
    text = _UNSAFE.sub("_", str(name)).lstrip(".")[:max_len]
    return text or "_"


def _new_temp(path: str) -> tuple[int, str, "int | None"]:
    """``(fd, temp path, held fd)``: a new temp file next to ``path`` (``.NAME.XXXXXXXX.tmp``,
    :data:`TEMP_PATTERN`), held with an ``flock`` until the held descriptor is closed, so
    :func:`remove_orphan_temps` never takes it for an orphan while this process lives.

    A cleaner that found the file between its creation and the lock has removed it: the lock
    is then on a file no longer at the path, and a new temp file is made."""
    directory = os.path.dirname(os.path.abspath(path))
    _clean_once(path)
    for _ in range(100):
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)
        if fcntl is None:
            return fd, tmp, None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # a cleaner holds it: it removes it
            continue
        except OSError:
            return fd, tmp, None  # a file system without flock: no cleaner removes it either
        if _same_file(fd, tmp):
            return fd, tmp, os.dup(fd)  # the lock lives while a descriptor of it is open
        os.close(fd)
    raise OSError(f"no temp file could be held next to {path}")


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` is (still) the file open as ``fd`` (a symlink is never followed)."""
    try:
        here, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def _release(held: "int | None") -> None:
    if held is not None:
        os.close(held)


@contextlib.contextmanager
def atomic_write(path: "str | os.PathLike", mode: str = "w", **open_kwargs) -> Iterator:
    """Open a temp file next to ``path`` (unique per process and call), rename it onto ``path``
    when the block ends without an exception, remove it otherwise.  The temp file is held
    (``flock``) until it is renamed, so a concurrent :func:`remove_orphan_temps` leaves it."""
    path = os.fspath(path)
    fd, tmp, held = _new_temp(path)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it replaces the old file
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        _release(held)


def fsync_dir(directory: "str | os.PathLike") -> None:
    """Make the renames and removals in ``directory`` durable (where the platform can)."""
    try:
        fd = os.open(os.fspath(directory), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # a file system that cannot sync a folder
    finally:
        os.close(fd)


def write_together(files: "list[tuple[str | os.PathLike, bytes]]") -> None:
    """Write ``[(path, data), ...]`` as one unit: never an old file beside a new one.

    Every file is first written to its own temp file (synced); only then are the old files
    removed (the folders synced), and the temp files renamed into place in the order given.
    A failure before the removals leaves the old files as they were; a kill after them leaves
    some of the new files and none of the old, so a reader finds a missing file, never a
    mismatched one.  Readers that need the whole set should check each file is there.
    """
    paths = [os.fspath(p) for p, _ in files]
    temps: list = []  # (fd, tmp, held)
    try:
        for path, (_, data) in zip(paths, files):
            temps.append(_new_temp(path))
            fd, tmp, _ = temps[-1]
            with os.fdopen(fd, "wb", closefd=False) as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fd)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600
        folders = sorted({os.path.dirname(os.path.abspath(p)) for p in paths})
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        for folder in folders:
            fsync_dir(folder)
        for path, (_, tmp, _) in zip(paths, temps):
            os.replace(tmp, path)
        for folder in folders:
            fsync_dir(folder)
    except BaseException:
        for _, tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    finally:
        for fd, _, held in temps:
            os.close(fd)
            _release(held)


#: The name :func:`atomic_write` gives its temp files (``tempfile.mkstemp``'s 8 characters).
TEMP_PATTERN = re.compile(r"\A\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp\Z")
_CLEANED: set = set()
_CLEANED_LOCK = threading.Lock()
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _clean_once(path: str) -> None:
    """:func:`remove_orphan_temps` of ``path``'s own temp files (``.NAME.XXXXXXXX.tmp`` for
    its NAME only: a folder we write one file into may be the user's, where another tool's
    temp files are not ours to take), the first time this process writes ``path``."""
    path = os.path.abspath(path)
    with _CLEANED_LOCK:
        if path in _CLEANED:
            return
        _CLEANED.add(path)
    remove_orphan_temps(os.path.dirname(path), name=os.path.basename(path))


def _orphan(folder_fd: int, name: str) -> bool:
    """Remove ``name`` (in the folder open as ``folder_fd``) when it is an orphan temp file: a
    regular file (a symlink is never followed) that no live writer holds (its ``flock`` is
    free: a killed writer's lock went with it).  Removed while this holds the lock, and only
    while the name is still the file locked.  True when removed."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                     dir_fd=folder_fd)
    except OSError:
        return False  # gone, a symlink, or not ours to read
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live writer holds it (or the file system cannot tell: kept)
        here, held = os.lstat(name, dir_fd=folder_fd), os.fstat(fd)
        if (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino):
            return False  # renamed or replaced meanwhile
        os.unlink(name, dir_fd=folder_fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_orphan_temps(folder: "str | os.PathLike", *, name: str | None = None) -> list[str]:
    """Remove the temp files a killed :func:`atomic_write` left in ``folder`` (with ``name``,
    only those of the file ``name``); return their paths.

    Only names of :data:`TEMP_PATTERN` (ours), only regular files (a symlink is neither
    followed nor removed), only in ``folder`` itself (a ``folder`` that is a symbolic link is
    left alone: nothing outside the folder named is touched), and only files whose ``flock``
    is free: every live writer holds its temp file's lock from its creation to its rename
    (:func:`_new_temp`), and the kernel frees it when the writer dies in any way (SIGKILL
    included), so a concurrent job's temp file is never taken, whether or not that job holds
    the folder's lock, while an orphan goes at the next write, however young.  Where
    ``fcntl`` is missing, or a file system cannot lock, nothing is removed.  Never raises for
    the folder."""
    if fcntl is None:
        return []
    try:
        folder_fd = os.open(os.fspath(folder),
                            os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW)
    except OSError:
        return []  # missing, not a folder, or a link to one
    try:
        with os.scandir(folder_fd) as entries:
            found = [e.name for e in entries if e.is_file(follow_symlinks=False)
                     and (m := TEMP_PATTERN.match(e.name))
                     and (name is None or m.group("name") == name)]
        return [os.path.join(os.fspath(folder), n) for n in sorted(found)
                if _orphan(folder_fd, n)]
    except OSError:
        return []
    finally:
        os.close(folder_fd)


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed with no timestamp and no file name in the header (the same
    data, the same bytes, on every Python: ``gzip.compress`` writes another OS byte on some
    versions)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as fh:
        fh.write(data)
    return buffer.getvalue()


def atomic_write_text(path: "str | os.PathLike", text: str, *, gz: bool = False) -> None:
    """Write ``text`` to ``path`` as UTF-8 through :func:`atomic_write`; with ``gz``,
    gzip-compressed with no timestamp in the header (the same text, the same bytes)."""
    data = text.encode("utf-8")
    with atomic_write(path, "wb") as raw:
        raw.write(gzip_bytes(data) if gz else data)


_UMASK: list = []
_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read once (reading it means setting it: done under a lock, before
    any file of ours is written, not in every write while other threads create files)."""
    with _UMASK_LOCK:
        if not _UMASK:
            mask = os.umask(0o077)
            os.umask(mask)
            _UMASK.append(mask)
        return _UMASK[0]
