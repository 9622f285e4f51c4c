"""Builders by invariants: node and edge counts, degree histograms, attributes every graph must carry."""

from collections import Counter

import pytest

from topologies.builders import loopback, nvlink_mesh, nvswitch_node, pcie_tree, ring, torus, torus_2d, torus_3d
from topologies.kinds import EDGE_KINDS, NODE_KINDS
from topologies.validate import gpu_nodes, validate_graph


def out_degrees(G, kind="gpu"):
    return Counter(G.out_degree(n) for n, k in G.nodes(data="kind") if k == kind)


def kinds(G):
    return Counter(k for _, k in G.nodes(data="kind"))


@pytest.mark.parametrize("n, links", [(2, 1), (4, 4), (8, 2)])
def test_mesh_is_complete_with_bundled_links(n, links):
    G = nvlink_mesh(n, links)
    assert G.number_of_nodes() == n and G.number_of_edges() == n * (n - 1)
    assert out_degrees(G) == {n - 1: n}
    for _, _, data in G.edges(data=True):
        assert data["kind"] == "nvlink" and data["n_links"] == links
        assert data["peak_bandwidth_GBps"] == pytest.approx(25.0 * links)
        assert data["bandwidth_GBps"] == pytest.approx(25.0 * links * 230 / 300)


def test_nvswitch_node_is_a_star():
    G = nvswitch_node(8)
    assert kinds(G) == {"gpu": 8, "nvswitch": 1}
    assert G.out_degree("n0/nvswitch") == 8 and G.in_degree("n0/nvswitch") == 8
    assert out_degrees(G) == {1: 8}
    assert G.edges["gpu3", "n0/nvswitch"]["bandwidth_GBps"] == 230.0
    assert G.edges["n0/nvswitch", "gpu3"]["peak_bandwidth_GBps"] == 300.0


def test_nvswitch_node_with_nics_puts_nic_i_next_to_gpu_i():
    G = nvswitch_node(8, nics=4)
    assert kinds(G)["nic"] == 4
    assert set(G.successors("n0/nic1")) == {"gpu2"}
    assert G.nodes["n0/nic3"]["rail"] == 3


def test_pcie_tree_levels():
    G = pcie_tree(8, 2, nics=4)
    assert kinds(G) == {"gpu": 8, "pcie_switch": 4, "host": 1, "nic": 4}
    assert G.out_degree("n0/host") == 4
    assert Counter(G.out_degree(n) for n, k in G.nodes(data="kind") if k == "pcie_switch") == {4: 4}
    assert set(G.successors("gpu5")) == {"n0/pcie2"}
    assert G.number_of_edges() == 2 * (8 + 4 + 4)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_ring_counts(n):
    G = ring(n)
    links = {1: 0, 2: 1}.get(n, n)
    assert G.number_of_nodes() == n and G.number_of_edges() == 2 * links


@pytest.mark.parametrize("dims", [(4, 4), (3, 5), (2, 3), (4, 4, 4), (2, 2, 2), (3, 1, 4)])
def test_torus_degree_is_sum_over_dimensions(dims):
    G = torus(dims)
    degree = sum({1: 0, 2: 1}.get(n, 2) for n in dims)
    assert out_degrees(G) == {degree: len(G)}
    assert G.number_of_edges() == len(G) * degree


def test_torus_keeps_its_shape():
    assert torus_3d(2, 3, 4).graph["torus_dims"] == [2, 3, 4] and ring(5).graph["torus_dims"] == [5]


def test_torus_index_is_row_major():
    assert set(torus_2d(3, 4).successors("gpu5")) == {"gpu1", "gpu9", "gpu4", "gpu6"}
    # (1, 2, 3) in a 4x4x4 torus is index (1*4 + 2)*4 + 3 = 27; its neighbours wrap in z.
    assert set(torus_3d(4, 4, 4).successors("gpu27")) == {"gpu11", "gpu43", "gpu23", "gpu31", "gpu26", "gpu24"}


def test_loopback_rank_slots_are_gpu_nodes_on_one_host():
    G = loopback(4)
    assert gpu_nodes(G) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert G.nodes["gpu2"]["device"]["name"] == "cpu-core"
    assert {d["kind"] for *_, d in G.edges(data=True)} == {"loopback"}
    assert {G.nodes[n]["server"] for n in G} == {0}


@pytest.mark.parametrize(
    "build",
    [lambda: nvlink_mesh(4, 4), lambda: nvswitch_node(8, nics=8), lambda: pcie_tree(8, 4, nics=2),
     lambda: ring(5), lambda: torus_3d(2, 3, 4), lambda: loopback(3)],
)
def test_every_builder_output_validates_and_uses_known_kinds(build):
    G = build()
    assert validate_graph(G) == gpu_nodes(G)
    assert {k for _, k in G.nodes(data="kind")} <= set(NODE_KINDS)
    assert {k for *_, k in G.edges(data="kind")} <= set(EDGE_KINDS)
    # Tori also keep their shape, which bisection cuts across.
    assert set(G.graph) == {"name", "notes", "sim"} | (
        {"torus_dims"} if G.graph["name"].startswith(("torus", "ring")) else set())
    for a, b, data in G.edges(data=True):
        assert G.edges[b, a] == data, "links are full duplex with the same figures both ways"


@pytest.mark.parametrize(
    "build, match",
    [(lambda: nvlink_mesh(0), "n_gpus"), (lambda: nvlink_mesh(4, 0), "links_per_pair"),
     (lambda: nvswitch_node(8, nics=3), "must divide"), (lambda: pcie_tree(8, 3), "gpus_per_switch"),
     (lambda: torus((4, 0)), "positive integers"), (lambda: loopback(0), "n_ranks")],
)
def test_builders_reject_bad_arguments(build, match):
    with pytest.raises(ValueError, match=match):
        build()
