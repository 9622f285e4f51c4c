"""Timing on a shared machine: wait until the CPUs are idle, and tell a run that others disturbed.

The build machine is shared: other people's test runs start and stop while we measure. A
measurement is kept only if, while it ran, the CPU time spent by processes that are not ours stayed
small. ``/proc/stat`` gives the host's busy CPU time; ``resource.getrusage(RUSAGE_CHILDREN)`` gives
ours (a ``tpsim`` subprocess and every rank it forked, once they are reaped). The difference is
foreign work; divided by the wall time it is the number of cores others kept busy.

Linux only (``/proc/stat``).

Example::

    >>> wait_until_quiet(max_busy_cores=0.1, timeout_s=600)           # doctest: +SKIP
    >>> with ForeignLoad() as load:                                   # doctest: +SKIP
    ...     subprocess.run(["tpsim", "run", ...])
    >>> load.cores                                                    # doctest: +SKIP
    0.02
"""

from __future__ import annotations

import logging
import os
import resource
import time

from simulator.progress import INTERVAL_S

__all__ = ["busy_cores", "wait_until_quiet", "waiting_for", "ForeignLoad"]

log = logging.getLogger(__name__)

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _busy_s() -> float:
    """CPU seconds the whole host has spent busy since boot (all but idle and iowait)."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) * _TICK_S


def _ours_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime + own.ru_utime + own.ru_stime


def busy_cores(window_s: float = 1.0) -> float:
    """Cores kept busy over the next ``window_s`` seconds, by anyone."""
    start = _busy_s()
    time.sleep(window_s)
    return (_busy_s() - start) / window_s


def wait_until_quiet(max_busy_cores: float = 0.1, timeout_s: float = 900.0, quiet_s: int = 3,
                     every_s: float | None = None) -> float:
    """Block until ``quiet_s`` one-second windows in a row have at most ``max_busy_cores`` busy; the
    seconds waited. (Test suites run in bursts: one idle second is often a pause between two tests.)

    Every ``every_s`` seconds (default ``simulator.progress.INTERVAL_S``, 10) it logs what it waits
    for: the cores busy now and the load average against the threshold, how long so far and the
    limit. Gives up after ``timeout_s`` (logging a warning) rather than hanging an experiment forever.
    """
    every_s = INTERVAL_S if every_s is None else every_s
    began = time.monotonic()
    said = began
    calm = 0
    while True:
        busy = busy_cores()
        calm = calm + 1 if busy <= max_busy_cores else 0
        now = time.monotonic()
        if calm >= quiet_s:
            if now - began >= every_s:
                log.info("host quiet after %.0f s", now - began)
            return now - began
        if now - began > timeout_s:
            log.warning("host still busy (%.2f cores) after %.0f s; measuring anyway", busy, timeout_s)
            return now - began
        if now - said >= every_s:
            said = now
            log.info("waiting for a quiet host: %s; waited %.0f s of at most %.0f s",
                     waiting_for(busy, max_busy_cores, calm, quiet_s), now - began, timeout_s)


def waiting_for(busy: float, max_busy_cores: float, calm: int, quiet_s: int) -> str:
    """What a wait is for: ``0.85 cores busy now (load average 1.93), need <= 0.10 for 3 s in a row (1 so far)``."""
    return (f"{busy:.2f} cores busy now (load average {os.getloadavg()[0]:.2f}), need <= {max_busy_cores:.2f} "
            f"for {quiet_s} s in a row ({calm} so far)")


class ForeignLoad:
    """Context manager: ``cores`` is the mean number of cores others kept busy while it was open."""

    def __enter__(self) -> "ForeignLoad":
        self._t0, self._busy0, self._ours0 = time.monotonic(), _busy_s(), _ours_s()
        self.cores = 0.0
        return self

    def __exit__(self, *exc) -> None:
        wall = time.monotonic() - self._t0
        foreign = (_busy_s() - self._busy0) - (_ours_s() - self._ours0)
        # Tick granularity (10 ms per core) can make a short window's difference slightly negative.
        self.cores = max(0.0, foreign) / wall if wall > 0 else 0.0
