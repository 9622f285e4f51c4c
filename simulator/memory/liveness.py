"""The workspace a rank's program holds at once: buffer liveness over its program order.

A buffer is live from the op that writes it afresh to the last op that reads it before the next fresh
write: a fresh write is one that does not read the buffer (a gemm without ``accumulate``, a local op,
an all-gather's or reduce-scatter's output, a recv, a broadcast on a non-root member), so a workspace
panel reused by every SUMMA step, or the 1-D sequence-parallel gather repeated in the backward, is
live only around its uses. A buffer read before any write (a schedule input such as dY) is live from
its first read. An asynchronous communication op keeps its buffers live until its ``wait``.

``peak_live`` is the largest sum of the live buffers' bytes at any step, with the step and the
buffers live there. The buffers left out (weights, weight gradients, kept activations) are counted
elsewhere (``simulator.memory.training``).

Example: ``T = A B; C = T B`` on one rank, A, B given: T is live at steps 0 and 1, C at step 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.ir.ops import Broadcast, CommOp, Op, Wait
from simulator.ir.schedule import Schedule

__all__ = ["Live", "live_intervals", "peak_live"]


@dataclass(frozen=True)
class Live:
    """The peak of one rank: ``nbytes`` live at ``step``, the buffers live there, largest first."""

    nbytes: int
    step: int
    buffers: tuple[str, ...]


def _touches(schedule: Schedule, rank: int, op: Op):
    """(buffer, fresh) for every buffer ``op`` touches: fresh when it is written without being read."""
    reads, writes = op.reads(), op.writes()
    if isinstance(op, Broadcast) and schedule.groups[op.group][op.root] != rank:
        reads = ()  # a non-root member receives: the old contents are overwritten
    for name in dict.fromkeys((*reads, *writes)):
        yield name, name in writes and name not in reads


def live_intervals(schedule: Schedule, rank: int, skip: set[str]) -> list[tuple[str, int, int]]:
    """(buffer, first step, last step) of every live interval on ``rank``, buffers in ``skip`` left out."""
    program = schedule.programs[rank]
    wait_of, pending = {}, {}  # async op's step -> its wait's step (a handle name may be reused)
    for step, op in enumerate(program):
        if isinstance(op, Wait):
            wait_of[pending.pop(op.handle)] = step
        elif isinstance(op, CommOp) and op.handle is not None:
            pending[op.handle] = step
    events: dict[str, list[tuple[int, bool]]] = {}
    for step, op in enumerate(program):
        if isinstance(op, Wait):
            continue
        for name, fresh in _touches(schedule, rank, op):
            if name in skip:
                continue
            events.setdefault(name, []).append((step, fresh))
            if isinstance(op, CommOp) and op.handle is not None:
                events[name].append((wait_of.get(step, step), False))  # in use until its wait
    intervals = []
    for name, touched in events.items():
        touched.sort(key=lambda event: event[0])  # a wait's extension lands on the wait's own step
        start = last = None
        for step, fresh in touched:
            if fresh and start is not None:  # a fresh write ends the previous contents' life
                intervals.append((name, start, last))
                start = None
            if start is None:
                start = step
            last = step
        intervals.append((name, start, last))
    return intervals


def peak_live(schedule: Schedule, rank: int, skip: set[str]) -> Live:
    """The largest live sum of ``rank``'s buffers outside ``skip``, where it occurs, and what is live."""
    n = len(schedule.programs[rank])
    delta = [0] * (n + 1)
    intervals = live_intervals(schedule, rank, skip)
    sizes = schedule.buffers[rank]
    for name, first, last in intervals:
        delta[first] += sizes[name].nbytes
        delta[last + 1] -= sizes[name].nbytes
    best, at, running = 0, 0, 0
    for step in range(n):
        running += delta[step]
        if running > best:
            best, at = running, step
    live = sorted((name for name, first, last in intervals if first <= at <= last),
                  key=lambda name: (-sizes[name].nbytes, name))
    return Live(best, at, tuple(live))
