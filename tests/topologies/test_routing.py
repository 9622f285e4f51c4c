"""Routing: every GPU pair routable on shortest paths, deterministic across processes, ECMP spread."""

import os
import random
import subprocess
import sys
import time

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies import Router, TopologyError, gpu_nodes, load_topology
from topologies.builders import ring, torus_3d
from topologies.routing import pick


def check_route(G, route, src, dst):
    assert route[0][0] == src and route[-1][1] == dst
    for (a, b), (c, _) in zip(route, route[1:]):
        assert b == c
    assert all(G.has_edge(a, b) for a, b in route)


@pytest.mark.parametrize("spec", ["dgx-a100", "a100-4gpu:2", "pcie-8gpu:2", "torus-3d:3x3x2", "loopback:4",
                                  "dgx-h100:3"])
def test_every_gpu_pair_is_routable_on_a_fewest_hop_path(spec):
    G = load_topology(spec)
    router = Router(G)
    gpus = gpu_nodes(G)
    hops = dict(nx.all_pairs_shortest_path_length(G))
    for src in gpus:
        for dst in gpus:
            route = router.path(src, dst)
            if src == dst:
                assert route == ()
                continue
            check_route(G, route, src, dst)
            assert len(route) == hops[src][dst]


def test_routes_are_cached_and_stable():
    router = Router(load_topology("dgx-a100:2"))
    first = router.path("gpu0", "gpu9")
    assert router.path("gpu0", "gpu9") is first
    assert Router(load_topology("dgx-a100:2")).path("gpu0", "gpu9") == first


def test_routes_do_not_depend_on_insertion_order():
    G = load_topology("dgx-a100:3")
    rng = random.Random(1)
    nodes, edges = list(G.nodes(data=True)), list(G.edges(data=True))
    rng.shuffle(nodes)
    rng.shuffle(edges)
    H = nx.DiGraph(G.graph)
    H.add_nodes_from(nodes)
    H.add_edges_from(edges)
    a, b = Router(G), Router(H)
    pairs = [(f"gpu{i}", f"gpu{(i * 7 + 5) % 24}") for i in range(24)]
    assert [a.path(*p) for p in pairs] == [b.path(*p) for p in pairs]


def test_same_routes_in_another_process_with_another_hash_seed():
    code = ("from topologies import Router, load_topology; r = Router(load_topology('dgx-h100:4')); "
            "print([r.path(f'gpu{i}', f'gpu{j}') for i in range(32) for j in range(32)])")
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_cross_rail_traffic_stays_on_nvlink_until_the_peer_s_rail():
    G = load_topology("dgx-a100:2")
    router = Router(G)
    for src, dst in [("gpu0", "gpu9"), ("gpu3", "gpu12"), ("gpu7", "gpu8")]:
        kinds = [G.edges[e]["kind"] for e in router.path(src, dst)]
        assert kinds.count("ib") == 2, "one NIC-leaf-NIC crossing, no spine"
        assert len(router.equal_cost_paths(src, dst)) == 2  # forward at the sender or at the receiver


def test_ecmp_spreads_flows_over_spines_deterministically():
    G = load_topology("dgx-h100:64")  # 2 leaf groups per rail: same-rail traffic between groups crosses spines
    router = Router(G)
    spines = [next(n for n in router.nodes(f"gpu{8 * s}", f"gpu{8 * (s + 32)}") if n.startswith("spine"))
              for s in range(32)]
    assert len(set(spines)) >= 4
    assert len(router.equal_cost_paths("gpu0", "gpu256")) == 8  # one per spine


def test_torus_routes_are_shortest_and_spread():
    G = torus_3d(4, 4, 4)
    router = Router(G)
    assert router.hops("gpu0", "gpu42") == 6  # (0,0,0) -> (2,2,2): two steps in each dimension
    assert len(router.equal_cost_paths("gpu0", "gpu42", limit=1000)) == 720  # 6!/(2!2!2!) orders x 2^3 ways
    firsts = {router.path("gpu0", f"gpu{d}")[0][1] for d in (21, 22, 25, 26, 37, 38, 41, 42)}
    assert len(firsts) > 1


def test_latency_and_bottleneck_along_a_route():
    router = Router(load_topology("dgx-a100:2"))
    assert router.latency_us("gpu0", "gpu8") == pytest.approx(0.5 + 0.15 + 0.15 + 0.5)
    assert router.bottleneck_GBps("gpu0", "gpu8") == 24.0
    assert router.latency_us("gpu0", "gpu0") == 0.0


def test_unknown_and_unreachable_nodes():
    G = ring(4)
    G.add_node("island", kind="switch")
    router = Router(G)
    with pytest.raises(TopologyError, match="unknown node 'nowhere'"):
        router.path("gpu0", "nowhere")
    with pytest.raises(TopologyError, match="gpu0 cannot reach island"):
        router.path("gpu0", "island")


def test_big_cluster_routes_quickly():
    G = load_topology("dgx-h100:512")
    start = time.process_time()  # CPU time, which a loaded host does not stretch
    router = Router(G)
    gpus = gpu_nodes(G)
    rng = random.Random(0)
    for _ in range(300):
        src, dst = rng.sample(gpus, 2)
        check_route(G, router.path(src, dst), src, dst)
    assert time.process_time() - start < 5.0


@pytest.mark.parametrize("build", [lambda: ring(2), lambda: ring(3), lambda: nx.DiGraph(ring(2).edges(data=True))])
def test_tiny_graphs_route(build):
    G = build()
    router = Router(G)
    assert router.path("gpu0", "gpu1") == (("gpu0", "gpu1"),)
    assert router.path("gpu1", "gpu0") == (("gpu1", "gpu0"),)


def test_one_way_links_are_followed():
    G = ring(4)
    G.remove_edges_from([("gpu1", "gpu0"), ("gpu2", "gpu1"), ("gpu3", "gpu2"), ("gpu0", "gpu3")])
    assert Router(G).nodes("gpu1", "gpu0") == ("gpu1", "gpu2", "gpu3", "gpu0")


def cost(u, v, data):
    return (1 << 16) + (data["kind"] in ("ib", "ethernet"))


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 12), st.floats(0.15, 0.6), st.integers(0, 10_000))
def test_routes_are_exactly_the_cheapest_paths_networkx_finds(n, density, seed):
    rng = random.Random(seed)
    G = nx.DiGraph()
    G.add_nodes_from(f"v{i}" for i in range(n))
    for a in range(n):
        for b in range(n):
            if a != b and rng.random() < density:
                G.add_edge(f"v{a}", f"v{b}", kind=rng.choice(["nvlink", "ib", "pcie"]), bandwidth_GBps=1.0,
                           latency_us=0.0)
    router = Router(G)
    for src in G:
        for dst in G:
            if src == dst or not nx.has_path(G, src, dst):
                continue
            expected = sorted(tuple(p) for p in nx.all_shortest_paths(G, src, dst, weight=cost))
            assert router.equal_cost_paths(src, dst, limit=10_000) == expected
            assert router.nodes(src, dst) == walk(G, src, dst)


def walk(G, src, dst):
    """The route by its definition: from src, at each node the ``pick`` among the next nodes on a cheapest
    route (networkx's costs to dst), in name order."""
    left = nx.single_source_dijkstra_path_length(G.reverse(copy=False), dst, weight=cost)
    nodes = [src]
    while nodes[-1] != dst:
        u = nodes[-1]
        options = sorted((v for v in G.successors(u) if v in left and cost(u, v, G.edges[u, v]) + left[v] == left[u]),
                         key=str)
        nodes.append(options[pick(src, dst, u, len(options))])
    return tuple(nodes)
