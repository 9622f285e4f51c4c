"""What every flow network on one topology can share: numbered links, cached routes, collective plans.

A ``FlowNetwork`` numbers its graph's links and caches its routes (``routes.LinkTable``) and, for the
layers above it, the collective plans built on those routes (``FlowNetwork.cache``: algorithm and
protocol choices, timed flows, contention-free times). None of that depends on what the network is
doing: each entry is a function of the graph and of its key, and the keys carry everything else a
plan reads (kind, members, bytes, root, algorithm, ``CollectiveParams``). So the networks of one
prediction, a bound and a simulation of each arrangement, can share one table and one cache: the
routes are searched once per pair and a choice is timed once per route signature for the whole run,
with the same numbers, bit for bit, as fresh networks give (``tests/simulator/test_topology_cache.py``).

Pass a ``TopologyCache`` where a router is taken (``FlowNetwork(env, G, router=cache)``, ``simulate``,
``analyze``, ``predict``); it must be built on the very graph it is used with.

Example::

    >>> import simpy
    >>> from topologies.builders import ring
    >>> G = ring(4)
    >>> shared = TopologyCache(G)
    >>> from simulator.network.flow_network import FlowNetwork
    >>> a, b = FlowNetwork(simpy.Environment(), G, router=shared), FlowNetwork(simpy.Environment(), G, router=shared)
    >>> a.links is b.links and a.cache is b.cache
    True
"""

from __future__ import annotations

import networkx as nx

from simulator.network.routes import LinkTable

__all__ = ["TopologyCache", "planning_network"]


class TopologyCache:
    """One topology's link table and plan cache, for every ``FlowNetwork`` built on ``graph``.

    ``router``: as ``LinkTable``'s (default: ``topologies.routing.Router``).
    """

    def __init__(self, graph: nx.DiGraph, router=None):
        self.graph = graph
        self.links = LinkTable(graph, router)
        """The graph's links by number and the routes between nodes, searched once per pair."""
        self.plans: dict = {}
        """``FlowNetwork.cache`` of every network built with this cache."""
        self._planner = None

    def planner(self):
        """One ``FlowNetwork`` on this cache that never runs, for closed forms (``predict_collective_s``), which
        read only its graph, routes and plan cache: those are this cache's, so any network on it gives the same
        times, and building one costs a list per link (about 0.15 s on ``dgx-h100:2048``, where a search's
        bounds built hundreds)."""
        if self._planner is None:
            import simpy

            from simulator.network.flow_network import FlowNetwork  # it imports this module
            self._planner = FlowNetwork(simpy.Environment(), self.graph, router=self)
        return self._planner


def planning_network(graph: nx.DiGraph, router=None):
    """A network to plan and time collectives on without running it: ``router.planner()`` for a
    ``TopologyCache`` of ``graph``, else a fresh ``FlowNetwork`` (whose own cache starts empty)."""
    if isinstance(router, TopologyCache) and router.graph is graph:
        return router.planner()
    import simpy

    from simulator.network.flow_network import FlowNetwork
    return FlowNetwork(simpy.Environment(), graph, router=router)
