"""How long each communication op waited for its last peer to issue it, from per-op records on one clock.

A collective cannot finish on every member before all have issued it, nor a send/recv pair before
both sides have: a member that issues early spends the gap waiting. For one instance (the k-th op a
member issues on a group: members issue a group's ops in the same order, which the validator
enforces; or the k-th send from a to b and the k-th recv at b from a), each member's wait is

    min(max(0, latest start among the instance's members - its own start), its own duration)

The cap is for a member whose part needs nobody else and returns first (a gloo broadcast root, an
eager small send): it waited only while it was in the op. The rest of a duration is the transfer
after everyone arrived (which still shares links and, on a CPU host, cores with whatever else runs;
for an asynchronous op, whatever ran until its wait returned). ``tpsim compare`` splits each
communication class into the two, measured and simulated alike, which tells a late peer (uneven
compute, ranks the OS ran later) from a slow transfer. It needs the start times of all ranks on one
clock: the simulator's are; a measured run's are when its ranks read one host's monotonic clock
(``clock_origins_s``).

Example::

    >>> waits = peer_waits(schedule, records)  # doctest: +SKIP
    >>> waits[(0, 3)]                         # seconds rank 0's step 3 waited for its last peer  # doctest: +SKIP
"""

from __future__ import annotations

import math

from simulator.ir.ops import Recv, Send
from simulator.ir.schedule import Schedule

__all__ = ["instance_keys", "peer_waits"]


def instance_keys(schedule: Schedule) -> dict[tuple[int, int], tuple]:
    """(rank, step) -> the key of the communication instance that op belongs to (shared by all its
    members); ops that communicate with nobody (gemm, local, wait) have none."""
    keys = {}
    for rank, program in enumerate(schedule.programs):
        seen: dict[tuple, int] = {}  # (side, base) -> ops this rank has issued on it
        for step, op in enumerate(program):
            if isinstance(op, Send):
                side, base = "send", ("p2p", rank, op.peer)
            elif isinstance(op, Recv):
                side, base = "recv", ("p2p", op.peer, rank)
            elif op.is_comm:
                side, base = "group", ("group", op.group)
            else:
                continue
            # Sends and recvs are counted apart, as simulator.timing.plan matches them: a rank's n-th send
            # to b meets b's n-th recv from it, whatever else either issued in between.
            index = seen.get((side, base), 0)
            seen[(side, base)] = index + 1
            keys[(rank, step)] = (*base, index)
    return keys


def peer_waits(schedule: Schedule, records: list[dict],
               offsets_s: list[float] | None = None) -> dict[tuple[int, int], float]:
    """(rank, step) -> seconds that communication op waited for the last member of its instance.

    ``records`` are per-op records (``rank``, ``step``, ``start_s`` and, if present, ``end_s``, which caps
    the wait); ``offsets_s[rank]`` is added to a rank's times to put every rank on one clock (None: they
    already are). An instance with a member missing from ``records`` is left out.
    """
    keys = instance_keys(schedule)
    starts: dict[tuple[int, int], float] = {}
    durations: dict[tuple[int, int], float] = {}
    for r in records:
        where = (r["rank"], r["step"])
        if where in keys:
            starts[where] = r["start_s"] + (offsets_s[r["rank"]] if offsets_s is not None else 0.0)
            if "end_s" in r:
                durations[where] = r["end_s"] - r["start_s"]
    members: dict[tuple, list[tuple[int, int]]] = {}
    for where, key in keys.items():
        members.setdefault(key, []).append(where)
    waits = {}
    for key, places in members.items():
        if any(p not in starts for p in places):
            continue
        last = max(starts[p] for p in places)
        for p in places:
            waits[p] = min(last - starts[p], durations.get(p, math.inf))
    return waits
