"""The flow network's predicted drains, kept by time: one heap entry per instant, not per flow.

A prediction is (time, flow number, version, flow); it is current while the flow's version is the
one it was made with (a flow drains only by its current prediction and gets no newer one after), and
stale otherwise. The network needs two things of them: the earliest current prediction, least flow
number first, for its next wakeup; and every prediction up to a horizon, for the flows that drain then.

A heap of every prediction gives both, at a heap push and pop per prediction. But the flows of a
collective's phase start together and drain together, thousands at one instant: here the heap holds
each distinct time once, and each time its predictions in a list, with the one of least
(flow number, version) beside it. The earliest current one is that least one of the earliest time,
unless it is stale, when that time's list is searched (and cleaned) instead. The same answers as
the heap of every prediction, at a dict look-up and an append per prediction.
"""

from __future__ import annotations

from heapq import heappop, heappush

__all__ = ["DrainQueue"]


class DrainQueue:
    """Drain predictions by time (see the module docstring); flows have ``fid`` and ``version``."""

    __slots__ = ("_times", "_at", "_least")

    def __init__(self):
        self._times: list[float] = []  # heap of the distinct times
        self._at: dict[float, list[tuple]] = {}  # time -> its predictions, (flow number, version, flow)
        self._least: dict[float, tuple] = {}  # time -> its prediction of least (flow number, version)

    def push(self, when: float, flow) -> None:
        """Predict that ``flow`` (at its current version) drains at ``when``."""
        entry = (flow.fid, flow.version, flow)  # number and version tell entries apart: flows never compare
        entries = self._at.get(when)
        if entries is None:
            self._at[when] = [entry]
            self._least[when] = entry
            heappush(self._times, when)
        else:
            entries.append(entry)
            if entry < self._least[when]:
                self._least[when] = entry

    def first(self) -> tuple[float, object] | None:
        """(time, flow) of the earliest current prediction, of least flow number among those at that time;
        None if there is none. Times left with only stale predictions are dropped."""
        times, at, least = self._times, self._at, self._least
        while times:
            when = times[0]
            _, version, flow = least[when]
            if flow.version == version:
                return when, flow
            current = [entry for entry in at[when] if entry[2].version == entry[1]]
            if current:
                at[when] = current
                least[when] = min(current)
                return when, least[when][2]
            heappop(times)
            del at[when], least[when]
        return None

    def pop_until(self, horizon: float) -> list:
        """Remove every prediction at or before ``horizon``; the flows of the current ones (no order)."""
        times, at, least = self._times, self._at, self._least
        flows = []
        while times and times[0] <= horizon:
            when = heappop(times)
            del least[when]
            for _, version, flow in at.pop(when):
                if flow.version == version:
                    flows.append(flow)
        return flows
