"""One event per phase (``PhaseArrival``) runs every simpy event at the time and in the order, and with the
number, it had when every flow had an event of its own (``all_arrived``), and the run schedules as many."""

import networkx as nx
import pytest
import simpy

from simulator.algorithms.registry import build_schedule
from simulator.network.flow_network import FlowNetwork, HopRouter
from simulator.network.phase_arrival import PhaseArrival, all_arrived
from simulator.simpy_internals import events_scheduled
from simulator.timing.engine import Engine
from simulator.timing.simulation import NetworkBackend, plan_on_graph
from simulator.workloads.workload import Workload
from tests.network_runs import run_collectives
from topologies import gpu_nodes, load_topology


class PerFlowEvents(FlowNetwork):
    """The fast network as it was: an event per flow (group) of a phase, counted in by ``all_arrived``;
    it tells its ``Logged`` environment which events are the flows'."""

    def transfer_phase(self, flows, groups=None):
        events = self.transfer_all(flows, groups)
        self.env.flow_events.update((id(e), e) for e in events)  # kept alive: no other event takes the id
        return all_arrived(self.env, events)


class Logged(simpy.Environment):
    """Notes (time, priority, number, what) of every event it processes; what: "flow" for a flow's
    own event (``PerFlowEvents``), "slot" for a phase's one event, "other" for the rest."""

    def __init__(self):
        super().__init__()
        self.steps = []
        self.flow_events: dict[int, simpy.Event] = {}

    def step(self):
        if self._queue:
            when, priority, eid, event = self._queue[0]
            slot = any(isinstance(getattr(c, "__self__", None), PhaseArrival) for c in event.callbacks)
            what = "flow" if id(event) in self.flow_events else "slot" if slot else "other"
            self.steps.append((when, int(priority), eid, what))
        super().step()


def _same_run(phase: Logged, per_flow: Logged, net_phase, net_per_flow, slots: bool = True) -> None:
    """The phase form's steps are the per-flow form's, less the flow events its phases' slots replaced."""
    assert events_scheduled(phase) == events_scheduled(per_flow)
    assert [s for s in phase.steps if s[3] == "other"] == [s for s in per_flow.steps if s[3] == "other"]
    kept = {s[:3] for s in phase.steps}
    assert [s[:3] for s in per_flow.steps if s[:3] in kept] == [s[:3] for s in phase.steps]
    replaced = sum(s[3] == "slot" for s in phase.steps)
    assert replaced == sum(1 for s in per_flow.steps if s[3] == "flow" and s[:3] in kept)
    assert bool(replaced) == slots
    assert net_phase.link_stats() == net_per_flow.link_stats()
    counts = ("flow_count", "flow_records", "rate_changes", "fills", "region_fills")
    assert [getattr(net_phase, c) for c in counts] == [getattr(net_per_flow, c) for c in counts]


def _schedule(G, plan, per_flow: bool):
    env = Logged()
    backend = NetworkBackend(env, G)
    backend.net = (PerFlowEvents if per_flow else FlowNetwork)(env, G)
    engine = Engine(plan, backend, env)
    engine.run()
    engine.fill_timeline()
    return env, engine, backend.net


@pytest.mark.parametrize("algorithm, shape, topology", [
    ("1d", {"gpus": 16}, "dgx-h100:2"), ("2d", {"gpus": 64}, "dgx-a100:8"),
    ("cannon25d", {"grid": (4, 4, 2)}, "dgx-h100:4"), ("summa25d", {"grid": (2, 2, 4)}, "dgx-h100:2")])
def test_a_whole_schedule_runs_every_event_in_its_place(algorithm, shape, topology):
    G = load_topology(topology)
    plan = plan_on_graph(build_schedule(algorithm, Workload.mlp(4096, 1024), "both", "bfloat16", **shape), G)
    (env_a, a, net_a), (env_b, b, net_b) = _schedule(G, plan, False), _schedule(G, plan, True)
    assert (a.starts, a.ends, a.waits, a.finish_s) == (b.starts, b.ends, b.waits, b.finish_s)
    _same_run(env_a, env_b, net_a, net_b)


def _collectives(G, network, calls):
    return run_collectives(G, calls, network, Logged())


