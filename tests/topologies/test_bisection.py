"""Bisection bandwidth by max-flow against closed forms (rings, tori, switches, meshes, PCIe trees)."""

import pytest

from topologies.bisection import bisection_GBps, cut_GBps
from topologies.builders import loopback, nvlink_mesh, nvswitch_node, pcie_tree, ring, torus
from topologies.links import LinkSpec

LINK = LinkSpec("nvlink", 10.0, 0.3)


@pytest.mark.parametrize("n, expected", [(2, 10.0), (3, 20.0), (8, 20.0), (9, 20.0)])
def test_ring(n, expected):
    assert bisection_GBps(ring(n, link=LINK)) == pytest.approx(expected)


@pytest.mark.parametrize("dims", [(4, 4), (6, 3), (2, 4), (4, 4, 4), (2, 2, 2), (4, 2, 3), (8, 4, 2)])
def test_torus_cut_across_the_first_dimension(dims):
    # The first half by index is x < X/2: every line along x is cut twice (once when X == 2).
    x, rest = dims[0], 1
    for n in dims[1:]:
        rest *= n
    expected = (2 if x > 2 else 1) * rest * LINK.bandwidth_GBps
    assert bisection_GBps(torus(dims, link=LINK)) == pytest.approx(expected)


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


def test_cut_between_chosen_sets():
    G = ring(6, link=LINK)
    assert cut_GBps(G, ["gpu0"], ["gpu3"]) == pytest.approx(20.0)
    with pytest.raises(ValueError, match="both a sender and a receiver"):
        cut_GBps(G, ["gpu0"], ["gpu0"])
