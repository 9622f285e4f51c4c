"""NCCL's NVLS tree (NVLink SHARP inside servers, a tree of NIC heads across): its shape, where NCCL runs it, its cost.

Cheap shape tests first (``nvls_tree`` on server patterns), then plans and flow simulations on dgx-h100 presets.
"""

from __future__ import annotations

import pytest
import simpy

from simulator.calibrate.evaluator import CollectiveEvaluator
from simulator.collectives import CollectiveParams, plan_collective
from simulator.collectives.choose import nccl_algorithms
from simulator.collectives.closed_form import predict_collective_s
from simulator.collectives.nvls_tree import nvls_tree, nvls_tree_fits
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from tests.network_runs import run_all_reduce
from topologies import gpu_nodes, load_topology


def test_two_servers_of_two_ranks_share_nvls_inside_and_join_heads_rail_by_rail():
    shape = nvls_tree((0, 0, 1, 1), 0.5)
    flows = {(a, b): f for a, b, f in shape.flows}
    # NVLS on each switch: S (1 + 1/2) / 0.5 per GPU, as one flow to the next GPU of its server.
    assert flows[(0, 1)] == flows[(1, 0)] == flows[(2, 3)] == flows[(3, 2)] == pytest.approx(3.0)
    # Rail 0 joins heads 0 and 2, rail 1 heads 1 and 3: both trees, S/(2k) each, so S/k = S/2 each way.
    assert flows[(0, 2)] == flows[(2, 0)] == flows[(1, 3)] == flows[(3, 1)] == pytest.approx(0.5)
    assert len(flows) == 8  # nothing else: no flow between servers leaves its rail
    assert (shape.inter_steps, shape.path) == (2, ((2, 0), (0, 2)))


@pytest.mark.parametrize("servers, per_server", [(2, 8), (3, 4), (8, 8), (64, 8)])
def test_a_nic_carries_s_over_k_on_two_servers_and_at_most_twice_that_on_more(servers, per_server):
    pattern = tuple(s for s in range(servers) for _ in range(per_server))
    shape = nvls_tree(pattern, 0.85)
    out: dict = {}
    inn: dict = {}
    for a, b, fraction in shape.flows:
        if pattern[a] == pattern[b]:
            assert fraction == pytest.approx((1 + 1 / per_server) / 0.85)  # what NVLS moves per GPU
            continue
        assert a % per_server == b % per_server  # NIC to NIC on one rail
        out[a] = out.get(a, 0.0) + fraction
        inn[b] = inn.get(b, 0.0) + fraction
    if servers == 2:  # each head sends its part up one tree and down the other: S/k
        assert len(out) == len(inn) == 2 * per_server
        assert all(v == pytest.approx(1 / per_server) for v in [*out.values(), *inn.values()])
    # Interior in one tree, leaf in the other: 3 + 1 halves of S/k at most, a ring's 2 S/k.
    assert max(out.values()) <= 2 / per_server + 1e-12 and max(inn.values()) <= 2 / per_server + 1e-12
    depth = max(len(bin(servers - 1)) - 2, 1)  # NCCL's latency: 2 log2(nodes) network steps
    assert shape.inter_steps <= 2 * depth


def test_it_fits_two_servers_or_more_with_the_same_ranks_on_each():
    assert nvls_tree_fits((0, 0, 1, 1)) and nvls_tree_fits((5, 5, 5, 9, 9, 9, 2, 2, 2))
    assert not nvls_tree_fits((0, 0, 0, 0))  # one server: NVLS itself
    assert not nvls_tree_fits((0, 1, 2, 3))  # one GPU per server has no NVLS
    assert not nvls_tree_fits((0, 0, 0, 1))  # uneven
    with pytest.raises(InputError, match="nvls_tree needs two servers or more"):
        nvls_tree((0, 0, 0, 1), 0.85)


def _members(spec: str, n: int):
    G = load_topology(spec)
    members = gpu_nodes(G)[:n]
    return G, members, [G.nodes[m]["server"] for m in members]


@pytest.mark.parametrize("spec, n, enabled", [("dgx-h100:2", 16, True), ("dgx-h200:4", 32, True),
                                              ("dgx-b200:2", 16, True), ("dgx-h100:2", 12, False),
                                              ("dgx-h100", 8, False), ("dgx-a100:2", 16, False)])
