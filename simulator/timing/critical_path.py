"""The analytic model of a whole schedule: a critical-path walk with closed-form communication times.

The same lock-step semantics as the simpy engine (``simulator.timing.engine``), on the same compiled plan
(``simulator.timing.plan``), without simpy and without contention: a collective starts when its last member
issues it and lasts its closed-form alpha-beta time from ``simulator.collectives.closed_form``; a send/recv pair starts
when both sides have posted and lasts the software latency plus its route's hop latencies plus
bytes over the route's slowest link. Every instance is timed as if it had the network to itself, so
the result is a lower bound on the simulated makespan, and equals it on a topology where concurrent
instances never share a link and each collective's phases are contention-free (``simulator.collectives.closed_form``).

``critical_path(plan, comm_time)`` is the walk for any ``comm_time(instance) -> seconds``;
``analyze(schedule, G)`` builds a ``SimResult`` (model "analytic") for a schedule on a topology graph,
each collective timed by ``simulator.collectives.closed_form.predict_collective_s`` with the algorithm and protocol
``run_collective`` would use, so the two models differ only by contention.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable

import networkx as nx
import simpy

from simulator.collectives import CollectiveParams
from simulator.collectives.closed_form import predict_collective_s
from simulator.compute import ComputeConfig
from simulator.errors import ScheduleError
from simulator.ir.schedule import Schedule
from simulator.network.flow_network import FlowNetwork
from simulator.timing.plan import COMM, RUN, Instance, Plan, fill_timeline, zeros
from simulator.timing.parts import part_times
from simulator.timing.results import RankTimes, SimResult, Timeline, critical_rank
from simulator.timing.simulation import paused_gc, plan_on_graph, run_meta

__all__ = ["CriticalPath", "critical_path", "ClosedForms", "analyze"]


class CriticalPath:
    """The walk's output: per-op ``starts``/``ends``/``waits`` and per-rank totals, as the engine has."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.starts = [zeros(len(d)) for d in plan.durations]  # arrays of doubles, as the engine's
        self.ends = [zeros(len(d)) for d in plan.durations]
        self.waits = [zeros(len(d)) for d in plan.durations]
        world = len(plan.items)
        self.comm_s = [0.0] * world
        self.wait_s = [0.0] * world
        self.shared_s = [0.0] * world
        """Compute lost to collectives running beside it (``simulator.timing.sm_sharing``)."""
        self.finish_s: list[float | None] = [None] * world


def critical_path(plan: Plan, comm_time: Callable[[Instance], float], timeline: bool = True) -> CriticalPath:
    """Walk ``plan`` with every instance lasting ``comm_time(instance)``; ScheduleError on a deadlock.

    ``timeline=False`` leaves compute ops' and asynchronous ops' times unfilled (``fill_timeline``):
    per-rank totals and part times read only blocking steps, and the fill is 4% of a 4,096-GPU bound."""
    plan.reset()
    out = CriticalPath(plan)
    world = len(plan.items)
    clock = [0.0] * world
    pos = [0] * world
    pending: list[tuple[Instance, int] | None] = [None] * world  # the blocking (instance, step) to settle
    blocked: dict[int, list[int]] = {}  # instance index -> ranks blocked on it, in blocking order
    ready = deque(range(world))
    sharing = plan.sharing
    busy = [0.0] * world  # compute so far, per rank
    issued: list[dict] = [{} for _ in range(world)]  # asynchronous instance -> (issue time, busy then)

    def settle(rank: int, inst: Instance, step: int) -> None:
        if issued[rank] and inst.index in issued[rank]:  # a wait: charge the compute beside it (sm_sharing)
            at, before = issued[rank].pop(inst.index)
            lost = sharing.extra_s(rank, inst.kind, at, busy[rank] - before, inst.start_s, inst.end_s, clock[rank],
                                   inst.sms)
            out.shared_s[rank] += lost
            clock[rank] += lost
            out.starts[rank][step] = clock[rank]
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
                busy[rank] += item[1]
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
                    if sharing is not None:
                        issued[rank][inst.index] = (now, busy[rank])
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
        raise ScheduleError(f"deadlock: rank {rank} is blocked at step {step} "
                            f"({plan.schedule.programs[rank][step].short()}) in {inst.label()}; "
                            f"{len(stuck)} of {world} ranks never finish")
    if timeline:
        fill_timeline(plan, out.starts, out.ends)
    return out


class ClosedForms:
    """``comm_time`` from ``simulator.collectives.closed_form.predict_collective_s``: each instance alone on
    the network, with the algorithm and protocol ``run_collective`` would use, memoised by the instance's shape."""

    def __init__(self, G: nx.DiGraph, algorithms: dict[str, str] | None = None, params=None, router=None):
        self.net = FlowNetwork(simpy.Environment(), G, router=router)  # routes and plan cache; never run
        self.params = params if params is not None else CollectiveParams.from_graph(G)
        self.algorithms = dict(algorithms or {})
        # In the network's plan cache, so analyses on one ``TopologyCache`` share it (keyed by what it reads).
        memo_key = ("closed forms", tuple(sorted(self.algorithms.items())), self.params)
        self._memo: dict[tuple, float] = self.net.cache.setdefault(memo_key, {})

    def __call__(self, inst: Instance) -> float:
        return self.time_s(inst.kind, inst.gpus, inst.nbytes, inst.root)

    def time_s(self, kind: str, gpus: tuple[str, ...], nbytes: int, root: int | None) -> float:
        """Seconds for one instance of this shape (``kind`` "p2p": a send/recv, ``gpus`` (src, dst))."""
        key = (kind, gpus, nbytes, root)
        time_s = self._memo.get(key)
        if time_s is None:
            name = "send" if kind == "p2p" else kind
            time_s = self._memo[key] = predict_collective_s(
                self.net, name, list(gpus), nbytes, root=root, algorithm=self.algorithms.get(name), params=self.params)
        return time_s


def analyze(schedule: Schedule, G: nx.DiGraph, placement: str | list[str] | None = None, *,
            algorithms: dict[str, str] | None = None, compute: ComputeConfig | None = None,
            timeline: bool = True, plan: Plan | None = None, router=None) -> SimResult:
    """The analytic (contention-free) timing of ``schedule`` on ``G``, as a ``SimResult``; arguments as
    ``simulator.timing.simulation.simulate``'s."""
    began = time.perf_counter()
    with paused_gc():
        plan = plan if plan is not None else plan_on_graph(schedule, G, placement, compute)
        compiled = time.perf_counter()
        walk = critical_path(plan, ClosedForms(G, algorithms, router=router), timeline)
    per_rank = tuple(RankTimes(r, plan.gpus[r], plan.compute_s[r] + walk.shared_s[r], walk.comm_s[r],
                               walk.wait_s[r], walk.finish_s[r]) for r in range(schedule.world_size))
    stats = {"instances": len(plan.instances), "collectives": sum(i.group is not None for i in plan.instances),
             "p2p": sum(i.group is None for i in plan.instances)}
    parts = part_times(plan, walk.starts, walk.ends, walk.waits, critical_rank(per_rank).rank)
    return SimResult("analytic", max(walk.finish_s, default=0.0), per_rank, (),
                     Timeline(schedule, walk.starts, walk.ends, walk.waits) if timeline else None,
                     meta=run_meta(schedule, G, placement, algorithms), stats=stats,
                     wall_s={"compile": compiled - began, "simulate": time.perf_counter() - compiled}, parts=parts)
