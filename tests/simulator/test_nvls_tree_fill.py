"""NCCL's NVLS tree: its chunk rule, the pipeline fill of its loops, and the published two-server logs.

The logs (tests/data/nccl-tests/nebius-h100, lambda-b200, gcp-a4-b200; each README names its source) are
NCCL's default all_reduce on 2 x 8 GPUs: the NVLS tree from 512 KiB. Hopper's and Blackwell's fill (1.5
loops) was read off the Nebius and Lambda logs; Google Cloud's A4 log was not fitted on.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import simpy

from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.collectives import run_collective
from simulator.collectives.channel_caps import tree_floor_s
from simulator.collectives.nvls_tree_fill import nvls_tree_chunk_bytes, nvls_tree_fill_s, nvls_tree_loop_bytes
from simulator.collectives.params import CollectiveParams
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
KIB, MIB = 1 << 10, 1 << 20
TWO_SERVERS = (0,) * 8 + (1,) * 8


@pytest.mark.parametrize("nbytes, servers, chunk", [
    (4 * MIB, 2, 32 * KIB), (8 * MIB - 1, 2, 32 * KIB), (8 * MIB, 2, 64 * KIB), (64 * MIB - 1, 2, 64 * KIB),
    (64 * MIB, 2, 128 * KIB), (8 << 30, 2, 128 * KIB),
    (8 * MIB - 1, 4, 32 * KIB), (8 * MIB, 4, 64 * KIB), (8 << 30, 4, 64 * KIB),  # 64 KiB at most from 4 servers
])
def test_nccl_chunk_rule_on_h100_servers(nbytes, servers, chunk):
    # 16 channels x 8 heads: 128 chunks at once (src/enqueue.cc, NCCL_ALGO_NVLS_TREE).
    assert nvls_tree_chunk_bytes(nbytes, 16, 8, servers) == chunk


def test_a_loop_is_every_channel_and_head_once():
    assert nvls_tree_loop_bytes(64 * MIB, "hopper", 8, 2) == 16 * 8 * 128 * KIB == 16 * MIB
    assert nvls_tree_loop_bytes(16 * MIB, "blackwell", 8, 2) == 32 * 8 * 64 * KIB == 16 * MIB
    assert nvls_tree_loop_bytes(8 * MIB, "blackwell", 8, 2) == 32 * 8 * 32 * KIB


def test_the_fill_is_loops_at_nccls_channel_cap():
    params = CollectiveParams(nccl_arch="hopper", nvls_tree_fill_loops=1.5)
    fill = nvls_tree_fill_s("all_reduce", "nvls_tree", "simple", 1 << 30, TWO_SERVERS, 1.0, params)
    loop_s = 16 * MIB * 2 * 15 / 16 / (8 * 57.7e9)  # 8 channels (NIC rails) x 57.7 GB/s busbw
    assert fill == pytest.approx(1.5 * loop_s, rel=1e-12)
    assert fill == pytest.approx(1.5 * tree_floor_s("all_reduce", "nvls_tree", "simple", 16 * MIB, TWO_SERVERS, 1.0,
                                                    "hopper"), rel=1e-12)
    # A message smaller than one loop (4 MiB below 8 MiB) pays for itself.
    small = nvls_tree_fill_s("all_reduce", "nvls_tree", "simple", 1 * MIB, TWO_SERVERS, 1.0, params)
    assert small == pytest.approx(1.5 * MIB * 2 * 15 / 16 / (8 * 57.7e9), rel=1e-12)
    for algorithm, p in [("ring", params), ("double_binary_tree", params), ("nvls_tree", replace(params, nccl_arch="")),
                         ("nvls_tree", replace(params, nvls_tree_fill_loops=0.0))]:
        assert nvls_tree_fill_s("all_reduce", algorithm, "simple", 1 << 30, TWO_SERVERS, 1.0, p) == 0.0


def _errors(folder: str, topology: str, least: int, **changes) -> tuple[list[float], list[str]]:
    """ln(simulated / measured) from ``least`` bytes, and the algorithms run, with NCCL's own choice."""
    log = parse_nccl_tests(str(DATA / folder / "all_reduce_perf_16gpu.log"))
    G = load_topology(topology)
    params = replace(CollectiveParams.from_graph(G), **changes)
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    errors, algorithms = [], []
    for row in log.rows:
        if row.size_bytes >= least:
            start = env.now
            proc = run_collective(env, net, "all_reduce", gpu_nodes(G)[:16], row.size_bytes, params=params)
            env.run(until=proc)
            errors.append(math.log((env.now - start) / (row.time_us * 1e-6)))
            algorithms.append(proc.value.algorithm)
    return errors, algorithms


def _geomean(errors: list[float]) -> float:
    return math.exp(sum(map(abs, errors)) / len(errors)) - 1


# (folder, preset, from, geomean, largest): measured here 3.4% / 19.5% (H100 from 1 MiB, where 4-8 MiB
# are +13..+19%), 2.8% / 6.2% (Lambda B200 from 4 MiB; 1-2 MiB are -30% and -19%), 4.4% / 9.1% (A4 B200).
LOGS = [("nebius-h100", "dgx-h100:2", 1 * MIB, 0.04, 0.20), ("lambda-b200", "dgx-b200:2", 4 * MIB, 0.04, 0.07),
        ("gcp-a4-b200", "dgx-b200:2", 8 * MIB, 0.05, 0.10)]


@pytest.mark.parametrize("folder, preset, least, geomean, largest", LOGS, ids=[log[0] for log in LOGS])
def test_two_server_logs(folder, preset, least, geomean, largest):
    errors, algorithms = _errors(folder, preset, least)
    assert set(algorithms) == {"nvls_tree"}
    assert _geomean(errors) <= geomean and math.exp(max(map(abs, errors))) - 1 <= largest
    # Without the fill the model runs it too fast, by up to 40% at 4-64 MiB.
    before, _ = _errors(folder, preset, least, nvls_tree_fill_loops=0.0)
    assert _geomean(before) > 2 * _geomean(errors) and sum(before) < 0


def test_nccl_runs_its_nvls_tree_from_512_KiB_on_two_h100_servers():
    """Where NCCL's model switches to the NVLS tree the published times jump (Nebius 58.6 us at 256 KiB,
    97.9 at 512 KiB; Lambda 66.7 and 240.7), though the simulated tree is faster there: NCCL's choice runs."""
    G = load_topology("dgx-h100:2")
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    chosen = {}
    for nbytes in (256 * KIB, 512 * KIB, 4 * MIB, 16 * MIB):
        proc = run_collective(env, net, "all_reduce", gpu_nodes(G)[:16], nbytes)
        env.run(until=proc)
        chosen[nbytes] = proc.value.algorithm
    assert chosen == {256 * KIB: "double_binary_tree", 512 * KIB: "nvls_tree", 4 * MIB: "nvls_tree",
                      16 * MIB: "nvls_tree"}
