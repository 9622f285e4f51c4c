"""Region fills (``simulator.network.region``) give every flow the rate a fill of its whole component gives, bit for bit."""

import itertools
import random

import networkx as nx
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.network import rate_updates, region
from simulator.network.fairness import components, fill
from simulator.network.flow_network import FlowNetwork
from simulator.timing.simulation import plan_on_graph
from simulator.workloads.workload import Workload
from tests.network_runs import run_batches, run_plan, run_transfers
from topologies import load_topology

_stamps = itertools.count(10**12)  # marks no network run reaches


class _Checked(FlowNetwork):
    """A network that, after every change of rates, fills every component from scratch and checks each
    flow's rate, and each recorded flow's (share, by, at), against it."""

    checks = 0

    def _apply(self, order):
        super()._apply(order)
        flows = list(self._active.values())
        stamp = next(_stamps)
        alone, shared = components(flows, stamp, self._on_link, self._load, self._mark, self._demand, self._limit)
        for flow in alone:
            assert flow.rate == flow.bottleneck / flow.weight
        for group, links in shared:
            recorded = {f.fid: (f.share, f.by, f.at) for f in group if f.recorded}
            fill(links, stamp, self._on_link, self._load, self._cap, self._residual, self._count)
            for f in group:
                assert f.rate == f.share, f.fid
                assert recorded.get(f.fid, (f.share, f.by, f.at)) == (f.share, f.by, f.at), f.fid
        _Checked.checks += 1


def _same_as_reference(G, flows, network=FlowNetwork):
    (got, net), (want, ref) = run_transfers(G, flows, True, network), run_transfers(G, flows, False)
    assert got == want and len(got) == len(flows)
    assert net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    return net, ref


def _full_fills(net) -> int:
    return net.fills - net.region_fills


def test_a_drain_that_frees_capacity_nobody_can_use_changes_no_rate():
    # s->t (2.5 GB/s) carries A (capped at 1 GB/s by h0->s) and D (2 GB/s at h2->s): A is frozen at
    # 1 by its own link, D at 1.5 by s->t. D drains first; A keeps 1 GB/s, which the reference's fill
    # recomputes and the region fill (s->t, now loose, froze nobody left) proves without a fill.
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 1.0), ("h2", "s", 2.0), ("s", "t", 2.5), ("t", "h1", 5.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=0.5)
    net, ref = _same_as_reference(G, [(0.0, "h0", "h1", 1e6), (0.0, "h2", "h1", 1e5)], _Checked)
    assert (_full_fills(net), ref.fills, net.rate_changes) == (0, 2, 2)


def test_a_drain_that_raises_a_share_is_filled():
    # A and B both frozen by s->t (2 GB/s, 1 each): when B drains, A rises to 2 GB/s.
    G = nx.DiGraph()
    for a, b, bw in (("h0", "s", 5.0), ("h2", "s", 5.0), ("s", "t", 2.0)):
        G.add_edge(a, b, bandwidth_GBps=bw, latency_us=0.5)
    net, ref = _same_as_reference(G, [(0.0, "h0", "t", 1e6), (0.0, "h2", "t", 1e5)], _Checked)
    assert net.fills == ref.fills == 2 and net.rate_changes == 3


def test_a_change_three_links_away_grows_the_region_to_reach_it(monkeypatch):
    # A chain a-b-c-d of 2 GB/s links, flows F0 on a->b->c, F1 on b->c->d, F2 on c->d, and F3 on a->b.
    # When F3 drains, F0 rises on a->b, takes more of b->c from F1, which gives c->d to F2: the region
    # starts at a->b and must take in b->c and c->d before the records outside it hold.
    G = nx.DiGraph()
    for a, b in (("a", "b"), ("b", "c"), ("c", "d")):
        G.add_edge(a, b, bandwidth_GBps=2.0, latency_us=0.5)
    G.add_edge("x", "a", bandwidth_GBps=1.5, latency_us=0.5)  # F3 at 1.5 GB/s squeezes F0 to 0.5 on a->b
    passes = []
    attempt = region._attempt
    monkeypatch.setattr(region, "_attempt", lambda links, *rest: passes.append(len(links)) or attempt(links, *rest))
    flows = [(0.0, "a", "c", 1e7), (0.0, "b", "d", 1e7), (0.0, "c", "d", 1e7), (0.0, "x", "b", 1e6)]
    net, ref = _same_as_reference(G, flows, _Checked)
    assert _full_fills(net) == 0 and max(passes) >= 3


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


def _ring(rng: random.Random) -> nx.DiGraph:
    """Switches in a ring, one host each: flows a few hops long chain every switch link into one component."""
    G = nx.DiGraph()
    rates = [1.0, 2.5, 7.3, 10.0, 4.7, 2.0]
    n = rng.randint(4, 9)
    for i in range(n):
        for a, b in ((f"s{i}", f"s{(i + 1) % n}"), (f"s{(i + 1) % n}", f"s{i}"), (f"h{i}", f"s{i}"), (f"s{i}", f"h{i}")):
            G.add_edge(a, b, bandwidth_GBps=rng.choice(rates), latency_us=0.5)
    return G


_SIZES = [1e5, 10**6 / 3, 3e6 / 7 + 0.1, 2e6, 10**6 + 1 / 9]


