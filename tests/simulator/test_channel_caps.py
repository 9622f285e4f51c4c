"""NCCL's per-channel caps on its trees across servers (``channel_caps``): the floor, the plan, the simulation.

Cheap checks of ``tree_floor_s`` first, then plans and flow simulations on DGX presets held to the
published two-server runs the caps reproduce.
"""

from __future__ import annotations

import pytest
import simpy

from simulator.calibrate.evaluator import CollectiveEvaluator
from simulator.collectives import CollectiveParams
from simulator.collectives.channel_caps import tree_floor_s
from simulator.collectives.closed_form import predict_collective_s
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from tests.network_runs import run_all_reduce
from topologies import gpu_nodes, load_topology

TWO = tuple(s for s in range(2) for _ in range(8))
FOUR = tuple(s for s in range(4) for _ in range(8))


def test_the_floor_is_the_bus_bytes_over_channels_times_nccl_per_channel_rate():
    S = 1 << 30
    assert tree_floor_s("all_reduce", "double_binary_tree", "simple", S, TWO, 1.0, "ampere") == \
        pytest.approx(S * 2 * 15 / 16 / (8 * 23.6e9))
    # More than two servers: NCCL's third column (Ampere 17.8 GB/s per channel).
    assert tree_floor_s("all_reduce", "double_binary_tree", "simple", S, FOUR, 1.0, "ampere") == \
        pytest.approx(S * 2 * 31 / 32 / (8 * 17.8e9))
    # The NVLS tree has its own row; Hopper's 2-server figure is 57.7.
    assert tree_floor_s("all_reduce", "nvls_tree", "simple", S, TWO, 1.0, "hopper") == \
        pytest.approx(S * 2 * 15 / 16 / (8 * 57.7e9))


def test_ll128_takes_the_lower_of_the_tree_rate_over_its_wire_and_nccl_ll128_figure():
    S, wire = 1 << 26, 1 / 0.92
    hopper = tree_floor_s("all_reduce", "double_binary_tree", "ll128", S, TWO, wire, "hopper")
    assert hopper == pytest.approx(S * 2 * 15 / 16 / (8 * min(41.4 * 0.92, 36.7) * 1e9))
    ampere = tree_floor_s("all_reduce", "double_binary_tree", "ll128", S, TWO, wire, "ampere")
    assert ampere == pytest.approx(S * 2 * 15 / 16 / (8 * 20.0e9))


@pytest.mark.parametrize("kind, algorithm, pattern, arch", [
    ("all_reduce", "double_binary_tree", (0,) * 8, "ampere"),  # one server: a chain, no cap
    ("all_reduce", "ring", TWO, "ampere"),  # rings are not capped
    ("broadcast", "chain", TWO, "ampere"),
    ("all_reduce", "double_binary_tree", TWO, ""),  # no generation (custom topology): no cap
    ("all_reduce", "nvls_tree", TWO, "ampere"),  # no NVLS row before Hopper
])
def test_no_floor_where_nccl_has_no_cap(kind, algorithm, pattern, arch):
    assert tree_floor_s(kind, algorithm, "simple", 1 << 30, pattern, 1.0, arch) == 0.0


def test_uneven_servers_run_one_channel():
    pattern = (0, 0, 0, 1)
    assert tree_floor_s("all_reduce", "double_binary_tree", "simple", 1 << 20, pattern, 1.0, "ampere") == \
        pytest.approx((1 << 20) * 2 * 3 / 4 / 23.6e9)


def test_an_unknown_generation_is_one_clear_error():
    with pytest.raises(InputError, match="nccl_arch must be one of"):
        CollectiveParams(nccl_arch="pascal")


def test_presets_name_their_generation():
    for spec, arch in (("dgx-a100", "ampere"), ("dgx-h100", "hopper"), ("dgx-b200", "blackwell"),
                       ("dgx-2h", "volta"), ("rtx5000-4gpu", "volta")):
        assert CollectiveParams.from_graph(load_topology(spec)).nccl_arch == arch


def test_a_forced_tree_on_two_b200_servers_runs_at_the_rate_together_ai_measured():
    # Together AI's 2-server B200 nccl-tests all_reduce with NCCL_ALGO=Tree: 335.2 GB/s busbw at 8 GiB
    # (docs/collectives.md); the links alone would give it twice the ring's network share.
    nbytes = 8 << 30
    t, plan, net, members = run_all_reduce("dgx-b200:2", 16, nbytes, "double_binary_tree")
    assert plan.floor_s > 0
    assert t == pytest.approx(predict_collective_s(net, "all_reduce", members, nbytes, algorithm="double_binary_tree"),
                              rel=1e-12)
    busbw = nbytes / t * 2 * 15 / 16 / 1e9
    assert busbw == pytest.approx(335.2, rel=0.03)


def test_the_a100_tree_on_two_servers_is_no_faster_than_the_ring_at_large_sizes():
    # Without the cap the tree ran NVLink-bound at 246 GB/s busbw there, twice the ring's network share.
    nbytes = 1 << 30
    t_tree, _, _, _ = run_all_reduce("dgx-a100:2", 16, nbytes, "double_binary_tree")
    t_ring, _, _, _ = run_all_reduce("dgx-a100:2", 16, nbytes, "ring")
    assert nbytes / t_tree * 2 * 15 / 16 / 1e9 == pytest.approx(8 * 23.6, rel=0.03)
    assert t_tree > t_ring
    _, chosen, _, _ = run_all_reduce("dgx-a100:2", 16, nbytes)
    assert chosen.algorithm == "ring"


def test_the_floor_runs_from_the_flows_start_in_the_simulation():
    # A small tree: the cap does not bind, the floor changes nothing; a large one: it does, exactly.
    for nbytes in (1 << 16, 1 << 30):
        t, plan, net, members = run_all_reduce("dgx-a100:2", 16, nbytes, "double_binary_tree")
        closed = predict_collective_s(net, "all_reduce", members, nbytes, algorithm="double_binary_tree")
        assert t == pytest.approx(closed, rel=1e-12)
        delay = plan.front_s + plan.phases[0][0]
        assert t >= delay + plan.floor_s * (1 - 1e-12)


def test_calibration_times_the_capped_tree_as_the_planner_does():
    G = load_topology("dgx-a100:2")
    members = gpu_nodes(G)
    sizes = (1 << 20, 1 << 26, 1 << 30)
    predicted = CollectiveEvaluator(G, [("all_reduce", 16, s) for s in sizes], "double_binary_tree").predict(
        {}, {}, CollectiveParams.from_graph(G))
    net = FlowNetwork(simpy.Environment(), G)
    for nbytes, seconds in zip(sizes, predicted):
        assert seconds == pytest.approx(
            predict_collective_s(net, "all_reduce", members, nbytes, algorithm="double_binary_tree"), rel=1e-12)
