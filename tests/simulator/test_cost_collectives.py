"""Closed forms of collectives by hand; nccl-tests bandwidth definitions; alpha-beta from routes."""

import math

import pytest
import simpy

from simulator.collectives import CollectiveParams, plan_collective
from simulator.collectives.closed_form import algbw_GBps, busbw_factor, busbw_GBps, collective_time_s, group_alpha_beta
from simulator.collectives.protocols import choose_protocol, nccl_model_time_us, wire_factor
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies.devices import A100_SXM4_40GB
from topologies.rates import NVLINK3_LINK, NVSWITCH_A100
from topologies.servers import MeshServer, NvSwitchServer

P = CollectiveParams(base_latency_us=8.0, startup_bytes=0)
A, B = 1e-6, 100e9  # 1 us per step, 100 GB/s


@pytest.mark.parametrize("kind, algorithm, n, expected", [
    ("all_reduce", "ring", 4, 8e-6 + 6 * A + 1.5 * 1e9 / B),
    ("all_gather", "ring", 4, 8e-6 + 3 * A + 0.75 * 1e9 / B),
    ("reduce_scatter", "direct", 4, 8e-6 + A + 0.75 * 1e9 / B),
    ("all_reduce", "direct", 4, 8e-6 + 2 * (A + 0.75 * 1e9 / B)),
    ("broadcast", "binomial_tree", 5, 8e-6 + 3 * (A + 1e9 / B)),
    ("all_reduce", "binomial_tree", 4, 8e-6 + 4 * (A + 1e9 / B)),
    # chain: 3 hops, 2 chunk times of fill, chunk = min(1e9 / 8, 512 KiB)
    ("broadcast", "chain", 4, 8e-6 + 3 * A + 2 * 524288 / B + 1e9 / B),
    # NCCL's tree on one server, n = 8: a chain up and down, 14 steps, 13 chunks of fill, port load 2
    ("all_reduce", "double_binary_tree", 8, 8e-6 + 14 * A + 13 * 524288 / B + 2 * 1e9 / B),
    ("send", "p2p", 2, 8e-6 + A + 1e9 / B),
])
def test_closed_forms_by_hand(kind, algorithm, n, expected):
    assert collective_time_s(kind, algorithm, n, 1e9, A, B, P) == pytest.approx(expected, rel=1e-12)


def test_protocol_overheads_and_startup():
    params = CollectiveParams()  # 1 MiB start-up at 20 GB/s
    simple = collective_time_s("all_reduce", "ring", 2, 2**30, 0.0, B, params, "simple")
    ll128 = collective_time_s("all_reduce", "ring", 2, 2**30, 0.0, B, params, "ll128")
    assert simple == pytest.approx(8e-6 + 2**20 / 20e9 + 2**30 / B, rel=1e-12)
    assert ll128 == pytest.approx(8e-6 + 2**20 / 20e9 + 2**30 / 0.92 / B, rel=1e-12)
    # LL: the start-up too, NCCL's 1.8 us lower base latency (6.6 vs 8.4 us), 1/4 of the bandwidth
    assert collective_time_s("all_reduce", "ring", 2, 2**10, 0.0, B, params, "ll") == \
        pytest.approx(8e-6 - 1.8e-6 + 2**10 / 20e9 + 4 * 2**10 / B, rel=1e-12)
    assert wire_factor("ll", "all_gather") == pytest.approx(3.0)
    assert collective_time_s("all_reduce", "ring", 1, 2**30, A, B, params) == pytest.approx(8e-6)


def test_nccl_protocol_choice_follows_its_tuning_model():
    # 8 ranks at 230 GB/s: LL small (to ~1.2 MiB), LL128 medium, Simple large (from ~28 MiB).
    assert [choose_protocol("all_reduce", "ring", 8, s, 230.0) for s in (2**20, 2**21, 2**24, 2**25)] == \
        ["ll", "ll128", "ll128", "simple"]
    # Ring/Simple latency in NCCL's model: 8.4 + 14 x 3.4 us.
    assert nccl_model_time_us("all_reduce", "ring", "simple", 8, 0, 230.0) == pytest.approx(8.4 + 14 * 3.4)
    assert choose_protocol("send", "ring", 2, 16384, 1.0) == "ll"
    assert choose_protocol("send", "ring", 2, 16385, 1.0) == "simple"


