"""The benchmarks' shared harness: timing, CPU seconds, peak memory, machine load, command line.

Every script in ``benchmarks/`` imports what it needs from here (``from _harness import ...``:
``python benchmarks/x.py`` puts the script's own folder first on ``sys.path``).  It imports
only the standard library, so ``--help`` stays fast.

Timing.  :func:`interleaved` runs every contender once per repetition, repetition ``r`` in the
order rotated by ``r`` (with two contenders: A B, B A, A B, ...), so a burst of load from other
processes falls on all of them; it returns the per-contender samples (wall seconds, the CPU
seconds of this process and of its finished subprocesses) and each contender's last result.
:func:`median`, :func:`spread` (min, max), :func:`ratios` (per repetition) and
:func:`median_spread` summarise them.

Peak memory, two ways for the resident set and one for Python allocations; each script keeps
the one its results were measured with:

* :func:`ru_maxrss_bytes`: ``getrusage(RUSAGE_SELF).ru_maxrss``, the peak resident set of this
  process as the kernel accounts it.  Linux carries it across ``exec``, so a subprocess's value
  includes its parent's resident set at the fork: scripts that use it run each job in a fresh
  subprocess and subtract a baseline process's figure, or only compare jobs started alike.
* :func:`vm_hwm_bytes` (and :func:`vm_rss_bytes`): ``/proc/self/status`` ``VmHWM`` (``VmRSS``),
  the high-water (current) resident set of this process image only (reset by ``exec``);
  ``ru_maxrss`` where there is no ``/proc``.
* :func:`tracemalloc_peak`: the peak of the Python allocations one call makes (numpy's arrays
  included), not the resident set.

Machine load: :func:`machine_load` (the 1-minute load average and ``/proc/pressure/cpu``) and
:func:`load_1m`.  Command line: :func:`command_line` is the exact command that ran
(``python benchmarks/x.py args``, with paths made relative or replaced by a placeholder, never
an absolute machine path); :func:`print_command` prints it as ``# command: ...``.
:func:`tests_helper` loads a helper module of ``tests/`` (the SmolLM2 server) from its file.
"""

from __future__ import annotations

import gc
import os
import resource
import shlex
import statistics
import sys
import tempfile
import time
from typing import Callable, Iterable, Mapping, NamedTuple

#: The repository root (the folder above ``benchmarks/``).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- timing ------------------------------------------------------------------------------------

def rotation(names: list, r: int) -> list:
    """``names`` rotated by ``r``: the order in which repetition ``r`` runs the contenders."""
    k = r % len(names) if names else 0
    return list(names[k:]) + list(names[:k])


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished subprocesses so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class Samples(NamedTuple):
    """What :func:`interleaved` measured: per contender, one sample per repetition of its wall
    seconds (``wall``), the CPU seconds of this process, all threads (``cpu``), and the CPU
    seconds of the subprocesses it ran (``children_cpu``); and its last result (``results``)."""

    wall: dict
    cpu: dict
    children_cpu: dict
    results: dict


def interleaved(contenders: Mapping[str, Callable], repeats: int, *,
                prepare: Mapping[str, Callable] | None = None, collect: bool = False,
                on_sample: Callable | None = None) -> Samples:
    """Time each contender ``repeats`` times, interleaved: repetition ``r`` runs every contender
    once, in the order of ``contenders`` rotated by ``r``.

    ``prepare[name]()``, where given, runs untimed just before ``name`` and its result is the
    contender's one argument.  ``collect`` runs ``gc.collect()`` (untimed) before each call.
    ``on_sample(r, name, wall, cpu, result)`` is called after each call (to print progress).
    """
    names = list(contenders)
    out = Samples({k: [] for k in names}, {k: [] for k in names}, {k: [] for k in names}, {})
    for r in range(repeats):
        for name in rotation(names, r):
            arg = (prepare[name](),) if prepare and name in prepare else ()
            if collect:
                gc.collect()
            c0, k0 = time.process_time(), children_cpu()
            t0 = time.perf_counter()
            result = contenders[name](*arg)
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0
            out.wall[name].append(wall)
            out.cpu[name].append(cpu)
            out.children_cpu[name].append(children_cpu() - k0)
            out.results[name] = result
            if on_sample is not None:
                on_sample(r, name, wall, cpu, result)
    return out


def timed(fn: Callable, *args) -> tuple:
    """One timed call: ``(fn(*args), wall seconds, CPU seconds of this process)`` (what one
    sample of :func:`interleaved` measures)."""
    c0, t0 = time.process_time(), time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - t0, time.process_time() - c0


def median(samples: Iterable[float]) -> float:
    """The median of ``samples``."""
    return float(statistics.median(list(samples)))


def spread(samples: Iterable[float]) -> tuple:
    """``(min, max)`` of ``samples``."""
    xs = list(samples)
    return min(xs), max(xs)


