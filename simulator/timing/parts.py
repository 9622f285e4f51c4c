"""Time per layer part: where one rank's compute, communication and waiting went, by the part
(``ln1``, ``qkv``, ``attn``, ``proj``, ``fc1``, ...) of the layer each op lowers.

A schedule names its parts (``Schedule.parts``, ``Schedule.part_of``); gemm and mlp schedules name
none, and their results carry no parts. A rank's time splits exactly as ``RankTimes`` does, op by op:

- compute: each compute op's duration, to its own part;
- communication and waiting: the time a rank was blocked at a blocking communication op or a
  ``wait``, to that op's part, the share before the instance started (a peer had not issued it yet)
  as waiting and the rest as communication. An asynchronous op blocks nothing where it is issued:
  its exposed time counts at its ``wait``, in the wait's part.

So a rank's parts sum to its ``compute_s``, ``comm_s`` and ``wait_s`` (up to rounding in the order of
the sums), and the critical rank's to the makespan.

Example, on a transformer schedule::

    >>> times = part_times(plan, engine.starts, engine.ends, engine.waits, rank=3)   # doctest: +SKIP
    >>> times["qkv"].compute_s, times["attn"].comm_s                                # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.ir.schedule import Schedule
from simulator.timing.plan import COMM, RUN, WAIT, Plan

__all__ = ["PartTime", "part_labels", "part_times"]


@dataclass(frozen=True)
class PartTime:
    """One rank's seconds in the ops of one layer part; the fields split as ``RankTimes``' do."""

    compute_s: float = 0.0
    """Seconds computing in the part's ops."""
    comm_s: float = 0.0
    """Seconds blocked at the part's communication ops and waits while the communication was in flight."""
    wait_s: float = 0.0
    """Seconds blocked there because a peer had not issued the op yet."""

    def to_dict(self) -> dict:
        return {"compute_s": self.compute_s, "comm_s": self.comm_s, "wait_s": self.wait_s}


def part_labels(schedule: Schedule, rank: int) -> list[str]:
    """The part of each of ``rank``'s steps ("" where unlabelled), in one pass over its runs."""
    n = len(schedule.programs[rank])
    labels = [""] * n
    runs = schedule.parts[rank] if rank < len(schedule.parts) else ()
    for i, (first, name) in enumerate(runs):
        stop = runs[i + 1][0] if i + 1 < len(runs) else n
        labels[first:stop] = [name] * (min(stop, n) - first)
    return labels


def part_times(plan: Plan, starts: list[list[float]], ends: list[list[float]], waits: list[list[float]],
               rank: int) -> dict[str, PartTime]:
    """``rank``'s time per part, parts in the order the rank first enters them; empty when the
    schedule names no parts. ``starts``/``ends``/``waits`` are a finished run's (the engine's or the
    critical-path walk's), with or without ``fill_timeline``: only blocking steps' ends are read."""
    schedule = plan.schedule
    if not schedule.parts:
        return {}
    labels = part_labels(schedule, rank)
    durations, rank_starts, rank_ends, rank_waits = plan.durations[rank], starts[rank], ends[rank], waits[rank]
    totals: dict[str, list[float]] = {}
    for item in plan.items[rank]:
        code = item[0]
        if code == RUN:
            for step in range(item[2], item[3]):
                totals.setdefault(labels[step], [0.0, 0.0, 0.0])[0] += durations[step]
            continue
        step = item[2]
        entry = totals.setdefault(labels[step], [0.0, 0.0, 0.0])
        if code == WAIT or (code == COMM and not item[3]):
            blocked = rank_ends[step] - rank_starts[step]
            if blocked > 0:
                entry[1] += blocked - rank_waits[step]
                entry[2] += rank_waits[step]
    return {label: PartTime(*values) for label, values in totals.items()}
