"""Flow-level network on a simpy Environment: transfers share links by max-min fairness.

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
that starts 4,096 flows at once costs one fill, not 4,096.

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

import heapq
import logging
from dataclasses import dataclass
from typing import NamedTuple

import networkx as nx
import simpy

from simulator.errors import InputError

__all__ = ["FlowNetwork", "LinkStats", "FlowEvent", "Route", "HopRouter"]

log = logging.getLogger(__name__)

# Drains predicted within this relative distance of "now" are treated as simultaneous (one batch).
_SAME_INSTANT = 1e-12


@dataclass(frozen=True)
class LinkStats:
    """Counters of one directed link over a run."""

    bytes: float
    """Bytes carried (drained flows in full, active flows as far as they got)."""
    busy_s: float
    """Seconds during which at least one flow was active on the link."""


class FlowEvent(NamedTuple):
    """One entry of ``FlowNetwork.timeline`` (kept only with ``record=True``)."""

    time_s: float
    flow: object
    """The transfer's tag, or its flow number when it has no tag."""
    event: str
    """"start", "rate" (a new rate while active), "drain" (last byte sent) or "arrive" (last byte in)."""
    rate_GBps: float | None
    """The new rate for "start" and "rate"; None otherwise."""


@dataclass(frozen=True)
class Route:
    """A cached route: link numbers, total latency and bottleneck bandwidth."""

    links: tuple[int, ...]
    """Numbers of the directed links crossed, in order."""
    latency_s: float
    """Sum of the links' latency_us, in seconds."""
    bandwidth_Bps: float
    """Smallest link capacity on the route, bytes per second."""


class HopRouter:
    """Fallback router: a fewest-hops path by networkx BFS (deterministic in adjacency order), cached."""

    def __init__(self, graph: nx.DiGraph):
        self.graph = graph
        self._cache: dict[tuple, tuple] = {}

    def path(self, src, dst) -> tuple:
        """The directed edges of a fewest-hops route from ``src`` to ``dst``."""
        key = (src, dst)
        route = self._cache.get(key)
        if route is None:
            try:
                nodes = nx.shortest_path(self.graph, src, dst)
            except (nx.NetworkXNoPath, nx.NodeNotFound) as error:
                raise InputError(f"no route from {src!r} to {dst!r}: {error}") from None
            route = tuple(zip(nodes[:-1], nodes[1:]))
            self._cache[key] = route
        return route


def _default_router(graph: nx.DiGraph):
    """The topology package's ECMP router when it is installed, else ``HopRouter``."""
    try:
        from topologies.routing import Router
    except ImportError:  # the topology part not built: keep the network usable on its own
        return HopRouter(graph)
    return Router(graph)


class _Flow:
    """Mutable state of one active transfer (slots: this is the hot path)."""

    __slots__ = ("fid", "links", "bottleneck", "nbytes", "left", "rate", "t_last", "version", "latency_s",
                 "event", "label", "share", "seen", "frozen")

    def __init__(self, fid, route, nbytes, event, label):
        self.fid = fid
        self.links = route.links
        self.bottleneck = route.bandwidth_Bps
        latency_s = route.latency_s
        self.nbytes = nbytes
        self.left = float(nbytes)  # bytes still to send as of t_last
        self.rate = 0.0
        self.t_last = 0.0
        self.version = 0
        self.latency_s = latency_s
        self.event = event
        self.label = label
        self.share = 0.0  # rate assigned by the fill in progress
        self.seen = 0  # stamp of the last component search that reached this flow
        self.frozen = 0  # stamp of the last fill that froze this flow


