"""Deterministic shortest-path routing with reproducible equal-cost spreading (ECMP).

Cost of a path: fewest hops first; among paths with as many hops, fewest network hops (edges of kind
``ib`` or ``ethernet``). The second rule keeps traffic on NVLink/PCIe inside a server as long as it can,
as NCCL's PXN does: in a rail-optimised cluster a GPU reaches a GPU on another rail through the NVLink
fabric and that GPU's rail, not through a spine. Paths may pass through GPU nodes (a torus or ring has
nothing else; on NVLink it is what the hardware and NCCL do).

Search. Nothing is computed up front. A query runs a bidirectional Dijkstra search (forward from the
source, backward from the destination) that stops as soon as every cheapest route is known; a fat tree
of 4,096 GPUs is then routed by touching a few hundred nodes per pair. Each route is cached. On a
cluster of identical servers (every server preset) ``cluster_routing.ClusterRouter`` gives the same
routes from tables, and on a torus ``torus_routing.TorusRouter`` from coordinates, without a search.

Ties. Equal-cost routes are spread by a stable hash. The route is walked from the source; at each node
it takes one of the next nodes that lie on a cheapest route to the destination (in name order), number
``zlib.crc32(f"{src}|{dst}|{node}") % count`` (``pick``). The choice depends on the graph alone (which
routes are cheapest), not on how the search found them, so any router that knows the cheapest costs
takes the same steps. crc32 is the same in every process (Python's salted ``hash()`` is never used),
so the same graph always gives the same routes. (Before 2026-12-07 the walk started at the edge where
the two searches met, picked at ``crc32(f"{src}|{dst}")``, which tied routes to the search's progress.)

Example::

    >>> from topologies.builders import ring
    >>> Router(ring(6)).path("gpu0", "gpu2")
    (('gpu0', 'gpu1'), ('gpu1', 'gpu2'))
"""

from __future__ import annotations

import heapq
import zlib

import networkx as nx

from topologies.errors import TopologyError
from topologies.kinds import NETWORK_EDGE_KINDS

__all__ = ["Router", "pick", "edge_cost"]

# One hop costs _HOP; a network hop costs one more. Hops dominate while a path has < _HOP network hops.
_HOP = 1 << 16
_INF = float("inf")


def edge_cost(kind) -> int:
    """What one directed edge of ``kind`` adds to a route's cost (module docstring: hops, then network hops)."""
    return _HOP + (1 if kind in NETWORK_EDGE_KINDS else 0)


def pick(src, dst, node, count: int) -> int:
    """Which of ``count`` equal-cost next nodes (in name order) the route from ``src`` to ``dst`` takes at
    ``node``: a stable hash, the same in every process and for every router that follows these rules."""
    return zlib.crc32(f"{src}|{dst}|{node}".encode()) % count


class _Side:
    """One direction of a bidirectional Dijkstra search, keeping all equal-cost predecessors."""

    __slots__ = ("dist", "preds", "heap", "settled", "adjacency")

    def __init__(self, root: int, adjacency: list[list[tuple[int, int]]]) -> None:
        self.dist = {root: 0}
        self.preds: dict[int, list[int]] = {root: []}
        self.heap = [(0, root)]
        self.settled: set[int] = set()
        self.adjacency = adjacency

    def top(self) -> float:
        """Smallest tentative distance not yet settled (stale heap entries dropped)."""
        heap = self.heap
        while heap and heap[0][1] in self.settled:
            heapq.heappop(heap)
        return heap[0][0] if heap else _INF

    def settle_next(self, other: _Side, best: float) -> float:
        """Settle one node, relax its edges; return the best meeting distance seen (an upper bound)."""
        d, node = heapq.heappop(self.heap)
        self.settled.add(node)
        dist, preds, other_dist = self.dist, self.preds, other.dist
        for neighbour, cost in self.adjacency[node]:
            new = d + cost
            old = dist.get(neighbour)
            if old is None or new < old:
                dist[neighbour] = new
                preds[neighbour] = [node]
                heapq.heappush(self.heap, (new, neighbour))
            elif new == old:
                preds[neighbour].append(node)
            else:
                continue
            if neighbour in other_dist and new + other_dist[neighbour] < best:
                best = new + other_dist[neighbour]
        return best


