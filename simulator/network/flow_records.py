"""The flow network's records: a link's counters, a timeline entry, and one active transfer's state.

``LinkStats`` and ``FlowEvent`` are what ``FlowNetwork`` reports (``link_stats``, ``timeline``);
``_Flow`` is its mutable per-transfer state, with slots, since millions are made in a large run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["LinkStats", "FlowEvent"]


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


class _Flow:
    """Mutable state of one active transfer (slots: this is the hot path)."""

    __slots__ = ("fid", "links", "bottleneck", "nbytes", "left", "rate", "t_last", "version", "latency_s",
                 "event", "phase", "label", "share", "seen", "frozen", "weight", "members", "last", "by", "at",
                 "recorded")

    def __init__(self, fid, route, nbytes, event, label, members, phase, t_last):
        self.fid = fid
        self.members = members  # flow numbers this record stands for (fid first); nbytes, left, rate per member
        self.weight = len(members)
        self.last = members[-1]
        self.links = route.links
        self.bottleneck = route.bandwidth_Bps
        latency_s = route.latency_s
        self.nbytes = nbytes
        self.left = float(nbytes)  # bytes still to send as of t_last
        self.rate = 0.0
        self.t_last = t_last
        self.version = 0
        self.latency_s = latency_s
        self.event = event  # succeeds on arrival; None for a flow of a phase, which reports to ``phase`` instead
        self.phase = phase
        self.label = label
        self.share = 0.0  # rate assigned by the fill in progress
        self.seen = 0  # stamp of the last component search that reached this flow
        self.frozen = 0  # stamp of the last fill that froze this flow
        self.by = -1  # link whose saturation froze it in that fill, and the heap key it was popped at
        self.at = 0.0
        self.recorded = False  # whether share, by and at are the record of a fill of its component (``region``)
