"""The simpy schedule engine: every rank a process walking its compiled plan, communication on a network.

Semantics (the lock-step rules of ``simulator.ir.walk``, now with time):

- Compute ops take their time from ``simulator.compute``; a rank runs them on its own clock.
- A collective starts when the last member issues it; each earlier member waits (recorded per op as
  ``wait``). It then runs on the members' GPUs through a communication backend, and every blocked
  member resumes when it completes.
- A send/recv pair starts when both sides have posted; both sides complete when the transfer does.
- An op with a handle does not block: the rank runs on, and ``Wait(handle)`` blocks only if the op has
  not completed yet. Time blocked there counts as waiting while the op had not started (a member had
  not issued it) and as communication after.

Per rank, ``finish_s = compute_s + comm_s + wait_s + shared_s`` exactly: a rank is always computing or
blocked, and ``shared_s`` is what its compute lost to the NCCL kernels of asynchronous collectives that
ran beside it (``simulator.timing.sm_sharing``; charged when it waits for each).

Speed: the hot loop touches only tuples from ``simulator.timing.plan``; simpy events are created only where a
rank can block on another (an unfinished instance) or an instance must launch later than now, never
for compute, which cannot block. Ties are broken
by simpy's own (time, priority, insertion counter) order; processes start in rank order and instances
launch in the order their last member arrives, so the same inputs give the same outputs, bit for bit.

Example::

    >>> result = simulate(schedule, load_topology("dgx-a100"))       # doctest: +SKIP
    >>> result.makespan_s, result.per_rank[0].wait_s                 # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

import simpy

from simulator.errors import ScheduleError
from simulator.simpy_internals import events_scheduled
from simulator.timing.plan import COMM, RUN, Instance, Plan, fill_timeline, zeros

__all__ = ["CommBackend", "Engine", "run_plan"]

log = logging.getLogger(__name__)


class CommBackend(Protocol):
    """Times communication instances: ``start`` returns the event that fires when ``inst`` completes."""

    def start(self, env: simpy.Environment, inst: Instance) -> simpy.Event: ...


class Engine:
    """Runs one compiled ``Plan`` on ``backend``; ``run()`` fills the timing arrays below.

    ``starts[rank][step]`` is when the rank issued the op (for a compute stretch only its first op is
    filled in during the run; ``fill_timeline`` completes the rest), ``ends[rank][step]`` when a blocking
    communication op or wait returned, ``waits[rank][step]`` the part of that spent waiting for peers.
    """

    def __init__(self, plan: Plan, backend: CommBackend, env: simpy.Environment | None = None):
        self.plan = plan
        self.backend = backend
        self.env = env or simpy.Environment()
        world = plan.schedule.world_size
        self.starts = [zeros(len(d)) for d in plan.durations]
        self.ends = [zeros(len(d)) for d in plan.durations]
        self.waits = [zeros(len(d)) for d in plan.durations]
        self.comm_s = [0.0] * world
        self.wait_s = [0.0] * world
        self.shared_s = [0.0] * world
        """Compute lost to collectives running beside it (``simulator.timing.sm_sharing``)."""
        self.finish_s: list[float | None] = [None] * world
        self.position = [-1] * world  # the step a rank last blocked at, for the deadlock message
        self.running = world
        """Ranks that have not finished yet."""
        self.launched = 0

    def run(self) -> None:
        """Simulate to the end; ScheduleError naming a stuck rank if some rank cannot finish."""
        plan = self.plan
        plan.reset()
        env = self.env
        for rank in range(plan.schedule.world_size):
            env.process(self._rank(rank))
        env.run()
        stuck = [r for r, t in enumerate(self.finish_s) if t is None]
        if stuck:
            raise ScheduleError(self._deadlock_message(stuck))

    def _arrive(self, inst: Instance) -> None:
        """The last member has issued ``inst``: launch it at the latest arrival, now or later."""
        env = self.env
        start = inst.last_arrival_s
        inst.start_s = start
        if start > env.now:
            env.timeout(start - env.now).callbacks.append(lambda _event, inst=inst: self._launch(inst))
        else:
            self._launch(inst)

    def _launch(self, inst: Instance) -> None:
        env = self.env
        self.launched += 1

        def complete(_event, inst=inst):
            inst.end_s = env.now
            if inst.done is not None:
                inst.done.succeed()

        self.backend.start(env, inst).callbacks.append(complete)

    def _rank(self, rank: int):
        # The rank keeps its own clock t, ahead of env.now by the compute it has done since it last
        # blocked: compute needs nothing from anyone, so it costs no simpy event. Only issuing an op
        # that others must join (stamped with t) and blocking on one (resumed by simpy) touch the
        # simulation; an instance launches at its latest member's t, scheduled ahead if need be.
        env = self.env
        starts, ends, waits = self.starts[rank], self.ends[rank], self.waits[rank]
        t = float(env.now)  # simpy starts at the int 0; keep every recorded time a float
        comm = wait = shared = busy = 0.0
        sharing = self.plan.sharing
        issued = {}  # asynchronous instance index -> (issue time, compute so far), for sharing
        for item in self.plan.items[rank]:
            code = item[0]
            if code == RUN:
                starts[item[2]] = t
                t += item[1]
                busy += item[1]
                continue
            inst, step = item[1], item[2]
            starts[step] = t
            if code == COMM:
                inst.arrived += 1
                if t > inst.last_arrival_s:
                    inst.last_arrival_s = t
                if inst.arrived == inst.expected:
                    self._arrive(inst)
                if item[3]:
                    if sharing is not None:
                        issued[inst.index] = (t, busy)
                    continue  # asynchronous: its end is filled in from the instance afterwards
            if inst.end_s is None:
                if inst.done is None:
                    inst.done = env.event()
                self.position[rank] = step
                yield inst.done
            if issued and inst.index in issued:
                at, before = issued.pop(inst.index)
                lost = sharing.extra_s(rank, inst.kind, at, busy - before, inst.start_s, inst.end_s, t, inst.sms)
                shared += lost
                t += lost
                starts[step] = t  # the wait begins once the slowed compute has ended
            end = inst.end_s
            if end > t:
                ends[step] = end
                begun = inst.start_s
                if begun > t:
                    waits[step] = begun - t
                    wait += begun - t
                    comm += end - begun
                else:
                    comm += end - t
                t = end
            else:
                ends[step] = t
        self.comm_s[rank] = comm
        self.wait_s[rank] = wait
        self.shared_s[rank] = shared
        self.finish_s[rank] = t
        self.running -= 1

    def fill_timeline(self) -> None:
        """Complete ``starts``/``ends`` for every op: compute ops from their stretch, async ops from their
        instance."""
        fill_timeline(self.plan, self.starts, self.ends)

    def events_scheduled(self) -> int | None:
        """How many simpy events the run scheduled (simpy's insertion counter), or None if unknown."""
        return events_scheduled(self.env)

    def _deadlock_message(self, stuck: list[int]) -> str:
        rank = stuck[0]
        step = self.position[rank]
        program = self.plan.schedule.programs[rank]
        where = f"step {step} ({program[step].short()})" if 0 <= step < len(program) else "its start"
        return (f"deadlock: rank {rank} is blocked at {where}; {len(stuck)} of {len(self.finish_s)} ranks "
                f"never finish (validate the schedule: tpsim schedule ... names the mismatch)")


def run_plan(plan: Plan, backend: CommBackend, env: simpy.Environment | None = None,
             timeline: bool = True) -> Engine:
    """Run ``plan`` on ``backend`` and return the finished engine (timeline filled if asked)."""
    engine = Engine(plan, backend, env)
    began = time.perf_counter()
    engine.run()
    log.info("simulated %d ranks, %d instances in %.3f s", plan.schedule.world_size, engine.launched,
             time.perf_counter() - began)
    if timeline:
        engine.fill_timeline()
    return engine
