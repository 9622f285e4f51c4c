"""Drains that change no rate: proving, without a fill, that re-filling a component would give every flow its rate.

NCCL's trees couple the depth all-reduces of a 2.5-D grid through leaf-spine links into components of
over a thousand flows, and most drains there free capacity that nobody can use: the re-fill gives every
flow the rate it had (summa25d [16,16,16]: about 4,970 of 5,200 large fills changed no rate). This
module decides that from the drained flows' links alone, exactly: the answer is yes only when the
fill (``fairness.fill``, lazy heap and all) would saturate the same links at the same shares, bit for bit.

The trace. A fill of a component records, per flow, ``share``, ``by`` (the link whose saturation
froze it) and ``at`` (where in the heap's order that happened, ``fairness.fill``), and every flow of
the component gets the fill's number as ``trace`` (0: none, e.g. a flow alone, never trusted). The
component's saturations are then its flows' (at, by) in sorted order. Every fill covers whole
components and components merge only when flows start (a fill), so the flows of one component
share one trace.

The proof. Drained flows leave their links (the *D-links*); no other link changes its flows, capacity
or tightness. Replay the fill on what is left: a link off D starts as before, and its residual and
count change only when a flow on it is frozen, so as long as D-links freeze nobody it saturates at
the same step with the same share and freezes the same flows (the drained flows are on D-links only).
Heap entries of D-links interleave with the others but touch nothing until one of them saturates,
and a heap's pops depend only on what is pushed, so the only question is whether some D-link would
saturate a flow still on it. For each D-link still holding flows:

- no flow on it may have been frozen by it (its share would change with the drained flows gone);
- if it is still tight (a loose link never saturates, ``fairness``), its heap entries are replayed:
  the first at capacity / load, popped after exactly the saturations whose (at, by) is below it,
  which take their shares from its residual one member at a time as the fill does; an entry that
  is then up to date would saturate (a fill is needed), and so would one renewed below itself (it
  comes to the top at once); one out of date is renewed at the link's share then, or dropped below
  zero residual, and once nobody on the link is unfrozen the link is done.

If every D-link passes, the new fill's saturations are the old ones without the drained flows, at
the same (at, by): no rate changes, and the trace still holds for the next drain (where the drain
split the component, each part filled alone saturates as in one fill of their union,
``fairness.components``). A trace that fails is re-filled as before (``FlowNetwork._refill``).
``tests/simulator/test_network_settled.py`` holds runs with this shortcut to the reference network.
"""

from __future__ import annotations

__all__ = ["unsettled"]


def unsettled(touched, on_link: list[dict], load: list[int], cap: list[float], demand: list[float],
              limit: list[float]) -> set[int]:
    """The traces of the flows on ``touched`` links (the drained flows' tight links that still hold
    flows) whose components a re-fill could change: 0 (untrusted), mixed traces on one link, and
    every trace some D-link of which fails the module docstring's test."""
    failed: set[int] = set()
    for link in touched:
        flows = on_link[link].values()
        traces = {flow.trace for flow in flows}
        if len(traces) != 1 or 0 in traces:
            failed |= traces
            continue
        (trace,) = traces
        if trace in failed:
            continue
        if not _holds(link, flows, load[link], cap[link], demand[link] >= limit[link]):
            failed.add(trace)
    return failed


def _holds(link: int, flows, n: int, c: float, tight: bool) -> bool:
    """Whether the D-link ``link`` saturates none of ``flows`` (its flows now) in the fill replayed."""
    keys = []
    for flow in flows:
        if flow.by == link:
            return False
        keys.append((flow.at, flow.by, flow.share, flow.weight))
    if not tight:
        return True
    keys.sort()
    left = c
    entry = c / n
    i, m = 0, len(keys)
    while True:
        while i < m and (keys[i][0] < entry or (keys[i][0] == entry and keys[i][1] < link)):
            _, _, share, w = keys[i]
            for _ in range(w):
                left -= share
            n -= w
            i += 1
        if n == 0:
            return True  # everyone frozen elsewhere: the entry pops as "saturated already"
        if entry == left / n:
            return False  # up to date: it would saturate
        if left < 0.0:
            return True  # dropped, as the fill drops it
        now = (left if left > 0.0 else 0.0) / n
        if now < entry:
            return False  # renewed below its entry: it saturates next
        entry = now
