"""What the flow network reports mid-run or after: link counters, link utilisation, the flows active now.

Bookkeeping only where it is read: the network keeps no dict of its active flows as they start and
drain (a store and a delete per record on the hot path, millions in a large run); these reports
gather them from the links when asked, in start order.

``FlowReports`` holds these reports of ``simulator.network.flow_network.FlowNetwork``, which inherits
them and owns the state they read (set in ``FlowNetwork.__init__``); they change nothing.
"""

from __future__ import annotations

import simpy

from simulator.network.flow_groups import by_member
from simulator.network.flow_records import LinkStats, _Flow

__all__ = ["FlowReports"]


class FlowReports:
    """The reports of ``FlowNetwork`` (see the module docstring)."""

    # Set by ``FlowNetwork.__init__``, read here.
    env: simpy.Environment
    _edges: list[tuple]
    _cap: list[float]
    _on_link: list[dict[int, _Flow]]
    _bytes_done: list[float]
    _busy_s: list[float]
    _busy_since: list[float]
    _pending: list[_Flow]

    def link_stats(self) -> dict[tuple, LinkStats]:
        """Bytes carried and busy time of every link that carried anything, keyed by (u, v)."""
        now = self.env.now
        carried = list(self._bytes_done)
        for flow in by_member(self._active.values()):
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
        for flow in by_member(self._active.values()):
            for link in flow.links:
                used[link] = used.get(link, 0.0) + flow.rate
        return {self._edges[link]: rate / self._cap[link] for link, rate in sorted(used.items())}

    @property
    def _active(self) -> dict[int, _Flow]:
        """The flows sending bytes now (put on their links, not drained), by flow number in start order.

        Gathered from the links when asked (every such flow is on the links of its route, a route between
        distinct nodes has at least one): keeping a dict of them as they start and drain cost a store and
        a delete per record on the hot path, and only reports read it."""
        flows: dict[int, _Flow] = {}
        for on in self._on_link:
            flows.update(on)
        return dict(sorted(flows.items()))

    @property
    def active_flows(self) -> int:
        """Flows currently sending bytes (a group counts its members)."""
        return sum(f.weight for f in self._active.values()) + sum(f.weight for f in self._pending)
