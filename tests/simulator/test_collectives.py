"""Collectives on the flow network: contention-free runs equal the closed forms; contention slows them."""

import networkx as nx
import pytest
import simpy

from simulator.collectives import (ALGORITHMS, CollectiveParams, choose_algorithm, decompose, plan_collective,
                                   run_collective)
from simulator.collectives.closed_form import collective_time_s, predict_collective_s
from simulator.collectives.trees import binomial_rounds, btree_parents, dbtree_parents, dbtree_port_load
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork, HopRouter


def switch(n: int, bw: float = 100.0, lat: float = 0.5) -> nx.DiGraph:
    """n GPUs gpu0.. on one switch (per-direction ``bw`` GB/s, ``lat`` us per hop), sim latency 8 us."""
    G = nx.DiGraph(sim={"collective_base_latency_us": 8.0})
    for i in range(n):
        G.add_node(f"gpu{i}", kind="gpu", server=0)
        for a, b in ((f"gpu{i}", "sw"), ("sw", f"gpu{i}")):
            G.add_edge(a, b, bandwidth_GBps=bw, latency_us=lat, kind="nvswitch")
    return G


def simulate(G, kind, n, nbytes, **kw):
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G))
    proc = run_collective(env, net, kind, [f"gpu{i}" for i in range(n)], nbytes, **kw)
    env.run()
    return env.now, proc.value, net


# Every algorithm on one switch; the NVLS tree runs across servers only (tests/simulator/test_nccl_nvls_tree.py).
CASES = [(kind, alg) for kind, algs in ALGORITHMS.items() for alg in algs if alg != "nvls_tree"]


@pytest.mark.parametrize("kind, algorithm", CASES)
@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("nbytes", [4096, 3 * 2**20 + 5, 2**28])
@pytest.mark.parametrize("protocol", ["auto", "ll"])
def test_contention_free_run_equals_closed_form(kind, algorithm, n, nbytes, protocol):
    if kind == "send" and n != 2:
        pytest.skip("send has two members")
    G = switch(16)
    G.graph["sim"]["collective_protocol"] = protocol
    G.graph["sim"]["collective_step_latency_us"] = 0.25
    root = 1 if kind in ("broadcast", "reduce") else None
    t, plan, _ = simulate(G, kind, n, nbytes, algorithm=algorithm, root=root)
    params = CollectiveParams.from_graph(G)
    # On a switch: two 0.5 us hops per step plus the 0.25 us software step latency; 100 GB/s.
    expected = collective_time_s(kind, algorithm, n, nbytes, 1.25e-6, 100e9, params, plan.protocol)
    assert t == pytest.approx(expected, rel=1e-9)


def test_ring_all_reduce_closed_form_by_hand():
    # 4 ranks, 64 MiB, Simple: 8 us + 1 MiB / 20 GB/s + 6 steps x 1 us + 1.5 x 64 MiB / 100 GB/s.
    G = switch(4)
    G.graph["sim"]["collective_protocol"] = "simple"
    t, plan, net = simulate(G, "all_reduce", 4, 64 * 2**20, algorithm="ring")
    assert t == pytest.approx(8e-6 + 2**20 / 20e9 + 6e-6 + 1.5 * 64 * 2**20 / 100e9, rel=1e-12)
    assert (plan.algorithm, plan.protocol) == ("ring", "simple")
    assert net.flow_count == 4
    assert net.link_stats()[("gpu0", "sw")].bytes == pytest.approx(1.5 * 64 * 2**20)


def test_predict_matches_the_simulated_default_choice():
    G = switch(8)
    for nbytes in (8, 2**16, 2**20, 2**30):
        t, _, net = simulate(G, "all_reduce", 8, nbytes)
        assert t == pytest.approx(predict_collective_s(net, "all_reduce", [f"gpu{i}" for i in range(8)], nbytes),
                                  rel=1e-9)


def _two_leaves():
    G = nx.DiGraph(sim={"collective_protocol": "simple", "collective_startup_bytes": 0})
    for i in range(8):
        leaf = f"leaf{i % 2}"
        for a, b in ((f"gpu{i}", leaf), (leaf, f"gpu{i}")):
            G.add_edge(a, b, bandwidth_GBps=100.0, latency_us=0.0)
    for a, b in (("leaf0", "leaf1"), ("leaf1", "leaf0")):
        G.add_edge(a, b, bandwidth_GBps=100.0, latency_us=0.0)
    return G


@pytest.mark.parametrize("together", [False, True])
def test_contention_slows_a_collective_down(together):
    # Even GPUs on leaf0, odd on leaf1, one 100 GB/s link pair between the leaves. A ring over
    # gpu0..3 crosses leaf0->leaf1 twice (0->1, 2->3): its flows get 50 GB/s. A second ring over
    # gpu4..7 started at the same time halves that again.
    G = _two_leaves()
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G))
    S = 2**30
    a = run_collective(env, net, "all_reduce", ["gpu0", "gpu1", "gpu2", "gpu3"], S, algorithm="ring")
    if together:
        run_collective(env, net, "all_reduce", ["gpu4", "gpu5", "gpu6", "gpu7"], S, algorithm="ring")
    env.run()
    assert a.processed
    sharing = 4 if together else 2
    assert env.now == pytest.approx(8e-6 + sharing * 1.5 * S / 100e9, rel=1e-9)
    assert env.now > collective_time_s("all_reduce", "ring", 4, S, 0.0, 100e9, CollectiveParams.from_graph(G))


