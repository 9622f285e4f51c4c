"""The flow network's rate updates: after a start or a drain, which flows to re-fill, and their new rates applied.

A batch of new flows first gives each flow alone on its tight links its bottleneck rate at once; the
others, and the flows a drain leaves behind, are re-filled over a *region* of their components
(``simulator.network.region``) or, past ``REGION_BUDGET``, over the whole components
(``simulator.network.fairness``), as the reference network (``group=False``) always does. A flow whose
rate changed has its bytes sent so far booked and a new drain time predicted (``DrainQueue``).

``RateUpdates`` holds these steps of ``simulator.network.flow_network.FlowNetwork``, which inherits them
and owns the state they work on (its per-link arrays and counters, set in ``FlowNetwork.__init__``);
a class of its own only so that the state machine's parts read one at a time. Each step keeps the
results of the reference network bit for bit (the module docstring of ``flow_network`` says how).
"""

from __future__ import annotations

import simpy

from simulator.network.drain_queue import DrainQueue
from simulator.network.fairness import component, components, fill
from simulator.network.flow_records import FlowEvent, _Flow
from simulator.network.region import refill_region

__all__ = ["REGION_BUDGET", "RateUpdates"]

# A region fill whose passes that grew it visited more links and flows than this gives way to a fill
# of the components (``region``): a region that keeps growing costs more than the fill it saves.
REGION_BUDGET = 8192


class RateUpdates:
    """The steps of ``FlowNetwork`` that re-fill rates after a change (see the module docstring)."""

    # Set by ``FlowNetwork.__init__``, read and written here.
    env: simpy.Environment
    _on_link: list[dict[int, _Flow]]
    _load: list[int]
    _mark: list[int]
    _residual: list[float]
    _count: list[int]
    _demand: list[float]
    _limit: list[float]
    _cap: list[float]
    _reference: bool
    _drains: DrainQueue
    timeline: list[FlowEvent] | None
    rate_changes: int
    fills: int
    region_fills: int

    def _log(self, flow: _Flow, what: str, rate: float | None = None) -> None:
        self.timeline.append(FlowEvent(self.env.now, flow.label, what, None if rate is None else rate / 1e9))

    def _refill_started(self, new: list[_Flow]) -> None:
        """Rates after ``new`` flows joined their links: a flow alone on its tight links runs at its
        bottleneck, the others are filled by a region fill (``region``), or their components when
        that grows too large."""
        load, demand, limit = self._load, self._demand, self._limit
        push, now = self._drains.push, self.env.now
        coupled: list[_Flow] = []
        changes = 0
        for flow in new:
            w = flow.weight
            for link in flow.links:
                if load[link] != w and demand[link] >= limit[link]:
                    coupled.append(flow)
                    break
            else:
                # ``_apply`` of its share to a flow that has sent nothing yet (rate 0, ``t_last`` now), here
                # at once. The other flows' fills below leave it be: its share stays its bottleneck.
                rate = flow.share = flow.rate = flow.bottleneck / w
                flow.recorded = False
                flow.version += 1
                changes += w
                push(now + flow.left / rate, flow)
        self.rate_changes += changes
        if coupled:
            changed = self._region((), coupled)
            if changed is None:
                self._refill(new)  # which finds the flows above alone again, at the rates they have
                return
            self._apply(changed)

    def _region(self, links, unknown) -> list[_Flow] | None:
        """``region.refill_region`` on this network's arrays: the flows it re-filled, or None."""
        changed = refill_region(links, unknown, self._on_link, self._load, self._cap, self._demand, self._limit,
                                self._residual, self._count, REGION_BUDGET)
        if changed is not None:
            self.fills += 1
            self.region_fills += 1
        return changed

    def _refill(self, seeds: list[_Flow]) -> None:
        """Max-min fill of the components that contain ``seeds``; reschedule flows whose rate changed."""
        if not seeds:
            return
        self.fills += 1
        stamp = self.fills
        load, on_link = self._load, self._on_link
        if self._reference:
            if len(seeds) == 1 and all(load[link] == 1 for link in seeds[0].links):
                # A flow alone on its route (the common case inside a server): its rate is the bottleneck.
                order = seeds
                seeds[0].share = seeds[0].bottleneck
            else:
                order, links = component(seeds, stamp, on_link, self._mark, self._demand, self._limit)
                fill(links, stamp, on_link, load, self._cap, self._residual, self._count)
        else:
            order, shared = components(seeds, stamp, on_link, load, self._mark, self._demand, self._limit)
            for flow in order:
                flow.share = flow.bottleneck / flow.weight
                flow.recorded = False
            for flows, links in shared:
                fill(links, stamp, on_link, load, self._cap, self._residual, self._count)
                for flow in flows:
                    flow.recorded = flow.frozen == stamp  # one never frozen has no record
                order += flows
        self._apply(order)

    def _apply(self, order: list[_Flow]) -> None:
        """Give each flow of ``order`` its ``share`` as its rate where that changed: bytes sent so far
        booked, a new drain time predicted."""
        now = self.env.now
        timeline, push = self.timeline, self._drains.push
        changes = 0
        for flow in order:
            rate = flow.share
            old = flow.rate
            if rate == old:
                continue
            if old:
                left = flow.left - old * (now - flow.t_last)
                flow.left = left if left > 0.0 else 0.0
            flow.t_last = now
            if timeline is not None:
                self._log(flow, "rate" if old else "start", rate)
            flow.rate = rate
            flow.version += 1
            changes += flow.weight
            push(now + flow.left / rate, flow)
        self.rate_changes += changes
