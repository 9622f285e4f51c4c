"""Flow network: exact contention-free times, max-min sharing, whole timelines, counters, errors."""

import networkx as nx
import pytest
import simpy

from simulator.errors import InputError
from simulator.network.flow_network import FlowEvent, FlowNetwork, HopRouter


def star(n: int, bw: float = 10.0, lat: float = 1.0) -> nx.DiGraph:
    """n hosts h0..h<n-1> on one switch s, duplex links of ``bw`` GB/s, ``lat`` us per hop."""
    G = nx.DiGraph()
    for i in range(n):
        for a, b in ((f"h{i}", "s"), ("s", f"h{i}")):
            G.add_edge(a, b, bandwidth_GBps=bw, latency_us=lat, kind="nvswitch")
    return G


def network(G, record=True):
    env = simpy.Environment()
    return env, FlowNetwork(env, G, router=HopRouter(G), record=record)


def test_lone_flow_is_latency_plus_size_over_bottleneck_exactly():
    G = nx.DiGraph()
    G.add_edge("a", "b", bandwidth_GBps=7.0, latency_us=0.3)
    G.add_edge("b", "c", bandwidth_GBps=3.0, latency_us=1.7)
    env, net = network(G)
    nbytes = 123_456_789
    done = net.transfer("a", "c", nbytes)
    env.run()
    assert done.processed and done.value == nbytes
    assert env.now == pytest.approx(2.0e-6 + nbytes / 3e9, rel=1e-12)
    assert env.now == (0.3e-6 + 1.7e-6) + nbytes / 3e9 or env.now == nbytes / 3e9 + (0.3e-6 + 1.7e-6)


def test_two_equal_flows_on_a_shared_bottleneck_each_take_twice_as_long():
    env, net = network(star(3))
    ends = {}

    def send(src):
        yield net.transfer(src, "h2", 10**9)
        ends[src] = env.now

    env.process(send("h0"))
    env.process(send("h1"))
    env.run()
    alone = 10**9 / 10e9
    assert ends["h0"] == pytest.approx(2 * alone + 2e-6, rel=1e-12)
    assert ends["h1"] == pytest.approx(2 * alone + 2e-6, rel=1e-12)


def test_whole_timeline_of_a_late_joiner():
    # f1 alone at 10 GB/s; f2 joins at 50 ms, both get 5; f1 drains at 150 ms, f2 speeds up.
    env, net = network(star(3))

    def late():
        yield env.timeout(0.05)
        yield net.transfer("h1", "h2", 10**9, tag="f2")

    net.transfer("h0", "h2", 10**9, tag="f1")
    env.process(late())
    env.run()
    got = [(round(e.time_s, 12), e.flow, e.event, e.rate_GBps) for e in net.timeline]
    assert got == [
        (0.0, "f1", "start", 10.0),
        (0.05, "f2", "start", 5.0),
        (0.05, "f1", "rate", 5.0),
        (0.15, "f1", "drain", None),
        (0.15, "f2", "rate", 10.0),
        (0.150002, "f1", "arrive", None),
        (0.2, "f2", "drain", None),
        (0.200002, "f2", "arrive", None),
    ]
    assert isinstance(net.timeline[0], FlowEvent)


def test_max_min_gives_the_unconstrained_flow_the_leftover():
    # Links: a->s 10, b->s 10, s->c 10, s->d 10. Flows a->c, b->c share s->c (5 each); a->d shares
    # a->s with a->c: a->s splits 5/5, so a->d gets 5 too, and nothing is left idle on s->d.
    G = nx.DiGraph()
    for u, v in (("a", "s"), ("b", "s"), ("s", "c"), ("s", "d")):
        G.add_edge(u, v, bandwidth_GBps=10.0, latency_us=0.0)
    G.add_edge("b", "x", bandwidth_GBps=2.0, latency_us=0.0)  # a link no flow uses
    env, net = network(G)
    for src, dst, tag in (("a", "c", "ac"), ("b", "c", "bc"), ("a", "d", "ad")):
        net.transfer(src, dst, 10**9, tag=tag)
    env.run(until=1e-9)
    rates = {e.flow: e.rate_GBps for e in net.timeline if e.event == "start"}
    assert rates == {"ac": 5.0, "bc": 5.0, "ad": 5.0}


