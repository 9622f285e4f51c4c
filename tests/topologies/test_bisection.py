"""Bisection bandwidth by max-flow against closed forms (rings, tori, switches, meshes, PCIe trees)."""

import math

import pytest

from topologies.bisection import bisection, bisection_GBps, candidate_cuts, cut_GBps
from topologies.builders import loopback, nvlink_mesh, nvswitch_node, pcie_tree, ring, torus
from topologies.links import LinkSpec
from topologies.presets import build_preset

LINK = LinkSpec("nvlink", 10.0, 0.3)


@pytest.mark.parametrize("n, expected", [(2, 10.0), (3, 20.0), (8, 20.0), (9, 20.0)])
def test_ring(n, expected):
    assert bisection_GBps(ring(n, link=LINK)) == pytest.approx(expected)


def torus_closed_form(dims, rate):
    """Least cut across an even dimension: N/L rings along it, each cut twice (once, a single link, when L == 2)."""
    n = math.prod(dims)
    return min((2 * n // length if length > 2 else n // 2) * rate for length in dims if length % 2 == 0)


@pytest.mark.parametrize("dims", [(4, 4), (6, 3), (2, 4), (4, 4, 4), (2, 2, 2), (4, 2, 3), (8, 4, 2), (2, 8, 8),
                                  (3, 4, 8), (2, 6)])
def test_torus_matches_the_closed_form(dims):
    assert bisection_GBps(torus(dims, link=LINK)) == pytest.approx(torus_closed_form(dims, LINK.bandwidth_GBps))


@pytest.mark.parametrize("dims", [(2, 8, 8), (8, 2, 8), (8, 8, 2)])
def test_isomorphic_tori_get_the_same_bisection(dims):
    # 128 GPUs; across a dimension of length 8: 2 * 128/8 = 32 links (the length-2 one cuts 64).
    shape = "x".join(map(str, dims))
    best = bisection(build_preset("torus-3d:" + shape))
    assert best.GBps == pytest.approx(32 * 230.0 / 6) == pytest.approx(1226.67, rel=1e-5)
    axis = best.cut.split()[1]
    assert dims["xyz".index(axis)] == 8 and best.cut == f"across {axis} of {shape}, {axis} < 4 | {axis} >= 4"
    assert len(best.candidates) == 3


def test_torus_cut_labels_and_order():
    cuts = candidate_cuts(torus((2, 3, 4), link=LINK))
    assert [label for label, *_ in cuts] == ["across x of 2x3x4, x < 1 | x >= 1", "across z of 2x3x4, z < 2 | z >= 2"]
    assert cuts[1][1] == ["gpu0", "gpu1", "gpu4", "gpu5", "gpu8", "gpu9", "gpu12", "gpu13", "gpu16", "gpu17",
                          "gpu20", "gpu21"]
    # The x cut is the index cut, so "by index" is not tried again; all-odd dims fall back to it.
    assert [label for label, *_ in candidate_cuts(torus((3, 3), link=LINK))] == ["by index, gpu0..gpu3 | gpu4..gpu8"]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_switch_star(n):
    assert bisection_GBps(nvswitch_node(n)) == pytest.approx(n / 2 * 230.0)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_complete_mesh(n):
    G = nvlink_mesh(n, 2, link=LINK)
    assert bisection_GBps(G) == pytest.approx((n // 2) ** 2 * 2 * LINK.bandwidth_GBps)


def test_pcie_tree_is_limited_by_the_switch_uplinks():
    narrow = LinkSpec("pcie", 12.0, 0.3)
    G = pcie_tree(8, 2, uplink=narrow)
    assert bisection_GBps(G) == pytest.approx(2 * 12.0)  # two switches' uplinks on the first half
    assert bisection_GBps(pcie_tree(8, 4)) == pytest.approx(25.0)


def test_loopback_star_and_single_gpu():
    assert bisection_GBps(loopback(6)) == pytest.approx(3 * 5.0)
    assert bisection_GBps(loopback(1)) is None


def test_clusters_are_cut_by_server():
    best = bisection(build_preset("dgx-a100:2"))
    assert (best.GBps, best.cut, len(best.candidates)) == (pytest.approx(8 * 24.0), "by server, n0 | n1", 1)
    assert bisection(build_preset("dgx-a100:4")).cut == "by server, n0..n1 | n2..n3"
    # With three servers no whole-server half exists: the index cut splits server 1.
    labels = [label for label, *_ in candidate_cuts(build_preset("dgx-a100:3"))]
    assert labels == ["by index, gpu0..gpu11 | gpu12..gpu23"]


def test_server_cut_follows_server_numbers_not_gpu_index():
    G = nvlink_mesh(4, 1, link=LINK)
    for gpu, server in zip(["gpu0", "gpu1", "gpu2", "gpu3"], [0, 1, 0, 1]):
        G.nodes[gpu]["server"] = server
    labels = [(label, senders) for label, senders, _ in candidate_cuts(G)]
    assert labels == [("by server, n0 | n1", ["gpu0", "gpu2"]), ("by index, gpu0..gpu1 | gpu2..gpu3", ["gpu0", "gpu1"])]


def test_cut_between_chosen_sets():
    G = ring(6, link=LINK)
    assert cut_GBps(G, ["gpu0"], ["gpu3"]) == pytest.approx(20.0)
    with pytest.raises(ValueError, match="both a sender and a receiver"):
        cut_GBps(G, ["gpu0"], ["gpu0"])
