"""Per-op clocks: ``time.perf_counter`` on CPU, CUDA events on GPU, one interface.

A clock hands out marks while an iteration runs and turns them into seconds since the iteration's
start once the iteration is over (``finish``). On GPU a mark is a CUDA event recorded on the current
stream, so it measures when the stream reached that point, not when the CPU issued the work: a
blocking NCCL call returns to Python at once, but the compute stream waits for it, so the events
around it bracket the collective. Marks are cheap on both; the CPU clock's ~0.1 us per mark is well
below a gloo collective.

``origin_s()`` is the iteration's t = 0 as a reading of the host's monotonic clock, or None where the
clock has none. ``perf_counter`` is CLOCK_MONOTONIC on Linux, one clock for every process of a host, so
the origins of ranks on one host put their op times on one time line; CUDA event times are only
differences between events, with no host reading behind them.
"""

from __future__ import annotations

import time

import torch


class CpuClock:
    """Marks are perf_counter readings."""

    name = "perf_counter"

    def start(self) -> None:
        """Begin an iteration: t = 0 now."""
        self._t0 = time.perf_counter()

    def mark(self) -> float:
        return time.perf_counter()

    def finish(self) -> None:
        """Nothing to synchronise on CPU."""

    def seconds(self, mark: float) -> float:
        """Seconds from the iteration's start to ``mark``."""
        return mark - self._t0

    def origin_s(self) -> float:
        """The iteration's start as a perf_counter reading (host-monotonic seconds)."""
        return self._t0


class CudaClock:
    """Marks are CUDA events on the current stream; ``finish`` synchronises the device once."""

    name = "cuda_events"

    def start(self) -> None:
        self._t0 = self.mark()

    def mark(self) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def finish(self) -> None:
        torch.cuda.synchronize()

    def seconds(self, mark: torch.cuda.Event) -> float:
        return self._t0.elapsed_time(mark) / 1e3

    def origin_s(self) -> None:
        """None: an event's time has no host-clock reading behind it."""
        return None


def clock_for(device: torch.device) -> CpuClock | CudaClock:
    """The clock that times ops on ``device``."""
    return CudaClock() if device.type == "cuda" else CpuClock()
