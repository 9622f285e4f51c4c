"""Replay a pipeline schedule: when each action starts and ends, and proof that the order cannot deadlock.

Each pipeline rank runs its actions (``simulator.pipeline.order``) one at a time in its order. An action
can start when its rank is free and its input has arrived:

- forward of micro-batch i on virtual stage s > 0: the forward of i on s - 1 has ended and its activation
  has crossed the boundary (``p2p_s``);
- backward of i on stage s < S - 1: the backward of i on s + 1 has ended and its gradient has crossed;
- every backward: the forward of i on s has ended (it runs on the same rank).

Sends are eager (NCCL's batched isend/irecv, as Megatron-LM posts them): a rank does not wait for its
receiver, so the only waits are for inputs, and the order deadlocks exactly when some rank's next action
waits on an action that can never run. The replay finds that and names every blocked rank, so it is the
validator of a schedule as well as its clock.

The result is deterministic and independent of the order ranks are visited in: a start time is the max
of its rank's previous end and its inputs' arrivals, each fixed once its predecessors are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from simulator.errors import ScheduleError
from simulator.pipeline.order import Action

__all__ = ["Timed", "Timeline", "replay", "replay_times", "validate_order"]


@dataclass(frozen=True)
class Timed:
    """One action with its start and end, seconds from the step's start."""

    action: Action
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    """Every rank's timed actions in run order, and what they add up to."""

    ranks: tuple[tuple[Timed, ...], ...]
    stages: int
    """Virtual stages S = pp x v."""

    @property
    def makespan_s(self) -> float:
        """When the last action ends."""
        return max((r[-1].end_s for r in self.ranks if r), default=0.0)

    def busy_s(self, rank: int) -> float:
        """Seconds rank ``rank`` computes."""
        return sum(t.end_s - t.start_s for t in self.ranks[rank])

    def bubble_s(self, rank: int) -> float:
        """Seconds rank ``rank`` idles within the makespan."""
        return self.makespan_s - self.busy_s(rank)

    def in_flight(self, rank: int) -> int:
        """The most forwards whose backward has not yet run on ``rank`` at once: activations it keeps, in
        chunk-passes (one micro-batch through one of its virtual stages)."""
        live = peak = 0
        for t in self.ranks[rank]:
            live += 1 if t.action.kind == "F" else -1
            peak = max(peak, live)
        return peak


def _inputs(a: Action, stages: int) -> list[tuple[Action, bool]]:
    """The actions ``a`` waits for, each with whether its output crosses a stage boundary."""
    if a.kind == "F":
        return [] if a.stage == 0 else [(Action("F", a.micro_batch, a.stage - 1), True)]
    out = [(Action("F", a.micro_batch, a.stage), False)]
    if a.stage < stages - 1:
        out.append((Action("B", a.micro_batch, a.stage + 1), True))
    return out


def validate_order(order: list[list[Action]], micro_batches: int, stages: int) -> None:
    """Raise ScheduleError unless every (micro-batch, stage) has one forward and one backward, on the rank
    ``stage % pp``; the deadlock check is ``replay``'s."""
    pp = len(order)
    seen: dict[Action, int] = {}
    for rank, actions in enumerate(order):
        for step, a in enumerate(actions):
            if a.kind not in ("F", "B") or not 0 <= a.stage < stages or not 0 <= a.micro_batch < micro_batches:
                raise ScheduleError(f"pipeline rank {rank} step {step}: {a} is outside {micro_batches} "
                                    f"micro-batches x {stages} stages")
            if a.stage % pp != rank:
                raise ScheduleError(f"pipeline rank {rank} step {step}: {a} belongs to rank {a.stage % pp}")
            if a in seen:
                raise ScheduleError(f"pipeline rank {rank} step {step}: {a} runs twice")
            seen[a] = rank
    for kind in ("F", "B"):
        for s in range(stages):
            for i in range(micro_batches):
                if Action(kind, i, s) not in seen:
                    what = "its activation is sent but never received" if kind == "F" else "no gradient reaches it"
                    raise ScheduleError(f"pipeline: {Action(kind, i, s)} never runs on rank {s % pp} ({what})")


def replay_times(order: list[list[Action]], micro_batches: int, stages: int, time_s: Callable[[Action], float],
                 p2p_s: Callable[[Action], float] = lambda a: 0.0, validate: bool = True) -> list[list[tuple]]:
    """``replay``'s clock without its records: per pipeline rank, (start, end) of each action in its order.
    ``validate=False`` skips ``validate_order`` for orders known to be well formed (``pipeline_order``'s, in
    the planner's search, where the replay is the inner loop); a deadlock is still found and named."""
    if validate:
        validate_order(order, micro_batches, stages)
    pp, m, last = len(order), micro_batches, stages - 1
    # Per (stage, micro-batch): when its forward ended, and when the forward's activation (or the backward's
    # gradient) has crossed to the neighbouring stage: end + p2p_s, fixed once the action has run.
    end_f: list = [None] * (stages * m)
    arrive_f: list = [None] * (stages * m)
    arrive_b: list = [None] * (stages * m)
    out: list[list[tuple]] = [[] for _ in range(pp)]
    nxt, free = [0] * pp, [0.0] * pp
    remaining = sum(len(o) for o in order)
    while remaining:
        progressed = False
        for r in range(pp):
            actions, k, clock, times = order[r], nxt[r], free[r], out[r]
            while k < len(actions):
                a = actions[k]
                at = a.stage * m + a.micro_batch
                start = clock
                if a.kind == "F":
                    if a.stage:
                        ready = arrive_f[at - m]
                        if ready is None:
                            break
                        start = max(start, ready)
                else:
                    ready = end_f[at]
                    if ready is None:
                        break
                    start = max(start, ready)
                    if a.stage < last:
                        ready = arrive_b[at + m]
                        if ready is None:
                            break
                        start = max(start, ready)
                clock = start + time_s(a)
                times.append((start, clock))
                if a.kind == "F":
                    end_f[at] = clock
                    if a.stage < last:
                        arrive_f[at] = clock + p2p_s(a)
                elif a.stage:
                    arrive_b[at] = clock + p2p_s(a)
                k += 1
            if k != nxt[r]:
                remaining -= k - nxt[r]
                nxt[r], free[r] = k, clock
                progressed = True
        if not progressed:
            def ran(d: Action) -> bool:
                return end_f[d.stage * m + d.micro_batch] is not None if d.kind == "F" else \
                    any(d == t for t in order[d.stage % pp][:nxt[d.stage % pp]])
            blocked = "; ".join(f"rank {r} at {order[r][nxt[r]]} waits for "
                                + ", ".join(str(d) for d, _ in _inputs(order[r][nxt[r]], stages) if not ran(d))
                                for r in range(pp) if nxt[r] < len(order[r]))
            raise ScheduleError(f"pipeline order deadlocks: {blocked}")
    return out


def replay(order: list[list[Action]], micro_batches: int, stages: int, time_s: Callable[[Action], float],
           p2p_s: Callable[[Action], float] = lambda a: 0.0) -> Timeline:
    """The timeline of ``order`` with ``time_s(action)`` per action and ``p2p_s(action)`` for its output to
    cross to the next (forward) or previous (backward) stage; ScheduleError on a malformed order or a deadlock."""
    times = replay_times(order, micro_batches, stages, time_s, p2p_s)
    return Timeline(tuple(tuple(Timed(a, start, end) for a, (start, end) in zip(actions, rank))
                          for actions, rank in zip(order, times)), stages)
