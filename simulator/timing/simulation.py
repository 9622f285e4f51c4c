"""Simulate a schedule on a topology: the flow network as the engine's communication backend.

``simulate(schedule, G)`` places ranks on GPUs (``topologies.resolve_placement``), compiles the
schedule with the compute model (``simulator.compute``, configured from ``G.graph["sim"]``), runs the
simpy engine (``simulator.timing.engine``) with every collective decomposed into flows by
``simulator.collectives.run_collective`` on a ``simulator.network.flow_network.FlowNetwork``, and returns a
``simulator.timing.results.SimResult`` with per-rank, per-link and (optionally) per-op times.

A send/recv pair runs as ``run_collective``'s "send": the software latency (``CollectiveParams``' base
latency, NCCL's per-operation cost) and protocol start-up, then one transfer of the message on its route.
"""

from __future__ import annotations

import logging
import time

import networkx as nx
import simpy

from simulator.collectives import CollectiveParams, run_collective
from simulator.compute import ComputeConfig, ComputeModel
from simulator.gcpause import paused_gc
from simulator.ir.schedule import Schedule
from simulator.network.flow_network import FlowNetwork
from simulator.timing.engine import Engine
from simulator.timing.link_sampler import LinkSampler
from simulator.timing.plan import Instance, Plan, compile_schedule
from simulator.timing.sm_sharing import SmSharing
from simulator.timing.parts import part_times
from simulator.timing.results import LinkUsage, RankTimes, SimResult, Timeline, critical_rank
from topologies import link_name, resolve_placement

__all__ = ["simulate", "plan_on_graph", "NetworkBackend", "paused_gc"]

log = logging.getLogger(__name__)


def plan_on_graph(schedule: Schedule, G: nx.DiGraph, placement: str | list[str] | None = None,
                  compute: ComputeConfig | None = None) -> Plan:
    """Compile ``schedule`` for ``G``: ranks on GPUs by ``placement`` (a spec or a GPU-name list)."""
    if isinstance(placement, (list, tuple)):
        gpus = list(placement)
        missing = [g for g in gpus if g not in G.nodes]
        if missing:
            raise ValueError(f"placement names GPU {missing[0]!r}, which the topology does not have")
    else:
        grid = schedule.grid if len(schedule.grid) == 3 else None
        gpus = resolve_placement(placement, G, schedule.world_size, grid)
    devices = [G.nodes[g]["device"] for g in gpus]
    config = compute or ComputeConfig.from_sim(G.graph.get("sim"))
    plan = compile_schedule(schedule, gpus, devices, ComputeModel(config))
    plan.sharing = SmSharing.on_graph(G, list(gpus))
    return plan


class NetworkBackend:
    """Times instances on a FlowNetwork: collectives through ``run_collective``, send/recv as one flow."""

    def __init__(self, env: simpy.Environment, G: nx.DiGraph, algorithms: dict[str, str] | None = None,
                 params=None, router=None):
        self.net = FlowNetwork(env, G, router=router)
        self.params = params if params is not None else CollectiveParams.from_graph(G)
        self.algorithms = dict(algorithms or {})

    def start(self, env: simpy.Environment, inst: Instance) -> simpy.Event:
        if inst.kind == "p2p":
            return run_collective(env, self.net, "send", list(inst.gpus), inst.nbytes,
                                  algorithm=self.algorithms.get("send"), params=self.params)
        return run_collective(env, self.net, inst.kind, list(inst.gpus), inst.nbytes, root=inst.root,
                              algorithm=self.algorithms.get(inst.kind), params=self.params)


def link_usage(G: nx.DiGraph, stats: dict, makespan_s: float) -> tuple[LinkUsage, ...]:
    """LinkUsage for every link in ``stats`` ((u, v) -> bytes, busy_s), busiest first."""
    order = {edge: i for i, edge in enumerate(G.edges)}
    rows = []
    for (u, v), s in stats.items():
        busy = float(s.busy_s)
        rows.append(LinkUsage(u, v, G.edges[u, v].get("kind", ""), float(s.bytes), busy,
                              busy / makespan_s if makespan_s > 0 else 0.0, link_name(G, u, v)))
    rows.sort(key=lambda r: (-r.busy_s, -r.bytes, order.get((r.src, r.dst), 0)))
    return tuple(rows)


def simulate(schedule: Schedule, G: nx.DiGraph, placement: str | list[str] | None = None, *,
             algorithms: dict[str, str] | None = None, compute: ComputeConfig | None = None,
             timeline: bool = True, link_samples: int = 0, plan: Plan | None = None, router=None) -> SimResult:
    """Simulate ``schedule`` on topology ``G``.

    ``algorithms`` maps a collective kind to an algorithm (default: ``choose_algorithm``'s pick);
    ``timeline=False`` skips per-op times (faster for huge runs); ``link_samples`` > 0 samples link
    utilisation about that many times for trace counters. ``plan`` reuses a compiled plan (from
    ``plan_on_graph`` with the same placement) and ``router`` a ``topologies.Router`` of ``G``, whose
    routes it caches: both save work when one schedule or one topology is timed several times.
    """
    began = time.perf_counter()
    with paused_gc():
        plan = plan if plan is not None else plan_on_graph(schedule, G, placement, compute)
        compiled = time.perf_counter()
        env = simpy.Environment()
        backend = NetworkBackend(env, G, algorithms, router=router)
        engine = Engine(plan, backend, env)
        sampler = None
        if link_samples > 0:
            sampler = LinkSampler(env, backend.net, engine, link_samples)
        engine.run()
        ran = time.perf_counter()
        if timeline:
            engine.fill_timeline()
    makespan = max(engine.finish_s, default=0.0)
    # Compute slowed by collectives beside it (``sm_sharing``) is compute time.
    per_rank = tuple(RankTimes(r, plan.gpus[r], plan.compute_s[r] + engine.shared_s[r], engine.comm_s[r],
                               engine.wait_s[r], engine.finish_s[r]) for r in range(schedule.world_size))
    links = link_usage(G, backend.net.link_stats(), makespan)
    parts = part_times(plan, engine.starts, engine.ends, engine.waits, critical_rank(per_rank).rank)
    net = backend.net
    stats = {"instances": len(plan.instances), "collectives": sum(i.group is not None for i in plan.instances),
             "p2p": sum(i.group is None for i in plan.instances), "events": engine.events_scheduled(),
             "flows": net.flow_count, "rate_changes": getattr(net, "rate_changes", None),
             "fills": getattr(net, "fills", None)}
    result = SimResult("simulated", makespan, per_rank, links,
                       Timeline(schedule, engine.starts, engine.ends, engine.waits) if timeline else None,
                       meta=run_meta(schedule, G, placement, algorithms), stats=stats,
                       wall_s={"compile": compiled - began, "simulate": ran - compiled},
                       link_series=sampler.series(links[:8]) if sampler is not None else {}, parts=parts)
    log.info("simulated %s %s on %s: %.6g s in %.2f s wall", schedule.algorithm, list(schedule.grid),
             G.graph.get("name"), makespan, time.perf_counter() - began)
    return result


def run_meta(schedule: Schedule, G: nx.DiGraph, placement, algorithms) -> dict:
    """The ``meta`` object of a result: what was run, where."""
    return {"algorithm": schedule.algorithm, "grid": list(schedule.grid), "world_size": schedule.world_size,
            "workload": schedule.workload, "passes": schedule.passes, "dtype": schedule.dtype,
            "topology": G.graph.get("name"),
            "placement": placement if isinstance(placement, str) else "linear" if placement is None else "custom",
            "algorithm_overrides": dict(sorted((algorithms or {}).items()))}
