"""Large runs share what repeats across ranks and groups; sharing changes no result.

A schedule of 16,384 ranks holds ten million ops, and most are equal across ranks (every member of a
row issues the same broadcast, every rank the same gemm). The builder keeps one object per distinct op,
the compiled plan one item per distinct (instance, step) and one duration tuple per distinct rank
program, the engine its per-step times in arrays of doubles, and a collective plan its flows in
group-local ranks, shared by every group of the same shape. These tests hold each form and show that
a schedule built with no sharing at all simulates to the same result, bit for bit.
"""

from __future__ import annotations

import dataclasses
from array import array

import pytest
import simpy

from simulator.algorithms.registry import build_schedule
from simulator.collectives.run import plan_collective
from simulator.ir.schedule import Schedule
from simulator.network.flow_network import FlowNetwork
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.workloads.workload import Workload
from topologies.loader import load_topology
from topologies.validate import gpu_nodes


def _schedule() -> Schedule:
    return build_schedule("summa25d", Workload.mlp(64, 32), "both", "float32", grid=(2, 2, 2))


def test_equal_ops_of_different_ranks_are_one_object():
    ops = [op for program in _schedule().programs for op in program]
    assert len({id(op) for op in ops}) == len(set(ops)) < len(ops) / 2


def test_the_compiled_plan_shares_equal_items_and_equal_durations():
    schedule = _schedule()
    plan = plan_on_graph(schedule, load_topology("dgx-h100"))
    items = [item for rank_items in plan.items for item in rank_items]
    assert len({id(item) for item in items}) == len(set(items)) < len(items)
    assert len({id(d) for d in plan.durations}) == len(set(plan.durations)) < len(plan.durations)


def test_a_schedule_with_no_shared_ops_simulates_to_the_same_result():
    schedule = _schedule()
    fresh = dataclasses.replace(schedule, programs=[[dataclasses.replace(op) for op in program]
                                                    for program in schedule.programs])
    assert len({id(op) for program in fresh.programs for op in program}) == sum(map(len, fresh.programs))
    G = load_topology("dgx-h100")
    shared, unshared = simulate(schedule, G), simulate(fresh, G)
    assert isinstance(shared.timeline.starts[0], array)
    assert shared.to_dict(ops=True) == unshared.to_dict(ops=True)


def test_plans_of_one_shape_share_their_flows_and_name_their_own_nodes():
    G = load_topology("dgx-h100:4")
    net = FlowNetwork(simpy.Environment(), G)
    gpus = gpu_nodes(G)
    first, second = gpus[0::8], gpus[1::8]  # one GPU per server, rails 0 and 1: the same shape
    a = plan_collective(net, "broadcast", first, 1 << 24, root=1)
    b = plan_collective(net, "broadcast", second, 1 << 24, root=1)
    assert a.local_flows is b.local_flows
    for plan, members in ((a, first), (b, second)):
        for i, local in enumerate(plan.local_flows):
            assert plan.phase_flows(i) == tuple((members[s], members[d], plan.wire_factor * size,
                                                 None if v is None else members[v]) for s, d, size, v in local)
        assert [delay for delay, _ in plan.phases] == list(plan.delays)


def test_leader_flows_name_the_first_flow_of_each_group_only():
    G = load_topology("dgx-h100:2")
    net = FlowNetwork(simpy.Environment(), G)
    plan = plan_collective(net, "all_reduce", gpu_nodes(G), 1 << 26, algorithm="ring")
    assert any(len(group) > 1 for groups in plan.groups for group in groups)  # NCCL's rings repeat pairs
    for i, groups in enumerate(plan.groups):
        full, leaders = plan.phase_flows(i), plan.leader_flows(i)
        first = {group[0] for group in groups}
        assert [flow for j, flow in enumerate(leaders) if j in first] == [full[j] for j in sorted(first)]
        assert all(flow is None for j, flow in enumerate(leaders) if j not in first)
    assert net.leaders_only and not FlowNetwork(simpy.Environment(), G, group=False).leaders_only


def test_emit_fields_shares_the_op_emit_would_and_wants_every_field():
    from simulator.ir.builder import ScheduleBuilder
    from simulator.ir.ops import Broadcast, Wait

    b = ScheduleBuilder("custom", (2,), Workload.gemm(2, 2, 2), "fwd", "float32", 2, {"world": (0, 1)})
    b.emit(0, Broadcast(group="world", root=1, buf="A"))
    b.emit_fields(1, Broadcast, "world", 1, "A", None)
    b.emit_fields(0, Wait, "h")
    b.emit(1, Wait("h"))
    assert b.programs[0][0] is b.programs[1][0] and b.programs[0][1] is b.programs[1][1]
    with pytest.raises(AssertionError, match="every field"):
        b.emit_fields(0, Broadcast, "world", 0, "B")  # the handle left out


def test_ranks_share_equal_buffer_tables_and_every_op_keeps_its_own_time():
    from simulator.compute import ComputeConfig, ComputeModel
    from simulator.timing.plan import OP_ROLE

    schedule = _schedule()
    assert len({id(table) for table in schedule.buffers}) < schedule.world_size
    G = load_topology("dgx-h100")
    plan = plan_on_graph(schedule, G)
    model = ComputeModel(ComputeConfig.from_sim(G.graph.get("sim")))
    device = G.nodes[plan.gpus[0]]["device"]
    for rank, program in enumerate(schedule.programs):
        for step, op in enumerate(program):
            if OP_ROLE[type(op)] == 0:
                after = step > 0 and OP_ROLE[type(program[step - 1])] != 0
                assert plan.durations[rank][step] == model.op_time_s(schedule, rank, op, device, after)
