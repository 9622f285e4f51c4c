"""Bisection bandwidth by max-flow: how fast the first half of the GPUs can send to the second half.

The GPUs are split by ``gpu_index`` (first floor(n/2) against the rest); a super source feeds the first
half and a super sink drains the second, with unlimited capacity; every directed edge's capacity is its
``bandwidth_GBps``. The max-flow value (networkx preflow-push) is the bisection bandwidth in GB/s, one
direction. Closed forms the tests hold it to: a ring 2b; an X x Y x Z torus cut across X 2YZb (YZb when
X = 2); n GPUs on a switch (n/2)b; a fat tree whose halves fill whole leaves (n/2) b_nic / oversubscription.

Example::

    >>> from topologies.builders import ring
    >>> from topologies.links import LinkSpec
    >>> bisection_GBps(ring(8, link=LinkSpec("nvlink", 50.0, 0.3)))
    100.0
"""

from __future__ import annotations

import networkx as nx

from topologies.validate import gpu_nodes

__all__ = ["bisection_GBps", "cut_GBps"]

_SOURCE, _SINK = ("bisection", "source"), ("bisection", "sink")  # tuples: cannot collide with str names


def cut_GBps(G: nx.DiGraph, senders: list[str], receivers: list[str]) -> float:
    """Max-flow value in GB/s from the ``senders`` nodes (together) to the ``receivers`` nodes."""
    overlap = set(senders) & set(receivers)
    if overlap:
        raise ValueError(f"cut_GBps: {sorted(overlap)[0]} is both a sender and a receiver")
    H = nx.DiGraph()
    H.add_edges_from((a, b, {"capacity": bw}) for a, b, bw in G.edges(data="bandwidth_GBps"))
    # Edges without "capacity" have infinite capacity in networkx.
    H.add_edges_from((_SOURCE, node) for node in senders)
    H.add_edges_from((node, _SINK) for node in receivers)
    return float(nx.maximum_flow_value(H, _SOURCE, _SINK))


def bisection_GBps(G: nx.DiGraph) -> float | None:
    """Max-flow from the first half of the GPUs (by index) to the second; None with fewer than 2 GPUs."""
    gpus = gpu_nodes(G)
    if len(gpus) < 2:
        return None
    half = len(gpus) // 2
    return cut_GBps(G, gpus[:half], gpus[half:])
