"""Routes on a cluster of identical servers without a graph search: the same routes as ``Router``.

What it applies to: a graph of identical servers (the same nodes, links and link kinds in each, named
``gpu<i>`` and ``n<server>/<part>`` as ``topologies.servers`` names them) whose *ports* (NICs) join a
two-level fabric, every port to one leaf, every leaf to every spine: what ``cluster.fat_tree_cluster``
builds, so every server preset at any server count, calibrated or not. ``ClusterRouter.for_graph(G)``
checks all of that in one pass over the edges and returns None where any of it fails (a torus, a
custom file that is not such a cluster); ``routes.default_router`` then uses ``Router``'s search.

Why it gives ``Router``'s routes. ``Router`` walks from the source and at each node takes one of the
next nodes that lie on a cheapest route to the destination, by ``routing.pick``; the next nodes of
``u`` are exactly its neighbours ``v`` with cost(u, v) + d(v, dst) = d(u, dst), d the cheapest cost.
So a router that knows d and each node's neighbours takes the same steps. Here d comes from tables:

- inside a server, one all-pairs table of the template server (Floyd-Warshall), where a route may also
  leave by one port and come back by another through the fabric (an *excursion*: two port-leaf hops,
  and two leaf-spine hops unless both ports share a leaf);
- between servers S and T, min over ports i of S and j of T of d(x, i) + fabric(i, j) + d(j, y), with
  fabric(i, j) two port-leaf hops, plus two leaf-spine hops unless i and j share a leaf: one table per
  pattern of shared leaves (rail-optimised: same leaf group or not), computed once;
- from a leaf or a spine to a server node, the best of the destination server's ports, straight down
  from a leaf it hangs off or through a spine otherwise.

A cheapest route never passes through a third server: in and out of one costs two port-leaf hops and
at least one hop inside (3 x 65,536 or more), a leaf-spine-leaf detour at most 2 x 65,537. For the same
reason no leaf's next node is another server's port, and a spine's next nodes are leaves the
destination's server hangs off. ``tests/topologies/test_cluster_routing.py`` holds the routes to
``Router``'s on every server preset, and on clusters that span leaf groups.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from topologies.routing import Router, edge_cost, pick

__all__ = ["ClusterRouter"]

_INF = float("inf")


class _Layout:
    """The cluster's servers, template tables and fabric, as ``for_graph`` found them."""

    def __init__(self, servers, keys, template_out, ports, leaf_of, spines, c_port, c_spine):
        self.names = servers  # per server, its node names by template position
        self.where = {name: (s, p) for s, names in enumerate(servers) for p, name in enumerate(names)}
        self.template_out = template_out  # per position, [(position, cost)] inside a server
        self.ports = ports  # template positions of the ports, in position order
        self.port_index = {p: k for k, p in enumerate(ports)}
        self.leaf_of = leaf_of  # per server, the leaf of each port
        self.spines = spines  # names, in name order
        self.c_port, self.c_spine = c_port, c_spine
        self.ports_on = [{} for _ in servers]  # per server, leaf -> its ports on that leaf
        for s, leaves in enumerate(leaf_of):
            for k, leaf in enumerate(leaves):
                self.ports_on[s].setdefault(leaf, []).append(k)
        # A route may leave a server by one port and come back by another (ports on one leaf: two
        # port-leaf hops; else through a spine as well).
        self.inside = self._all_pairs(len(keys), template_out, self._fabric(leaf_of[0], leaf_of[0]))
        self.best_port = [min((self.inside[p][q] for p in ports), default=_INF) for q in range(len(keys))]
        self._signature = {}  # leaves of a server's ports -> a number
        self._server_signature = [self._signature.setdefault(tuple(leaves), len(self._signature))
                                  for leaves in leaf_of]
        self._between: dict[tuple[int, int], list[list[float]]] = {}
        self._tables: dict[tuple, list[list[float]]] = {}

    def _fabric(self, leaves_a, leaves_b) -> np.ndarray:
        """Fabric cost from port i (leaves_a[i]) to port j (leaves_b[j]) of two servers."""
        two_up = 2 * self.c_port
        via_spine = two_up + 2 * self.c_spine if self.spines else _INF
        return np.array([[two_up if a == b else via_spine for b in leaves_b] for a in leaves_a], dtype=float)

    def _all_pairs(self, n, template_out, excursions) -> list[list[float]]:
        d = np.full((n, n), _INF)
        np.fill_diagonal(d, 0.0)
        for p, edges in enumerate(template_out):
            for q, cost in edges:
                d[p, q] = min(d[p, q], cost)
        for i, p in enumerate(self.ports):
            for j, q in enumerate(self.ports):
                if i != j:
                    d[p, q] = min(d[p, q], excursions[i, j])
        for k in range(n):  # Floyd-Warshall; costs are integers far below 2**53, so exact in float64
            np.minimum(d, d[:, k:k + 1] + d[k:k + 1, :], out=d)
        return d.tolist()

    def between(self, s: int, t: int) -> list[list[float]]:
        """Cheapest cost from every position of server s to every position of server t (s != t)."""
        key = (self._server_signature[s], self._server_signature[t])
        table = self._between.get(key)
        if table is None:
            fabric = self._fabric(self.leaf_of[s], self.leaf_of[t])
            pattern = tuple(map(tuple, fabric.tolist()))
            table = self._tables.get(pattern)
            if table is None:
                inside = np.array(self.inside)
                out = inside[:, self.ports]  # position -> port i
                into = inside[self.ports, :]  # port j -> position
                to_port = (out[:, :, None] + fabric[None, :, :]).min(axis=1)  # position -> port j of t
                table = (to_port[:, :, None] + into[None, :, :]).min(axis=1).tolist()
                self._tables[pattern] = table
            self._between[key] = table
        return table

    def leaf_distance(self, leaf, t: int, q: int) -> float:
        """Cheapest cost from ``leaf`` to position q of server t."""
        inside, ports = self.inside, self.ports
        best = 2 * self.c_spine + self.c_port + self.best_port[q] if self.spines else _INF
        for k in self.ports_on[t].get(leaf, ()):
            best = min(best, self.c_port + inside[ports[k]][q])
        return best

    def route(self, src, dst, source: tuple[int, int], target: tuple[int, int]) -> tuple | None:
        """The nodes of ``Router``'s route from ``src`` to ``dst``; None where dst is unreachable."""
        (s, p), (t, q) = source, target
        left = self.inside[p][q] if s == t else self.between(s, t)[p][q]
        if left == _INF:
            return None
        here, where, nodes = src, ("server", s, p), [src]
        while here != dst:
            options = self._next(where, t, q, left)  # (name, where, cost left), one per cheapest next node
            if len(options) > 1:
                options.sort(key=lambda option: str(option[0]))
                here, where, left = options[pick(src, dst, here, len(options))]
            else:
                here, where, left = options[0]
            nodes.append(here)
        return tuple(nodes)

    def _next(self, where: tuple, t: int, q: int, left: float) -> list[tuple]:
        """The next nodes on a cheapest route from ``where`` to position q of server t, ``left`` away."""
        if where[0] == "server":
            return self._next_in_server(where[1], where[2], t, q, left)
        if where[0] == "leaf":
            return self._next_from_leaf(where[1], t, q, left)
        return self._next_from_spine(t, q, left)

    def _next_in_server(self, s: int, p: int, t: int, q: int, left: float) -> list[tuple]:
        row = self.inside if s == t else self.between(s, t)
        names = self.names[s]
        options = [(names[p2], ("server", s, p2), row[p2][q]) for p2, cost in self.template_out[p]
                   if cost + row[p2][q] == left]
        k = self.port_index.get(p)
        if k is not None:  # a port: its leaf too
            leaf = self.leaf_of[s][k]
            rest = self.leaf_distance(leaf, t, q)
            if self.c_port + rest == left:
                options.append((leaf, ("leaf", leaf), rest))
        return options

    def _next_from_leaf(self, leaf, t: int, q: int, left: float) -> list[tuple]:
        # Down to the destination server's ports on this leaf, or up to every spine; never into a third
        # server (module docstring).
        options = []
        for k in self.ports_on[t].get(leaf, ()):
            port = self.ports[k]
            rest = self.inside[port][q]
            if self.c_port + rest == left:
                options.append((self.names[t][port], ("server", t, port), rest))
        rest = self.c_spine + self.c_port + self.best_port[q]
        if self.spines and self.c_spine + rest == left:
            options.extend((spine, ("spine",), rest) for spine in self.spines)
        return options

    def _next_from_spine(self, t: int, q: int, left: float) -> list[tuple]:
        # Only the leaves the destination server hangs off can be a step closer (module docstring).
        options = []
        for leaf in dict.fromkeys(self.leaf_of[t]):
            rest = self.leaf_distance(leaf, t, q)
            if self.c_spine + rest == left:
                options.append((leaf, ("leaf", leaf), rest))
        return options