class Router:
    """Routes between any two nodes of a topology graph; see the module docstring for the rules.

    ``Router(G).path(a, b)`` is the tuple of directed edges from ``a`` to ``b`` (empty when a == b).
    The graph must not change while a router is in use (build a new Router after editing it).
    """

    def __init__(self, G: nx.DiGraph) -> None:
        self.graph = G
        # Node ids in name order: heap ties and equal-cost choices then depend on the graph's content
        # only, not on the order its nodes and edges were added (a graph rebuilt from a file routes alike).
        self._names = sorted(G.nodes, key=str)
        index = self._index = {name: i for i, name in enumerate(self._names)}
        self._out: list[list[tuple[int, int]]] = [[] for _ in self._names]
        self._in: list[list[tuple[int, int]]] = [[] for _ in self._names]
        for a, b, kind in G.edges(data="kind"):
            cost = edge_cost(kind)
            self._out[index[a]].append((index[b], cost))
            self._in[index[b]].append((index[a], cost))
        self._paths: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}

    def _node(self, name: str) -> int:
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise TopologyError(f"route: unknown node {name!r}") from None

    def _search(self, src: str, dst: str) -> tuple[_Side, _Side, list[tuple[int, int]]]:
        """Run the bidirectional search; return both sides and the sorted meeting edges."""
        source, target = self._node(src), self._node(dst)
        forward, backward = _Side(source, self._out), _Side(target, self._in)
        # Settle both roots first: then, if one side runs out of nodes, the other end is still settled
        # on its own side and the cheapest routes still have meeting edges.
        best = backward.settle_next(forward, forward.settle_next(backward, _INF))
        while True:
            top_f, top_b = forward.top(), backward.top()
            # Strictly greater: then each node of every cheapest route is settled on one side or the other.
            if top_f + top_b > best or (best == _INF and (top_f == _INF or top_b == _INF)):
                break  # the second case: one side ran out of nodes without meeting the other
            if top_b == _INF or (top_f != _INF and len(forward.heap) <= len(backward.heap)):
                best = forward.settle_next(backward, best)
            else:
                best = backward.settle_next(forward, best)
        if best == _INF:
            raise TopologyError(f"route: {src} cannot reach {dst}")
        meeting = [
            (u, v)
            for u in forward.settled
            for v, cost in self._out[u]
            if v in backward.settled and forward.dist[u] + cost + backward.dist[v] == best
        ]
        meeting.sort()  # ids are in name order
        return forward, backward, meeting

    def _successors(self, src: str, dst: str) -> dict[int, list[int]]:
        """Each node of a cheapest route -> its next nodes on cheapest routes (ids, in name order)."""
        forward, backward, meeting = self._search(src, dst)
        nexts: dict[int, set[int]] = {}
        for u, v in meeting:
            nexts.setdefault(u, set()).add(v)
        # Every cheapest route is a prefix settled by the forward search, one meeting edge and a suffix settled
        # by the backward one (a side settles nodes in order of cost, so it holds a route's nodes up to some
        # point). So walking back from the meeting edges over each side's equal-cost predecessors reaches
        # every node and link of every cheapest route, and nothing else.
        for side, starts, forwards in ((forward, {u for u, _ in meeting}, True),
                                       (backward, {v for _, v in meeting}, False)):
            stack, seen = list(starts), set(starts)
            while stack:
                node = stack.pop()
                for other in side.preds[node]:
                    if forwards:
                        nexts.setdefault(other, set()).add(node)
                    else:
                        nexts.setdefault(node, set()).add(other)
                    if other not in seen:
                        seen.add(other)
                        stack.append(other)
        return {u: sorted(options) for u, options in nexts.items()}  # ids are in name order

    def path(self, src: str, dst: str) -> tuple[tuple[str, str], ...]:
        """The directed edges of the route from ``src`` to ``dst``; deterministic and cached."""
        key = (src, dst)
        cached = self._paths.get(key)
        if cached is not None:
            return cached
        if src == dst:
            self._node(src)
            self._paths[key] = ()
            return ()
        nodes = self._computed_nodes(src, dst) or self._searched_nodes(src, dst)
        route = tuple(zip(nodes[:-1], nodes[1:]))
        self._paths[key] = route
        return route

    def _computed_nodes(self, src, dst) -> tuple | None:
        """The route's nodes found without a search, or None to search: routers that know a graph's
        shape (``cluster_routing``, ``torus_routing``) override this, with the same rules."""
        return None

    def _searched_nodes(self, src, dst) -> list:
        """The route's nodes by the search: from ``src``, ``pick`` among the next nodes on cheapest routes."""
        nexts = self._successors(src, dst)
        names = self._names
        node, target = self._index[src], self._index[dst]
        nodes = [src]
        while node != target:
            options = nexts[node]
            node = options[0] if len(options) == 1 else options[pick(src, dst, names[node], len(options))]
            nodes.append(names[node])
        return nodes

    def nodes(self, src: str, dst: str) -> tuple[str, ...]:
        """The nodes along the route, ``src`` first and ``dst`` last."""
        return (src,) + tuple(b for _, b in self.path(src, dst))

    def hops(self, src: str, dst: str) -> int:
        """Number of edges on the route."""
        return len(self.path(src, dst))

    def latency_us(self, src: str, dst: str) -> float:
        """Sum of the route's per-hop ``latency_us``."""
        edges = self.graph.edges
        return sum(edges[a, b]["latency_us"] for a, b in self.path(src, dst))

    def bottleneck_GBps(self, src: str, dst: str) -> float:
        """The smallest ``bandwidth_GBps`` on the route (inf for src == dst)."""
        edges = self.graph.edges
        return min((edges[a, b]["bandwidth_GBps"] for a, b in self.path(src, dst)), default=_INF)

    def equal_cost_paths(self, src: str, dst: str, limit: int = 64) -> list[tuple[str, ...]]:
        """Up to ``limit`` node sequences of all routes as cheap as ``path``'s, sorted (for tests and tools)."""
        if src == dst:
            self._node(src)
            return [(src,)]
        forward, backward, meeting = self._search(src, dst)
        names = self._names

        def chains(side: _Side, node: int) -> list[list[int]]:
            if not side.preds[node]:
                return [[node]]
            return [[node] + rest for pred in side.preds[node] for rest in chains(side, pred)][:limit]

        found = set()
        for u, v in meeting:
            for head in chains(forward, u):
                for tail in chains(backward, v):
                    found.add(tuple(names[i] for i in head[::-1] + tail))
        return sorted(found)[:limit]
