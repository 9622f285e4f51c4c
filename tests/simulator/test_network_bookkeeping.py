"""The flow network's per-link bookkeeping kept cheap: active flows gathered from the links, demand set afresh.

``FlowNetwork`` no longer keeps a dict of active flows as they start and drain (a store and a delete
per record): ``_active`` gathers them from the links when a report asks. And a link emptied by a drain
keeps its old demand until the next flow sets it. These tests hold the reports sampled mid-run to
the reference network's and to the flows' own start and drain times, and every busy link's demand
to its flows' bottleneck rates after every change.
"""

import networkx as nx
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.network.flow_network import FlowNetwork, HopRouter
from tests.network_runs import random_tree

# Instants the sampler reads the network at: off the batches' start times and their drains' round numbers.
SAMPLES = (0.7e-4, 1.9e-4, 3.3e-4, 5.1e-4, 9.7e-4, 2.3e-3)


class _DemandChecked(FlowNetwork):
    """After every change of rates, each busy link's demand is the sum of its flows' bottleneck rates
    (to rounding: a stale demand left by an earlier busy period would be off by a whole rate)."""

    def _apply(self, order):
        super()._apply(order)
        for link, flows in enumerate(self._on_link):
            if flows:
                assert self._demand[link] == pytest.approx(sum(f.bottleneck for f in flows.values()), rel=1e-9)


def _run(G, batches, group: bool, network=FlowNetwork):
    env = simpy.Environment()
    net = network(env, G, router=HopRouter(G), group=group, record=not group)
    seen = []

    def batch(start, flows):
        yield env.timeout(start)
        yield env.all_of(net.transfer_all(flows))

    def sampler():
        for t in SAMPLES:
            yield env.timeout(t - env.now)
            seen.append((env.now, list(net._active), net.link_utilisation(), net.link_stats(), net.active_flows))

    for start, flows in batches:
        env.process(batch(start, flows))
    env.process(sampler())
    env.run()
    return net, seen


@st.composite
def batches(draw):
    """A small random graph (links reused after they empty) and batches of flows started at random instants."""
    n = draw(st.integers(2, 5))
    G = random_tree(draw, n)
    sizes = st.sampled_from([10**5 / 3, 3e5 / 7 + 0.1, 5e4, 10**5 + 1 / 9])
    flow = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), sizes, st.none())
    starts = st.sampled_from([0.0, 1e-4, 3e-4, 6e-4, 1.5e-3])
    return G, draw(st.lists(st.tuples(starts, st.lists(flow, min_size=1, max_size=6)), min_size=1, max_size=6))


@settings(max_examples=60, deadline=None)
@given(batches())
def test_reports_mid_run_match_the_reference_and_the_flows_times(scenario):
    G, batches_ = scenario
    net, seen = _run(G, batches_, True, _DemandChecked)
    ref, want = _run(G, batches_, False)
    # The grouped network's reports equal the reference's (every flow alone), bit for bit, mid-run too.
    assert [s[2:] for s in seen] == [s[2:] for s in want]
    # The reference's active flows are those started and not yet drained at the instant, in start order.
    for now, active, *_ in want:
        started = {e.flow for e in ref.timeline if e.event == "start" and e.time_s <= now}
        drained = {e.flow for e in ref.timeline if e.event == "drain" and e.time_s <= now}
        assert active == sorted(started - drained)


def test_a_link_emptied_and_used_again_takes_the_new_flows_demand_alone():
    # a->b carries flow 0 (1 GB/s at h->a) and drains empty; flow 1 (10 GB/s) then uses it alone, at its
    # bottleneck, and flow 2 joins it: their fill sees the demand of flows 1 and 2, not flow 0's left over.
    G = nx.DiGraph()
    for u, v, bw in (("h", "a", 1.0), ("a", "b", 10.0), ("g", "a", 10.0), ("k", "a", 10.0)):
        G.add_edge(u, v, bandwidth_GBps=bw, latency_us=0.0)
    env = simpy.Environment()
    net = _DemandChecked(env, G, router=HopRouter(G))
    link = net.links.edges.index(("a", "b"))
    arrivals = []

    def later(start, src, nbytes):
        yield env.timeout(start)
        yield net.transfer(src, "b", nbytes)
        arrivals.append((src, env.now))

    env.process(later(0.0, "h", 1e8))
    env.process(later(0.2, "g", 1e9))
    env.process(later(0.25, "k", 1e8))
    env.run()
    assert not net._on_link[link] and net._active == {}
    # g alone 0.2 -> 0.25 at 10 GB/s (0.5 GB), then g and k at 5 GB/s each: k's 0.1 GB by 0.27, g 0.1 GB
    # more, then its last 0.4 GB alone at 10 GB/s: 0.31.
    assert arrivals == [("h", pytest.approx(0.1)), ("k", pytest.approx(0.27)), ("g", pytest.approx(0.31))]
