"""Fat-tree clusters: counts, wiring, degree histograms, and bisection against the closed form."""

import math
from collections import Counter

import pytest

from topologies.bisection import bisection_GBps
from topologies.cluster import FabricSpec, fat_tree_cluster
from topologies.devices import A100_SXM4_40GB
from topologies.links import LinkSpec
from topologies.rates import IB_HDR, NVSWITCH_A100
from topologies.servers import MeshServer, NvSwitchServer
from topologies.validate import validate_graph

NIC = LinkSpec("ib", 10.0, 0.15, peak_bandwidth_GBps=12.5)
SERVER = NvSwitchServer(4, A100_SXM4_40GB, NVSWITCH_A100, nics=4)


def count(G, kind):
    return sum(1 for _, k in G.nodes(data="kind") if k == kind)


def test_two_dgx_a100_servers():
    server = NvSwitchServer(8, A100_SXM4_40GB, NVSWITCH_A100, nics=8)
    G = fat_tree_cluster(server, 2, FabricSpec(IB_HDR, leaf_down_ports=20))
    assert (count(G, "gpu"), count(G, "nvswitch"), count(G, "nic"), count(G, "leaf"), count(G, "spine")) == (
        16, 2, 16, 8, 2)
    # Directed edges: GPU-switch, GPU-NIC, NIC-leaf, leaf-spine, each both ways.
    assert G.number_of_edges() == 2 * (16 + 16 + 16 + 8 * 2)
    assert set(G.successors("leaf3")) == {"n0/nic3", "n1/nic3", "spine0", "spine1"}
    assert G.nodes["gpu9"]["server"] == 1
    validate_graph(G)


@pytest.mark.parametrize("n_servers, ports", [(6, 4), (8, 4), (5, 2)])
def test_rail_optimised_leaf_and_spine_degrees(n_servers, ports):
    G = fat_tree_cluster(SERVER, n_servers, FabricSpec(NIC, leaf_down_ports=ports, n_spines=3))
    groups = math.ceil(n_servers / ports)
    assert count(G, "leaf") == groups * 4 and count(G, "spine") == 3
    leaf_degrees = Counter(G.out_degree(n) for n, k in G.nodes(data="kind") if k == "leaf")
    sizes = Counter(min(ports, n_servers - g * ports) for g in range(groups))
    assert leaf_degrees == {size + 3: 4 * times for size, times in sizes.items()}
    assert Counter(G.out_degree(n) for n, k in G.nodes(data="kind") if k == "spine") == {groups * 4: 3}
    # Rail wiring: every NIC i sits on a rail-i leaf.
    for nic, k in G.nodes(data="kind"):
        if k == "nic":
            (leaf,) = [n for n in G.successors(nic) if G.nodes[n]["kind"] == "leaf"]
            assert G.nodes[leaf]["rail"] == G.nodes[nic]["rail"]


def test_server_grouped_wiring_puts_a_server_on_one_leaf():
    G = fat_tree_cluster(SERVER, 6, FabricSpec(NIC, leaf_down_ports=8, rail_optimised=False))
    assert count(G, "leaf") == 3
    for s in range(6):
        leaves = {n for i in range(4) for n in G.successors(f"n{s}/nic{i}") if n.startswith("leaf")}
        assert leaves == {f"leaf{s // 2}"}


@pytest.mark.parametrize("oversubscription", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("rail_optimised", [True, False])
def test_bisection_matches_the_fat_tree_closed_form(oversubscription, rail_optimised):
    # 8 servers, leaves of 2 servers' ports: each half fills whole leaves, so every bit crosses a spine.
    ports = 2 if rail_optimised else 8
    fabric = FabricSpec(NIC, leaf_down_ports=ports, oversubscription=oversubscription, rail_optimised=rail_optimised)
    G = fat_tree_cluster(SERVER, 8, fabric)
    expected = (8 / 2) * 4 * NIC.bandwidth_GBps / oversubscription
    assert bisection_GBps(G) == pytest.approx(expected)


@pytest.mark.parametrize("oversubscription", [1.0, 4.0])
def test_bisection_inside_one_leaf_group_ignores_oversubscription(oversubscription):
    G = fat_tree_cluster(SERVER, 6, FabricSpec(NIC, leaf_down_ports=8, oversubscription=oversubscription))
    assert bisection_GBps(G) == pytest.approx(3 * 4 * NIC.bandwidth_GBps)


def test_mesh_servers_join_a_fat_tree_too():
    server = MeshServer(4, A100_SXM4_40GB, LinkSpec("nvlink", 19.0, 0.3), links_per_pair=4, nics=4)
    G = fat_tree_cluster(server, 4, FabricSpec(NIC, leaf_down_ports=2))
    assert count(G, "gpu") == 16 and G.out_degree("gpu5") == 3 + 1
    assert bisection_GBps(G) == pytest.approx(2 * 4 * NIC.bandwidth_GBps)


def test_fabric_and_cluster_arguments_are_checked():
    with pytest.raises(ValueError, match="oversubscription must be >= 1"):
        FabricSpec(NIC, oversubscription=0.5)
    with pytest.raises(ValueError, match="kind must be ib or ethernet"):
        FabricSpec(LinkSpec("nvlink", 1.0, 0.0))
    with pytest.raises(ValueError, match="n_servers"):
        fat_tree_cluster(SERVER, 0, FabricSpec(NIC))
    with pytest.raises(ValueError, match="has no NICs"):
        fat_tree_cluster(NvSwitchServer(4, A100_SXM4_40GB, NVSWITCH_A100), 2, FabricSpec(NIC))
    with pytest.raises(ValueError, match="needs 4 ports per server"):
        fat_tree_cluster(SERVER, 2, FabricSpec(NIC, leaf_down_ports=3, rail_optimised=False))
