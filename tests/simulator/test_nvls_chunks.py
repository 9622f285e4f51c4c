"""NCCL's NVLS chunk sizes and their cost, held to NCCL's rule and to the published H100 and H200 tables."""

from __future__ import annotations

import math

import pytest
import simpy

from simulator.collectives import run_collective
from simulator.collectives.nvls_chunks import nvls_channels, nvls_chunk_bytes, nvls_chunk_factor
from simulator.collectives.params import CollectiveParams
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

MIB = 1 << 20
# In-place all_reduce busbw (GB/s) on one server of 8 GPUs, NVLS, by size in MiB: Azure/AI-benchmarking-guide
# (MIT), Azure_Results/ND_H100_v5_results.md (NCCL 2.18.5) and ND_H200_v5_results.md (NCCL 2.20.5).
ND_H100_V5 = {8: 172.13, 16: 234.45, 32: 295.53, 64: 361.78, 128: 400.61, 256: 423.38, 512: 438.46, 1024: 466.35,
              2048: 472.36, 4096: 475.54, 8192: 478.87}
ND_H200_V5 = {8: 181.94, 16: 240.41, 32: 300.91, 64: 368.11, 128: 412.45, 256: 432.24, 512: 442.72, 1024: 467.58,
              2048: 472.57, 4096: 477.41, 8192: 479.98}


@pytest.mark.parametrize("mib, chunk_kib", [(1, 16), (7.9, 16), (8, 32), (63, 32), (64, 64), (1023, 64), (1024, 128),
                                            (8192, 128)])
def test_chunks_as_nccl_picks_them_on_one_h100_server(mib, chunk_kib):
    assert nvls_chunk_bytes(mib * MIB, nvls_channels("hopper"), 8) == chunk_kib * 1024


def test_only_single_server_nvls_pays_and_only_where_a_preset_sets_the_cost():
    hopper = CollectiveParams(nvls=True, nccl_arch="hopper", nvls_chunk_overhead_bytes=5120)
    assert nvls_chunk_factor("nvls", 16 * MIB, hopper, 8) == pytest.approx((32768 + 5120) / 32768)
    assert nvls_chunk_factor("nvls_tree", 16 * MIB, hopper, 8) == 1.0
    assert nvls_chunk_factor("ring", 16 * MIB, hopper, 8) == 1.0
    assert nvls_chunk_factor("nvls", 16 * MIB, CollectiveParams(nvls=True), 8) == 1.0


@pytest.mark.parametrize("preset, table, most", [("dgx-h100", ND_H100_V5, 0.05), ("dgx-h200", ND_H200_V5, 0.04)])
def test_the_published_nvls_tables_from_8_mib(preset, table, most):
    # Fitted on the H100 table (5 KiB per chunk); the H200 one, a later NCCL, was not fitted on.
    G = load_topology(preset)
    errors = []
    for mib, busbw in table.items():
        S = mib * MIB
        env = simpy.Environment()
        done = run_collective(env, FlowNetwork(env, G), "all_reduce", gpu_nodes(G), S)
        env.run(until=done)
        errors.append(abs(math.log(env.now / (S * 2 * 7 / 8 / (busbw * 1e9)))))
    assert math.exp(sum(errors) / len(errors)) - 1 < most
    assert math.exp(max(errors)) - 1 < 0.10