def _scenarios(seed: int, topology, count: int):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        G = topology(rng)
        hosts = sorted(n for n in G if n.startswith("h"))
        out.append((G, [(rng.choice([0.0, 0.0, 1e-4, 3e-4, 1e-3]), *rng.sample(hosts, 2), rng.choice(_SIZES))
                        for _ in range(rng.randint(2, 30))]))
    return out


def _no_region(monkeypatch):
    """Turn region fills off: every change fills its components, as before them."""
    monkeypatch.setattr(rate_updates, "REGION_BUDGET", -1)


@pytest.mark.parametrize("topology, seed", [(_leaf_spine, 14), (_ring, 15)])
def test_random_traffic_matches_the_reference_network(monkeypatch, topology, seed):
    # Many flows of staggered sizes and starts: most changes leave most rates as they were; every rate
    # and record is held to a fill from scratch after each change, and the run to the reference network.
    scenarios = _scenarios(seed, topology, 200)
    before = _Checked.checks
    nets = [_same_as_reference(G, flows, _Checked)[0] for G, flows in scenarios]
    assert _Checked.checks - before >= sum(net.fills for net in nets)  # and starts of flows alone
    region_fills = sum(net.region_fills for net in nets)
    full = sum(_full_fills(net) for net in nets)
    _no_region(monkeypatch)  # the same runs with region fills off: the full fills they replaced
    assert sum(run_transfers(G, flows, True)[1].fills for G, flows in scenarios) >= full + region_fills // 2
    assert region_fills > 10 * max(full, 1)


def test_random_batches_of_weighted_flows_match_the_reference_network():
    # Batches with repeated flows (groups of weight 2 and 3, which the region fill freezes member by
    # member as the fill does) on rings and leaf-spines, at staggered instants.
    rng = random.Random(17)
    for k in range(300):
        G = (_ring if k % 2 else _leaf_spine)(rng)
        hosts = sorted(n for n in G if n.startswith("h"))
        batches = []
        for _ in range(rng.randint(1, 12)):
            flows = []
            for _ in range(rng.randint(1, 10)):
                flows += [(*rng.sample(hosts, 2), rng.choice(_SIZES + [0]), None)] * rng.choice([1, 1, 1, 2, 3])
            rng.shuffle(flows)
            batches.append((rng.choice([0.0, 0.0, 1e-4, 2e-4, 3e-4, 1e-3, 2e-3]), flows))
        (got, net), (want, ref) = run_batches(G, batches, True, _Checked), run_batches(G, batches, False)
        assert got == want and net.link_stats() == ref.link_stats()
        assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)


def test_a_region_past_its_budget_gives_way_to_the_component_fill(monkeypatch):
    monkeypatch.setattr(rate_updates, "REGION_BUDGET", 2)
    nets = [_same_as_reference(G, flows, _Checked)[0] for G, flows in _scenarios(16, _ring, 20)]
    assert sum(_full_fills(net) for net in nets) > 20 and sum(net.region_fills for net in nets) > 20


def _schedule(algorithm, grid, topology, m, hidden, group):
    G = load_topology(topology)
    plan = plan_on_graph(build_schedule(algorithm, Workload.mlp(m, hidden), "both", "bfloat16", grid=grid), G)
    return run_plan(plan, G, group)


# cannon25d's shifts through shared NIC links (the components region fills are for, at a small
# scale); summa25d's depth all-reduces as NCCL trees across 16 of 128 H100 servers.
@pytest.mark.parametrize("algorithm, grid, topology, m, hidden", [
    ("summa25d", (8, 8, 16), "dgx-h100:128", 16384, 4096), ("cannon25d", (4, 4, 4), "dgx-h100:8", 65536, 4096),
    ("cannon25d", (8, 8, 2), "dgx-h100:16", 65536, 4096), ("cannon25d", (8, 8, 4), "dgx-h100:32", 65536, 4096)])
def test_a_whole_schedule_matches_the_reference_network(monkeypatch, algorithm, grid, topology, m, hidden):
    (a, net), (b, ref) = (_schedule(algorithm, grid, topology, m, hidden, group) for group in (True, False))
    assert a.finish_s == b.finish_s and a.comm_s == b.comm_s and a.wait_s == b.wait_s
    assert a.starts == b.starts and a.ends == b.ends and a.waits == b.waits
    assert net.link_stats() == ref.link_stats()
    assert (net.flow_count, net.rate_changes) == (ref.flow_count, ref.rate_changes)
    _no_region(monkeypatch)
    assert _full_fills(net) < _schedule(algorithm, grid, topology, m, hidden, True)[1].fills / 4


def test_every_record_of_a_whole_schedule_is_a_fill_from_scratch():
    # cannon25d [8,8,4] on 32 H100 servers: after each of its changes of rates, every rate and record
    # is what a fill of each component from scratch gives.
    G = load_topology("dgx-h100:32")
    plan = plan_on_graph(build_schedule("cannon25d", Workload.mlp(65536, 4096), "both", "bfloat16",
                                        grid=(8, 8, 4)), G)
    before = _Checked.checks
    _, net = run_plan(plan, G, True, _Checked)
    assert _Checked.checks - before >= net.fills > 100 and net.region_fills == net.fills
