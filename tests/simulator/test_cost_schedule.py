"""The analytic model against the simulator: equal where nothing contends, a lower bound where links are shared.

Contention-free topology: a full NVLink mesh (a dedicated link per ordered GPU pair), so disjoint
groups never share a link. With all_reduce forced to the ring (the double binary tree's two trees put
two flows on one pair's link of a mesh), the simulator must equal the analytic model to 1e-9 for every
generator, workload and pass whose in-flight instances never share a link (read off their routes).

Two kinds of schedule share a link on any topology, because tpsim routes an ordered GPU pair one way:

- Cannon's backward sends two blocks to the same peer at once (the transposed re-layout). The analytic
  model times each send alone, so the simulator is slower; it must equal the analytic walk with those
  sends sharing their link fairly (computed here by hand: k sends starting together on one link).
- SUMMA with prefetch (``--overlap``) has the broadcasts of steps t and t+1 of one group in flight
  together. A chain forwards through every rank, so roots t and t+1 both use the hop t+1 -> t+2. A
  binomial tree on q <= 3 ranks is a star from the root (reduce: into it), and stars with different
  roots share no ordered pair: with binomial broadcasts and reduces, q <= 3 prefetching is exact. With
  q >= 4 binomial round 1 has root+1 forward too, and the model is a lower bound only.
"""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.timing.critical_path import ClosedForms, analyze, critical_path
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.workloads.workload import Workload
from topologies.builders import nvlink_mesh, nvswitch_node, pcie_tree
from topologies.cluster import FabricSpec, fat_tree_cluster
from topologies.devices import A100_SXM4_40GB
from topologies.rates import IB_HDR, NIC_ATTACH_GEN4, NVSWITCH_A100
from topologies.servers import NvSwitchServer

RING = {"all_reduce": "ring"}
ARRANGEMENTS = [("1d", None, 4), ("1d", None, 8), ("2d", (2, 2, 1), None), ("2d", (3, 3, 1), None),
                ("summa25d", (2, 2, 2), None), ("summa25d", (1, 1, 4), None), ("summa25d", (2, 2, 1), None),
                ("cannon25d", (2, 2, 2), None), ("cannon25d", (4, 4, 2), None), ("cannon25d", (2, 2, 1), None)]
WORKLOADS = [Workload.gemm(144, 96, 48), Workload.mlp(144, 48)]


def _schedule(algo, grid, gpus, workload, passes):
    return build_schedule(algo, workload, passes, "bfloat16", grid=grid, gpus=gpus)


def _instance_links(closed: ClosedForms, inst) -> set:
    """The links an instance's flows cross (every phase), on the routes the simulator uses."""
    from simulator.collectives import plan_collective

    kind = "send" if inst.kind == "p2p" else inst.kind
    plan = plan_collective(closed.net, kind, list(inst.gpus), inst.nbytes, inst.root,
                           closed.algorithms.get(kind), closed.params)
    return {link for _, flows in plan.phases for src, dst, _, via in flows
            for link in closed.net.route(src, dst, via).links}


def _sharing_in_flight(schedule, G, algorithms) -> list[tuple]:
    """Pairs of instances that overlap in the analytic timeline and cross a common link."""
    plan = plan_on_graph(schedule, G)
    closed = ClosedForms(G, algorithms)
    critical_path(plan, closed)
    timed = sorted((i for i in plan.instances if i.end_s > i.start_s), key=lambda i: i.start_s)
    links = {i.index: _instance_links(closed, i) for i in timed}
    return [(a, b) for n, a in enumerate(timed) for b in timed[n + 1:]
            if b.start_s < a.end_s and links[a.index] & links[b.index]]