def test_nccl_offers_it_across_nvlink_sharp_servers_only(spec, n, enabled):
    G, members, servers = _members(spec, n)
    params = CollectiveParams.from_graph(G)
    names = nccl_algorithms("all_reduce", n, params, len(set(servers)), servers)
    assert ("nvls_tree" in names) is enabled
    assert "nvls" not in names or len(set(servers)) == 1
    assert "nvls_tree" not in nccl_algorithms("all_gather", n, params, len(set(servers)), servers)


def test_two_h100_servers_run_it_at_large_sizes_at_the_nvls_rate():
    S = 8 << 30  # large enough that the pipeline fill (nvls_tree_fill: 1.5 loops of 16 MiB) is 0.3%
    t, plan, net, members = run_all_reduce("dgx-h100:2", 16, S)
    assert (plan.algorithm, plan.protocol) == ("nvls_tree", "simple")
    # Contention-free: the plan's own time, exactly.
    assert t == pytest.approx(predict_collective_s(net, "all_reduce", members, S), rel=1e-9)
    # The links alone would run it NVLink-bound at 2 servers (the NICs carry S/8 each way), algbw =
    # 0.85 x 370 / (1 + 1/8) = 280 GB/s; NCCL's per-channel cap binds first: busbw 8 channels x 57.7
    # (Nebius' two H100 servers measure 467.5 GB/s at 8 GiB).
    busbw = S / t * 2 * 15 / 16 / 1e9
    assert busbw == pytest.approx(8 * 57.7, rel=0.01) and busbw < 8 * 57.7
    assert S / t / 1e9 < 0.85 * 370 / 1.125 * 0.9
    t_ring, _, _, _ = run_all_reduce("dgx-h100:2", 16, S, "ring")
    assert t < t_ring


def test_small_messages_pay_nvls_and_two_network_steps():
    t, plan, _, _ = run_all_reduce("dgx-h100:2", 16, 8, "nvls_tree")
    params = CollectiveParams.from_graph(load_topology("dgx-h100:2"))
    assert t > 25e-6 + 2 * params.inter_step_latency_s  # NCCL: NVLS latency + 2 log2(2) network latencies
    _, chosen, _, _ = run_all_reduce("dgx-h100:2", 16, 8)
    assert chosen.algorithm != "nvls_tree"


def test_forcing_it_on_one_server_is_one_clear_error():
    G, members, _ = _members("dgx-h100", 8)
    net = FlowNetwork(simpy.Environment(), G)
    with pytest.raises(InputError, match=r"has \[8\] ranks per server"):
        plan_collective(net, "all_reduce", members, 1 << 20, algorithm="nvls_tree")


@pytest.mark.parametrize("spec, measured, rel", [("dgx-b200:2", (683.5, 696.1, 717.2), 0.05),
                                                 ("dgx-h100:2", (467.5,), 0.03)])
def test_two_servers_meet_the_published_default_all_reduce_busbw(spec, measured, rel):
    # Published nccl-tests all_reduce, NCCL's default algorithm, 2 servers x 8 GPUs, large sizes: B200 on
    # GCP A4, Lambda and Together AI; H100 on Nebius (quoted in docs/collectives.md).
    nbytes = 8 << 30
    t, plan, _, _ = run_all_reduce(spec, 16, nbytes)
    assert plan.algorithm == "nvls_tree"
    busbw = nbytes / t * 2 * 15 / 16 / 1e9
    assert all(busbw == pytest.approx(m, rel=rel) for m in measured)


def test_calibration_times_it_as_the_planner_does():
    # The calibration's closed-form evaluator offers and times the NVLS tree exactly as plan_collective does.
    G, members, _ = _members("dgx-h100:2", 16)
    sizes = (1 << 20, 1 << 26, 1 << 30)
    predicted = CollectiveEvaluator(G, [("all_reduce", 16, s) for s in sizes]).predict(
        {}, {}, CollectiveParams.from_graph(G))
    net = FlowNetwork(simpy.Environment(), G)
    assert plan_collective(net, "all_reduce", members, 1 << 30).algorithm == "nvls_tree"
    for nbytes, seconds in zip(sizes, predicted):
        assert seconds == pytest.approx(predict_collective_s(net, "all_reduce", members, nbytes), rel=1e-12)
