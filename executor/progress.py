"""Where each local rank is, on a shared-memory board the launcher reads when a job times out.

The board is an anonymous shared mapping created before the fork, one row per rank: (state, schedule
index, iteration, step). A rank updates its row before every op (a few numpy stores); the launcher
reads the rows to explain a timeout: a rank in a *waiting* state is blocked on its peers, a rank
in any other state is busy in its own code (or stuck there), which is what "never arrives" means; and,
while the job runs, for the progress line of ``tpsim run`` and ``tpsim bench`` (``completed``).

Beside the rows, each rank has a heartbeat (the ``time.monotonic_ns`` of its last beat, from a thread of
its own: ``executor.heartbeat``) and its process id, so that a rank stopped by SIGSTOP, or frozen, is
told apart from ranks blocked waiting for it: its row says "communicating" as theirs do, but its
heartbeat has stopped.
"""

from __future__ import annotations

import mmap
import time

import numpy as np

STATES = ("starting (before the rendezvous)", "rendezvous", "creating groups", "allocating", "computing",
          "communicating", "busy in its own code", "checking", "gathering results", "done")
WAITING = frozenset({"rendezvous", "creating groups", "communicating", "gathering results"})
_CODE = {name: code for code, name in enumerate(STATES)}


class ProgressBoard:
    """One row (state, schedule, iteration, step) per rank, shared across fork."""

    def __init__(self, world_size: int):
        self._map = mmap.mmap(-1, max(1, world_size * 6 * 8))
        self.rows = np.ndarray((world_size, 4), dtype=np.int64, buffer=self._map)
        self.rows[:] = -1
        self.rows[:, 0] = _CODE[STATES[0]]
        self.beats = np.ndarray((world_size,), dtype=np.int64, buffer=self._map, offset=world_size * 4 * 8)
        """Per rank: ``time.monotonic_ns()`` at its last heartbeat (one clock for every process); -1 before."""
        self.pids = np.ndarray((world_size,), dtype=np.int64, buffer=self._map, offset=world_size * 5 * 8)
        """Per rank: its process id, once it has started its heartbeat; -1 before."""
        self.beats[:] = -1
        self.pids[:] = -1

    def beat(self, rank: int) -> None:
        """Record that ``rank`` is alive now (called by its heartbeat thread)."""
        self.beats[rank] = time.monotonic_ns()

    def silence_s(self, rank: int, now_ns: int | None = None) -> float | None:
        """Seconds since ``rank``'s last heartbeat; None if it never beat."""
        last = int(self.beats[rank])
        return None if last < 0 else ((time.monotonic_ns() if now_ns is None else now_ns) - last) / 1e9

    def update(self, rank: int, state: str, schedule: int = -1, iteration: int = -1, step: int = -1) -> None:
        """Record that ``rank`` is in ``state`` (at ``step`` of ``iteration`` of schedule ``schedule``)."""
        self.rows[rank] = (_CODE[state], schedule, iteration, step)

    def state(self, rank: int) -> tuple[str, int, int, int]:
        """(state, schedule, iteration, step) of ``rank``; -1 where not applicable."""
        code, schedule, iteration, step = (int(v) for v in self.rows[rank])
        return STATES[code], schedule, iteration, step

    def completed(self, iterations: int, schedules: int) -> int:
        """How far the slowest rank is, in iterations of ``schedules`` schedules of ``iterations`` each.

        A rank in iteration i of schedule s has finished s * iterations + i of them; one checking or
        gathering the results of schedule s, (s + 1) * iterations; a rank done, all. Example: 2 schedules
        of 6 iterations, rank 0 in iteration 3 of schedule 1 (9 done), rank 1 checking schedule 0 (6): 6.
        """
        done = []
        for code, schedule, iteration, _ in self.rows.tolist():
            state = STATES[code]
            if state == "done" or (state == "gathering results" and schedule < 0):
                done.append(schedules * iterations)
            elif schedule < 0:
                done.append(0)
            elif state in ("checking", "gathering results"):
                done.append((schedule + 1) * iterations)
            else:
                done.append(schedule * iterations + max(iteration, 0))
        return min(done, default=0)
