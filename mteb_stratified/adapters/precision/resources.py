"""Wall time and peak memory of a block of code (CPU: process RSS, sampled; CUDA: allocator peak)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

__all__ = ["Usage", "measure"]


@dataclass(frozen=True)
class Usage:
    """Seconds spent in a block and the peak memory during it, in MiB.

    ``peak_mib`` is the process's resident set size (CPU) sampled every ``interval`` seconds, or
    ``torch.cuda.max_memory_allocated`` (CUDA); ``memory_kind`` says which.
    """

    seconds: float
    peak_mib: float
    memory_kind: str


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # not Linux: the lifetime peak is what we have
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if os.uname().sysname == "Darwin" else peak / 2**10


class measure:
    """``with measure(device) as m: ...`` then ``m.usage`` (a :class:`Usage`)."""

    def __init__(self, device: str = "cpu", interval: float = 0.02) -> None:
        self.device = str(device)
        self.interval = interval
        self.usage: Usage | None = None

    def __enter__(self) -> "measure":
        self._cuda = self.device.startswith("cuda")
        if self._cuda:
            import torch

            self._dev = torch.device(self.device)
            torch.cuda.synchronize(self._dev)
            torch.cuda.reset_peak_memory_stats(self._dev)
        else:
            self._peak = _rss_mib()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self._t0 = time.perf_counter()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, _rss_mib())

    def __exit__(self, *exc) -> None:
        if self._cuda:
            import torch

            torch.cuda.synchronize(self._dev)
            seconds = time.perf_counter() - self._t0
            peak = torch.cuda.max_memory_allocated(self._dev) / 2**20
            kind = "cuda_max_allocated"
        else:
            seconds = time.perf_counter() - self._t0
            self._stop.set()
            self._thread.join()
            peak = max(self._peak, _rss_mib())
            kind = "process_rss"
        self.usage = Usage(seconds, peak, kind)