def test_unequal_bottlenecks_follow_progressive_filling():
    # Three flows share s->c (cap 9); one of them is capped at 1 by its own first link: 1, 4, 4.
    G = nx.DiGraph()
    G.add_edge("a", "s", bandwidth_GBps=1.0, latency_us=0.0)
    for u in ("b", "e"):
        G.add_edge(u, "s", bandwidth_GBps=100.0, latency_us=0.0)
    G.add_edge("s", "c", bandwidth_GBps=9.0, latency_us=0.0)
    env, net = network(G)
    for src in ("a", "b", "e"):
        net.transfer(src, "c", 10**6, tag=src)
    env.run(until=1e-12)
    rates = {e.flow: e.rate_GBps for e in net.timeline if e.event == "start"}
    assert rates == pytest.approx({"a": 1.0, "b": 4.0, "e": 4.0}, rel=1e-12)


def test_same_node_is_free_and_zero_bytes_cost_the_latency():
    env, net = network(star(2))
    local = net.transfer("h0", "h0", 10**9)
    empty = net.transfer("h0", "h1", 0)
    env.run()
    assert local.processed and env.now == pytest.approx(2e-6, rel=1e-12)
    assert empty.processed


def test_independent_flows_do_not_touch_each_other():
    env, net = network(star(4))
    net.transfer("h0", "h1", 10**9, tag="a")
    net.transfer("h2", "h3", 10**9, tag="b")
    env.run()
    assert [e.event for e in net.timeline if e.flow == "a"] == ["start", "drain", "arrive"]
    assert net.rate_changes == 2 and net.flow_count == 2


def test_link_stats_count_bytes_and_busy_time():
    env, net = network(star(3))

    def later():
        yield env.timeout(1.0)
        net.transfer("h1", "h0", 10**9)

    net.transfer("h0", "h1", 10**9)
    env.process(later())
    env.run()
    stats = net.link_stats()
    assert stats[("h0", "s")].bytes == 10**9
    assert stats[("h0", "s")].busy_s == pytest.approx(0.1, rel=1e-12)
    assert stats[("s", "h0")].busy_s == pytest.approx(0.1, rel=1e-12)
    assert ("h2", "s") not in stats


def test_same_instant_starts_are_filled_once():
    env, net = network(star(9), record=False)
    for i in range(8):
        net.transfer(f"h{i}", "h8", 10**6)
    env.run()
    assert net.fills == 1  # one for the 8 starts; their simultaneous drain leaves nothing to fill
    assert env.now == pytest.approx(8 * 10**6 / 10e9 + 2e-6, rel=1e-12)


@pytest.mark.parametrize(
    "edge, message",
    [({"bandwidth_GBps": 0.0, "latency_us": 1.0}, "bandwidth_GBps must be a number > 0"),
     ({"latency_us": 1.0}, "bandwidth_GBps must be a number > 0"),
     ({"bandwidth_GBps": 1.0, "latency_us": -1.0}, "latency_us must be a number >= 0")],
)
def test_bad_edges_are_input_errors(edge, message):
    G = nx.DiGraph()
    G.add_edge("a", "b", **edge)
    with pytest.raises(InputError, match=message):
        FlowNetwork(simpy.Environment(), G)


def test_bad_transfers_are_input_errors():
    G = star(2)
    G.add_node("island")
    env, net = network(G)
    with pytest.raises(InputError, match="nbytes must be >= 0"):
        net.transfer("h0", "h1", -1)
    with pytest.raises(InputError, match="no route from 'h0' to 'island'"):
        net.transfer("h0", "island", 1)


def test_a_route_via_a_node_joins_two_routes():
    G = star(3)
    env, net = network(G)
    direct, detour = net.route("h0", "h1"), net.route("h0", "h1", via="h2")
    assert len(detour.links) == 4 and detour.latency_s == pytest.approx(2 * direct.latency_s)
    done = net.transfer("h0", "h1", 10**9, via="h2")
    env.run()
    assert done.processed and net.link_stats()[("s", "h2")].bytes == 10**9


def test_link_utilisation_now():
    env, net = network(star(3))
    net.transfer("h0", "h2", 10**9)
    net.transfer("h1", "h2", 10**9)
    env.run(until=0.01)
    assert net.link_utilisation() == {("h0", "s"): 0.5, ("s", "h2"): 1.0, ("h1", "s"): 0.5}
