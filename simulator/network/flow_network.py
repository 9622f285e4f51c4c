"""Flow-level network on a simpy Environment: transfers share links by max-min fairness.

``FlowNetwork`` is one state machine (start, fill, drain, wake up) whose hot paths share its per-link
arrays and its flows' slots. This module holds its state and its starts; its steps live beside it as
classes it inherits, each on the state ``__init__`` sets here: the re-fill of rates after a change
(``rate_updates``), the drains and arrivals (``flow_drains``) and the reports (``flow_reports``). The
records it keeps (``flow_records``), the fill, the component search, the region fill, the groups and
the link table are modules of their own (``fairness``, ``region``, ``flow_groups``, ``routes``).

A transfer of S bytes from one node to another is one *flow* on its route (a tuple of directed edges).
While it is active, every flow has a rate; rates are the max-min fair allocation over the link
capacities (progressive filling, Bertsekas & Gallager, "Data Networks", 2nd ed., section 6.5.2),
recomputed only when a flow starts or drains. A flow's last byte leaves the source when its bytes are
drained; it arrives one route latency later (the sum of the route's ``latency_us``, added once per
transfer). So a lone flow of S bytes on a path of bottleneck bandwidth B arrives at exactly
``start + S / B + latency``, and the cost of a run grows with flows x rate changes, never with bytes.

Incremental fairness. A start or a drain changes rates only inside its *component*: the flows
connected to it through shared links (transitively). Only that component is re-filled; flows whose
rate does not change keep their predicted drain time untouched. Starts and drains that happen at the
same simulated instant are batched into one recomputation (a zero-delay simpy event), so a collective
that starts 4,096 flows at once costs one fill, not 4,096; each connected component of the flows
reached is filled on its own, and a flow alone on its links needs no fill at all. Links the flows on
them could not fill even at their routes' bottleneck rates (*loose* links) join nothing, exactly: they
never saturate (``fairness``), and a drain on one re-fills nobody. Inside a component, a change
re-fills only a *region*: the changed links, grown until the last fill's records of every other flow
(share, saturating link, place in the heap's order) are proven to be what a fill of the whole
component would give (``region``; past ``rate_updates.REGION_BUDGET`` links and flows visited the
components are filled instead, as the reference network always does), so a drain that frees capacity
nobody can use, or a start that slows three flows of 2,000, costs what it changes. The fill itself (weighted
progressive filling) lives in ``simulator.network.fairness``; links and cached routes in
``simulator.network.routes``.

Groups. ``transfer_all`` starts a batch of flows at once (a phase of a collective); flows of the batch
alike in source, destination, bytes and ``via`` run as one flow of weight w (``simulator.network.flow_groups``),
which ``simulator.network.fairness`` fills exactly as it would the w flows one by one: the same times and byte
counters, bit for bit, at a fraction of the cost (NCCL-like rings across servers cross each NVSwitch
hop k-1 times in k rails). ``transfer_phase`` starts such a batch and returns one event for all of it, which
simpy processes where the last of the flows' own events would have been (``simulator.network.phase_arrival``).
``group=False`` runs the reference algorithm (every flow alone, one fill per change, an event per flow);
``record=True`` implies it, so the timeline lists every flow in the reference order.

Determinism. Links are numbered in the graph's edge order, flows by a counter; components are walked
in insertion order (dicts, never sets of objects), the filling heap orders by (share, link number),
and drains that fall within 1e-12 (relative) of the same instant are processed together in flow
order. The same inputs give the same event list, bit for bit.

Example::

    >>> import networkx as nx, simpy
    >>> G = nx.DiGraph()
    >>> G.add_edge("a", "b", bandwidth_GBps=10.0, latency_us=1.0)
    >>> env = simpy.Environment(); net = FlowNetwork(env, G)
    >>> done = net.transfer("a", "b", 10**9)
    >>> env.run(); round(env.now, 9)
    0.100001
"""

from __future__ import annotations

import logging
import math

import networkx as nx
import simpy

from simulator.errors import InputError
from simulator.network.fairness import LOOSE_MARGIN
from simulator.network.drain_queue import DrainQueue
from simulator.network.flow_drains import FlowDrains
from simulator.network.flow_groups import same_flows
from simulator.network.flow_records import FlowEvent, LinkStats, _Flow
from simulator.network.flow_reports import FlowReports
from simulator.network.phase_arrival import PhaseArrival, all_arrived
from simulator.network.routes import HopRouter, LinkTable, Route
from simulator.network.topology_cache import TopologyCache

__all__ = ["FlowNetwork", "LinkStats", "FlowEvent", "Route", "HopRouter", "same_flows"]

log = logging.getLogger(__name__)


