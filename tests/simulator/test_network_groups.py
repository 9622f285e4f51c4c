"""Groups of identical flows (one weighted flow each) give the very numbers of the flows run one by one."""

import networkx as nx
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms.registry import build_schedule
from simulator.network.flow_groups import same_flows
from simulator.network.flow_network import FlowNetwork, HopRouter
from simulator.timing.simulation import plan_on_graph
from simulator.workloads.workload import Workload
from tests.network_runs import random_tree, run_batches, run_collectives, run_plan
from topologies import gpu_nodes, load_topology

# What the tests would accept if the equivalence held only in real numbers; they check bit equality.
REL = 1e-12


def test_same_flows_groups_equal_tuples_in_order_of_first_appearance():
    flows = [("a", "b", 2.0, None), ("b", "c", 2.0, None), ("a", "b", 2.0, None), ("a", "b", 2.0, "x"),
             ("a", "a", 2.0, None), ("a", "a", 2.0, None), ("c", "d", 0.0, None), ("c", "d", 0.0, None),
             ("b", "c", 2.0, None), ("a", "b", 3.0, None)]
    assert same_flows(flows) == ((0, 2), (1, 8), (3,), (4,), (5,), (6,), (7,), (9,))


def _collectives(G, group: bool, calls):
    """Run ``calls`` ((delay_s, kind, members, nbytes, root), ...) on one network; arrival times, stats."""
    _, ends, net = run_collectives(G, calls, lambda env, G: FlowNetwork(env, G, group=group))
    return ends, net


def _same_numbers(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=REL, abs=0.0)
        assert a[key] == b[key], key


@pytest.mark.parametrize("topology", ["dgx-a100:2", "dgx-h100:4"])
def test_concurrent_collectives_across_servers_match_the_ungrouped_run(topology):
    G = load_topology(topology)
    gpus = gpu_nodes(G)
    rows = [gpus[i:i + 16] for i in range(0, len(gpus), 16)]
    calls = [(0.0, "all_reduce", gpus, 2**28, None), (0.0, "broadcast", rows[0], 3 * 2**24 + 7, 5),
             (1e-5, "reduce", rows[-1], 2**26, 2), (2e-5, "all_gather", gpus[::2], 2**27, None),
             (0.0, "reduce_scatter", gpus[1::3], 5 * 2**22, None), (3e-4, "broadcast", gpus, 2**20, 0),
             (0.0, "all_reduce", rows[0], 12345, None), (0.0, "send", [gpus[0], gpus[-1]], 2**25, None)]
    grouped_ends, grouped = _collectives(G, True, calls)
    alone_ends, alone = _collectives(G, False, calls)
    _same_numbers(grouped_ends, alone_ends)
    assert grouped.link_stats() == alone.link_stats()
    assert (grouped.flow_count, grouped.rate_changes) == (alone.flow_count, alone.rate_changes)
    assert grouped.fills <= alone.fills  # starts and drains of flows on loose links need no fill
    assert alone.flow_records == alone.flow_count
    assert grouped.flow_records < alone.flow_records / 2  # the rings' shared NVSwitch hops ran grouped


# 1d on two H100 servers: its all_reduces run NCCL's tree, whose flows are already one per GPU pair (nothing
# to group), so there the grouped run only has to give the same numbers; 2d's rings and chains group;
# cannon25d's shifts across four servers share NIC links with PXN routes, where loose links split them.
@pytest.mark.parametrize("algorithm, shape, topology, placement, fewer", [
    ("1d", {"gpus": 16}, "dgx-h100:2", None, False), ("2d", {"gpus": 64}, "dgx-a100:8", "halves", True),
    ("cannon25d", {"grid": (4, 4, 2)}, "dgx-h100:4", None, False)])
