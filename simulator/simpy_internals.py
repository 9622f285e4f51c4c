"""The one place tpsim touches simpy's private attributes; each touch is for speed or a count simpy keeps.

simpy 4 keeps an event's outcome in ``Event._ok`` and ``Event._value`` and numbers scheduled events with
``Environment._eid``, an ``itertools.count`` that breaks ties in its (time, priority, counter) queue.
Its public API has no way to schedule an event that is already triggered some delay ahead, and no
event count. pyproject.toml pins simpy below its next major version for these, and
tests/simulator/test_engine.py holds both helpers to simpy's own behaviour (event order included), so
a simpy that changes them fails there instead of silently changing timelines.
"""

from __future__ import annotations

import simpy

__all__ = ["succeed_later", "events_scheduled"]


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


def events_scheduled(env: simpy.Environment) -> int | None:
    """How many events ``env`` has scheduled (``Environment._eid``), or None where simpy keeps no such counter.

    Why: ``tpsim simulate --json`` reports it in ``stats.events``; counting ourselves would wrap every
    schedule call. ``repr`` reads an ``itertools.count`` without advancing it.
    """
    text = repr(getattr(env, "_eid", None))
    if text.startswith("count(") and text.endswith(")"):
        return int(text[6:-1])
    return None