def test_one_rank_costs_the_base_latency():
    t, plan, net = simulate(switch(2), "all_reduce", 1, 2**20)
    assert t == pytest.approx(8e-6) and net.flow_count == 0


def test_default_algorithms_are_nccl_like():
    assert choose_algorithm("broadcast", 8, 2**20) == "chain"
    assert choose_algorithm("reduce_scatter", 8, 2**20) == "ring"
    assert choose_algorithm("all_reduce", 8, 2**30) == "ring"
    assert choose_algorithm("all_reduce", 8, 2**10) == "ring"  # one server: ring LL beats the tree
    # Many servers, small message: the tree's log2(nodes) latency wins; large: the ring's bandwidth.
    assert choose_algorithm("all_reduce", 512, 2**16, n_nodes=64, bandwidth_GBps=24.0) == "double_binary_tree"
    assert choose_algorithm("all_reduce", 512, 2**30, n_nodes=64, bandwidth_GBps=24.0) == "ring"


def test_protocols_by_size_on_one_a100_server():
    # NCCL's tuning model prefers LL, LL, LL128, Simple; at 1 MiB its LL is 27% slower than Simple in the
    # simulation (LL pays the start-up too), so its next choice, LL128 (within 10%), runs.
    G = switch(8, bw=230.0)
    plans = [simulate(G, "all_reduce", 8, s)[1].protocol for s in (2**10, 2**20, 2**24, 2**26)]
    assert plans == ["ll", "ll128", "ll128", "simple"]


def test_trees_match_nccl_shapes():
    assert btree_parents(8) == (-1, 2, 4, 2, 0, 6, 4, 6)
    first, second = dbtree_parents(8)
    assert second == (1, 3, 1, 7, 5, 3, 5, -1)  # mirror: interior ranks of one tree are leaves of the other
    assert dbtree_port_load(8) == 4
    assert binomial_rounds(6) == [[(0, 1)], [(0, 2), (1, 3)], [(0, 4), (1, 5)]]
    assert binomial_rounds(3, root=2) == [[(2, 0)], [(2, 1)]]


def test_decomposition_byte_counts():
    ring = decompose("all_reduce", "ring", 4, 400.0)
    assert [f[2] for f in ring[0].flows] == [600.0] * 4 and ring[0].steps == 6
    direct = decompose("all_gather", "direct", 4, 400.0)
    assert len(direct[0].flows) == 12 and direct[0].flows[0][2] == 100.0
    chain = decompose("reduce", "chain", 3, 10.0, root=1)
    assert [f[:2] for f in chain[0].flows] == [(0, 2), (2, 1)]


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(kind="gather"), "unknown collective kind 'gather'; valid: broadcast"),
     (dict(kind="all_reduce", algorithm="chain"), "algorithm 'chain' is not available; valid: ring"),
     (dict(kind="broadcast", root=4), r"root must be a group-local rank in 0..3"),
     (dict(kind="send"), r"send: members must be \[source, destination\]"),
     (dict(kind="all_reduce", nbytes=-1), "nbytes must be a number >= 0")],
)
def test_bad_collectives_are_input_errors(kwargs, message):
    G = switch(4)
    net = FlowNetwork(simpy.Environment(), G, router=HopRouter(G))
    args = dict(kind="all_reduce", members=[f"gpu{i}" for i in range(4)], nbytes=10)
    args.update(kwargs)
    with pytest.raises(InputError, match=message):
        plan_collective(net, **args)


def test_bad_sim_parameters_are_input_errors():
    with pytest.raises(InputError, match="protocol must be one of auto, simple, ll128, ll"):
        CollectiveParams.from_sim({"collective_protocol": "fast"})
    with pytest.raises(InputError, match="pipeline_chunks must be an integer >= 1"):
        CollectiveParams.from_sim({"collective_pipeline_chunks": 0})
    assert CollectiveParams.from_sim({"collective_startup_bytes": 1048576.0}).startup_bytes == 2**20
    with pytest.raises(InputError, match="collective_kind_bytes_factors must be a mapping"):
        CollectiveParams.from_sim({"collective_kind_bytes_factors": 2.0})
    with pytest.raises(InputError, match=r"must map a kind \(broadcast, .*\) to a number > 0, got \('gather', 2\.0\)"):
        CollectiveParams.from_sim({"collective_kind_bytes_factors": {"gather": 2.0}})
    with pytest.raises(InputError, match=r"to a number > 0, got \('send', 0\)"):
        CollectiveParams.from_sim({"collective_kind_bytes_factors": {"send": 0}})


