"""Property: on random small graphs and flows the network is never faster than the analytic bounds."""

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.network_runs import run_transfers

REL = 1e-9


@st.composite
def scenarios(draw):
    n = draw(st.integers(2, 6))
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    # A random spanning tree keeps the graph connected; extra random duplex links make detours.
    for v in range(1, n):
        u = draw(st.integers(0, v - 1))
        bw, lat = draw(st.floats(0.5, 50.0)), draw(st.floats(0.0, 5.0))
        G.add_edge(u, v, bandwidth_GBps=bw, latency_us=lat)
        G.add_edge(v, u, bandwidth_GBps=draw(st.floats(0.5, 50.0)), latency_us=lat)
    for _ in range(draw(st.integers(0, 4))):
        u, v = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if u != v:
            G.add_edge(u, v, bandwidth_GBps=draw(st.floats(0.5, 50.0)), latency_us=draw(st.floats(0.0, 5.0)))
    flows = draw(st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(1, 10**8), st.floats(0.0, 0.01)),
        min_size=1, max_size=12))
    return G, flows


@settings(max_examples=80, deadline=None)
@given(scenarios())
def test_flows_never_beat_their_path_or_the_link_load(scenario):
    G, flows = scenario
    arrivals, net = run_transfers(G, [(start, src, dst, nbytes) for src, dst, nbytes, start in flows])
    assert len(arrivals) == len(flows)
    load: dict[int, list] = {}
    for i, (src, dst, nbytes, start) in enumerate(flows):
        if src == dst:
            assert arrivals[i] == start
            continue
        route = net.route(src, dst)
        bound = start + route.latency_s + nbytes / route.bandwidth_Bps
        assert arrivals[i] >= bound * (1 - REL)
        for link in route.links:
            load.setdefault(link, []).append((start, nbytes, arrivals[i] - route.latency_s))
    # A link cannot carry its bytes faster than its capacity: the last drain through it comes at
    # least load / capacity after the first start.
    stats = net.link_stats()
    for link, uses in load.items():
        cap = net._cap[link]
        first = min(u[0] for u in uses)
        total = sum(u[1] for u in uses)
        assert max(u[2] for u in uses) >= (first + total / cap) * (1 - REL) - 1e-15
        edge = net._edges[link]
        assert abs(stats[edge].bytes - total) <= REL * total
        assert stats[edge].busy_s <= net.env.now * (1 + REL)
        assert stats[edge].busy_s >= total / cap * (1 - REL) - 1e-15  # busy = t1 - t0: absolute rounding
