"""The flow network's view of a topology: numbered links with capacity and latency, and cached routes.

``LinkTable(graph, router)`` numbers the directed edges of a networkx DiGraph in the graph's edge order
(``bandwidth_GBps`` > 0 per direction, 1 GB = 1e9 B; ``latency_us`` >= 0) and turns the router's edge
paths into ``Route``s of link numbers, cached by (src, dst) or (src, via, dst): routes are deterministic,
so each pair is routed once per table. ``router`` has ``path(src, dst) -> tuple of (u, v) edges``;
default: ``default_router`` (``topologies.routing.Router``'s routes, searched or, on server clusters and tori,
computed); ``HopRouter`` is a fewest-hops BFS.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from simulator.errors import InputError
from topologies.cluster_routing import ClusterRouter
from topologies.routing import Router
from topologies.torus_routing import TorusRouter

__all__ = ["LinkTable", "Route", "HopRouter"]


@dataclass(frozen=True)
class Route:
    """A cached route: link numbers, total latency and bottleneck bandwidth."""

    links: tuple[int, ...]
    """Numbers of the directed links crossed, in order."""
    latency_s: float
    """Sum of the links' latency_us, in seconds."""
    bandwidth_Bps: float
    """Smallest link capacity on the route, bytes per second."""


class HopRouter:
    """Fallback router: a fewest-hops path by networkx BFS (deterministic in adjacency order), cached."""

    def __init__(self, graph: nx.DiGraph):
        self.graph = graph
        self._cache: dict[tuple, tuple] = {}

    def path(self, src, dst) -> tuple:
        """The directed edges of a fewest-hops route from ``src`` to ``dst``."""
        key = (src, dst)
        route = self._cache.get(key)
        if route is None:
            try:
                nodes = nx.shortest_path(self.graph, src, dst)
            except (nx.NetworkXNoPath, nx.NodeNotFound) as error:
                raise InputError(f"no route from {src!r} to {dst!r}: {error}") from None
            route = tuple(zip(nodes[:-1], nodes[1:]))
            self._cache[key] = route
        return route


def default_router(graph: nx.DiGraph) -> Router:
    """The topology package's ECMP router, without a search where the graph's shape allows:
    ``ClusterRouter`` on a cluster of identical servers (every server preset), ``TorusRouter`` on a torus
    (``torus-3d``, rings), else ``Router``'s search; all give the same routes (``HopRouter`` is the simple
    one tests pass in)."""
    return ClusterRouter.for_graph(graph) or TorusRouter.for_graph(graph) or Router(graph)


class LinkTable:
    """Links of ``graph`` by number (``edges``, ``cap`` in B/s, ``lat`` in s) and the routes between nodes."""

    def __init__(self, graph: nx.DiGraph, router=None):
        self.router = router if router is not None else default_router(graph)
        self.link_id: dict[tuple, int] = {}
        self.edges: list[tuple] = []
        self.cap: list[float] = []
        self.lat: list[float] = []
        for u, v, data in graph.edges(data=True):
            bw, lat = data.get("bandwidth_GBps"), data.get("latency_us", 0.0)
            if not isinstance(bw, (int, float)) or not bw > 0:
                raise InputError(f"edge {u}->{v}: bandwidth_GBps must be a number > 0, got {bw!r}")
            if not isinstance(lat, (int, float)) or not lat >= 0:
                raise InputError(f"edge {u}->{v}: latency_us must be a number >= 0, got {lat!r}")
            self.link_id[(u, v)] = len(self.edges)
            self.edges.append((u, v))
            self.cap.append(float(bw) * 1e9)
            self.lat.append(float(lat) * 1e-6)
        self.routes: dict[tuple, Route] = {}
        """The routes found so far by their ``route`` key, (src, dst) or (src, via, dst): a hot path may read
        it directly and call ``route`` only for a key it lacks."""

    def route(self, src, dst, via=None) -> Route:
        """The cached ``Route`` from ``src`` to ``dst`` (by the router on first use); with ``via``, the
        route to ``via`` followed by the route on from it (how NCCL's PXN reaches another NIC rail)."""
        key = (src, dst) if via is None else (src, via, dst)
        route = self.routes.get(key)
        if route is None:
            if via is not None and via not in (src, dst):
                first, second = self.route(src, via), self.route(via, dst)
                ids = first.links + second.links
            else:
                ids = []
                for edge in self.router.path(src, dst):
                    link = self.link_id.get(tuple(edge))
                    if link is None:
                        raise InputError(f"route {src}->{dst} uses {edge!r}, which is not an edge of the graph")
                    ids.append(link)
                if not ids:
                    raise InputError(f"no route from {src!r} to {dst!r}")
            route = Route(tuple(ids), sum(self.lat[i] for i in ids), min(self.cap[i] for i in ids))
            self.routes[key] = route
        return route
