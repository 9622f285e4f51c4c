"""Drains proven to change no rate (``simulator.network.settled``) skip their fill and change no number."""

import random

import networkx as nx
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.network import flow_network
from simulator.network.settled import unsettled
from simulator.timing.simulation import plan_on_graph
from simulator.workloads.workload import Workload
from tests.network_runs import run_plan, run_transfers
from topologies import load_topology


def _same_as_reference(G, flows):
    (got, net), (want, ref) = run_transfers(G, flows, True), run_transfers(G, flows, False)
    assert got == want and len(got) == len(flows)
    assert net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    assert net.fills <= ref.fills
    return net, ref


def test_a_drain_that_frees_capacity_nobody_can_use_needs_no_fill():
    # s->t (2.5 GB/s) carries A (capped at 1 GB/s by h0->s) and D (2 GB/s at h2->s): A is frozen at
    # 1 by its own link, D at 1.5 by s->t. D drains first; A keeps 1 GB/s, which the reference's fill
    # recomputes and the shortcut proves: A was not frozen by s->t, now loose.
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 1.0), ("h2", "s", 2.0), ("s", "t", 2.5), ("t", "h1", 5.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=0.5)
    net, ref = _same_as_reference(G, [(0.0, "h0", "h1", 1e6), (0.0, "h2", "h1", 1e5)])
    assert (net.fills, ref.fills) == (1, 2)


def test_a_drain_that_raises_a_share_is_filled():
    # A and B both frozen by s->t (2 GB/s, 1 each): when B drains, A rises to 2 GB/s.
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 5.0), ("h2", "s", 5.0), ("s", "t", 2.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=0.5)
    net, ref = _same_as_reference(G, [(0.0, "h0", "t", 1e6), (0.0, "h2", "t", 1e5)])
    assert net.fills == ref.fills == 2


def _leaf_spine(rng: random.Random) -> nx.DiGraph:
    """Hosts on leaves on spines, link rates drawn from a few that tie and a few that do not."""
    G = nx.DiGraph()
    rates = [1.0, 2.5, 7.3, 10.0, 4.7]
    leaves, spines = rng.randint(2, 4), rng.randint(1, 3)
    for l in range(leaves):
        for h in range(rng.randint(1, 3)):
            bw = rng.choice(rates)
            G.add_edge(f"h{l}.{h}", f"leaf{l}", bandwidth_GBps=bw, latency_us=0.5)
            G.add_edge(f"leaf{l}", f"h{l}.{h}", bandwidth_GBps=rng.choice(rates), latency_us=0.5)
        for s in range(spines):
            for a, b in ((f"leaf{l}", f"spine{s}"), (f"spine{s}", f"leaf{l}")):
                G.add_edge(a, b, bandwidth_GBps=rng.choice(rates), latency_us=1.0)
    return G


def _refill_every_drain(monkeypatch):
    """Turn the shortcut off: every trace a drain touches counts as failed."""
    monkeypatch.setattr(flow_network, "unsettled", lambda touched, on_link, *_: {
        flow.trace for link in touched for flow in on_link[link].values()})


def test_random_leaf_spine_traffic_matches_the_reference_network(monkeypatch):
    # Many flows of staggered sizes and starts: many drains leave the others' rates as they were.
    rng = random.Random(14)
    scenarios = []
    for _ in range(40):
        G = _leaf_spine(rng)
        hosts = sorted(n for n in G if n.startswith("h"))
        sizes = [1e5, 10**6 / 3, 3e6 / 7 + 0.1, 2e6, 10**6 + 1 / 9]
        scenarios.append((G, [(rng.choice([0.0, 0.0, 1e-4, 3e-4]), *rng.sample(hosts, 2), rng.choice(sizes))
                              for _ in range(rng.randint(2, 24))]))
    fills = sum(_same_as_reference(G, flows)[0].fills for G, flows in scenarios)
    _refill_every_drain(monkeypatch)  # the same runs with the shortcut off: it saved fills
    assert fills < sum(run_transfers(G, flows, True)[1].fills for G, flows in scenarios) - 50


def _schedule(algorithm, grid, topology, m, hidden, group):
    G = load_topology(topology)
    plan = plan_on_graph(build_schedule(algorithm, Workload.mlp(m, hidden), "both", "bfloat16", grid=grid), G)
    return run_plan(plan, G, group)


# summa25d's depth all-reduces as NCCL trees across 16 of 128 H100 servers (the components the shortcut
# is for, at a tenth of issue 14's scale); cannon25d's shifts through shared NIC links.
@pytest.mark.parametrize("algorithm, grid, topology, m, hidden", [
    ("summa25d", (8, 8, 16), "dgx-h100:128", 16384, 4096), ("cannon25d", (4, 4, 4), "dgx-h100:8", 65536, 4096),
    ("cannon25d", (8, 8, 2), "dgx-h100:16", 65536, 4096)])
def test_a_whole_schedule_matches_the_reference_network(monkeypatch, algorithm, grid, topology, m, hidden):
    (a, net), (b, ref) = (_schedule(algorithm, grid, topology, m, hidden, group) for group in (True, False))
    assert a.finish_s == b.finish_s and a.comm_s == b.comm_s and a.wait_s == b.wait_s
    assert a.starts == b.starts and a.ends == b.ends and a.waits == b.waits
    assert net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    _refill_every_drain(monkeypatch)
    assert net.fills < _schedule(algorithm, grid, topology, m, hidden, True)[1].fills


class _Flow:
    def __init__(self, trace, by, share, weight=1):
        self.trace, self.by, self.at, self.share, self.weight = trace, by, share, share, weight


def test_unsettled_names_the_traces_a_fill_must_redo():
    # Link 0 (capacity 10, load 2): flows frozen elsewhere at 1 and 2 leave it unsaturated; link 1's
    # flow was frozen by link 1 itself; link 2 holds a flow no fill vouches for (trace 0).
    on_link = [{1: _Flow(7, 5, 1.0), 2: _Flow(7, 6, 2.0)}, {3: _Flow(8, 1, 3.0)}, {4: _Flow(0, 3, 1.0)}]
    load, cap = [2, 1, 1], [10.0, 10.0, 10.0]
    tight = [20.0] * 3
    assert unsettled([0], on_link, load, cap, tight, cap) == set()
    assert unsettled([0, 1, 2], on_link, load, cap, tight, cap) == {8, 0}
    # Link 0 at capacity 3: after the flow at 1 is frozen its share is 2 = 2 / 1, up to date: it would
    # saturate the flow that link 6 froze at 2 (link 0 comes first in a tie), so trace 7 needs a fill.
    assert unsettled([0], on_link, load, [3.0, 10.0, 10.0], tight, cap) == {7}
