"""A batch of flows' joint arrival: one simpy event, in the place of the last of the per-flow events.

A phase of a collective starts its flows together (``FlowNetwork.transfer_phase``) and goes on when the
last of them has arrived. The reference form, ``all_arrived``, gives every flow (every group of
identical flows) an event scheduled at its arrival, and a callback that counts it in; the phase goes
on from the callback of the event simpy processes last. simpy processes events in (time, priority,
insertion number) order, and these are all NORMAL priority: a NORMAL event is scheduled at now or
later with a larger number than any taken before, so it never sorts before one processed already, and
the event processed last is the one of largest (arrival time, number).

``PhaseArrival`` keeps only that one. Each arrival takes its number from simpy's counter at the point
its event would have been scheduled (``simpy_internals.insertion_counter``), so every other event
keeps its number and the run its event count; the largest (time, number) is remembered, and once the
last flow has drained (every number taken), one event goes into that place
(``simpy_internals.succeed_in_slot``); processing it succeeds ``done`` as the counting callback did.
That place is still ahead: it is either the number just taken, or an arrival later than now. The
same events run in the same order, with one event per phase instead of one per flow.
"""

from __future__ import annotations

import math

import simpy

from simulator.simpy_internals import insertion_counter, succeed_in_slot

__all__ = ["PhaseArrival", "all_arrived"]


class PhaseArrival:
    """The arrivals of ``records`` transfers (events of the per-flow form); ``done`` succeeds after the last.

    ``arrive(when)`` is called where the per-flow form would have scheduled a transfer's event, with the
    time ``Environment.schedule`` would have computed for it (``env.now + delay``).
    """

    __slots__ = ("env", "done", "left", "when", "eid", "_numbers")

    def __init__(self, env: simpy.Environment, records: int):
        self.env = env
        self.done = env.event()
        """Succeeds (value None) where ``all_arrived``'s event would."""
        self.left = records
        self.when = -math.inf  # (time, number) of the arrival processed last so far
        self.eid = -1
        self._numbers = insertion_counter(env)
        if not records:
            self.done.succeed()

    def arrive(self, when) -> None:
        """One transfer arrives at ``when``: take its event's number; after the last, schedule the one event."""
        eid = next(self._numbers)
        if when >= self.when:  # a tie in time goes to the larger number, taken now
            self.when = when
            self.eid = eid
        self.left -= 1
        if not self.left:
            env = self.env
            last = env.event()
            last.callbacks.append(self._all_in)
            succeed_in_slot(env, last, None, self.when, self.eid)

    def _all_in(self, _event) -> None:
        self.done.succeed()


def all_arrived(env: simpy.Environment, events: list) -> simpy.Event:
    """An event that succeeds once all ``events`` have been processed: ``env.all_of`` without its value
    (which nothing reads), for events that cannot fail; it is scheduled at the very point all_of's is.
    The per-flow form ``PhaseArrival`` is held to (the reference network runs it)."""
    done = env.event()
    left = len(events)
    if not left:
        return done.succeed()

    def arrived(_event) -> None:
        nonlocal left
        left -= 1
        if not left:
            done.succeed()

    for event in events:
        if event.processed:
            arrived(event)
        else:
            event.callbacks.append(arrived)
    return done
