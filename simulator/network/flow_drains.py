"""The flow network's drains: a wake-up at the next predicted drain, drained flows taken off their links.

At each wake-up every flow predicted to drain within ``_SAME_INSTANT`` (relative) of now drains
together, in flow order (a group where its last member's would: in order of the last members): it
leaves its links, its bytes join the links' counters member by member (``flow_groups``), and it
arrives one route latency later. The flows left on the links it shared are re-filled
(``rate_updates``), and the next wake-up is scheduled.

``FlowDrains`` holds these steps of ``simulator.network.flow_network.FlowNetwork``, which inherits them
and owns the state they work on (set in ``FlowNetwork.__init__``); a class of its own only so that the
state machine's parts read one at a time.
"""

from __future__ import annotations

import heapq
from operator import attrgetter

import simpy

from simulator.network.flow_groups import add_drained_bytes
from simulator.network.flow_records import _Flow
from simulator.network.rate_updates import RateUpdates
from simulator.simpy_internals import succeed_later

__all__ = ["FlowDrains"]

# Drains predicted within this relative distance of "now" are treated as simultaneous (one batch).
_SAME_INSTANT = 1e-12


class FlowDrains(RateUpdates):
    """The steps of ``FlowNetwork`` that drain flows and schedule arrivals (see the module docstring)."""

    # Set by ``FlowNetwork.__init__``, read and written here (with those ``RateUpdates`` names).
    _wakeups: list[float]
    _bytes_done: list[float]
    _busy_s: list[float]
    _busy_since: list[float]

    def _arrive_later(self, event: simpy.Event, value, delay: float) -> None:
        # A triggered event scheduled ``delay`` ahead: what simpy's Timeout does, without a second event.
        succeed_later(self.env, event, value, delay)

    def _schedule_wakeup(self) -> None:
        first = self._drains.first()
        if first is None:
            return
        when, flow = first
        if self._wakeups and self._wakeups[0] <= when:
            return
        heapq.heappush(self._wakeups, when)
        now = self.env.now
        # A prediction made this instant is scheduled with the very delay it was computed from, so a
        # lone flow drains at exactly start + S/B (now + (when - now) can differ from when by an ulp).
        delay = flow.left / flow.rate if flow.t_last == now else when - now
        wake = self.env.event()
        wake.callbacks.append(self._on_wakeup)
        self._arrive_later(wake, None, delay)

    def _on_wakeup(self, _event) -> None:
        heapq.heappop(self._wakeups)
        now = self.env.now
        horizon = now + _SAME_INSTANT * max(now, 1e-9)
        on_link, load = self._on_link, self._load
        drained: list[_Flow] = self._drains.pop_until(horizon)
        grouped = False
        for flow in drained:
            if flow.weight > 1:
                grouped = True
                break
        # Events go in flow order; a group's where its last member's would have: in order of the last members.
        if len(drained) > 1:
            drained.sort(key=_LAST if grouped else _FID)
        bytes_done, busy_s, busy_since = self._bytes_done, self._busy_s, self._busy_since
        env, timeline = self.env, self.timeline
        demand, limit = self._demand, self._limit
        touched: dict[int, None] = {}
        # Link byte counters add each drained flow's bytes in flow order, member by member (``flow_groups``).
        # Without groups that is this loop's order. With groups, a link left empty by a record that had
        # it alone saw no other drained record: its members' bytes add up right here; the links two
        # drained records shared, or that keep flows, are replayed in member order after the loop.
        replay: dict[int, None] = {}
        for flow in drained:
            fid, w, rate, nbytes = flow.fid, flow.weight, flow.bottleneck, flow.nbytes
            flow.left = 0.0
            for link in flow.links:
                flows = on_link[link]
                del flows[fid]
                load[link] -= w
                if flows:
                    # A link loose with this flow on it joined nothing: its other flows keep their rates.
                    if demand[link] >= limit[link]:
                        touched[link] = None
                    demand[link] -= rate
                    if grouped:
                        replay[link] = None
                    else:
                        bytes_done[link] += nbytes
                else:
                    busy_s[link] += now - busy_since[link]  # demand: set afresh by the next flow (``_flush``)
                    if w == 1:
                        if link not in replay:
                            bytes_done[link] += nbytes
                    elif link not in replay:
                        total = bytes_done[link]
                        for _ in range(w):
                            total += nbytes
                        bytes_done[link] = total
            if timeline is not None:
                self._log(flow, "drain")
            # It arrives one route latency later.
            if flow.phase is None:
                succeed_later(env, flow.event, flow.nbytes, flow.latency_s)
            else:
                flow.phase.arrive(now + flow.latency_s)
        if replay:
            add_drained_bytes(drained, bytes_done, replay)
        touched = [link for link in touched if on_link[link]]  # a later drain may have emptied a link
        if touched:
            changed = None
            if not self._reference:
                # The region fill re-fills the links the drain reaches (``region``): the drained flows'
                # links still tight, and every flow a link left loose had frozen (it has no record now).
                tight = [link for link in touched if demand[link] >= limit[link]]
                unknown = [flow for link in touched if demand[link] < limit[link]
                           for flow in on_link[link].values() if not flow.recorded or flow.by == link]
                changed = self._region(tight, unknown)
            if changed is not None:
                self._apply(changed)
            else:
                stamp = -self.fills - 1  # a mark no fill uses
                seeds: list[_Flow] = []
                for link in touched:
                    for flow in on_link[link].values():
                        if flow.seen != stamp:
                            flow.seen = stamp
                            seeds.append(flow)
                self._refill(seeds)
        self._schedule_wakeup()


_FID = attrgetter("fid")
_LAST = attrgetter("last")
