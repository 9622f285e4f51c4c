"""The one place tpsim touches simpy's private attributes; each touch is for speed or a count simpy keeps.

simpy 4 keeps an event's outcome in ``Event._ok`` and ``Event._value`` and numbers scheduled events with
``Environment._eid``, an ``itertools.count`` that breaks ties in its heap ``Environment._queue`` of
(time, priority, counter, event). Its public API has no way to schedule an event that is already
triggered some delay ahead, none to take a number without scheduling, and no event count.
pyproject.toml pins simpy below its next major version for these, and tests/simulator/test_engine.py
holds every helper to simpy's own behaviour (event order included), so a simpy that changes them fails
there instead of silently changing timelines.
"""

from __future__ import annotations

from heapq import heappush
from itertools import count

import simpy
from simpy.events import NORMAL

__all__ = ["succeed_later", "events_scheduled", "insertion_counter", "succeed_in_slot"]


def succeed_later(env: simpy.Environment, event: simpy.Event, value, delay: float) -> None:
    """Trigger ``event`` with ``value``, processed ``delay`` from now: what ``simpy.Timeout.__init__`` does
    (``_ok``, ``_value``, then ``Environment.schedule`` at NORMAL priority), to an event that exists already.

    Why: the flow network hands out a flow's event when the flow starts, long before it knows when the
    flow drains. ``Event.succeed`` takes no delay, and a Timeout that succeeds the event from a callback
    is one more event per flow, processed a queue trip later (another insertion counter, so another
    order among ties).
    """
    event._ok = True
    event._value = value
    env.schedule(event, delay=delay)


def insertion_counter(env: simpy.Environment) -> count:
    """``env``'s insertion counter (``Environment._eid``): ``next`` of it takes the number the next
    ``Environment.schedule`` call would have given its event, as that call would.

    Why: an event the flow network no longer creates (a flow's arrival, ``succeed_in_slot``) must still
    use up its number, so that every later event gets the number, hence the order among ties, and the
    run the ``events_scheduled`` count, it had when the event existed.
    """
    return env._eid


def succeed_in_slot(env: simpy.Environment, event: simpy.Event, value, when, eid: int) -> None:
    """Trigger ``event`` with ``value``, processed at ``when`` in the place of the NORMAL-priority event that
    ``insertion_counter`` numbered ``eid``: ``succeed_later`` with a delay and a number taken earlier.

    Why: a collective's phase waits for the last of its flows' arrivals; the flow network, which
    would have scheduled one event per flow, schedules only the one processed last, in its very place
    (time, NORMAL, number), and takes the others' numbers without scheduling them (``insertion_counter``).
    ``when`` is ``env.now + delay`` as ``Environment.schedule`` would have computed it when the number
    was taken, and the event in that place must not have been processed yet (``when`` >= now, and at
    ``now`` only a number taken after the event now being processed).
    """
    event._ok = True
    event._value = value
    heappush(env._queue, (when, NORMAL, eid, event))


def events_scheduled(env: simpy.Environment) -> int | None:
    """How many events ``env`` has scheduled (``Environment._eid``), or None where simpy keeps no such counter.

    Why: ``tpsim simulate --json`` reports it in ``stats.events``; counting ourselves would wrap every
    schedule call. ``repr`` reads an ``itertools.count`` without advancing it.
    """
    text = repr(getattr(env, "_eid", None))
    if text.startswith("count(") and text.endswith(")"):
        return int(text[6:-1])
    return None
