"""NVLink SHARP (NCCL's NVLS) all_reduce and the per-generation start-up: where it is enabled, what it costs.

NCCL's maintainers give ~480 GB/s NVLS all_reduce busbw on 8 H100s (NVIDIA/nccl-tests#212; 476 measured in
NVIDIA/nccl-tests#290) against ~370 for the ring; the model's NVLS moves S (1 + 1/n) per GPU at NCCL's
Hopper NVLS efficiency (0.85) of the 370 GB/s link.
"""

from __future__ import annotations

import dataclasses

import pytest
import simpy

from simulator.collectives import CollectiveParams, plan_collective, run_collective
from simulator.collectives.choose import nccl_algorithms
from simulator.collectives.closed_form import collective_time_s
from simulator.collectives.nvls_chunks import nvls_chunk_factor
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology


def _run(spec: str, n: int, nbytes: int, algorithm=None):
    G = load_topology(spec)
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    proc = run_collective(env, net, "all_reduce", gpu_nodes(G)[:n], nbytes, algorithm=algorithm)
    env.run(until=proc)
    return env.now, proc.value


@pytest.mark.parametrize("spec, n, enabled", [("dgx-h100", 8, True), ("dgx-h200", 4, True), ("dgx-b200", 8, True),
                                              ("gb200-nvl72", 72, True), ("dgx-a100", 8, False),
                                              ("dgx-a100-80gb", 8, False), ("dgx-h100:2", 16, False),
                                              ("dgx-h100", 1, False)])
def test_nvls_is_enabled_on_one_nvlink_sharp_domain_only(spec, n, enabled):
    G = load_topology(spec)
    params = CollectiveParams.from_graph(G)
    members = gpu_nodes(G)[:n]
    n_nodes = len({G.nodes[m]["server"] for m in members})
    assert ("nvls" in nccl_algorithms("all_reduce", n, params, n_nodes)) is enabled
    assert "nvls" not in nccl_algorithms("all_gather", n, params, n_nodes)


def test_8_h100s_reach_the_published_nvls_busbw_at_1GiB_and_8GiB_and_the_ring_its_370():
    # Azure's ND H100 v5 table (Azure/AI-benchmarking-guide, NCCL 2.18.5): 466.35 GB/s at 1 GiB, where NCCL's
    # NVLS chunks reach 128 KiB (simulator/collectives/nvls_chunks.py), and 478.87 at 8 GiB (NCCL's
    # maintainers: "a peak busBw of ~480GB/s", NVIDIA/nccl-tests#212).
    for size, published in ((1 << 30, 466.35), (8 << 30, 478.87)):
        t, plan = _run("dgx-h100", 8, size)
        assert (plan.algorithm, plan.protocol) == ("nvls", "simple")
        assert size / t * 2 * 7 / 8 / 1e9 == pytest.approx(published, rel=0.03)
    t_ring, _ = _run("dgx-h100", 8, 1 << 30, "ring")
    assert (1 << 30) / t_ring * 2 * 7 / 8 / 1e9 == pytest.approx(370, rel=0.02)


def test_small_messages_keep_the_ring_for_nvls_25_us_latency():
    _, plan = _run("dgx-h100", 8, 64 << 10)
    assert plan.algorithm == "ring"
    t_nvls, _ = _run("dgx-h100", 8, 8, "nvls")
    assert t_nvls > 25e-6  # NCCL's NVLS latency (tuning.cc hwLat NVLINK/NVLS/Simple)


def test_nvls_on_a_switch_is_its_closed_form():
    G = load_topology("dgx-h100")
    net = FlowNetwork(simpy.Environment(), G)
    params = CollectiveParams.from_graph(G)
    for nbytes in (1 << 20, 3 << 24):
        t, plan = _run("dgx-h100", 8, nbytes, "nvls")
        expected = collective_time_s("all_reduce", "nvls", 8, nbytes, plan.alpha_s, plan.bandwidth_Bps, params,
                                     "simple")
        assert t == pytest.approx(expected, rel=1e-9)
        assert plan_collective(net, "all_reduce", gpu_nodes(G)[:8], nbytes, algorithm="nvls").phases[0][1][0][2] == \
            pytest.approx(nbytes * (1 + 1 / 8) / 0.85 * nvls_chunk_factor("nvls", nbytes, params, 8))


def test_nvls_efficiency_is_checked():
    with pytest.raises(InputError, match="nvls_efficiency must be a number in"):
        dataclasses.replace(CollectiveParams(), nvls_efficiency=1.5)
    with pytest.raises(InputError, match="nvls must be true or false"):
        CollectiveParams.from_sim({"collective_nvls": "yes"})


# Published nccl-tests all_reduce on 8 H20 (NVLink4 NVSwitch as H100; kvcache-ai/Mooncake PR #3484), out of place.
H20_US = {1 << 20: 27.76, 4 << 20: 53.24, 16 << 20: 121.33}


@pytest.mark.parametrize("nbytes, measured_us", sorted(H20_US.items()))
def test_the_hopper_start_up_fits_the_published_8_gpu_nvlink4_ring(nbytes, measured_us):
    # The A100 start-up (1 MiB at 20 GB/s, 52 us) would put 1 MiB at +167%.
    G = load_topology("dgx-h100")
    G.graph["sim"]["collective_nvls"] = False  # that log's 1 GiB busbw (358 GB/s) is a ring's
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    proc = run_collective(env, net, "all_reduce", gpu_nodes(G), nbytes)
    env.run(until=proc)
    assert env.now * 1e6 == pytest.approx(measured_us, rel=0.10)
