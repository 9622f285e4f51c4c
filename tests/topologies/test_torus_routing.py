"""The torus router gives Router's routes on tori and rings, and only claims graphs that are exactly tori."""

import random

import pytest

from topologies import TopologyError, gpu_nodes, load_topology
from topologies.builders import ring, torus, torus_2d
from topologies.routing import Router
from topologies.torus_routing import TorusRouter


@pytest.mark.parametrize("build", [lambda: load_topology("torus-3d"), lambda: load_topology("torus-3d:3x3x2"),
                                   lambda: load_topology("torus-3d:2x1x5"), lambda: ring(7), lambda: ring(2),
                                   lambda: torus_2d(4, 6), lambda: torus((3, 4), gpus_per_server=4)])
def test_every_pair_as_the_search_routes_it(build):
    G = build()
    fast, search = TorusRouter.for_graph(G), Router(G)
    assert fast is not None
    gpus = gpu_nodes(G)
    for src in gpus:
        for dst in gpus:
            assert fast.path(src, dst) == search.path(src, dst), (src, dst)


def test_a_large_torus():
    G = load_topology("torus-3d:8x8x8")
    fast, search = TorusRouter.for_graph(G), Router(G)
    rng = random.Random(0)
    for src, dst in (rng.sample(gpu_nodes(G), 2) for _ in range(300)):
        assert fast.path(src, dst) == search.path(src, dst)


def test_other_ends_fall_back_to_the_search():
    G = ring(4)
    fast = TorusRouter.for_graph(G)
    assert fast.path("gpu2", "gpu2") == ()
    with pytest.raises(TopologyError, match="unknown node"):
        fast.path("gpu0", "gpu9")


@pytest.mark.parametrize("change", [
    lambda G: G.remove_edge("gpu0", "gpu1"),
    lambda G: G.add_edge("gpu0", "gpu5", kind="nvlink", bandwidth_GBps=1.0, latency_us=0.0),
    lambda G: G.add_node("switch0", kind="switch"),
    lambda G: G.edges["gpu0", "gpu1"].update(kind="ib"),  # one link costs more
    lambda G: G.graph.update(torus_dims=[4, 2]),
    lambda G: G.graph.pop("torus_dims"),
])
def test_graphs_that_are_not_exactly_tori_get_the_search(change):
    G = torus_2d(4, 4)
    change(G)
    assert TorusRouter.for_graph(G) is None