@pytest.mark.parametrize("kind, n", [("broadcast", 4), ("all_reduce", 4), ("reduce_scatter", 3), ("send", 2)])
def test_a_kind_factor_times_the_collective_as_that_many_more_bytes(kind, n):
    """Simulated and closed form alike: factor f on S costs what S x f costs with no factor, and other
    kinds are untouched."""
    G = switch(4)
    t_plain, _, _ = simulate(G, kind, n, 3 << 20)
    G.graph["sim"]["collective_kind_bytes_factors"] = {kind: 1.5}
    params = CollectiveParams.from_graph(G)
    assert params.bytes_factor(kind) == 1.5 and params.bytes_factor("all_gather") == 1.0
    t_scaled, plan, net = simulate(G, kind, n, 2 << 20)
    assert t_scaled == pytest.approx(t_plain, rel=1e-12) and plan.nbytes == 3 << 20
    members = [f"gpu{i}" for i in range(n)]
    assert predict_collective_s(net, kind, members, 2 << 20) == pytest.approx(t_plain, rel=1e-9)
    other = "all_gather" if kind != "all_gather" else "broadcast"
    t_other, _, _ = simulate(G, other, 4, 2 << 20)
    del G.graph["sim"]["collective_kind_bytes_factors"]
    assert simulate(G, other, 4, 2 << 20)[0] == t_other


def test_whole_timeline_of_a_three_rank_ring_all_gather():
    # S = 3 GB, Simple, no start-up: 8 us base + 1 step (1 us) in front; flows of 2 GB at 100 GB/s.
    G = switch(3)
    G.graph["sim"].update(collective_protocol="simple", collective_startup_bytes=0)
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G), record=True)
    run_collective(env, net, "all_gather", ["gpu0", "gpu1", "gpu2"], 3e9, algorithm="ring")
    env.run()
    got = [(round(e.time_s, 12), e.flow, e.event, e.rate_GBps) for e in net.timeline]
    assert got == [
        (9e-6, 0, "start", 100.0), (9e-6, 1, "start", 100.0), (9e-6, 2, "start", 100.0),
        (0.020009, 0, "drain", None), (0.020009, 1, "drain", None), (0.020009, 2, "drain", None),
        (0.02001, 0, "arrive", None), (0.02001, 1, "arrive", None), (0.02001, 2, "arrive", None),
    ]


def test_whole_timeline_of_a_two_phase_direct_all_reduce_on_two_ranks():
    G = switch(2)
    G.graph["sim"].update(collective_protocol="simple", collective_startup_bytes=0)
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G), record=True)
    run_collective(env, net, "all_reduce", ["gpu0", "gpu1"], 2e9, algorithm="direct")
    env.run()
    got = [(round(e.time_s, 12), e.flow, e.event) for e in net.timeline]
    # Phase 1 (reduce-scatter, 1 GB each way) starts after the 8 us base latency; phase 2 when
    # phase 1 has arrived.
    assert got == [
        (8e-6, 0, "start"), (8e-6, 1, "start"),
        (0.010008, 0, "drain"), (0.010008, 1, "drain"),
        (0.010009, 0, "arrive"), (0.010009, 1, "arrive"),
        (0.010009, 2, "start"), (0.010009, 3, "start"),
        (0.020009, 2, "drain"), (0.020009, 3, "drain"),
        (0.02001, 2, "arrive"), (0.02001, 3, "arrive"),
    ]


def test_ring_orders_give_every_channel_its_own_rail():
    from simulator.collectives.patterns import ring_orders

    assert ring_orders([0, 0, 1, 1]) == [(0, 1, 3, 2), (1, 0, 2, 3)]
    assert ring_orders([0, 0, 0]) == [(0, 1, 2)] and ring_orders([0, 1, 1]) == [(0, 1, 2)]


@pytest.mark.parametrize("servers", [2, 3])
def test_rings_across_servers_use_all_nics(servers):
    # dgx-a100:N: 8 HDR NICs per server at 24 GB/s. One ring would cross on one NIC (busbw ~24);
    # NCCL's 8 channels cross on 8 (~190), which the 8 rings with PXN hops reproduce.
    from topologies import gpu_nodes, load_topology

    G = load_topology(f"dgx-a100:{servers}")
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    members = gpu_nodes(G)
    proc = run_collective(env, net, "all_reduce", members, 2**30, algorithm="ring")
    env.run()
    plan = proc.value
    n = len(members)
    busbw = 2**30 / env.now / 1e9 * 2 * (n - 1) / n
    assert plan.rings == 8 and net.flow_count == 8 * n
    assert 180 < busbw < 192
    assert env.now == pytest.approx(predict_collective_s(net, "all_reduce", members, 2**30, algorithm="ring"),
                                    rel=1e-9)
    nic_links = [s for (u, v), s in net.link_stats().items() if G.edges[u, v]["kind"] == "ib"]
    assert len(nic_links) == 2 * 8 * servers  # every rail, both directions, no spine