def test_a_whole_schedule_matches_the_ungrouped_run(algorithm, shape, topology, placement, fewer):
    G = load_topology(topology)
    if placement == "halves":  # rank 8j + i on server 2(j // 2) + i // 4: each row group 4 + 4 on two servers
        gpus = gpu_nodes(G)
        placement = [gpus[8 * (2 * (j // 2) + i // 4) + i % 4 + 4 * (j % 2)] for j in range(8) for i in range(8)]
    schedule = build_schedule(algorithm, Workload.mlp(4096, 1024), "both", "bfloat16", **shape)
    (a, net_a), (b, net_b) = (run_plan(plan_on_graph(schedule, G, placement), G, group) for group in (True, False))
    assert a.finish_s == b.finish_s and a.comm_s == b.comm_s and a.wait_s == b.wait_s
    assert a.starts == b.starts and a.ends == b.ends and a.waits == b.waits
    assert net_a.link_stats() == net_b.link_stats()
    assert (net_a.flow_count, net_a.rate_changes) == (net_b.flow_count, net_b.rate_changes)
    assert net_a.fills <= net_b.fills
    assert net_a.flow_records < net_b.flow_records if fewer else net_a.flow_records <= net_b.flow_records


def test_a_group_counts_its_members_and_a_timeline_lists_every_flow():
    G = nx.DiGraph()
    for a, b in (("h0", "s"), ("s", "h1"), ("h2", "s")):
        G.add_edge(a, b, bandwidth_GBps=10.0, latency_us=1.0)
    flows = [("h0", "h1", 1e9, None), ("h2", "h1", 1e9, None), ("h0", "h1", 1e9, None)]
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G))
    events = net.transfer_all(flows)
    env.process(_count_active(env, net, seen := []))
    env.run()
    assert len(events) == 2 and all(e.processed for e in events)
    assert net.flow_count == 3 and net.flow_records == 2 and net.rate_changes == 3 and seen == [3]
    assert env.now == pytest.approx(3 * 0.1 + 2e-6, rel=REL)  # three flows share s->h1
    assert net.link_stats()[("s", "h1")].bytes == 3e9 and net.link_stats()[("h0", "s")].bytes == 2e9
    env = simpy.Environment()
    recorded = FlowNetwork(env, G, router=HopRouter(G), record=True)
    assert len(recorded.transfer_all(flows)) == 3
    env.run()
    assert [e.flow for e in recorded.timeline if e.event == "start"] == [0, 1, 2]


def _count_active(env, net, seen):
    yield env.timeout(0.01)
    seen.append(net.active_flows)


@st.composite
def batches(draw):
    """A small random graph and batches of flows (repeats likely) started at random instants."""
    n = draw(st.integers(2, 5))
    G = random_tree(draw, n)
    sizes = st.sampled_from([0, 10**6 / 3, 3e6 / 7 + 0.1, 5e5, 10**6 + 1 / 9])  # sums that round
    flow = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), sizes, st.none())
    return G, draw(st.lists(st.tuples(st.sampled_from([0.0, 0.0, 1e-4, 3e-4]), st.lists(flow, min_size=1, max_size=8)),
                            min_size=1, max_size=5))


@settings(max_examples=60, deadline=None)
@given(batches())
def test_random_batches_match_the_reference_network(scenario):
    G, batches_ = scenario
    (got, net), (want, ref) = run_batches(G, batches_, True), run_batches(G, batches_, False)
    assert got == want and len(got) == sum(len(flows) for _, flows in batches_)
    assert net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    assert net.fills <= ref.fills  # a drain whose flows shared only loose links needs no fill


def test_a_link_that_drains_two_sizes_at_once_adds_them_in_flow_order():
    # Group A (flows 0 and 2, 1.5 GB, 4.5 GB/s each) and flow B (1, 1/3 GB, capped at 1 GB/s by h2->s)
    # share s->h1 and drain at the same instant: its counter must add A, B, A, as alone flows would
    # (A, A, B rounds differently).
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 10.0), ("h2", "s", 1.0), ("s", "h1", 10.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=1.0)
    a, b = 4.5e9 / 3, 1e9 / 3
    assert 0.0 + a + b + a != 0.0 + a + a + b
    flows = [("h0", "h1", a, None), ("h2", "h1", b, None), ("h0", "h1", a, None)]
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G))
    net.transfer_all(flows)
    env.run()
    assert net.flow_records == 2 and net.link_stats()[("s", "h1")].bytes == 0.0 + a + b + a


def test_a_link_its_flows_cannot_fill_joins_nothing_until_they_can():
    # s->t (10 GB/s) carries flows capped at 1 GB/s by their sources: loose, so each flow is filled
    # alone; the tenth and eleventh flows (a late batch from h4 at 5 GB/s) make it tight, and from
    # then on the link couples them. Every arrival and counter is the reference network's, bit for bit.
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 1.0), ("h2", "s", 1.0), ("h4", "s", 9.5), ("s", "t", 10.0),
                     ("t", "h1", 5.0), ("t", "h3", 5.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=0.5)
    batches_ = [(0.0, [("h0", "h1", 10**6 / 3, None), ("h2", "h3", 3e6 / 7 + 0.1, None)]),
                (1e-4, [("h0", "h3", 5e5, None)]),
                (2e-4, [("h4", "h1", 10**6 + 1 / 9, None), ("h4", "h3", 10**6 / 3, None)])]
    (got, net), (want, ref) = run_batches(G, batches_, True), run_batches(G, batches_, False)
    assert got == want and net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    assert net.fills < ref.fills
