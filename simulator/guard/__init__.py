"""Guards before work: every long command estimates its time and memory from the sizes, before it starts.

- ``ops``: a schedule's op count from its algorithm, grid and workload, unbuilt;
- ``costs``: this machine's measured cost per op, per GPU, per FLOP, and the estimates;
- ``check``: the decision: refuse past 5 minutes or the free memory (one line naming
  the estimate and ``--force``), say so on stderr past 20 s, else nothing;
- ``schedules``: the guard of the commands that build a schedule (``before_build``);
- ``training``: the size of ``predict --global-batch``'s training-plan search (``search_estimate``).

The commands call them where the sizes are known and nothing is built yet: ``schedule``, ``verify``,
``simulate`` and ``run`` before the schedule is built (``schedule_from_args``'s ``before_build``),
``predict`` once it has listed the arrangements it will time (with ``--global-batch``, the
training arrangements, their schedules and settings), ``collective`` before it simulates,
and every command that loads a topology before its graph is built (``watch_topologies``, through
``simulator.limits.check_topology_gpus``). ``run`` and ``bench`` add their own estimate of the
executor's work (``executor.estimate``, ``executor.bench_memory``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from simulator.guard.check import NOTE_AFTER_S, REFUSE_AFTER_S, SCALE_ENV, Estimate, add_force_argument, guard
from simulator.guard.costs import topology_estimate
from simulator.limits import TOPOLOGY_WATCHERS

__all__ = ["NOTE_AFTER_S", "REFUSE_AFTER_S", "SCALE_ENV", "Estimate", "add_force_argument", "guard",
           "watch_topologies"]


@contextmanager
def watch_topologies(command: str, force: bool = False, show: bool = False) -> Iterator[None]:
    """Within the block, every topology graph about to be built is estimated and guarded first
    (``show``: with ``tpsim topology show``'s summary on top)."""
    def watch(gpus: int, what: str) -> None:
        guard(topology_estimate(gpus, what, show), command, force)

    TOPOLOGY_WATCHERS.append(watch)
    try:
        yield
    finally:
        TOPOLOGY_WATCHERS.remove(watch)
