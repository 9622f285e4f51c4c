"""The cluster router gives Router's routes on every server preset, and only claims graphs it can route."""

import random

import networkx as nx
import pytest

from topologies import gpu_nodes, load_topology, save_topology
from topologies.cluster_routing import ClusterRouter
from topologies.presets import PRESETS
from topologies.routing import Router

SERVER_PRESETS = sorted(name for name, preset in PRESETS.items() if name not in ("torus-3d", "loopback"))


def same_routes(G, pairs):
    fast, search = ClusterRouter.for_graph(G), Router(G)
    assert fast is not None
    for src, dst in pairs:
        assert fast.path(src, dst) == search.path(src, dst), (src, dst)


def sample(G, n, seed=0):
    gpus = gpu_nodes(G)
    rng = random.Random(seed)
    return [tuple(rng.sample(gpus, 2)) for _ in range(n)]


@pytest.mark.parametrize("name", SERVER_PRESETS)
def test_every_pair_on_one_two_and_three_servers(name):
    for servers in (1, 2, 3):
        G = load_topology(f"{name}:{servers}")
        gpus = gpu_nodes(G)[:48]  # gb200-nvl72: a sample of its 72-GPU racks
        same_routes(G, [(a, b) for a in gpus for b in gpus])


@pytest.mark.parametrize("name", SERVER_PRESETS)
def test_clusters_that_span_leaf_groups(name):
    # One server more than a leaf takes: two leaf groups, so routes between them cross the spines.
    G = load_topology(name)
    leaf_ports = max(d for n, d in load_topology(f"{name}:2").out_degree() if n.startswith("leaf"))
    G = PRESETS[name].cluster(leaf_ports + 1) if leaf_ports < 60 else load_topology(f"{name}:3")
    same_routes(G, sample(G, 400))


@pytest.mark.parametrize("options", [dict(rail_optimised=False), dict(oversubscription=2.0, rail_optimised=False),
                                     dict(oversubscription=3.0)])
def test_server_grouped_and_oversubscribed_fabrics(options):
    G = PRESETS["dgx-h100"].cluster(40, **options)
    same_routes(G, sample(G, 400))


def test_a_large_cluster():
    G = load_topology("dgx-h100:512")
    same_routes(G, sample(G, 200))


def test_non_gpu_ends_fall_back_to_the_search():
    G = load_topology("dgx-a100:2")
    fast, search = ClusterRouter.for_graph(G), Router(G)
    for src, dst in [("leaf0", "gpu9"), ("gpu0", "spine1"), ("gpu3", "gpu3"), ("n0/nic2", "n1/nvswitch")]:
        assert fast.path(src, dst) == search.path(src, dst)


@pytest.mark.parametrize("spec", ["torus-3d:3x3x2", "torus-3d"])
def test_a_torus_is_not_a_cluster(spec):
    assert ClusterRouter.for_graph(load_topology(spec)) is None


def edited(change):
    G = load_topology("dgx-a100:2")
    change(G)
    return G


@pytest.mark.parametrize("change", [
    lambda G: G.remove_edge("gpu9", "n1/nvswitch"),  # servers no longer alike
    lambda G: G.add_edge("gpu0", "gpu8", kind="nvlink", bandwidth_GBps=1.0, latency_us=0.0),  # across servers
    lambda G: G.remove_edge("leaf3", "spine0"),  # a leaf cut off from a spine
    lambda G: G.add_edge("leaf0", "leaf1", kind="ib", bandwidth_GBps=1.0, latency_us=0.0),
    lambda G: nx.set_edge_attributes(G, {("n0/nic0", "leaf0"): "nvlink"}, "kind"),  # one port costs less
    lambda G: G.add_node("box", kind="switch"),
])
def test_graphs_that_are_not_such_clusters_get_the_search(change):
    assert ClusterRouter.for_graph(edited(change)) is None


def test_a_calibrated_cluster_keeps_the_fast_routes():
    G = load_topology("dgx-h100:4")
    for _, _, data in G.edges(data=True):
        data["bandwidth_GBps"] *= 0.8  # what a calibration changes: rates and latencies, not the wiring
    same_routes(G, sample(G, 300))


@pytest.mark.parametrize("suffix", [".yaml", ".graphml"])
def test_a_preset_saved_and_loaded_keeps_the_fast_routes(tmp_path, suffix):
    path = tmp_path / f"cluster{suffix}"
    save_topology(load_topology("dgx-h100:3"), str(path))
    G = load_topology(str(path))
    gpus = gpu_nodes(G)
    same_routes(G, [(a, b) for a in gpus for b in gpus])