def test_contending_collectives_run_every_event_in_its_place_and_at_the_reference_networks_times():
    G = load_topology("dgx-h100:4")
    gpus = gpu_nodes(G)
    rows = [gpus[i:i + 16] for i in range(0, len(gpus), 16)]
    calls = [(0.0, "all_reduce", gpus, 2**28, None), (0.0, "broadcast", rows[0], 3 * 2**24 + 7, 5),
             (1e-5, "reduce", rows[-1], 2**26, 2), (2e-5, "all_gather", gpus[::2], 2**27, None),
             (0.0, "reduce_scatter", gpus[1::3], 5 * 2**22, None), (3e-4, "broadcast", gpus, 2**20, 0),
             (0.0, "all_reduce", rows[0], 12345, None), (0.0, "send", [gpus[0], gpus[-1]], 2**25, None),
             (1e-4, "send", [gpus[1], gpus[17]], 0, None)]
    env_a, ends_a, net_a = _collectives(G, FlowNetwork, calls)
    env_b, ends_b, net_b = _collectives(G, PerFlowEvents, calls)
    _, ends_ref, ref = _collectives(G, lambda env, G: FlowNetwork(env, G, group=False), calls)
    assert list(ends_a.items()) == list(ends_b.items()) == list(ends_ref.items())
    assert net_a.region_fills > 0  # the flows contend: rates change through the region fill
    _same_run(env_a, env_b, net_a, net_b)
    assert net_a.link_stats() == ref.link_stats()


def _line():
    """a -> b fast and far (10 GB/s, 1 ms); c -> d slow and near (1 GB/s, no latency)."""
    G = nx.DiGraph()
    G.add_edge("a", "b", bandwidth_GBps=10.0, latency_us=1000.0)
    G.add_edge("c", "d", bandwidth_GBps=1.0, latency_us=0.0)
    return G


@pytest.mark.parametrize("flows", [
    # a -> b drains first but arrives last: the slot is the number it took, before c -> d drained.
    [("a", "b", 1e6, None), ("c", "d", 1e6, None)],
    # Ties in time: two arrivals at one instant (the later number is processed last), a flow to itself,
    # a flow of no bytes (its route latency), a group of two.
    [("c", "d", 1e6, None), ("c", "c", 5.0, None), ("c", "d", 1e6, None), ("a", "b", 0.0, None),
     ("a", "b", 5e6, None), ("a", "b", 1e7, None)],
    [("a", "a", 1.0, None)],
    [],
])
def test_a_phase_ends_where_its_last_flow_event_would_have_been_processed(flows):
    G = _line()

    def run(network):
        env = Logged()
        net = network(env, G, router=HopRouter(G))
        seen = []

        def phase(label, delay):
            yield env.timeout(delay)
            yield net.transfer_phase(flows)
            seen.append((env.now, label))

        for i, delay in enumerate((0.0, 0.0, 1e-4, 1e-3)):
            env.process(phase(i, delay))
            env.timeout(1e-3 + 1e-4 * i).callbacks.append(lambda _e, i=i: seen.append((env.now, f"t{i}")))
        env.run()
        return env, seen, net

    (env_a, seen_a, net_a), (env_b, seen_b, net_b) = run(FlowNetwork), run(PerFlowEvents)
    assert seen_a == seen_b and len(seen_a) == 8
    _same_run(env_a, env_b, net_a, net_b, slots=bool(flows))


def test_a_phase_whose_arrivals_tie_ends_at_its_last_number_after_another_phases_arrival_between():
    # Every flow arrives at 2 ms: X (phase 1) drains at 1 ms, Y (phase 2) at 1.2 ms, V (phase 1) at 1.5 ms.
    # Phase 1's last arrival is V's, numbered after Y's: phase 2 goes on first, as with an event per flow.
    G = nx.DiGraph()
    for (u, v), latency_us in ((("c", "d"), 1000.0), (("g", "h"), 800.0), (("e", "f"), 500.0)):
        G.add_edge(u, v, bandwidth_GBps=1.0, latency_us=latency_us)
    phases = {1: [("c", "d", 1e6, None), ("e", "f", 1.5e6, None)], 2: [("g", "h", 1.2e6, None)]}

    def run(network):
        env = Logged()
        net = network(env, G, router=HopRouter(G))
        seen = []

        def phase(label):
            yield net.transfer_phase(phases[label])
            seen.append((env.now, label))

        for label in phases:
            env.process(phase(label))
        env.run()
        return env, seen, net

    (env_a, seen_a, net_a), (env_b, seen_b, net_b) = run(FlowNetwork), run(PerFlowEvents)
    assert seen_a == seen_b == [(0.002, 2), (0.002, 1)]
    _same_run(env_a, env_b, net_a, net_b)