def _template_key(G, name, server: int, gpu_offset: int):
    """A node's place in its server, or None where it is not named as ``topologies.servers`` names nodes."""
    data = G.nodes[name]
    if data.get("kind") == "gpu":
        index = data.get("gpu_index")
        return ("gpu", index - gpu_offset) if isinstance(index, int) and name == f"gpu{index}" else None
    prefix = f"n{server}/"
    return ("part", name[len(prefix):]) if isinstance(name, str) and name.startswith(prefix) else None


def _layout(G: nx.DiGraph) -> _Layout | None:
    """The cluster's layout, or None where G is not identical servers on a two-level fabric."""
    members: dict[int, list] = {}
    fabric = []
    for name, server in G.nodes(data="server"):
        if server is None:
            if G.nodes[name].get("kind") not in ("leaf", "spine"):
                return None
            fabric.append(name)
        elif isinstance(server, int) and not isinstance(server, bool) and server >= 0:
            members.setdefault(server, []).append(name)
        else:
            return None
    if not members or sorted(members) != list(range(len(members))):
        return None
    keys_of: dict = {}
    servers = []
    template_keys = None
    for s in range(len(members)):
        gpus = [G.nodes[n].get("gpu_index") for n in members[s] if G.nodes[n].get("kind") == "gpu"]
        if not all(isinstance(i, int) for i in gpus):
            return None
        offset = min(gpus, default=0)
        keyed = {}
        for name in members[s]:
            key = _template_key(G, name, s, offset)
            if key is None or key in keyed:
                return None
            keyed[key] = name
        if template_keys is None:
            template_keys = sorted(keyed, key=repr)
        elif set(keyed) != set(template_keys):
            return None
        servers.append([keyed[k] for k in template_keys])
        for k, name in keyed.items():
            keys_of[name] = k
    position = {k: i for i, k in enumerate(template_keys)}
    inner: list[set] = [set() for _ in servers]
    up: dict = {}  # port name -> its leaf
    down: dict = {}  # (leaf, port name) seen
    spine_links: set = set()
    port_costs, spine_costs = set(), set()
    leaves = set()
    for a, b, kind in G.edges(data="kind"):
        cost = edge_cost(kind)
        sa, sb = G.nodes[a].get("server"), G.nodes[b].get("server")
        if sa is not None and sb is not None:
            if sa != sb:
                return None
            inner[sa].add((position[keys_of[a]], position[keys_of[b]], cost))
        elif sa is not None:  # port -> leaf
            if a in up:
                return None
            up[a] = b
            leaves.add(b)
            port_costs.add(cost)
        elif sb is not None:  # leaf -> port
            down[(a, b)] = True
            leaves.add(a)
            port_costs.add(cost)
        else:
            spine_links.add((a, b))
            spine_costs.add(cost)
    if any(edges != inner[0] for edges in inner) or len(port_costs) > 1 or len(spine_costs) > 1:
        return None
    if len(down) != len(up) or any((leaf, port) not in down for port, leaf in up.items()):
        return None
    spines = sorted((n for n in fabric if n not in leaves), key=str)
    if any(G.nodes[n].get("kind") != "leaf" for n in leaves) or any(G.nodes[n].get("kind") != "spine" for n in spines):
        return None
    expected = {(leaf, spine) for leaf in leaves for spine in spines}
    if spine_links != expected | {(b, a) for a, b in expected} or (len(leaves) > 1 and not spines):
        return None
    port_positions = sorted({position[keys_of[port]] for port in up})
    if len(servers) > 1 and not port_positions:
        return None  # servers with no way between them: the search says which pair cannot be routed
    leaf_of = []
    for names in servers:
        if any(names[p] not in up for p in port_positions) or sum(1 for n in names if n in up) != len(port_positions):
            return None
        leaf_of.append([up[names[p]] for p in port_positions])
    if len({tuple(a == b for a in leaves_ for b in leaves_) for leaves_ in leaf_of}) > 1:
        return None  # the ports of every server must share leaves alike (the template's excursions)
    template_out: list[list[tuple[int, int]]] = [[] for _ in template_keys]
    for p, q, cost in sorted(inner[0]):
        template_out[p].append((q, cost))
    c_port = port_costs.pop() if port_costs else 0
    c_spine = spine_costs.pop() if spine_costs else 0
    return _Layout(servers, template_keys, template_out, port_positions, leaf_of, spines, c_port, c_spine)


class ClusterRouter(Router):
    """``Router`` whose routes between two server nodes come from the cluster's tables (module docstring);
    any other query (a switch as an end, an unreachable pair) is ``Router``'s own search."""

    def __init__(self, G: nx.DiGraph, layout: _Layout) -> None:
        super().__init__(G)
        self._layout = layout

    @classmethod
    def for_graph(cls, G: nx.DiGraph) -> ClusterRouter | None:
        """A ClusterRouter for ``G``, or None where ``G`` is not a cluster of identical servers."""
        layout = _layout(G)
        return None if layout is None else cls(G, layout)

    def _computed_nodes(self, src, dst) -> tuple | None:
        """The route's nodes from the cluster's tables where both ends are server nodes, else None."""
        where = self._layout.where
        source, target = where.get(src), where.get(dst)
        if source is None or target is None:
            return None
        return self._layout.route(src, dst, source, target)  # None where dst is unreachable: the search says so
