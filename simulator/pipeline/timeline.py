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

__all__ = ["Timed", "Timeline", "replay", "validate_order"]


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


def replay(order: list[list[Action]], micro_batches: int, stages: int, time_s: Callable[[Action], float],
           p2p_s: Callable[[Action], float] = lambda a: 0.0) -> Timeline:
    """The timeline of ``order`` with ``time_s(action)`` per action and ``p2p_s(action)`` for its output to
    cross to the next (forward) or previous (backward) stage; ScheduleError on a malformed order or a deadlock."""
    validate_order(order, micro_batches, stages)
    pp = len(order)
    end: dict[Action, float] = {}
    timed: list[list[Timed]] = [[] for _ in range(pp)]
    nxt = [0] * pp
    free = [0.0] * pp
    remaining = sum(len(o) for o in order)
    while remaining:
        progressed = False
        for r in range(pp):
            while nxt[r] < len(order[r]):
                a = order[r][nxt[r]]
                needs = _inputs(a, stages)
                if any(d not in end for d, _ in needs):
                    break
                start = max([free[r]] + [end[d] + (p2p_s(d) if crosses else 0.0) for d, crosses in needs])
                end[a] = free[r] = start + time_s(a)
                timed[r].append(Timed(a, start, end[a]))
                nxt[r] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            blocked = "; ".join(f"rank {r} at {order[r][nxt[r]]} waits for "
                                + ", ".join(str(d) for d, _ in _inputs(order[r][nxt[r]], stages) if d not in end)
                                for r in range(pp) if nxt[r] < len(order[r]))
            raise ScheduleError(f"pipeline order deadlocks: {blocked}")
    return Timeline(tuple(tuple(t) for t in timed), stages)
