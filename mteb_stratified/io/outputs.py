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
  the same text gives the same bytes).
* :func:`json_safe` / :func:`dumps_json` (from :mod:`..core.jsonsafe`): JSON that is always
  valid JSON. Non-finite floats
  (NaN, ±inf; Python's or numpy's) become ``null``, numpy scalars and arrays become plain
  numbers and lists; ``allow_nan=False`` then guarantees no bare ``NaN``/``Infinity`` is ever
  printed.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import tempfile
import threading
from typing import Iterator

from ..core.errors import InputError
from ..core.jsonsafe import dumps_json, json_safe

__all__ = ["output_dir", "output_file", "safe_name", "atomic_write", "atomic_write_text",
           "json_safe", "dumps_json"]


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


@contextlib.contextmanager
def atomic_write(path: "str | os.PathLike", mode: str = "w", **open_kwargs) -> Iterator:
    """Open a temp file next to ``path`` (unique per process and call), rename it onto ``path``
    when the block ends without an exception, remove it otherwise."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
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


def atomic_write_text(path: "str | os.PathLike", text: str, *, gz: bool = False) -> None:
    """Write ``text`` to ``path`` as UTF-8 through :func:`atomic_write`; with ``gz``,
    gzip-compressed with no timestamp in the header (the same text, the same bytes)."""
    data = text.encode("utf-8")
    with atomic_write(path, "wb") as raw:
        if gz:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
                fh.write(data)
        else:
            raw.write(data)


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
