"""Every collective's closed form against the flow simulation on real presets: never above it, equal without contention.

For each preset, group, kind, algorithm and size, one collective runs alone on the flow network and
``simulator.collectives.closed_form.predict_collective_s`` must not exceed its time (1e-9 relative). Where the group is
contention-free by construction it must equal it: every phase's flows cross no link twice, or are all
alike in bytes and route latency (then max-min fairness gives every flow on the busiest link the same
share, and the phase lasts that link's bytes over its capacity). The criterion is read off the
routes, not off the closed form.
"""

from __future__ import annotations

import pytest
import simpy

from simulator.collectives import ALGORITHMS, CollectiveParams, plan_collective, run_collective
from simulator.collectives.closed_form import collective_time_s, group_alpha_beta, phase_drain_s, predict_collective_s
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

REL = 1e-9
SIZES = (8, 1 << 20, 1 << 30)
# Group sizes per preset: the whole machine (the torus: one 4x4 layer and half of it) and an uneven group.
GROUPS = {"dgx-a100": (8, 3), "dgx-a100:2": (16, 12), "a100-4gpu:2": (8, 6), "pcie-8gpu": (8, 5),
          "torus-3d": (8, 16)}
# The NVLS tree needs several servers with the same ranks on each: its own test below.
CASES = [(kind, algorithm) for kind, algorithms in ALGORITHMS.items() for algorithm in algorithms
         if algorithm != "nvls_tree"]

_NETS: dict[str, tuple] = {}


def _network(preset: str):
    """One network per preset, reused: collectives run one after another on it, each alone."""
    if preset not in _NETS:
        G = load_topology(preset)
        env = simpy.Environment()
        _NETS[preset] = (G, env, FlowNetwork(env, G))
    return _NETS[preset]


def _members(G, kind: str, n: int) -> list:
    gpus = gpu_nodes(G)[:n]
    return [gpus[0], gpus[-1]] if kind == "send" else gpus


def _contention_free(net, plan) -> bool:
    """Whether every phase's flows share no link, or are alike in bytes and route latency."""
    for _, flows in plan.phases:
        routes = [net.route(src, dst, via) for src, dst, _, via in flows]
        links = [link for r in routes for link in set(r.links)]
        if len(links) == len(set(links)):
            continue
        if len({size for _, _, size, _ in flows}) > 1 or len({r.latency_s for r in routes}) > 1:
            return False
    return True


def _simulated_s(env, net, kind, members, nbytes, root, algorithm) -> float:
    start = env.now
    proc = run_collective(env, net, kind, members, nbytes, root=root, algorithm=algorithm)
    env.run(until=proc)
    return env.now - start


@pytest.mark.parametrize("preset", list(GROUPS))
@pytest.mark.parametrize("kind, algorithm", CASES, ids=[f"{k}-{a}" for k, a in CASES])
def test_the_closed_form_never_exceeds_the_simulation_and_equals_it_without_contention(preset, kind, algorithm):
    G, env, net = _network(preset)
    exact = 0
    for n in GROUPS[preset]:
        members = _members(G, kind, n)
        root = 1 if kind in ("broadcast", "reduce") else None
        for nbytes in SIZES:
            sim = _simulated_s(env, net, kind, members, nbytes, root, algorithm)
            bound = predict_collective_s(net, kind, members, nbytes, root, algorithm)
            where = (preset, n, kind, algorithm, nbytes)
            assert sim >= bound * (1 - REL), where
            if _contention_free(net, plan_collective(net, kind, members, nbytes, root, algorithm,
                                                     CollectiveParams.from_graph(G))):
                assert sim == pytest.approx(bound, rel=REL, abs=0), where
                exact += 1
    if preset == "dgx-a100" or (algorithm in ("binomial_tree", "p2p") and preset != "torus-3d"):
        # One NVSwitch: ports are shared only by alike flows. Binomial rounds and a send: a link per
        # flow on the other presets (the torus's multi-hop routes are the exception).
        assert exact == len(GROUPS[preset]) * len(SIZES)


