"""Shared by the network tests: transfers or a planned schedule run on a flow network, grouped or as the reference."""

from __future__ import annotations

import simpy

from simulator.network.flow_network import FlowNetwork, HopRouter
from simulator.timing.engine import Engine
from simulator.timing.simulation import NetworkBackend


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