class FlowNetwork:
    """Max-min fair flow-level network over a topology graph, driven by a simpy Environment.

    ``graph`` is a networkx DiGraph whose edges carry ``bandwidth_GBps`` (> 0, per direction, 1 GB =
    1e9 B) and ``latency_us`` (>= 0). ``router`` has ``path(src, dst) -> tuple of (u, v) edges``;
    default: ``topologies.routing.Router`` (or a fewest-hops BFS where that is not installed).
    ``record=True`` keeps ``timeline``, a list of ``FlowEvent`` (for tests and traces).
    """

    def __init__(self, env: simpy.Environment, graph: nx.DiGraph, router=None, record: bool = False):
        self.env = env
        self.graph = graph
        self.router = router if router is not None else _default_router(graph)
        self._link_id: dict[tuple, int] = {}
        self._edges: list[tuple] = []
        self._cap: list[float] = []
        self._lat: list[float] = []
        for u, v, data in graph.edges(data=True):
            bw, lat = data.get("bandwidth_GBps"), data.get("latency_us", 0.0)
            if not isinstance(bw, (int, float)) or not bw > 0:
                raise InputError(f"edge {u}->{v}: bandwidth_GBps must be a number > 0, got {bw!r}")
            if not isinstance(lat, (int, float)) or not lat >= 0:
                raise InputError(f"edge {u}->{v}: latency_us must be a number >= 0, got {lat!r}")
            self._link_id[(u, v)] = len(self._edges)
            self._edges.append((u, v))
            self._cap.append(float(bw) * 1e9)
            self._lat.append(float(lat) * 1e-6)
        n_links = len(self._edges)
        self._on_link: list[dict[int, _Flow]] = [{} for _ in range(n_links)]
        self._mark = [0] * n_links  # fill number that last visited a link (component search)
        self._residual = [0.0] * n_links  # scratch for the fill
        self._count = [0] * n_links
        self._bytes_done = [0.0] * n_links
        self._busy_s = [0.0] * n_links
        self._busy_since = [0.0] * n_links
        self._routes: dict[tuple, Route] = {}
        self._active: dict[int, _Flow] = {}
        self._pending: list[_Flow] = []  # started this instant, not yet on links
        self._flush_scheduled = False
        self._drains: list[tuple] = []  # heap of (drain time, flow number, version)
        self._wakeups: list[float] = []  # heap of times with a scheduled drain check
        self.flow_count = 0
        """Transfers started (including zero-time ones)."""
        self.rate_changes = 0
        """Rate assignments made by the fairness fills (each start counts one)."""
        self.fills = 0
        """Fairness recomputations run (one per batch of same-instant starts/drains)."""
        self.timeline: list[FlowEvent] | None = [] if record else None
        self.cache: dict = {}
        """Free-form cache for the layers above (collective plans), cleared with the network."""

    # ---- routes -----------------------------------------------------------------------------------

    def route(self, src, dst, via=None) -> Route:
        """The cached ``Route`` from ``src`` to ``dst`` (by the router on first use); with ``via``, the
        route to ``via`` followed by the route on from it (how NCCL's PXN reaches another NIC rail)."""
        key = (src, dst) if via is None else (src, via, dst)
        route = self._routes.get(key)
        if route is None:
            if via is not None and via not in (src, dst):
                first, second = self.route(src, via), self.route(via, dst)
                ids = first.links + second.links
            else:
                ids = []
                for edge in self.router.path(src, dst):
                    link = self._link_id.get(tuple(edge))
                    if link is None:
                        raise InputError(f"route {src}->{dst} uses {edge!r}, which is not an edge of the graph")
                    ids.append(link)
                if not ids:
                    raise InputError(f"no route from {src!r} to {dst!r}")
            route = Route(tuple(ids), sum(self._lat[i] for i in ids), min(self._cap[i] for i in ids))
            self._routes[key] = route
        return route

    # ---- the public operations --------------------------------------------------------------------

    def transfer(self, src, dst, nbytes: float, tag=None, via=None) -> simpy.Event:
        """Start sending ``nbytes`` from ``src`` to ``dst``; the event succeeds when the last byte arrives.

        ``src == dst`` takes zero time; ``nbytes == 0`` between distinct nodes takes the route latency.
        ``via``: route through that node (see ``route``). The event's value is ``nbytes``.
        """
        if not nbytes >= 0:
            raise InputError(f"transfer {src}->{dst}: nbytes must be >= 0, got {nbytes!r}")
        env = self.env
        event = env.event()
        fid = self.flow_count
        self.flow_count += 1
        if src == dst:
            event.succeed(nbytes)
            return event
        route = self.route(src, dst, via)
        label = fid if tag is None else tag
        if nbytes == 0:
            self._arrive_later(event, nbytes, route.latency_s)
            return event
        flow = _Flow(fid, route, nbytes, event, label)
        flow.t_last = env.now
        self._pending.append(flow)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            flush = env.event()
            flush.callbacks.append(self._flush)
            flush.succeed()
        return event

    def link_stats(self) -> dict[tuple, LinkStats]:
        """Bytes carried and busy time of every link that carried anything, keyed by (u, v)."""
        now = self.env.now
        carried = list(self._bytes_done)
        for flow in self._active.values():
            sent = flow.nbytes - (flow.left - flow.rate * (now - flow.t_last))
            for link in flow.links:
                carried[link] += sent
        stats = {}
        for link, edge in enumerate(self._edges):
            busy = self._busy_s[link] + (now - self._busy_since[link] if self._on_link[link] else 0.0)
            if carried[link] > 0 or busy > 0:
                stats[edge] = LinkStats(carried[link], busy)
        return stats

    def link_utilisation(self) -> dict[tuple, float]:
        """Fraction of capacity in use right now on every link that carries an active flow, by (u, v)."""
        used: dict[int, float] = {}
        for flow in self._active.values():
            for link in flow.links:
                used[link] = used.get(link, 0.0) + flow.rate
        return {self._edges[link]: rate / self._cap[link] for link, rate in sorted(used.items())}

    @property
    def active_flows(self) -> int:
        """Flows currently sending bytes."""
        return len(self._active) + len(self._pending)

    # ---- internals --------------------------------------------------------------------------------

    def _arrive_later(self, event: simpy.Event, value, delay: float) -> None:
        # A triggered event scheduled ``delay`` ahead: what simpy's Timeout does, without a second event.
        event._ok = True
        event._value = value
        self.env.schedule(event, delay=delay)

    def _log(self, flow: _Flow, what: str, rate: float | None = None) -> None:
        self.timeline.append(FlowEvent(self.env.now, flow.label, what, None if rate is None else rate / 1e9))

    def _flush(self, _event) -> None:
        """Put this instant's new flows on their links and re-fill their components."""
        self._flush_scheduled = False
        new, self._pending = self._pending, []
        now = self.env.now
        on_link, busy_since, active = self._on_link, self._busy_since, self._active
        for flow in new:
            fid = flow.fid
            active[fid] = flow
            for link in flow.links:
                flows = on_link[link]
                if not flows:
                    busy_since[link] = now
                flows[fid] = flow
            if self.timeline is not None:
                flow.event.callbacks.append(lambda _e, f=flow: self._log(f, "arrive"))
        self._refill(new)
        self._schedule_wakeup()

    def _refill(self, seeds: list[_Flow]) -> None:
        """Max-min fill of the components that contain ``seeds``; reschedule flows whose rate changed."""
        if not seeds:
            return
        self.fills += 1
        stamp = self.fills
        on_link, mark = self._on_link, self._mark
        if len(seeds) == 1 and all(len(on_link[link]) == 1 for link in seeds[0].links):
            # A flow alone on its route (the common case inside a server): its rate is the bottleneck.
            order = seeds
            seeds[0].share = seeds[0].bottleneck
        else:
            # Components: breadth-first over flows and the links they share, in insertion order.
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
            self._fill(links, stamp)
        now = self.env.now
        drains, timeline = self._drains, self.timeline
        push = heapq.heappush
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
            changes += 1
            push(drains, (now + flow.left / rate, flow.fid, flow.version))
        self.rate_changes += changes

    def _fill(self, links: list[int], stamp: int) -> None:
        """Progressive filling over ``links`` (a closed component): repeatedly saturate the link with the
        smallest fair share and freeze its flows at that share (``flow.share``)."""
        on_link, residual, count, cap = self._on_link, self._residual, self._count, self._cap
        heap = []
        for link in links:
            residual[link] = c = cap[link]
            n = count[link] = len(on_link[link])
            heap.append((c / n, link))
        heapq.heapify(heap)
        push, pop = heapq.heappush, heapq.heappop
        while heap:
            share, link = pop(heap)
            n = count[link]
            if n == 0 or share != residual[link] / n:
                continue  # saturated already, or a stale entry (shares only grow)
            for flow in on_link[link].values():
                if flow.frozen == stamp:
                    continue
                flow.frozen = stamp
                flow.share = share
                for other in flow.links:
                    left = residual[other] - share
                    residual[other] = left
                    n = count[other] - 1
                    count[other] = n
                    if n > 0 and other != link:
                        push(heap, ((left if left > 0.0 else 0.0) / n, other))

    def _schedule_wakeup(self) -> None:
        drains, active = self._drains, self._active
        while drains:
            _, fid, version = drains[0]
            flow = active.get(fid)
            if flow is not None and flow.version == version:
                break
            heapq.heappop(drains)  # stale prediction
        if not drains:
            return
        when = drains[0][0]
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
        drains, active, on_link = self._drains, self._active, self._on_link
        pop = heapq.heappop
        drained: list[_Flow] = []
        while drains and drains[0][0] <= horizon:
            _, fid, version = pop(drains)
            flow = active.get(fid)
            if flow is not None and flow.version == version:
                drained.append(flow)
        if len(drained) > 1:
            drained.sort(key=_fid)
        bytes_done, busy_s, busy_since = self._bytes_done, self._busy_s, self._busy_since
        schedule, timeline = self.env.schedule, self.timeline
        touched: dict[int, None] = {}
        for flow in drained:
            fid, nbytes = flow.fid, flow.nbytes
            del active[fid]
            flow.left = 0.0
            for link in flow.links:
                flows = on_link[link]
                del flows[fid]
                bytes_done[link] += nbytes
                if flows:
                    touched[link] = None
                else:
                    busy_s[link] += now - busy_since[link]
            if timeline is not None:
                self._log(flow, "drain")
            event = flow.event  # succeeds one route latency later (what simpy's Timeout does)
            event._ok = True
            event._value = nbytes
            schedule(event, delay=flow.latency_s)
        if touched:
            stamp = -self.fills - 1  # a mark no fill uses
            seeds: list[_Flow] = []
            for link in touched:
                for flow in on_link[link].values():
                    if flow.seen != stamp:
                        flow.seen = stamp
                        seeds.append(flow)
            self._refill(seeds)
        self._schedule_wakeup()


def _fid(flow: _Flow) -> int:
    return flow.fid
