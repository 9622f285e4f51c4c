"""NCCL's algorithms as NCCL runs them: the tree's shape, the choice against the simulation, sweeps, fill, latency.

Cheap shape tests first (``nccl_tree`` on server patterns), then plans on presets, then flow simulations of
every NCCL-enabled candidate on dgx-a100, dgx-a100:4, dgx-h100:8 and dgx-h100:64.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest
import simpy

from simulator.cli import main as tpsim
from simulator.collectives import CollectiveParams, plan_collective, run_collective
from simulator.collectives.choose import CHOICE_TOLERANCE, nccl_algorithms
from simulator.collectives.nccl_tree import nccl_tree
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

KINDS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")


def test_two_servers_of_two_ranks_give_two_rails_each_with_its_chains_and_tree():
    shape = nccl_tree((0, 0, 1, 1))
    flows = {(a, b): f for a, b, f in shape.flows}
    # Channel 0: chains 0-1 and 2-3, heads 0 and 2; channel 1: chains 1-0 and 3-2, heads 1 and 3.
    assert flows == {(1, 0): 1.0, (0, 1): 1.0, (3, 2): 1.0, (2, 3): 1.0, (2, 0): 0.5, (0, 2): 0.5,
                     (3, 1): 0.5, (1, 3): 0.5}
    assert flows[(0, 2)] == flows[(2, 0)] == flows[(1, 3)] == flows[(3, 1)] == 0.5  # both trees, S/(2k) each
    assert flows[(1, 0)] == flows[(0, 1)] == 1.0  # chain 0-1 (channel 0) and 1-0 (channel 1), S/2 each
    assert (0, 3) not in flows and (1, 2) not in flows  # no flow between servers leaves its rail
    assert (shape.intra_steps, shape.inter_steps) == (2, 2)


def test_one_server_is_a_chain_up_and_down():
    shape = nccl_tree((0,) * 8)
    assert sorted((a, b) for a, b, _ in shape.flows) == sorted([(i + 1, i) for i in range(7)] + [(i, i + 1)
                                                                                                 for i in range(7)])
    assert {f for _, _, f in shape.flows} == {1.0}
    assert (shape.intra_steps, shape.inter_steps) == (14, 0)  # NCCL: 2 (ranks per node - 1) intra steps


@pytest.mark.parametrize("servers, per_server", [(2, 8), (5, 8), (64, 8), (3, 4)])
def test_every_nic_rail_carries_two_channel_shares_each_way_and_stays_on_its_rail(servers, per_server):
    pattern = tuple(s for s in range(servers) for _ in range(per_server))
    shape = nccl_tree(pattern)
    out: dict = {}
    inn: dict = {}
    for a, b, fraction in shape.flows:
        if pattern[a] != pattern[b]:
            assert a % per_server == b % per_server  # the same local index: one rail, NIC to NIC
            out[a] = out.get(a, 0.0) + fraction
            inn[b] = inn.get(b, 0.0) + fraction
    # Interior in one tree, leaf in the other: 3 + 1 halves of S/k at most, as a ring's 2 S/k.
    assert max(out.values()) <= 2.0 / per_server + 1e-12 and max(inn.values()) <= 2.0 / per_server + 1e-12
    depth = max(len(bin(servers)) - 2, 1)  # NCCL's latency: log2(nodes) inter steps up, as many down
    assert shape.inter_steps <= 2 * depth and shape.intra_steps == 2 * (per_server - 1)


def _simulated_s(net, env, kind, members, nbytes, algorithm=None, protocol=None):
    params = CollectiveParams.from_graph(net.graph)
    if protocol is not None:
        params = dataclasses.replace(params, protocol=protocol)
    root = 0 if kind in ("broadcast", "reduce") else None
    start = env.now
    proc = run_collective(env, net, kind, members, nbytes, root, algorithm, params)
    env.run(until=proc)
    return env.now - start, proc.value


def test_512_h100s_all_reduce_no_longer_funnels_through_one_nic():
    G = load_topology("dgx-h100:64")
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    members = gpu_nodes(G)
    S = 384 << 20
    chosen, plan = _simulated_s(net, env, "all_reduce", members, S)
    ring, _ = _simulated_s(net, env, "all_reduce", members, S, "ring", "simple")
    assert plan.algorithm == "nvls_tree"  # NVLink SHARP inside each server, the tree of NIC heads across
    assert chosen < ring  # was 17.4 ms (busbw 46 GB/s, one NIC's worth) against the ring's 4.0 ms
    busbw = S / chosen * 2 * 511 / 512 / 1e9
    assert busbw > 8 * 47 * 0.75  # within sight of 8 NDR NICs per server


SWEEP = [("dgx-a100", (2, 4, 8), (8, 1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28)),
         ("dgx-a100:4", (16, 32), (8, 1 << 14, 1 << 20, 1 << 24, 1 << 28)),
         ("dgx-h100:8", (16, 64), (8, 1 << 16, 1 << 20, 1 << 24, 1 << 28)),
         ("dgx-h100", (4, 8), (8, 1 << 16, 1 << 20, 1 << 24, 1 << 28)),
         ("dgx-h100:64", (512,), (1 << 10, 1 << 20, 384 << 20))]


@pytest.mark.parametrize("preset, groups, sizes", SWEEP, ids=[s[0] for s in SWEEP])
def test_the_chosen_candidate_is_within_10_percent_of_the_fastest_simulated_one(preset, groups, sizes):
    G = load_topology(preset)
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    params = CollectiveParams.from_graph(G)
    worst = []
    for n in groups:
        members = gpu_nodes(G)[:n]
        servers = [G.nodes[m]["server"] for m in members]
        n_nodes = len(set(servers))
        kinds = ("all_reduce",) if n > 64 else KINDS
        for kind in kinds:
            for nbytes in sizes:
                chosen, plan = _simulated_s(net, env, kind, members, nbytes)
                times = {(a, p): _simulated_s(net, env, kind, members, nbytes, a, p)[0]
                         for a in nccl_algorithms(kind, n, params, n_nodes, servers)
                         for p in (("simple",) if a.startswith("nvls") else ("ll", "ll128", "simple"))}
                fastest = min(times.values())
                assert chosen == pytest.approx(times[(plan.algorithm, plan.protocol)], rel=1e-9)
                contended = chosen > plan.contention_free_s * (1 + 1e-9)
                worst.append((chosen / fastest, kind, n, nbytes, plan.algorithm, plan.protocol, contended))
    # NCCL's NVLS tree runs where NCCL's model ranks it first, as NCCL does (choose.settle; measured in
    # test_nvls_tree_fill.py): the one exception, held to the published logs instead.
    ratio, *where = max(w for w in worst if w[4] != "nvls_tree")
    assert ratio <= 1 + CHOICE_TOLERANCE, where
    # Beyond LL128's own wire overhead (module choose), the choice is the fastest, except where the
    # chosen plan's flows contend, which the contention-free time it was chosen by cannot see (64 H100
    # ranks, 256 MiB: the tree's 1617 us contention-free are 1736 us simulated, the ring's 1659 us).
    assert all(r <= 1 + 1e-9 or p == "ll128" or contended or a == "nvls_tree"
               for r, _, _, _, a, p, contended in worst)


def _sweep(preset: str, kind: str, n: int) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert tpsim(["collective", "--op", kind, "--group-size", str(n), "--topology", preset, "--sweep",
                      "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("preset, n", [("dgx-a100", 8), ("dgx-a100", 2), ("dgx-a100:4", 32), ("dgx-h100:8", 64),
                                       ("dgx-h100", 8), ("gb200-nvl72", 72)])
@pytest.mark.parametrize("kind", KINDS)
def test_the_sweep_table_is_monotone(preset, n, kind):
    rows = _sweep(preset, kind, n)
    times = [row["time_s"] for row in rows]
    drops = [(rows[i]["bytes"], times[i], times[i + 1]) for i in range(len(times) - 1) if times[i + 1] < times[i]]
    assert not drops


def test_the_issues_one_server_1MiB_case_no_longer_jumps():
    rows = {row["bytes"]: row for row in _sweep("dgx-a100", "all_reduce", 8)}
    # Was 32.4 us at 512 KiB and 75.5 us (tree/LL128) at 1 MiB, while ring/LL gave 48.3 us.
    assert rows[1 << 20]["algorithm"] == "ring"
    assert rows[1 << 19]["time_s"] < rows[1 << 20]["time_s"] < rows[1 << 21]["time_s"]


def test_chain_fill_is_charged_hop_by_hop_at_each_hops_rate():
    # Broadcast over two DGX A100s, one ring: 15 hops, 14 of them filled before the stream drains; one
    # is between the servers (24 GB/s NIC), the others NVLink (230 GB/s).
    G = load_topology("dgx-a100:2")
    net = FlowNetwork(simpy.Environment(), G)
    params = dataclasses.replace(CollectiveParams.from_graph(G), protocol="simple", inter_step_latency_us=0.0)
    members = gpu_nodes(G)[:16]
    S = 64 << 20
    plan = plan_collective(net, "broadcast", members, S, 0, "chain", params)
    assert plan.rings == 8  # one per NIC rail; each ring's chain carries S/8
    chunk = params.chunk_bytes(S / 8)
    hops = [(plan.phases[0][1][i][0], plan.phases[0][1][i][1], plan.phases[0][1][i][3]) for i in range(14)]
    rates = [net.route(a, b, v).bandwidth_Bps for a, b, v in hops]
    assert sorted(rates)[0] == pytest.approx(24e9) and sorted(rates)[1] == pytest.approx(230e9)
    # 15 steps, one between the servers; the drain carries that one's route latency itself.
    fill = plan.phases[0][0] - 14 * net.route(members[0], members[1]).latency_s
    assert fill == pytest.approx(chunk * sum(1 / r for r in rates), rel=1e-9)
    assert fill < 14 * chunk / 24e9 / 5  # the old charge: every fill hop at the slowest link's rate


def test_steps_between_servers_pay_nccls_network_step_latency():
    G = load_topology("dgx-a100:2")
    net = FlowNetwork(simpy.Environment(), G)
    members = gpu_nodes(G)
    base = dataclasses.replace(CollectiveParams.from_graph(G), protocol="ll")
    none = dataclasses.replace(base, inter_step_latency_us=0.0)
    with_ = plan_collective(net, "all_reduce", members, 1024, None, "ring", base).phases[0][0]
    without = plan_collective(net, "all_reduce", members, 1024, None, "ring", none).phases[0][0]
    # NCCL's ring over 2 servers crosses between them 2 (2 - 1) = 2 times per all_reduce (tuning.cc nInterSteps).
    assert with_ - without == pytest.approx(2 * base.inter_step_latency_s, rel=1e-9)
    assert base.inter_step_latency_us == 10.0  # the default, read off the published multi-server logs