def ratios(num: Iterable[float], den: Iterable[float]) -> list:
    """Per-repetition ratios ``num[r] / den[r]`` (repetitions with ``den[r] <= 0`` left out)."""
    return [a / b for a, b in zip(num, den) if b > 0]


def median_spread(samples: Iterable[float], fmt: str = ".2f", dash: str = "-") -> str:
    """``"median (min-max)"`` of ``samples`` in format ``fmt``, the range joined by ``dash``;
    ``"–"`` for no samples."""
    xs = list(samples)
    if not xs:
        return "–"
    lo, hi = spread(xs)
    return f"{median(xs):{fmt}} ({lo:{fmt}}{dash}{hi:{fmt}})"


# --- peak memory -------------------------------------------------------------------------------

def ru_maxrss_bytes() -> int:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in bytes (Linux counts KiB, macOS bytes): the peak
    resident set of this process, carried across ``exec`` (see the module docstring)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _status_bytes(key: str) -> int | None:
    """A ``/proc/self/status`` figure (``VmHWM``, ``VmRSS``) in bytes; None without it."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def vm_hwm_bytes() -> int:
    """The high-water resident set of this process image (``VmHWM``) in bytes;
    :func:`ru_maxrss_bytes` where there is no ``/proc``."""
    got = _status_bytes("VmHWM")
    return ru_maxrss_bytes() if got is None else got


def vm_rss_bytes() -> int:
    """The current resident set (``VmRSS``) in bytes; :func:`ru_maxrss_bytes` where there is no
    ``/proc``."""
    got = _status_bytes("VmRSS")
    return ru_maxrss_bytes() if got is None else got


def reset_peak() -> None:
    """Set this process's ``VmHWM`` back to its current resident set (Linux: ``clear_refs``
    5), so that :func:`vm_hwm_bytes` measures from here; nothing where that is not possible
    (``ru_maxrss`` is never reset)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def tracemalloc_peak(fn: Callable, *args, **kwargs) -> tuple:
    """``(fn(*args, **kwargs), peak bytes of the Python allocations during the call)``
    (``tracemalloc``; garbage collected first)."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        out = fn(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak


# --- machine load ------------------------------------------------------------------------------

def load_1m() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def machine_load() -> dict:
    """The 1-minute load average (``loadavg_1m``) and the CPU pressure
    (``cpu_pressure_some_avg60``: the share of the last minute in which some runnable task
    waited for a CPU; Linux PSI), those that are readable."""
    out: dict = {}
    try:
        with open("/proc/loadavg") as fh:
            out["loadavg_1m"] = float(fh.read().split()[0])
        with open("/proc/pressure/cpu") as fh:
            some = fh.readline().split()
        out["cpu_pressure_some_avg60"] = float(some[2].split("=")[1])
    except (OSError, IndexError, ValueError):
        pass
    return out


# --- the command line --------------------------------------------------------------------------

def portable_path(arg: str) -> str:
    """``arg`` without a machine path: a path inside the repository made relative to its root,
    one under the temporary folder as ``CACHE/...``, another absolute path as ``PATH/<name>``;
    ``NAME=PATH`` arguments keep their name.  Anything else unchanged."""
    name, sep, value = arg.partition("=")
    if sep and os.path.isabs(value) and not os.path.isabs(name):
        return f"{name}={portable_path(value)}"
    if not os.path.isabs(arg):
        return arg
    path = os.path.normpath(arg)
    if path == ROOT or path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    tmp = os.path.normpath(tempfile.gettempdir())
    if path.startswith(tmp + os.sep):
        return "CACHE/" + os.path.relpath(path, tmp)
    return "PATH/" + os.path.basename(path)


def command_line(argv: list | None = None) -> str:
    """The command that ran, as ``python benchmarks/x.py args`` (see :func:`portable_path`)."""
    argv = list(sys.argv if argv is None else argv)
    script = portable_path(os.path.abspath(argv[0])) if argv else "?"
    if script.startswith("PATH/") or script.startswith("CACHE/"):
        script = "benchmarks/" + os.path.basename(argv[0])
    return " ".join(["python", script, *(shlex.quote(portable_path(a)) for a in argv[1:])])


def print_command(argv: list | None = None, file=None) -> None:
    """Print ``# command: <the command that ran>`` (the first line of a results file)."""
    print(f"# command: {command_line(argv)}", file=file or sys.stdout, flush=True)


# --- the tests' helpers ------------------------------------------------------------------------

def tests_helper(relpath: str):
    """The module at ``tests/<relpath>`` of this checkout (e.g. ``structure/_smollm.py``, the
    tests' SmolLM2 server), loaded from its file: no ``sys.path`` change.  Once per path."""
    import importlib.util

    name = "_tests_" + relpath.replace("/", "_").removesuffix(".py")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tests", relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
