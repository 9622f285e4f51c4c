"""The analytic model against the simulator: equal where nothing contends, a lower bound where links are shared.

Contention-free topology: a full NVLink mesh (a dedicated link per ordered GPU pair), so disjoint
groups never share a link. With all_reduce forced to the ring (the double binary tree's closed form is
exact only on a switch, ``simulator.cost``), the simulator must equal the analytic model to 1e-9 for
every generator, workload and pass whose in-flight instances never share an ordered GPU pair. The
exception is real contention: Cannon's backward sends two blocks to the same peer at once (the
transposed re-layout), and those two flows share one link even on a mesh; there the simulator must be
slower, never faster.
"""

from __future__ import annotations

import json

import pytest

from simulator.cost_schedule import ClosedForms, analyze, critical_path
from simulator.generators import build_schedule
from simulator.simulation import plan_on_graph, simulate
from simulator.workloads import Workload
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


def _shares_a_pair_in_flight(schedule, G) -> bool:
    """Whether two send/recv pairs on the same ordered GPU pair overlap in the analytic timeline."""
    plan = plan_on_graph(schedule, G)
    critical_path(plan, ClosedForms(G, RING))
    p2p = [i for i in plan.instances if i.kind == "p2p"]
    return any(a.gpus == b.gpus and a.start_s < b.end_s and b.start_s < a.end_s
               for n, a in enumerate(p2p) for b in p2p[n + 1:])


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
    if algo == "cannon25d" and _shares_a_pair_in_flight(s, G):
        assert passes != "fwd"  # only the backward's transposed re-layout sends two blocks to one peer
        assert sim.makespan_s >= bound.makespan_s * (1 - 1e-12)
        return
    assert sim.makespan_s == pytest.approx(bound.makespan_s, rel=1e-9, abs=0)
    # Not only the makespan: every op starts and ends when the analytic walk says.
    for rank in range(s.world_size):
        assert sim.timeline.starts[rank] == pytest.approx(bound.timeline.starts[rank], rel=1e-9, abs=1e-15)
        assert sim.timeline.ends[rank] == pytest.approx(bound.timeline.ends[rank], rel=1e-9, abs=1e-15)
        assert sim.per_rank[rank].compute_s == bound.per_rank[rank].compute_s


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
    from simulator.trace import simulated_trace

    s = _schedule("cannon25d", (2, 2, 2), None, Workload.mlp(144, 48), "both")
    G = pcie_tree(8, 2)
    texts = []
    for _ in range(2):
        result = simulate(s, G, link_samples=50)
        texts.append((json.dumps(result.to_dict(ops=True), sort_keys=True),
                      json.dumps(simulated_trace(result), sort_keys=True)))
    assert texts[0] == texts[1]
    assert '"ph": "C"' in texts[0][1]
