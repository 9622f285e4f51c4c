"""Re-filling only the links a change reaches: the rest of a max-min component keeps its rates, proven.

Cannon's staggered shifts chain flows through shared NIC links into components of up to 2,800 flows,
and every start and drain there re-filled the whole component (cannon25d [32,32,4]: 85,000 fills,
8.4 million flow visits) to change a median of 11 rates per start and 3 per drain in components of
200 flows or more; NCCL's trees in summa25d make components where most drains change no rate. This
module re-runs the fill (``fairness.fill``, lazy heap and all) over a *region*, a set of the
component's tight links, taking every other saturation from the last fill's records, and grows the
region until the records it leaves alone are proven to be what a fill of the whole component would
give, bit for bit. A drain that frees capacity nobody can use is a region that changes nothing.

The records. A fill leaves on every flow it froze ``share``, ``by`` (the link whose saturation froze
it) and ``at`` (its place in the heap's order: the key popped, ``fairness.fill``), and sets
``recorded``; a flow without a record (new, alone on its tight links, or never frozen) has not.

Why records outside the region still hold. A fill is one heap's sequence of pops, and what a pop of
a link does (skip, renew its entry, saturate at ``residual / count``) depends only on that link's
residual and count: on which of its flows were frozen before, at which shares (each member's share
subtracted in turn). A freeze has its place in the sequence at its (at, by), and an entry (key,
link) pops after the freezes placed below it and before those above it (``fairness.fill``, "The
order of saturations"). So a link whose flows are all frozen at the same (at, by) with the same
shares as in the last fill pops the same entries, saturates at the same place with the same share,
and its own records hold. The region fill runs ``fairness.fill``'s loop on the region's links, with
each *external* freeze (a flow on them whose ``by`` is outside the region) applied at its recorded
place and share, and finds where each flow on the region is frozen now. Then:

- a flow the region froze with a record that differs (share, by or at), or that had none, takes its
  tight links outside the region into it: their pops would change;
- a flow whose ``by`` is no longer tight (a drain left the link loose: it will not saturate), or that
  has no record, takes its tight links into the region before the pass.

A pass that adds no link has left every link outside the region with its flows frozen as before.
By induction over the pops of a fill of the whole component, each pop then does what the records
say: a region link's as the region fill found (the same residuals, the same heap order), any
other's as in the last fill. So the region's new records and the others' are the fill's, bit for
bit, and only the region's flows can change rate. Records of separate fills may meet on one link (a
start joins two components): a fill of two components gives each the saturations it gives it alone
(``fairness.components``), so their records together are the fill of the union.

A pass that adds links runs again on the larger region; once the passes have visited more than
``budget`` links and flows, the caller fills the components instead (``FlowNetwork._refill``).
``tests/simulator/test_network_region.py`` checks every rate and record against a fill from scratch
after every change, and whole runs against the reference network.
"""

from __future__ import annotations

import heapq

from simulator.network.fairness import start_heap

__all__ = ["refill_region"]


def refill_region(links, unknown, on_link: list[dict], load: list[int], cap: list[float], demand: list[float],
                  limit: list[float], residual: list[float], count: list[int], budget: int) -> list | None:
    """Re-fill the region grown from the tight ``links`` and the tight links of the flows ``unknown``
    (module docstring); set ``share``, ``by``, ``at`` and ``recorded`` of the flows the region froze
    and return them. None (nothing changed) when the passes that grew the region have visited more
    than ``budget`` links and flows, or a flow was left unfrozen (the caller fills the components)."""
    region: dict[int, None] = dict.fromkeys(links)
    for flow in unknown:
        for link in flow.links:
            if demand[link] >= limit[link]:
                region[link] = None
    work = len(region)
    while work <= budget:
        grow, frozen, visited = _attempt(region, on_link, load, cap, demand, limit, residual, count)
        if frozen is None:
            return None
        if grow:
            region.update(grow)
            work += visited + len(region)
            continue
        for flow, share, by, at in frozen:
            flow.share, flow.by, flow.at, flow.recorded = share, by, at, True
        return [entry[0] for entry in frozen]
    return None


def _attempt(region: dict, on_link, load, cap, demand, limit, residual, count):
    """One pass over ``region``: (links to add, [], flows seen) or ({}, [(flow, share, by, at) the region
    froze], flows seen); (None, None, flows seen) when a flow was left unfrozen."""
    grow: dict[int, None] = {}
    seen: dict[int, object] = {}
    external = []
    for link in region:
        for fid, flow in on_link[link].items():
            if fid in seen:
                continue
            seen[fid] = flow
            if flow.recorded:
                by = flow.by
                if by in region:
                    continue
                if demand[by] >= limit[by]:
                    external.append((flow.at, by, fid, flow))
                    continue
            for other in flow.links:  # no record that holds: all of it is the region's
                if other not in region and demand[other] >= limit[other]:
                    grow[other] = None
    if grow:
        return grow, [], len(seen)
    external.sort()
    heap = start_heap(region, load, cap, residual, count)
    push, pop = heapq.heappush, heapq.heappop
    done: dict[int, None] = {}  # flows frozen in this pass
    frozen = []
    dip, dip_at = -1, 0.0
    i, m = 0, len(external)
    while heap or i < m:
        if i < m and (not heap or external[i][0] < heap[0][0]
                      or (external[i][0] == heap[0][0] and external[i][1] < heap[0][1])):
            _, _, fid, flow = external[i]
            i += 1
            if fid in done:
                continue  # the region froze it first: its record changed, and grow has its ``by``
            done[fid] = None
            share, w = flow.share, flow.weight
            for other in flow.links:
                if other in region:
                    left = residual[other] - share
                    for _ in range(w - 1):
                        left -= share
                    residual[other] = left
                    count[other] -= w
            continue
        share, link = pop(heap)
        n = count[link]
        if n == 0:
            continue
        left = residual[link]
        if share != left / n:
            if left >= 0.0:
                now = (left if left > 0.0 else 0.0) / n
                if now < share:
                    dip, dip_at = link, share
                push(heap, (now, link))
            continue
        at = dip_at if link == dip else share
        for fid, flow in on_link[link].items():
            if fid in done:
                continue
            done[fid] = None
            frozen.append((flow, share, link, at))
            changed = not flow.recorded or flow.share != share or flow.by != link or flow.at != at
            w = flow.weight
            for other in flow.links:
                if other in region:
                    left = residual[other] - share
                    for _ in range(w - 1):
                        left -= share
                    residual[other] = left
                    count[other] -= w
                elif changed and demand[other] >= limit[other]:
                    grow[other] = None
    if len(done) != len(seen):
        # A flow nobody froze (its links dropped below zero residual): the fill would leave it unfrozen,
        # with no record; let the caller's fill do that. Rare enough to cost nothing.
        return None, None, len(seen)
    return grow, frozen, len(seen)
