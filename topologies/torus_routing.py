"""Routes on a torus without a graph search: the same routes as ``Router``, from coordinates.

On a torus built by ``builders.torus`` (the ``torus-3d`` preset, rings; the graph keeps its shape as
``torus_dims``) every link costs the same, so the cheapest cost from a GPU to another is that cost times
the sum over dimensions of the ring distance, min(|a - b|, n - |a - b|). ``Router`` walks from the source
and at each GPU takes, by ``routing.pick``, one of the neighbours that lie on a cheapest route: here the
neighbours one step closer along some dimension (both ways round a ring where the two are as far),
found from coordinates. ``TorusRouter.for_graph`` checks that the graph is exactly such a torus (its
GPUs, every link and no other, one cost) and returns None otherwise.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx

from topologies.routing import Router, edge_cost, pick

__all__ = ["TorusRouter"]


def _torus_links(dims: tuple[int, ...]) -> set[tuple[str, str]]:
    """The directed links of ``builders.torus(dims)`` by GPU name."""
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
    links = set()
    for coord in itertools.product(*(range(n) for n in dims)):
        here = sum(c * s for c, s in zip(coord, strides))
        for k, n in enumerate(dims):
            if n == 1:
                continue
            there = here + (((coord[k] + 1) % n) - coord[k]) * strides[k]
            links.add((f"gpu{here}", f"gpu{there}"))
            links.add((f"gpu{there}", f"gpu{here}"))
    return links


def _closer(offset: int, n: int) -> tuple[int, ...]:
    """The steps (+1, -1) round a ring of ``n`` that bring a coordinate ``offset`` short of its target
    one closer: the shorter way, or both where the two ways are as long (one link when n == 2)."""
    forward = offset % n
    backward = n - forward
    if forward == 0:
        return ()
    if forward < backward:
        return (1,)
    if forward > backward:
        return (-1,)
    return (1,) if n == 2 else (1, -1)


class TorusRouter(Router):
    """``Router`` whose routes between two GPUs of a torus come from their coordinates (module docstring)."""

    def __init__(self, G: nx.DiGraph, dims: tuple[int, ...]) -> None:
        super().__init__(G)
        self._dims = dims
        self._strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
        self._size = math.prod(dims)

    @classmethod
    def for_graph(cls, G: nx.DiGraph) -> TorusRouter | None:
        """A TorusRouter for ``G``, or None where ``G`` is not exactly a ``builders.torus`` graph."""
        dims = G.graph.get("torus_dims")
        if not (isinstance(dims, (list, tuple)) and dims and all(type(n) is int and n >= 1 for n in dims)):
            return None
        dims = tuple(dims)
        size = math.prod(dims)
        if G.number_of_nodes() != size or any(f"gpu{i}" not in G for i in range(size)):
            return None
        if set(G.edges) != _torus_links(dims) or len({edge_cost(k) for _, _, k in G.edges(data="kind")}) > 1:
            return None
        return cls(G, dims)

    def _coords(self, name) -> tuple[int, ...] | None:
        if not (isinstance(name, str) and name.startswith("gpu") and name[3:].isdigit()):
            return None
        index = int(name[3:])
        if index >= self._size or name != f"gpu{index}":
            return None
        return tuple(index // s % n for s, n in zip(self._strides, self._dims))

    def _computed_nodes(self, src, dst) -> list | None:
        """The route's nodes from the coordinates where both ends are GPUs of the torus, else None."""
        here, there = self._coords(src), self._coords(dst)
        if here is None or there is None:
            return None
        dims, strides = self._dims, self._strides
        nodes = [src]
        while here != there:
            options = []  # (name, coordinates) of the neighbours one step closer
            for k, n in enumerate(dims):
                for step in _closer(there[k] - here[k], n):
                    moved = here[:k] + ((here[k] + step) % n,) + here[k + 1:]
                    options.append((f"gpu{sum(c * s for c, s in zip(moved, strides))}", moved))
            if len(options) > 1:
                options.sort(key=lambda option: option[0])
                name, here = options[pick(src, dst, nodes[-1], len(options))]
            else:
                name, here = options[0]
            nodes.append(name)
        return nodes
