"""Shared by the network tests: one planned schedule run on a flow network, grouped or as the reference."""

from __future__ import annotations

import simpy

from simulator.network.flow_network import FlowNetwork
from simulator.timing.engine import Engine
from simulator.timing.simulation import NetworkBackend


def run_plan(plan, G, group: bool):
    """Run ``plan`` (``plan_on_graph``'s) on ``G`` with ``FlowNetwork(group=group)``; the engine (timeline
    filled) and the network."""
    env = simpy.Environment()
    backend = NetworkBackend(env, G)
    backend.net = FlowNetwork(env, G, group=group)
    engine = Engine(plan, backend, env)
    engine.run()
    engine.fill_timeline()
    return engine, backend.net
