"""NCCL's network overhead of rings across servers: each step inside a server costs at least the proxy's post.

tuning.cc (``getNetOverhead``): 1 us on x86 Intel hosts, 3x with Simple, for all_reduce, all_gather and
reduce_scatter rings that span servers; never on one server, never for trees or chains.
"""

from __future__ import annotations

import dataclasses

import pytest
import simpy

from simulator.collectives import CollectiveParams, plan_collective
from simulator.collectives.run import plan_time_s
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology


def _time_s(spec: str, n: int, kind: str, algorithm: str, protocol: str, overhead_us: float) -> float:
    G = load_topology(spec)
    net = FlowNetwork(simpy.Environment(), G)
    params = dataclasses.replace(CollectiveParams.from_graph(G), protocol=protocol, net_overhead_us=overhead_us)
    plan = plan_collective(net, kind, gpu_nodes(G)[:n], 1 << 20, None, algorithm, params)
    return plan_time_s(net, plan)


@pytest.mark.parametrize("protocol, per_step_us", [("simple", 3.0), ("ll128", 1.0), ("ll", 1.0)])
def test_a_ring_over_two_servers_pays_it_on_each_step_inside_a_server(protocol, per_step_us):
    # all_gather on 16 ranks of 2 servers: 15 steps, 1 between servers, 14 inside at 0.6 us of NVSwitch route.
    with_it = _time_s("dgx-h200:2", 16, "all_gather", "ring", protocol, 1.0)
    without = _time_s("dgx-h200:2", 16, "all_gather", "ring", protocol, 0.0)
    assert with_it - without == pytest.approx(14 * (per_step_us - 0.6) * 1e-6, rel=1e-9)


@pytest.mark.parametrize("spec, n, kind, algorithm", [("dgx-h200", 8, "all_gather", "ring"),
                                                      ("dgx-a100:2", 16, "all_reduce", "double_binary_tree"),
                                                      ("dgx-a100:2", 16, "broadcast", "chain")])
def test_not_on_one_server_nor_for_trees_and_chains(spec, n, kind, algorithm):
    assert _time_s(spec, n, kind, algorithm, "simple", 1.0) == _time_s(spec, n, kind, algorithm, "simple", 0.0)


def test_it_is_a_sim_key_and_checked():
    assert CollectiveParams.from_sim({"collective_net_overhead_us": 2.0}).net_overhead_us == 2.0  # NCCL on AMD hosts
    with pytest.raises(InputError, match="net_overhead_us must be a number >= 0"):
        CollectiveParams(net_overhead_us=-1.0)
