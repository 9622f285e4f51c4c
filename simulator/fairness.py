"""Weighted max-min fairness by progressive filling, over the flows of ``simulator.network``.

Progressive filling (Bertsekas & Gallager, "Data Networks", 2nd ed., section 6.5.2): raise every
unfrozen flow's rate together; when a link saturates, freeze its flows at its fair share. In the
implementation a heap holds each link's share ``residual / unfrozen units`` keyed by (share, link
number); the smallest valid entry is saturated next, and its flows are frozen at that share.

Weights. A flow of weight w stands for w flows that start at the same instant on the same route with
the same bytes (``same_flows`` finds them: a collective's rings cross the same NVSwitch hops
k-1 times out of k). Such flows are interchangeable: they cross the same links, so every fill freezes
them in the same step at the same share, and they drain together. So one record per group is exact,
provided the arithmetic is the unweighted arithmetic, not merely equal in exact real numbers:

- a flow counts w units on each of its links (``load``), and its rate and bytes are per member;
- freezing it subtracts its share from a link's residual w times, one subtraction after another, as
  the w members would have (all flows frozen while one link is saturated get that link's share, so
  the order of those subtractions cannot matter; ``w * share`` in one step could round differently);
- a link's heap entry is pushed once after all the freezes a saturation causes, not once per flow:
  only a link's newest entry can be valid (``share == residual / units``); an older one either
  differs from it (skipped as stale) or equals it (popped at the same place in the order), so the
  sequence of saturated links, and with it every share, is the same as with one push per flow.

The network keeps the members' flow numbers and replays per-member effects in their order (link byte
counters, the completion event of the last member), so a run with groups gives the same numbers, bit
for bit, as the same run with every flow alone; ``tests/simulator/test_network_groups.py`` holds the
two against each other on multi-server topologies.
"""

from __future__ import annotations

import heapq

__all__ = ["component", "fill", "same_flows"]


def component(seeds: list, stamp: int, on_link: list[dict], mark: list[int]) -> tuple[list, list[int]]:
    """Flows and links connected to ``seeds`` through shared links, breadth-first in insertion order.

    ``flow.seen`` and ``mark[link]`` are set to ``stamp`` for everything reached.
    """
    for flow in seeds:
        flow.seen = stamp
    order = list(seeds)
    links: list[int] = []
    append_link, append_flow = links.append, order.append
    i = 0
    while i < len(order):
        for link in order[i].links:
            if mark[link] != stamp:
                mark[link] = stamp
                append_link(link)
                for other in on_link[link].values():
                    if other.seen != stamp:
                        other.seen = stamp
                        append_flow(other)
        i += 1
    return order, links


def fill(links: list[int], stamp: int, on_link: list[dict], load: list[int], cap: list[float],
         residual: list[float], count: list[int]) -> None:
    """Progressive filling over ``links`` (a closed component): set ``flow.share`` (per member) of
    every flow on them. ``load[link]``: units (summed weights) on the link; ``residual`` and ``count``
    are scratch arrays indexed by link."""
    heap = []
    for link in links:
        residual[link] = c = cap[link]
        n = count[link] = load[link]
        heap.append((c / n, link))
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        share, link = pop(heap)
        n = count[link]
        if n == 0 or share != residual[link] / n:
            continue  # saturated already, or a stale entry
        changed: dict[int, None] = {}
        for flow in on_link[link].values():
            if flow.frozen == stamp:
                continue
            flow.frozen = stamp
            flow.share = share
            w = flow.weight
            for other in flow.links:
                left = residual[other] - share
                for _ in range(w - 1):
                    left -= share
                residual[other] = left
                count[other] -= w
                changed[other] = None
        for other in changed:
            n = count[other]
            if n > 0 and other != link:
                left = residual[other]
                push(heap, ((left if left > 0.0 else 0.0) / n, other))


def same_flows(flows) -> tuple[tuple[int, ...], ...]:
    """Indices of ``flows`` ((src, dst, nbytes, via), ...) grouped by equal tuples, in order of first
    appearance; a flow that moves no bytes over a link (src == dst, nbytes <= 0) stays alone.

    >>> same_flows([("a", "b", 1.0, None), ("b", "c", 1.0, None), ("a", "b", 1.0, None)])
    ((0, 2), (1,))
    """
    first: dict[tuple, int] = {}
    groups: list[list[int]] = []
    for i, flow in enumerate(flows):
        src, dst, nbytes, _ = flow
        if src == dst or not nbytes > 0:
            groups.append([i])
            continue
        g = first.get(flow)
        if g is None:
            first[flow] = len(groups)
            groups.append([i])
        else:
            groups[g].append(i)
    return tuple(tuple(g) for g in groups)
