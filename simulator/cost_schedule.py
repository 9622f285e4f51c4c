"""The analytic model of a whole schedule: a critical-path walk with closed-form communication times.

The same lock-step semantics as the simpy engine (``simulator.engine``), on the same compiled plan
(``simulator.plan``), without simpy and without contention: a collective starts when its last member
issues it and lasts its closed-form alpha-beta time from ``simulator.cost``; a send/recv pair starts
when both sides have posted and lasts the software latency plus its route's hop latencies plus
bytes over the route's slowest link. Every instance is timed as if it had the network to itself, so
the result is a lower bound on the simulated makespan, and equals it on a topology where concurrent
instances never share a link.

``critical_path(plan, comm_time)`` is the walk for any ``comm_time(instance) -> seconds``;
``analyze`` builds a ``SimResult`` for a schedule on a topology graph.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from simulator.plan import COMM, RUN, Instance, Plan, fill_timeline

__all__ = ["CriticalPath", "critical_path"]


class CriticalPath:
    """The walk's output: per-op ``starts``/``ends``/``waits`` and per-rank totals, as the engine has."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.starts = [[0.0] * len(d) for d in plan.durations]
        self.ends = [[0.0] * len(d) for d in plan.durations]
        self.waits = [[0.0] * len(d) for d in plan.durations]
        world = len(plan.items)
        self.comm_s = [0.0] * world
        self.wait_s = [0.0] * world
        self.finish_s: list[float | None] = [None] * world


def critical_path(plan: Plan, comm_time: Callable[[Instance], float]) -> CriticalPath:
    """Walk ``plan`` with every instance lasting ``comm_time(instance)``; ValueError on a deadlock."""
    plan.reset()
    out = CriticalPath(plan)
    world = len(plan.items)
    clock = [0.0] * world
    pos = [0] * world
    pending: list[tuple[Instance, int] | None] = [None] * world  # the blocking (instance, step) to settle
    blocked: dict[int, list[int]] = {}  # instance index -> ranks blocked on it, in blocking order
    ready = deque(range(world))

    def settle(rank: int, inst: Instance, step: int) -> None:
        arrival = out.starts[rank][step]
        end, begun = inst.end_s, inst.start_s
        if end > arrival:
            out.ends[rank][step] = end
            if begun > arrival:
                out.waits[rank][step] = begun - arrival
                out.wait_s[rank] += begun - arrival
                out.comm_s[rank] += end - begun
            else:
                out.comm_s[rank] += end - arrival
            clock[rank] = end
        else:
            out.ends[rank][step] = arrival

    while ready:
        rank = ready.popleft()
        if pending[rank] is not None:
            settle(rank, *pending[rank])
            pending[rank] = None
        items = plan.items[rank]
        starts = out.starts[rank]
        i = pos[rank]
        while i < len(items):
            item = items[i]
            i += 1
            code = item[0]
            if code == RUN:
                starts[item[2]] = clock[rank]
                clock[rank] += item[1]
                continue
            inst, step = item[1], item[2]
            now = clock[rank]
            starts[step] = now
            if code == COMM:
                inst.arrived += 1
                if now > inst.last_arrival_s:
                    inst.last_arrival_s = now
                if inst.arrived == inst.expected:
                    inst.start_s = inst.last_arrival_s
                    inst.end_s = inst.start_s + comm_time(inst)
                    ready.extend(blocked.pop(inst.index, ()))
                if item[3]:
                    continue
            if inst.end_s is None:
                blocked.setdefault(inst.index, []).append(rank)
                pending[rank] = (inst, step)
                break
            settle(rank, inst, step)
        pos[rank] = i
        if i == len(items) and pending[rank] is None:
            out.finish_s[rank] = clock[rank]
    stuck = [r for r, t in enumerate(out.finish_s) if t is None]
    if stuck:
        rank = stuck[0]
        inst, step = pending[rank]
        raise ValueError(f"deadlock: rank {rank} is blocked at step {step} "
                         f"({plan.schedule.programs[rank][step].short()}) in {inst.label()}; "
                         f"{len(stuck)} of {world} ranks never finish")
    fill_timeline(plan, out.starts, out.ends)
    return out
