"""Weighted max-min fairness by progressive filling, over the flows of ``simulator.network.flow_network``.

Progressive filling (Bertsekas & Gallager, "Data Networks", 2nd ed., section 6.5.2): raise every
unfrozen flow's rate together; when a link saturates, freeze its flows at its fair share. In the
implementation a heap holds each link's share ``residual / unfrozen units`` keyed by (share, link
number); the smallest valid entry is saturated next, and its flows are frozen at that share.

Weights. A flow of weight w stands for w flows that start at the same instant on the same route with
the same bytes (a group, ``simulator.network.flow_groups``: a collective's rings cross the same NVSwitch hops
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
counters, ``flow_groups``; a group's completion event goes where its last member's would), so a run
with groups gives the same numbers, bit for bit, as the same run with every flow alone, which
``tests/simulator/test_network_groups.py`` checks on multi-server topologies and random graphs.

Components. The flows a change reaches split into connected components (flows joined by shared
links). ``components`` finds them; most are one flow alone on its links, whose share needs no fill.
Filling each of the others on its own gives the numbers one fill of their union gives (the reference
network still does that, ``FlowNetwork(group=False)``).

Loose links. A link whose flows could not fill it even at their routes' bottleneck rates (its
``demand``, the sum of its records' bottleneck bandwidths, below ``limit``, its capacity less a
margin) never saturates, so it joins no flows into a component. Why, exactly: when a link is popped
with unfrozen flows at share s, each of them is below its own bottleneck link's entry (it is still in
the heap, at most ``capacity / weight``), and every frozen flow got such a share too, so the link's
capacity is at most its demand, less than the limit (``LOOSE_MARGIN`` covers rounding in the
residuals and in the running demand). A link that is never popped only ever has its scratch
residual touched, so leaving it out changes no saturation, no share and no bit. It splits the
components Cannon's shifts chain across a cluster through links they cannot fill (NCCL's trees,
joined through leaf-spine links they can fill, gain nothing); ``tests/simulator/test_network_groups.py``
holds the result to the reference network, whose limits are -inf so that it crosses every link.
"""

from __future__ import annotations

import heapq

__all__ = ["component", "components", "fill", "start_heap", "LOOSE_MARGIN"]

# A link is loose below capacity x (1 - LOOSE_MARGIN): far above the rounding of the residuals (one
# ulp per subtraction) and of the running demand (reset whenever the link empties).
LOOSE_MARGIN = 1e-6


def component(seeds: list, stamp: int, on_link: list[dict], mark: list[int], demand: list[float],
              limit: list[float]) -> tuple[list, list[int]]:
    """Flows and tight links (``demand[link] >= limit[link]``) connected to ``seeds`` through tight
    links, breadth-first in insertion order, as one list each (``seeds`` first, then what they reach;
    the reference network's limits are -inf, so it crosses every link).

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
            if mark[link] != stamp and demand[link] >= limit[link]:
                mark[link] = stamp
                append_link(link)
                for other in on_link[link].values():
                    if other.seen != stamp:
                        other.seen = stamp
                        append_flow(other)
        i += 1
    return order, links


def components(seeds: list, stamp: int, on_link: list[dict], load: list[int], mark: list[int],
               demand: list[float], limit: list[float]) -> tuple[list, list[tuple[list, list[int]]]]:
    """The flows connected to ``seeds`` through tight links, split into connected components:
    ``(alone, shared)``.

    A link is tight when ``demand[link] >= limit[link]`` (loose links join nothing; see the module
    docstring). ``alone``: flows with no other flow on any of their tight links; their fair share is
    their route's bottleneck over their weight (the bottleneck link is tight, since the flow's own
    demand fills it; the fill would pop min(capacity / weight) first, and rounding is monotonic, so
    the two are equal). ``shared``: (flows, tight links) of every other component. A fill of each
    component on its own gives what one fill of their union gives: a link's share depends only on
    the flows on it, so the saturations of one component happen in the same order, with the same
    values, whatever the others do. ``flow.seen`` and ``mark[link]`` (tight links) are set to ``stamp``.
    """
    alone: list = []
    shared: list[tuple[list, list[int]]] = []
    for seed in seeds:
        if seed.seen == stamp:
            continue
        seed.seen = stamp
        w = seed.weight
        for link in seed.links:
            if load[link] != w and demand[link] >= limit[link]:
                break
        else:
            alone.append(seed)
            continue
        shared.append(component([seed], stamp, on_link, mark, demand, limit))
    return alone, shared


def start_heap(links, load: list[int], cap: list[float], residual: list[float], count: list[int]) -> list:
    """A fill's starting state over ``links``: each link's whole capacity left and all its flows
    unfrozen (``residual``, ``count``), and the heap of (fair share, link) it pops from."""
    heap = []
    for link in links:
        residual[link] = c = cap[link]
        n = count[link] = load[link]
        heap.append((c / n, link))
    heapq.heapify(heap)
    return heap


def fill(links: list[int], stamp: int, on_link: list[dict], load: list[int], cap: list[float],
         residual: list[float], count: list[int]) -> None:
    """Progressive filling over ``links`` (a closed component): set ``flow.share`` (per member) of
    every flow on them, and where it was frozen: ``flow.by``, the saturated link, and ``flow.at``, the
    heap key it was popped at. ``load[link]``: units (summed weights) on the link; ``residual`` and
    ``count`` are scratch arrays indexed by link; only ``links`` enter the heap (the component's tight
    links: its flows' loose links never saturate, ``components``).

    Lazy heap. A freeze only ever raises the share of the other links its flow crosses (it takes
    at most their share from them), so a link's entry is not renewed when it changes: an entry at or
    below the link's share waits in the heap, and when it comes to the top and is out of date it is
    pushed again at the link's share then. The links saturate in the order, and at the shares, of a
    heap renewed on every change (what this fill did before, one push per changed link per
    saturation): an out-of-date entry comes to the top only below every link's share, and a valid
    entry is then the smallest share, ties to the lowest link number, as before. A link whose
    residual rounded below zero was never valid there and is dropped here.

    The order of saturations. Each renewed entry is above the one it replaces (a share only rises as
    others freeze) except by rounding, and a renewed entry below it is the smallest in the heap, so
    it saturates next; its flows' ``at`` is the entry it replaced. Then the saturations come in the
    order of their (``at``, ``by``), and any other entry is popped between the same two of them as
    in the real order: ``simulator.network.region`` replays the other links' saturations that way.
    """
    heap = start_heap(links, load, cap, residual, count)
    push, pop = heapq.heappush, heapq.heappop
    dip, dip_at = -1, 0.0  # a link renewed below its entry, and that entry
    while heap:
        share, link = pop(heap)
        n = count[link]
        if n == 0:
            continue  # saturated already
        left = residual[link]
        if share != left / n:
            if left >= 0.0:
                now = (left if left > 0.0 else 0.0) / n  # out of date: at its share now
                if now < share:
                    dip, dip_at = link, share
                push(heap, (now, link))
            continue
        at = dip_at if link == dip else share
        for flow in on_link[link].values():
            if flow.frozen == stamp:
                continue
            flow.frozen = stamp
            flow.share = share
            flow.by = link
            flow.at = at
            w = flow.weight
            for other in flow.links:
                left = residual[other] - share
                for _ in range(w - 1):
                    left -= share
                residual[other] = left
                count[other] -= w