def test_no_closed_form_for_an_unknown_pair():
    with pytest.raises(InputError, match="no closed form for broadcast with algorithm 'ring'"):
        collective_time_s("broadcast", "ring", 4, 1, A, B)


def test_nccl_tests_bandwidth_definitions():
    assert [busbw_factor(k, 8) for k in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")] \
        == [1.75, 0.875, 0.875, 1.0, 1.0]
    assert algbw_GBps(2e9, 0.01) == pytest.approx(200.0)
    assert busbw_GBps("all_reduce", 4, 2e9, 0.01) == pytest.approx(300.0)


def test_alpha_beta_from_routes():
    G = NvSwitchServer(8, A100_SXM4_40GB, NVSWITCH_A100).build()
    net = FlowNetwork(simpy.Environment(), G)
    plan = plan_collective(net, "all_reduce", [f"gpu{i}" for i in range(8)], 2**20,
                           params=CollectiveParams(step_latency_us=0.5))
    ab = group_alpha_beta(net, plan)
    assert ab.alpha_s == pytest.approx(2 * 0.3e-6 + 0.5e-6)  # GPU -> NVSwitch -> GPU, plus software
    assert ab.bandwidth_Bps == pytest.approx(230e9) and ab.injection_Bps == pytest.approx(230e9)


def test_injection_bandwidth_of_a_mesh_makes_direct_exact():
    # 4 GPUs, 4 NVLink3 per pair: a GPU's port is 3 pair bundles, so direct = S/n over one bundle.
    G = MeshServer(4, A100_SXM4_40GB, NVLINK3_LINK, links_per_pair=4).build()
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    from simulator.collectives import run_collective

    params = CollectiveParams(startup_bytes=0, protocol="simple")
    run_collective(env, net, "all_gather", [f"gpu{i}" for i in range(4)], 2**30, algorithm="direct", params=params)
    env.run()
    plan = plan_collective(net, "all_gather", [f"gpu{i}" for i in range(4)], 2**30, algorithm="direct", params=params)
    ab = group_alpha_beta(net, plan)
    expected = collective_time_s("all_gather", "direct", 4, 2**30, ab.alpha_s, ab.bandwidth_Bps, params, "simple",
                                 ab.injection_Bps)
    assert env.now == pytest.approx(expected, rel=1e-9)
    assert ab.injection_Bps == pytest.approx(3 * ab.bandwidth_Bps)
    assert not math.isclose(expected, collective_time_s("all_gather", "direct", 4, 2**30, ab.alpha_s,
                                                        ab.bandwidth_Bps, params, "simple"))


def test_measured_drains_replace_the_tables_drain_terms():
    # Binomial broadcast on 5 ranks: 3 rounds, each step + its own drain; the table charges every round
    # alpha + S/B. A chain keeps its step latencies and fill and takes the one drain given.
    params = CollectiveParams(base_latency_us=8.0, startup_bytes=0, step_latency_us=0.5)
    a = A + 0.5e-6
    drains = [2e-3, 5e-3, 3e-3]
    assert collective_time_s("broadcast", "binomial_tree", 5, 1e9, a, B, params, drains_s=drains) == \
        pytest.approx(8e-6 + 3 * 0.5e-6 + sum(drains), rel=1e-12)
    assert collective_time_s("broadcast", "binomial_tree", 5, 1e9, a, B, params) == \
        pytest.approx(8e-6 + 3 * (a + 1e9 / B), rel=1e-12)
    assert collective_time_s("broadcast", "chain", 4, 1e9, a, B, params, drains_s=[7e-3]) == \
        pytest.approx(8e-6 + 2 * a + 0.5e-6 + 2 * 524288 / B + 7e-3, rel=1e-12)
    with pytest.raises(ValueError, match="has 3 phases, got 1 drains"):
        collective_time_s("broadcast", "binomial_tree", 5, 1e9, a, B, params, drains_s=[1e-3])
