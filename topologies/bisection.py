"""Bisection bandwidth: the least max-flow over the balanced cuts of the GPUs that the graph suggests.

A balanced cut puts floor(n/2) GPUs on the sending side and the rest on the receiving side. Its value
is a max-flow: a super source feeds the senders and a super sink drains the receivers, with unlimited
capacity; every directed edge's capacity is its ``bandwidth_GBps`` (networkx preflow-push), one
direction, GB/s. Bisection bandwidth is the minimum over balanced cuts. Trying them all is
NP-hard, so this takes the minimum over the candidates below (deterministic order; on a tie the first
one is reported), an upper bound on the true figure that is exact for the shapes the tests check:

1. ``across <axis>`` for each dimension of even length L of ``G.graph["torus_dims"]`` (GPU index
   row-major over the dims, as ``builders.torus`` numbers them): coordinate < L/2 against the rest.
2. ``by server`` when there are at least two servers and some server has several GPUs: the first
   half of the servers (by ``server``) against the rest, when that half holds exactly floor(n/2) GPUs.
3. ``by index``: the first floor(n/2) GPUs by ``gpu_index`` against the rest.

A candidate that splits the GPUs exactly like an earlier one is dropped. Closed forms the tests hold
this to, with b the per-direction rate of one link: a ring 2b; a torus whose N GPUs form an
L_1 x ... x L_k grid cut across dimension i severs 2 N/L_i links when L_i > 2 (each of the N/L_i rings
along i is cut twice) and N/2 when L_i = 2 (one link per pair), so the bisection is 2 N b / L_max for
the longest even dimension L_max >= 4 (32b for 2x8x8, 8x2x8 and 8x8x2 alike); n GPUs on a switch
(n/2)b; a fat tree whose halves fill whole leaves (n/2) b_nic / oversubscription.

Example::

    >>> from topologies.builders import ring, torus
    >>> from topologies.links import LinkSpec
    >>> bisection_GBps(ring(8, link=LinkSpec("nvlink", 50.0, 0.3)))
    100.0
    >>> best = bisection(torus((2, 8, 8), link=LinkSpec("nvlink", 10.0, 0.3)))
    >>> best.GBps, best.cut
    (320.0, 'across y of 2x8x8, y < 4 | y >= 4')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from topologies.validate import gpu_nodes

__all__ = ["Bisection", "bisection", "bisection_GBps", "candidate_cuts", "cut_GBps"]

_SOURCE, _SINK = ("bisection", "source"), ("bisection", "sink")  # tuples: cannot collide with str names


@dataclass(frozen=True)
class Bisection:
    """The least balanced cut found, and the value of every candidate tried."""

    GBps: float
    """Max-flow across the least cut, GB/s, one direction (senders to receivers)."""
    cut: str
    """Which cut that was, e.g. ``across y of 2x8x8, y < 4 | y >= 4`` or ``by server, n0 | n1``."""
    senders: tuple[str, ...]
    """GPU names on the sending side of the least cut, by index."""
    candidates: tuple[tuple[str, float], ...]
    """(cut, GB/s) for every candidate, in the order tried."""


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


def _axis(k: int, n_dims: int) -> str:
    return "xyz"[k] if n_dims <= 3 else f"d{k}"


def _span(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"


def _dimension_cuts(G: nx.DiGraph, gpus: list[str]) -> list[tuple[str, list[str]]]:
    dims = G.graph.get("torus_dims")
    if not dims or math.prod(dims) != len(gpus):
        return []
    shape = "x".join(str(n) for n in dims)
    cuts = []
    for k, length in enumerate(dims):
        if length % 2:
            continue
        stride = math.prod(dims[k + 1 :])
        axis, half = _axis(k, len(dims)), length // 2
        senders = [gpu for index, gpu in enumerate(gpus) if (index // stride) % length < half]
        cuts.append((f"across {axis} of {shape}, {axis} < {half} | {axis} >= {half}", senders))
    return cuts


def _server_cut(G: nx.DiGraph, gpus: list[str]) -> list[tuple[str, list[str]]]:
    by_server: dict[int, list[str]] = {}
    for gpu in gpus:
        by_server.setdefault(G.nodes[gpu]["server"], []).append(gpu)
    if not 1 < len(by_server) < len(gpus):
        return []
    servers = sorted(by_server)
    taken: list[str] = []
    for count, server in enumerate(servers, start=1):
        taken.extend(by_server[server])
        if len(taken) == len(gpus) // 2:
            first, rest = [f"n{s}" for s in servers[:count]], [f"n{s}" for s in servers[count:]]
            return [(f"by server, {_span(first)} | {_span(rest)}", taken)]
        if len(taken) > len(gpus) // 2:
            break
    return []


def candidate_cuts(G: nx.DiGraph) -> list[tuple[str, list[str], list[str]]]:
    """The balanced cuts tried, as (label, senders, receivers), in order, without repeats (see module doc)."""
    gpus = gpu_nodes(G)
    if len(gpus) < 2:
        return []
    half = len(gpus) // 2
    index_cut = (f"by index, {_span(gpus[:half])} | {_span(gpus[half:])}", gpus[:half])
    cuts, seen = [], set()
    for label, senders in _dimension_cuts(G, gpus) + _server_cut(G, gpus) + [index_cut]:
        key = frozenset(senders)
        if key in seen:
            continue
        seen.add(key)
        receivers = [gpu for gpu in gpus if gpu not in key]
        cuts.append((label, senders, receivers))
    return cuts


def bisection(G: nx.DiGraph) -> Bisection | None:
    """The least max-flow over ``candidate_cuts(G)``; None with fewer than 2 GPUs."""
    results = [(label, senders, cut_GBps(G, senders, receivers)) for label, senders, receivers in candidate_cuts(G)]
    if not results:
        return None
    least = min(value for _, _, value in results)
    # The first within rounding of the least: sums of the same links in another order may differ in the last bit.
    label, senders, value = next(item for item in results if item[2] <= least * (1 + 1e-12))
    return Bisection(value, label, tuple(senders), tuple((label, value) for label, _, value in results))


def bisection_GBps(G: nx.DiGraph) -> float | None:
    """The bisection bandwidth in GB/s (see ``bisection``); None with fewer than 2 GPUs."""
    best = bisection(G)
    return None if best is None else best.GBps
