"""``mteb-stratified``: a thin front end. Each subcommand lives in its own module; a command
imports only its own module (a fast start), and ``--help``, ``--version`` and a usage error
without a command import none (the summaries come from :data:`~.COMMANDS`).

Bad input (:class:`InputError`, a missing file, a missing optional extra), a server that did
not answer (:class:`EndpointError`: down, overloaded, refusing) and a file the system would not
read or write (an :class:`OSError` with an ``errno``: permission denied, a read-only file
system, a full disk or quota) print one clear message, with the path and a fix, and exit with
status 2, without a traceback.  Ctrl-C prints one line and exits with status 130.  Every
message is printed through :func:`~mteb_stratified.io.markdown.term_cell`, line by line, so a
name read from a file cannot send escape sequences to the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import importlib.util
import os
import sys
import warnings

from ..core.errors import EndpointError, InputError, InputWarning
from . import COMMANDS

#: Subcommand modules; each defines ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS = ("evaluate", "demo", "precision_sweep", "mteb_wrapper", "leaderboard",
               "structure", "stratify", "report", "generate")
#: Commands whose module is not the command's name with ``_`` for ``-``.
_MODULE_OF = {"mteb": "mteb_wrapper"}


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(
        prog="mteb-stratified",
        description="Tie-aware and semantically stratified retrieval evaluation for MTEB/BEIR.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"mteb-stratified {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or only of ``command`` when that names one: a command
    then starts without importing the other subcommands' modules."""
    parser, sub = _top_parser()
    module = None if command is None else _MODULE_OF.get(command, command.replace("-", "_"))
    only = module in SUBCOMMANDS
    for name in (module,) if only else SUBCOMMANDS:
        try:
            loaded = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{name}":
                continue  # subcommand not shipped in this build
            raise
        loaded.add_parser(sub)
    if only and command not in sub.choices:  # e.g. precision_sweep: the usage error lists all
        return build_parser()
    return parser


def summary_parser() -> argparse.ArgumentParser:
    """The top-level parser with each subcommand's name and summary only: what ``--help``,
    ``--version`` and a usage error without a command need, with no subcommand module imported
    (``format_help`` is :func:`build_parser`'s, tests/cli/test_main_imports.py checks it)."""
    parser, sub = _top_parser()
    for name in SUBCOMMANDS:
        if importlib.util.find_spec(f"{__package__}.{name}") is not None:  # shipped in this build
            sub.add_parser(COMMANDS[name][0], help=COMMANDS[name][1])
    return parser


