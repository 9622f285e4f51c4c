"""Shared by the network tests: transfers, batches, a planned schedule or one collective run on a flow network."""

from __future__ import annotations

import networkx as nx
import simpy
from hypothesis import strategies as st

from simulator.collectives import run_collective
from simulator.network.flow_groups import same_flows
from simulator.network.flow_network import FlowNetwork, HopRouter
from simulator.timing.engine import Engine
from simulator.timing.simulation import NetworkBackend
from topologies import gpu_nodes, load_topology


def random_tree(draw, n: int) -> nx.DiGraph:
    """A hypothesis-drawn tree of ``n`` nodes, each edge a pair of directed links of a drawn bandwidth (the
    random graphs of the network tests)."""
    G = nx.DiGraph()
    for v in range(1, n):
        u = draw(st.integers(0, v - 1))
        for a, b in ((u, v), (v, u)):
            G.add_edge(a, b, bandwidth_GBps=draw(st.sampled_from([1.0, 2.5, 10.0, 7.3])), latency_us=0.5)
    return G


def run_plan(plan, G, group: bool, network=FlowNetwork):
    """Run ``plan`` (``plan_on_graph``'s) on ``G`` with ``network(group=group)`` (``FlowNetwork`` or a
    subclass that checks it); the engine (timeline filled) and the network."""
    env = simpy.Environment()
    backend = NetworkBackend(env, G)
    backend.net = network(env, G, group=group)
    engine = Engine(plan, backend, env)
    engine.run()
    engine.fill_timeline()
    return engine, backend.net


def run_transfers(G, flows, group: bool = True, network=FlowNetwork):
    """Start ``flows`` ((start_s, src, dst, nbytes), ...) on ``G`` (fewest-hops routes), each at its time,
    on a ``network`` (``FlowNetwork`` or a subclass that checks it); the arrival time of each by its
    index, and the network (``net.env.now``: when the last one arrived)."""
    env = simpy.Environment()
    net = network(env, G, router=HopRouter(G), group=group)
    arrivals = {}

    def one(i, start, src, dst, nbytes):
        yield env.timeout(start)
        yield net.transfer(src, dst, nbytes)
        arrivals[i] = env.now

    for i, flow in enumerate(flows):
        env.process(one(i, *flow))
    env.run()
    return arrivals, net


def run_batches(G, batches, group: bool, network=FlowNetwork):
    """Start each batch of ``batches`` ((start_s, [(src, dst, nbytes, via), ...]), ...) with ``transfer_all``
    (repeated flows run as one weighted flow when ``group``) on a ``network``; each flow's (bytes,
    arrival) by (batch, index), and the network."""
    env = simpy.Environment()
    net = network(env, G, router=HopRouter(G), group=group)
    arrivals = {}

    def batch(i, start, flows):
        yield env.timeout(start)
        events = net.transfer_all(flows)
        indices = same_flows(flows) if group else [(j,) for j in range(len(flows))]
        for event, members in zip(events, indices):
            event.callbacks.append(lambda e, members=members: arrivals.update(
                {(i, j): (e.value, env.now) for j in members}))
        yield env.all_of(events)

    for i, (start, flows) in enumerate(batches):
        env.process(batch(i, start, flows))
    env.run()
    return arrivals, net


def run_collectives(G, calls, network=FlowNetwork, env=None):
    """Run ``calls`` ((delay_s, kind, members, nbytes, root), ...) on one ``network(env, G)`` (``env``: a
    fresh simpy Environment unless given); (env, each call's end time by its index, the network)."""
    env = env if env is not None else simpy.Environment()
    net = network(env, G)
    ends = {}

    def one(i, delay, kind, members, nbytes, root):
        yield env.timeout(delay)
        yield run_collective(env, net, kind, members, nbytes, root=root)
        ends[i] = env.now

    for i, call in enumerate(calls):
        env.process(one(i, *call))
    env.run()
    return env, ends, net


def run_all_reduce(spec: str, n: int, nbytes: int, algorithm: str | None = None):
    """One all_reduce of ``nbytes`` on the first ``n`` GPUs of preset ``spec`` (the NCCL-like choice, or
    ``algorithm``), alone on a fresh network: (time, plan, network, members)."""
    G = load_topology(spec)
    members = gpu_nodes(G)[:n]
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    proc = run_collective(env, net, "all_reduce", members, nbytes, algorithm=algorithm)
    env.run(until=proc)
    return env.now, proc.value, net, members
