"""``TopologyCache``: networks that share routes and plans give the numbers fresh networks give, bit for bit."""

from __future__ import annotations

import pytest
import simpy

from simulator.algorithms.registry import build_schedule
from simulator.network.flow_network import FlowNetwork
from simulator.network.topology_cache import TopologyCache
from simulator.predict import predict
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies import gpu_nodes, load_topology


def _numbers(result):
    """Everything a run reports that the cache could change: times per rank and per link."""
    return (result.makespan_s, [(r.comm_s, r.wait_s, r.finish_s) for r in result.per_rank],
            [(u.src, u.dst, u.bytes, u.busy_s) for u in result.links])


def test_runs_on_one_cache_match_runs_on_fresh_networks():
    G = load_topology("dgx-a100:4")
    shared = TopologyCache(G)
    workload = Workload.mlp(4096, 1024)
    schedules = [build_schedule("summa25d", workload, "both", "bfloat16", grid=(4, 4, 2)),
                 build_schedule("2d", workload, "both", "bfloat16", grid=(4, 4, 1)),
                 build_schedule("1d", workload, "both", "bfloat16", gpus=32)]
    for algorithms in (None, {"all_reduce": "ring", "broadcast": "chain"}):
        for schedule in schedules:  # the analysis first: the simulation then reads the plans it cached
            bound = analyze(schedule, G, algorithms=algorithms, timeline=False, router=shared)
            sim = simulate(schedule, G, algorithms=algorithms, timeline=False, router=shared)
            assert _numbers(bound) == _numbers(analyze(schedule, G, algorithms=algorithms, timeline=False))
            assert _numbers(sim) == _numbers(simulate(schedule, G, algorithms=algorithms, timeline=False))
    assert len(shared.plans) > 0 and len(shared.links.routes) > 0


def test_predict_rows_do_not_depend_on_the_shared_cache():
    G = load_topology("dgx-a100:2")
    workload = Workload.mlp(4096, 2048)
    rows = [r for r in predict(G, workload, gpus=16) if not r.skipped]  # every row simulated and bounded
    assert len(rows) >= 5
    for row in rows:
        a = row.arrangement
        kw = {"gpus": a.grid[0]} if a.algorithm in ("1d", "1d-sp") else {"grid": a.grid}
        schedule = build_schedule(a.algorithm, workload, "both", "bfloat16", **kw)
        assert row.time_s == simulate(schedule, G, timeline=False).makespan_s, a.label
        assert row.analytic_s == analyze(schedule, G, timeline=False).makespan_s, a.label


def test_a_cache_is_refused_on_another_graph():
    shared = TopologyCache(load_topology("dgx-a100"))
    with pytest.raises(ValueError, match="another graph"):
        FlowNetwork(simpy.Environment(), load_topology("dgx-a100"), router=shared)


def test_the_planning_network_is_one_per_cache_and_bounds_as_fresh_networks_do():
    # bound_stream times buckets by closed forms on the cache's planner (never run) instead of a new network
    # per call: the same times, bit for bit, as a fresh network without any cache.
    from simulator.network.topology_cache import planning_network
    from simulator.training.dp_reduce import bound_stream
    from simulator.training.gradients import Bucket

    G = load_topology("dgx-h100:4")
    shared = TopologyCache(G)
    assert planning_network(G, shared) is shared.planner() is shared.planner()
    assert planning_network(G, None) is not planning_network(G, None)
    gpus = gpu_nodes(G)
    assert len(gpus) == 32
    groups = [gpus[i::8] for i in range(8)] + [gpus[:8], gpus[8:24]]
    streams = [[Bucket(25e6, 0.0), Bucket(3e6 + 7 * i, 1e-3 * i), Bucket(0, 0.5)] for i in range(len(groups))]
    for kind in ("all_reduce", "reduce_scatter", "all_gather"):
        for algorithms in (None, {kind: "ring"}):
            cached = bound_stream(G, groups, streams, kind, router=shared, algorithms=algorithms)
            again = bound_stream(G, groups, streams, kind, router=shared, algorithms=algorithms)
            fresh = bound_stream(G, groups, streams, kind, router=None, algorithms=algorithms)
            assert cached == again == fresh > 0