def _parser_for(argv: list) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: its command's alone, every command's when a command comes
    later (``--x evaluate``: the usage error is the full parser's), else the summaries."""
    names = {command for command, _ in COMMANDS.values()}
    if argv and argv[0] in names:
        return build_parser(argv[0])
    if any(arg in names for arg in argv):
        return build_parser()
    return summary_parser()


def main(argv=None) -> int:
    """Run ``mteb-stratified argv``: exit status 0, 2 (bad input, a refused file, a server or
    model that could not be had; one message, no traceback) or 130 (Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        where = f" {command}" if command in _command_names() else ""
        print(f"mteb-stratified{where}: interrupted", file=sys.stderr)
        return 130


def _command_names() -> set:
    return {name for name, _ in COMMANDS.values()}


def _main(argv: list) -> int:
    parser = _parser_for(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(_NamedStdout(sys.stdout)):
            # both restored on return: nothing changes for the caller
            warnings.simplefilter("always", InputWarning)  # every file's warning, every call
            warnings.showwarning = _show_input_warnings(args.command, warnings.showwarning)
            code = int(args.func(args) or 0)
            sys.stdout.flush()  # a full disk behind `> file` is said here, not at exit
        return code
    except (InputError, EndpointError) as exc:  # bad input / a server that did not answer
        _say(args.command, "error", exc)
        return 2
    except ImportError as exc:
        if "pip install" not in str(exc):
            raise  # a real bug, not a missing optional extra
        _say(args.command, "error", exc)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        _quiet_stdout()
        return 0
    except Exception as exc:  # noqa: BLE001 - only the system's or the hub's refusal
        message = _refusal(exc, args)
        if message is None:
            raise  # a real bug: its traceback is what a report needs
        _say(args.command, "error", message)
        return 2


def _refusal(exc: Exception, args) -> InputError | None:
    """What the system (a file it would not read or write) or the Hugging Face hub (a model it
    cannot give) refused behind ``exc``, as an :class:`InputError`; None for anything else."""
    cause = os_error_of(exc)
    if cause is not None:
        return os_error_message(cause, _output_of(args))
    if any(type(e).__module__.startswith("huggingface_hub") for e in _chain(exc)):
        from ..structure.sentence_model import hub_miss

        return hub_miss(None, exc)
    return None


def _chain(exc: BaseException | None) -> list:
    """``exc`` and the errors it was raised from or while handling (at most 20)."""
    out: list = []
    while exc is not None and len(out) < 20:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


class _NamedStdout:
    """stdout, whose failed writes name it (``<standard output>``): a full disk behind ``>
    file`` is then said as such, not as a file of the command's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text):
        return self._call(self._stream.write, text)

    def flush(self):
        return self._call(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    @staticmethod
    def _call(fn, *args):
        try:
            return fn(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if exc.errno is not None and exc.filename is None:
                exc.filename = "<standard output>"
                _quiet_stdout()  # the exit's own flush cannot fail a second time
            raise


def _quiet_stdout() -> None:
    """Point the real stdout at /dev/null, so the interpreter's flush at exit cannot fail a
    second time (Python's documented way for a closed pipe)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # redirected into a buffer (tests): nothing to point elsewhere
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _say(command: str, kind: str, text) -> None:
    """``mteb-stratified COMMAND: KIND: TEXT`` on stderr, each line made safe to print."""
    from ..io.markdown import term_cell

    lines = str(text).split("\n")
    print(f"mteb-stratified {command}: {kind}: " + "\n".join(term_cell(line) for line in lines),
          file=sys.stderr)


#: errno -> (what happened, how to fix it) of the system's refusals to read or write a file.
_OS_ERRORS = {
    errno.EACCES: ("permission denied", "give a file or folder you may read and write (check "
                   "its permissions with ls -ld), or choose another output folder with -o/--out"),
    errno.EROFS: ("read-only file system", "choose an output folder on a writable file system "
                  "with -o/--out"),
    errno.ENOSPC: ("no space left on the device", "free space on that disk, or choose an output "
                   "folder on another one with -o/--out; then run the command again"),
    errno.EFBIG: ("file too large (the file size limit: ulimit -f, or the file system's)",
                  "raise the limit (ulimit -f unlimited), or choose an output folder on another "
                  "file system with -o/--out"),
    errno.EMFILE: ("too many open files", "raise the limit (ulimit -n 4096) and run the "
                   "command again"),
    errno.ENOENT: ("no such file or folder", "check the path; if it vanished while the command "
                   "ran, run the command again"),
}
_OS_ERRORS[errno.EPERM] = _OS_ERRORS[errno.EACCES]
_OS_ERRORS[errno.ENFILE] = _OS_ERRORS[errno.EMFILE]
if hasattr(errno, "EDQUOT"):
    _OS_ERRORS[errno.EDQUOT] = ("disk quota exceeded", "free space within your quota, or choose "
                                "an output folder elsewhere with -o/--out")


#: The refusals that come from where the files are (permissions, the disk), never from the
#: program's own flow: also mapped when another error was raised while handling one.
_ENVIRONMENT = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EFBIG,
                errno.EMFILE, errno.ENFILE, getattr(errno, "EDQUOT", errno.ENOSPC)}


def os_error_of(exc: BaseException) -> OSError | None:
    """The system's refusal behind ``exc``, or None (a bug: its traceback is kept).

    That is an :class:`OSError` with an ``errno`` that is one of :data:`_ENVIRONMENT` or names
    a file: ``exc`` itself or one it was raised from (``raise ... from``); one it was raised
    while handling only when it is one of :data:`_ENVIRONMENT` (a full disk, a read-only
    folder), never an ordinary file-not-found the program expected."""
    implicit = False
    for _ in range(20):
        if exc is None:
            return None
        if isinstance(exc, OSError) and exc.errno is not None and (
                exc.errno in _ENVIRONMENT or (exc.filename is not None and not implicit)):
            return exc
        implicit = implicit or exc.__cause__ is None
        exc = exc.__cause__ or exc.__context__
    return None


def os_error_message(exc: OSError, output: str | None = None) -> InputError:
    """What the system refused, as an :class:`InputError`: the path (``exc``'s file; else the
    command's ``output``, the file not being named), what happened and a fix."""
    what, fix = _OS_ERRORS.get(exc.errno, (None, "check the path and its disk, then run the "
                                                 "command again"))
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    what = f"{what or (exc.strerror or 'system error').lower()} ({name})"
    if exc.filename == "<standard output>":
        fix = "free space on the disk that stdout goes to, or send it elsewhere (> FILE)"
    paths = [os.fspath(p) for p in (exc.filename, exc.filename2) if p is not None]
    if paths:
        source = " -> ".join(str(p) for p in paths)
    elif output:
        source, what = output, f"{what}, while writing under it (the system named no file)"
    else:
        source, what = None, f"{what} (the system named no file)"
    return InputError(what, source=source, fix=fix)


def _output_of(args) -> str | None:
    """The path a command writes to, to name when the system names no file."""
    for key in ("out", "results_dir"):
        value = getattr(args, key, None)
        if isinstance(value, str):
            return value
    results = getattr(args, "results", None)
    return ", ".join(map(str, results)) if isinstance(results, list) else None


def _show_input_warnings(command: str, show):
    """A ``warnings.showwarning`` that prints an :class:`InputWarning` as one plain line (as an
    error is printed) and hands every other warning to ``show``."""
    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, InputWarning):
            _say(command, "warning", message)
        else:
            show(message, category, filename, lineno, file, line)
    return showwarning


if __name__ == "__main__":
    sys.exit(main())