def _walk_with_fair_shared_sends(schedule, G):
    """The analytic walk, except that sends starting together on one ordered GPU pair share its link.

    k flows of w_1 <= ... <= w_k wire bytes starting together on a link of capacity C (max-min fair):
    the i-th drains at (w_1 + ... + w_(i-1) + (k - i + 1) w_i) / C instead of w_i / C alone. Found by
    walking, charging the groups found, and walking again until the groups no longer change.
    """
    from simulator.collectives import plan_collective

    plan = plan_on_graph(schedule, G)
    closed = ClosedForms(G, RING)
    extra: dict[int, float] = {}
    for _ in range(5):
        walk = critical_path(plan, lambda inst: closed(inst) + extra.get(inst.index, 0.0))
        groups: dict[tuple, dict] = {}  # (GPU pair, start) -> the sends sharing it, by index
        for a, b in _pairs_overlapping(plan):
            assert a.start_s == b.start_s, (a.label(), a.start_s, b.start_s)  # the case computed here
            groups.setdefault((a.gpus, a.start_s), {}).update({a.index: a, b.index: b})
        found = {}
        for (gpus, _), sends in groups.items():
            route = closed.net.route(*gpus)
            assert len(route.links) == 1  # the mesh's own link for the pair
            wire = sorted((plan_collective(closed.net, "send", list(gpus), i.nbytes).phases[0][1][0][2], i.index)
                          for i in sends.values())
            before = 0.0
            for k, (w, index) in enumerate(wire):
                found[index] = (before + (len(wire) - k) * w) / route.bandwidth_Bps - w / route.bandwidth_Bps
                before += w
        if found == extra:
            return walk
        extra = found
    raise AssertionError("the groups of shared sends did not settle")


def _pairs_overlapping(plan) -> list[tuple]:
    """Send/recv instances on the same ordered GPU pair that overlap in the walk just made."""
    p2p = sorted((i for i in plan.instances if i.kind == "p2p"), key=lambda i: i.start_s)
    return [(a, b) for n, a in enumerate(p2p) for b in p2p[n + 1:]
            if a.gpus == b.gpus and b.start_s < a.end_s]


_MESHES: dict[int, object] = {}


def _mesh(n: int):
    if n not in _MESHES:
        _MESHES[n] = nvlink_mesh(n, 2)
    return _MESHES[n]


@pytest.mark.parametrize("algo, grid, gpus", ARRANGEMENTS, ids=lambda v: str(v))
@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
@pytest.mark.parametrize("workload", WORKLOADS, ids=["gemm", "mlp"])
def test_contention_free_mesh_simulation_equals_the_analytic_model(algo, grid, gpus, workload, passes):
    s = _schedule(algo, grid, gpus, workload, passes)
    G = _mesh(s.world_size)
    sim = simulate(s, G, algorithms=RING)
    bound = analyze(s, G, algorithms=RING)
    assert sim.makespan_s >= bound.makespan_s * (1 - 1e-12)
    expected = bound.timeline
    shared = _sharing_in_flight(s, G, RING)
    if shared:
        # Only Cannon's backward shares (two blocks to one peer at once): held to the walk with
        # those sends sharing their link, which the simulator must match exactly.
        assert algo == "cannon25d" and passes != "fwd"
        assert all(a.kind == b.kind == "p2p" and a.gpus == b.gpus for a, b in shared)
        assert sim.makespan_s > bound.makespan_s * (1 + 1e-6)
        walk = _walk_with_fair_shared_sends(s, G)
        assert sim.makespan_s == pytest.approx(max(walk.finish_s), rel=1e-9, abs=0)
        expected = walk
    else:
        assert sim.makespan_s == pytest.approx(bound.makespan_s, rel=1e-9, abs=0)
    # Not only the makespan: every op starts and ends when the analytic walk says.
    for rank in range(s.world_size):
        assert sim.timeline.starts[rank] == pytest.approx(expected.starts[rank], rel=1e-9, abs=1e-15)
        assert sim.timeline.ends[rank] == pytest.approx(expected.ends[rank], rel=1e-9, abs=1e-15)
        assert sim.per_rank[rank].compute_s == bound.per_rank[rank].compute_s


STARS = {"all_reduce": "ring", "broadcast": "binomial_tree", "reduce": "binomial_tree"}
PREFETCH = [("2d", (2, 2, 1)), ("2d", (3, 3, 1)), ("summa25d", (2, 2, 2)), ("summa25d", (3, 3, 2))]