@pytest.mark.parametrize("preset, n", [("dgx-h100:2", 16), ("dgx-h100:4", 32), ("dgx-h100:4", 8)])
def test_the_nvls_tree_closed_form_never_exceeds_the_simulation(preset, n):
    # 8 ranks of dgx-h100:4 are one server: the forced NVLS tree is refused (test_nccl_nvls_tree), so
    # that row runs 4 ranks on each of the first two servers' GPUs 0-3 instead.
    G, env, net = _network(preset)
    gpus = gpu_nodes(G)
    members = gpus[:n] if n > 8 else gpus[:4] + gpus[8:12]
    exact = 0
    for nbytes in SIZES:
        sim = _simulated_s(env, net, "all_reduce", members, nbytes, None, "nvls_tree")
        bound = predict_collective_s(net, "all_reduce", members, nbytes, None, "nvls_tree")
        assert sim >= bound * (1 - REL), (preset, n, nbytes)
        if _contention_free(net, plan_collective(net, "all_reduce", members, nbytes, None, "nvls_tree",
                                                 CollectiveParams.from_graph(G))):
            assert sim == pytest.approx(bound, rel=REL, abs=0), (preset, n, nbytes)
            exact += 1
    if preset == "dgx-h100:2":
        assert exact == len(SIZES)  # two servers: every head has one peer, every flow its own links


@pytest.mark.parametrize("preset, n", [("dgx-a100:2", 16), ("a100-4gpu:2", 8)])
def test_binomial_rounds_are_timed_by_their_own_pairs(preset, n):
    # The audit's case: rounds inside a server used to be charged the NIC's latency and bandwidth
    # (0.33x of the closed form on two DGX A100s). Inside a server the round is much faster.
    G, env, net = _network(preset)
    members = gpu_nodes(G)[:n]
    nbytes = 1 << 28
    sim = _simulated_s(env, net, "broadcast", members, nbytes, 0, "binomial_tree")
    plan = plan_collective(net, "broadcast", members, nbytes, 0, "binomial_tree", CollectiveParams.from_graph(G))
    slowest_pair_everywhere = collective_time_s("broadcast", "binomial_tree", n, nbytes, plan.alpha_s,
                                                plan.bandwidth_Bps, CollectiveParams.from_graph(G), plan.protocol)
    assert predict_collective_s(net, "broadcast", members, nbytes, 0, "binomial_tree") == pytest.approx(sim, rel=REL)
    assert sim < 0.8 * slowest_pair_everywhere


def test_injection_counts_only_the_edges_the_routes_use():
    # dgx-a100: a GPU has a 230 GB/s NVSwitch edge and a 25 GB/s NIC edge; inside the server no route
    # touches the NIC, so the port is 230 GB/s, not 255 (direct all_reduce of 1 MiB, LL128: 8 us + the
    # 52.43 us start-up + 2 x (0.6 us + 7/8 MiB / 0.92 / 230 GB/s) = 70.30 us, not 69.45).
    G, env, net = _network("dgx-a100")
    members = gpu_nodes(G)
    params = CollectiveParams.from_graph(G)
    plan = plan_collective(net, "all_reduce", members, 1 << 20, None, "direct", params)
    ab = group_alpha_beta(net, plan)
    assert ab.injection_Bps == pytest.approx(230e9, rel=1e-12)
    table = collective_time_s("all_reduce", "direct", 8, 1 << 20, ab.alpha_s, ab.bandwidth_Bps, params,
                              plan.protocol, ab.injection_Bps)
    sim = _simulated_s(env, net, "all_reduce", members, 1 << 20, None, "direct")
    assert table == pytest.approx(sim, rel=REL)
    assert plan.protocol == "ll128"
    assert sim == pytest.approx(70.30e-6, abs=0.005e-6)


HOMOGENEOUS = [(preset, kind, algorithm) for preset in ("dgx-a100", "a100-4gpu") for kind, algorithm in CASES
               if (preset, algorithm) != ("a100-4gpu", "double_binary_tree")]


@pytest.mark.parametrize("preset, kind, algorithm", HOMOGENEOUS, ids=lambda v: str(v))
def test_the_table_is_the_measured_form_on_a_homogeneous_group(preset, kind, algorithm):
    # One switch or one full mesh: the table's alpha, beta and port give each phase's drain exactly.
    # (Not the double binary tree on a mesh: its two trees put two flows on one GPU pair's link.)
    G, _, net = _network(preset)
    members = _members(G, kind, 4)
    params = CollectiveParams.from_graph(G)
    for nbytes in SIZES:
        plan = plan_collective(net, kind, members, nbytes, None, algorithm, params)
        ab = group_alpha_beta(net, plan)
        table = collective_time_s(kind, plan.algorithm, len(members), nbytes, ab.alpha_s, ab.bandwidth_Bps, params,
                                  plan.protocol, ab.injection_Bps, plan.rings)
        measured = collective_time_s(kind, plan.algorithm, len(members), nbytes, ab.alpha_s, ab.bandwidth_Bps, params,
                                     plan.protocol, ab.injection_Bps, plan.rings,
                                     [phase_drain_s(net, flows) for _, flows in plan.phases])
        assert table == pytest.approx(measured, rel=1e-12), nbytes