class FlowNetwork(FlowDrains, FlowReports):
    """Max-min fair flow-level network over a topology graph, driven by a simpy Environment.

    ``graph`` is a networkx DiGraph whose edges carry ``bandwidth_GBps`` (> 0, per direction, 1 GB =
    1e9 B) and ``latency_us`` (>= 0). ``router`` has ``path(src, dst) -> tuple of (u, v) edges``;
    default: ``routes.default_router`` (``topologies``' ECMP routes, searched or from a cluster's tables); a
    ``TopologyCache`` of ``graph`` shares its link table, routes and plan cache with other networks.
    ``record=True`` keeps ``timeline``, a list of ``FlowEvent`` (for tests and traces).
    ``group=False`` (implied by ``record``) runs the reference algorithm the faster default is held to:
    every flow of ``transfer_all`` alone, and one fill over all the components a change touches.
    """

    def __init__(self, env: simpy.Environment, graph: nx.DiGraph, router=None, record: bool = False,
                 group: bool = True):
        self.env = env
        self.graph = graph
        shared = router if isinstance(router, TopologyCache) else None
        if shared is not None and shared.graph is not graph:
            raise ValueError("FlowNetwork: the TopologyCache was built for another graph")
        self.links = shared.links if shared is not None else LinkTable(graph, router)
        """The graph's links by number and the routes between nodes (``simulator.network.routes``)."""
        self.router = self.links.router
        self.route = self.links.route
        """``route(src, dst, via=None)``: the cached ``Route`` from ``src`` to ``dst`` (``LinkTable.route``;
        ``via``: NCCL's PXN). The table's own method, not a wrapper: plans look up millions of routes."""
        self._edges, self._cap = self.links.edges, self.links.cap
        n_links = len(self._edges)
        self._on_link: list[dict[int, _Flow]] = [{} for _ in range(n_links)]
        self._load = [0] * n_links  # members (summed weights) of the flows on a link
        self._mark = [0] * n_links  # fill number that last visited a link (component search)
        self._residual = [0.0] * n_links  # scratch for the fill
        self._count = [0] * n_links
        self._demand = [0.0] * n_links  # summed bottleneck rates of the records on a link (B/s)
        self._reference = not group or record
        self.leaders_only = not self._reference
        """Whether ``transfer_all`` and ``transfer_phase`` read only the first flow of each of their ``groups``
        (the others are that flow's members); the reference network reads every flow."""
        # Below its limit a link is loose and joins no flows into a component (``fairness``); the
        # reference network crosses every link.
        self._limit = [-math.inf if self._reference else c * (1.0 - LOOSE_MARGIN) for c in self._cap]
        self._bytes_done = [0.0] * n_links
        self._busy_s = [0.0] * n_links
        self._busy_since = [0.0] * n_links
        self._pending: list[_Flow] = []  # started this instant, not yet on links
        self._flush_scheduled = False
        self._drains = DrainQueue()  # predicted drains by time
        self._wakeups: list[float] = []  # heap of times with a scheduled drain check
        self.flow_count = 0
        """Transfers started (including zero-time ones; a group counts its members)."""
        self.flow_records = 0
        """Flows put on links (a group of identical flows is one record): what a run's cost follows."""
        self.rate_changes = 0
        """Rate assignments made by the fairness fills (each start counts one, per member)."""
        self.fills = 0
        """Fairness recomputations run (one per batch of same-instant starts/drains), region fills included."""
        self.region_fills = 0
        """Changes re-filled over a region of their components (``simulator.network.region``)."""
        self.timeline: list[FlowEvent] | None = [] if record else None
        self.cache: dict = shared.plans if shared is not None else {}
        """Cache for the layers above (collective plans): entries fixed by the graph and their keys, so
        networks on one ``TopologyCache`` share it."""

    # ---- the public operations --------------------------------------------------------------------

    def transfer(self, src, dst, nbytes: float, tag=None, via=None) -> simpy.Event:
        """Start sending ``nbytes`` from ``src`` to ``dst``; the event succeeds when the last byte arrives.

        ``src == dst`` takes zero time; ``nbytes == 0`` between distinct nodes takes the route latency.
        ``via``: route through that node (see ``route``). The event's value is ``nbytes``.
        """
        if not nbytes >= 0:
            raise InputError(f"transfer {src}->{dst}: nbytes must be >= 0, got {nbytes!r}")
        fid = self.flow_count
        self.flow_count += 1
        return self._start(src, dst, nbytes, tag, via, (fid,))

    def transfer_all(self, flows, groups=None) -> list[simpy.Event]:
        """Start ``flows``, a sequence of (src, dst, nbytes, via), as ``transfer`` would one after another.

        Flows alike in all four run as one weighted flow (see the module docstring); ``groups`` is
        ``same_flows(flows)``, for a caller that starts the same batch often. Returns one event per
        group, in order of first appearance: it succeeds when the group's last byte has arrived.
        """
        base = self.flow_count
        if self._reference:
            return [self.transfer(src, dst, nbytes, None, via) for src, dst, nbytes, via in flows]
        if groups is None:
            groups = same_flows(flows)
        self.flow_count = base + len(flows)
        events = []
        for members in groups:
            src, dst, nbytes, via = flows[members[0]]
            events.append(self._start(src, dst, nbytes, None, via, tuple(base + i for i in members)))
        return events

    def transfer_phase(self, flows, groups=None) -> simpy.Event:
        """Start ``flows`` as ``transfer_all`` does; the event returned succeeds once they have all arrived.

        It is processed exactly where ``phase_arrival.all_arrived`` of ``transfer_all``'s events would be
        (same time, same place among ties, same count of scheduled events), but the flows schedule no
        events of their own (``phase_arrival.PhaseArrival``). The reference network runs ``all_arrived``.
        """
        if self._reference:
            return all_arrived(self.env, self.transfer_all(flows, groups))
        if groups is None:
            groups = same_flows(flows)
        base = self.flow_count
        self.flow_count = base + len(flows)
        env = self.env
        now = env.now
        phase = PhaseArrival(env, len(groups))
        routes, pending = self.links.routes, self._pending
        records = len(pending)
        # ``_start`` for each group, in one loop: the same checks, numbers and flush, in the same order.
        try:
            for members in groups:
                src, dst, nbytes, via = flows[members[0]]
                if not nbytes >= 0:
                    raise InputError(f"transfer {src}->{dst}: nbytes must be >= 0, got {nbytes!r}")
                if src == dst:
                    phase.arrive(now)  # where ``Event.succeed`` would have scheduled its event: now, no delay
                    continue
                route = routes.get((src, dst) if via is None else (src, via, dst)) or self.links.route(src, dst, via)
                if nbytes == 0:
                    phase.arrive(now + route.latency_s)
                    continue
                fid = base + members[0]
                fids = (fid,) if len(members) == 1 else tuple(map(base.__add__, members))
                pending.append(_Flow(fid, route, nbytes, None, fid, fids, phase, now))
                if not self._flush_scheduled:
                    self._schedule_flush()
        finally:  # counted as ``_start`` counts them, also where a bad flow stops the batch
            self.flow_records += len(pending) - records
        return phase.done

    # ---- internals --------------------------------------------------------------------------------

    def _start(self, src, dst, nbytes, tag, via, members: tuple) -> simpy.Event:
        """Start one flow (a group: ``members``); the event that succeeds on its arrival."""
        if not nbytes >= 0:
            raise InputError(f"transfer {src}->{dst}: nbytes must be >= 0, got {nbytes!r}")
        env = self.env
        event = env.event()
        if src == dst:
            event.succeed(nbytes)
            return event
        route = self.links.route(src, dst, via)
        fid = members[0]
        label = fid if tag is None else tag
        if nbytes == 0:
            self._arrive_later(event, nbytes, route.latency_s)
            return event
        self._pending.append(_Flow(fid, route, nbytes, event, label, members, None, env.now))
        self.flow_records += 1
        if not self._flush_scheduled:
            self._schedule_flush()
        return event

    def _schedule_flush(self) -> None:
        """Put this instant's new flows on their links once they have all started: a zero-delay event."""
        self._flush_scheduled = True
        flush = self.env.event()
        flush.callbacks.append(self._flush)
        flush.succeed()

    def _flush(self, _event) -> None:
        """Put this instant's new flows on their links and re-fill their components."""
        self._flush_scheduled = False
        new, self._pending = self._pending, []
        now = self.env.now
        on_link, load, busy_since = self._on_link, self._load, self._busy_since
        demand = self._demand
        for flow in new:
            fid, w, rate = flow.fid, flow.weight, flow.bottleneck
            for link in flow.links:
                flows = on_link[link]
                if flows:
                    demand[link] += rate
                else:
                    # An empty link's demand is stale (a drain that empties it leaves it; nothing reads it
                    # until a flow is on it again): set, as 0.0 + rate would.
                    busy_since[link] = now
                    demand[link] = rate
                flows[fid] = flow
                load[link] += w
        if self.timeline is not None:
            for flow in new:
                flow.event.callbacks.append(lambda _e, f=flow: self._log(f, "arrive"))
        if self._reference:
            self._refill(new)
        else:
            self._refill_started(new)
        self._schedule_wakeup()