@pytest.mark.parametrize("algo, grid", PREFETCH, ids=lambda v: str(v))
@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
@pytest.mark.parametrize("workload", WORKLOADS, ids=["gemm", "mlp"])
def test_prefetching_summa_equals_the_analytic_model_when_its_broadcasts_are_stars(algo, grid, workload, passes):
    s = build_schedule(algo, workload, passes, "bfloat16", grid=grid, overlap=True)
    G = _mesh(s.world_size)
    assert not _sharing_in_flight(s, G, STARS)
    sim, bound = simulate(s, G, algorithms=STARS), analyze(s, G, algorithms=STARS)
    assert sim.makespan_s == pytest.approx(bound.makespan_s, rel=1e-9, abs=0)
    for rank in range(s.world_size):
        assert sim.timeline.starts[rank] == pytest.approx(bound.timeline.starts[rank], rel=1e-9, abs=1e-15)
        assert sim.timeline.ends[rank] == pytest.approx(bound.timeline.ends[rank], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("algo, grid, algorithms", [("2d", (3, 3, 1), RING), ("summa25d", (3, 3, 2), RING),
                                                    ("2d", (4, 4, 1), STARS)], ids=lambda v: str(v))
def test_prefetched_broadcasts_that_share_a_hop_are_bounded_not_matched(algo, grid, algorithms):
    # Chains (and binomial trees on 4 ranks) forward through non-root ranks: two in-flight broadcasts
    # of one group meet on a hop, whatever the topology. The model times each alone: a lower bound.
    s = build_schedule(algo, Workload.mlp(144, 48), "both", "bfloat16", grid=grid, overlap=True)
    G = _mesh(s.world_size)
    shared = _sharing_in_flight(s, G, algorithms)
    assert any(a.kind == b.kind == "broadcast" and a.group == b.group for a, b in shared)
    sim, bound = simulate(s, G, algorithms=algorithms), analyze(s, G, algorithms=algorithms)
    assert sim.makespan_s > bound.makespan_s * (1 + 1e-6)


def test_double_binary_tree_is_exact_on_a_switch():
    # Small all-reduces on 4 GPUs default to the double binary tree; its closed form holds on a switch.
    s = _schedule("1d", None, 4, Workload.mlp(256, 128), "both")
    G = nvswitch_node(4)
    assert simulate(s, G).makespan_s == pytest.approx(analyze(s, G).makespan_s, rel=1e-9, abs=0)


def _oversubscribed_fat_tree():
    server = NvSwitchServer(2, A100_SXM4_40GB, NVSWITCH_A100, nics=1, nic_link=NIC_ATTACH_GEN4)
    return fat_tree_cluster(server, 4, FabricSpec(IB_HDR, leaf_down_ports=2, oversubscription=2.0))


@pytest.mark.parametrize("topology", ["pcie", "fat-tree"])
def test_the_simulator_is_never_faster_than_the_bound_where_links_are_shared(topology):
    G = pcie_tree(8, 2) if topology == "pcie" else _oversubscribed_fat_tree()
    slower = 0
    for algo, grid, gpus in [("1d", None, 8), ("summa25d", (2, 2, 2), None), ("summa25d", (1, 1, 8), None),
                             ("cannon25d", (2, 2, 2), None), ("2d", (2, 2, 1), None)]:
        for workload in WORKLOADS:
            s = _schedule(algo, grid, gpus, workload, "both")
            sim, bound = simulate(s, G, timeline=False), analyze(s, G, timeline=False)
            assert sim.makespan_s >= bound.makespan_s * (1 - 1e-12), (algo, grid, workload)
            slower += sim.makespan_s > bound.makespan_s * (1 + 1e-6)
    assert slower >= 2  # the topology really is contended


def test_two_runs_give_byte_identical_json_and_trace():
    from simulator.timing.trace import simulated_trace

    s = _schedule("cannon25d", (2, 2, 2), None, Workload.mlp(144, 48), "both")
    G = pcie_tree(8, 2)
    texts = []
    for _ in range(2):
        result = simulate(s, G, link_samples=50)
        texts.append((json.dumps(result.to_dict(ops=True), sort_keys=True),
                      json.dumps(simulated_trace(result), sort_keys=True)))
    assert texts[0] == texts[1]
    assert '"ph": "C"' in texts[0][1]
