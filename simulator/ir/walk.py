"""A lock-step walk of every rank's program under NCCL's matching rules, with hooks for what to do.

The rules are what NCCL and gloo require: a blocking collective returns only when every member of its
group has issued it; the n-th collective a rank issues on a group must be the same collective (kind,
root, shapes) as every other member's n-th on that group; the n-th send from a to b meets the n-th recv
at b from a (a blocking send returns once its recv is posted). An asynchronous op returns at once and
completes at its ``wait``. ``simulator.ir.validate`` walks with no hooks to prove a schedule can finish;
``simulator.ir.interpret`` walks with hooks that move real numbers.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Callable

from simulator.errors import ScheduleError
from simulator.gcpause import paused_gc
from simulator.ir.ops import AllGather, CommOp, Op, Recv, Reduce, ReduceScatter, Send, Wait
from simulator.ir.schedule import Schedule

__all__ = ["Walker", "Instance"]

def _signature(schedule: Schedule, rank: int, op: CommOp) -> tuple:
    """What every member of one collective must agree on."""
    spec = schedule.spec
    if isinstance(op, (AllGather, ReduceScatter)):
        return (op.kind, op.axis, spec(rank, op.inp).shape, spec(rank, op.out).shape, spec(rank, op.inp).dtype)
    buf = schedule.buffers[rank].get(op.buf) or spec(rank, op.buf)  # spec() raises, naming the buffer
    return (op.kind, getattr(op, "root", None), buf.shape, buf.dtype)


def _describe(rank: int, step: int, op: Op) -> str:
    return f"rank {rank} step {step} ({op.short()})"


class Instance:
    """One collective or one send/recv pair, filled in as its participants issue it."""

    __slots__ = ("key", "label", "expected", "arrived", "signature", "waiters")

    def __init__(self, key: tuple, label: str, expected: int):
        self.key = key
        self.label = label
        self.expected = expected
        self.arrived: dict[int, tuple[int, Op, tuple]] = {}  # rank -> (step, op, signature)
        self.signature: tuple | None = None
        """The first participant's signature, which every later one must equal."""
        self.waiters: list[int] = []


class Walker:
    """Event-driven walk of all programs: a blocked rank is woken only when what it waits on completes.

    ``on_compute(rank, op)`` runs for every non-communication op in program order; ``on_complete(instance)``
    runs once per collective or send/recv pair, when its last participant issues it (its ``arrived``
    maps each participating rank to (step, op, signature)). ``run`` raises ScheduleError on a mismatch or
    a deadlock.
    """

    def __init__(self, schedule: Schedule, on_compute: Callable[[int, Op], None] | None = None,
                 on_complete: Callable[[Instance], None] | None = None):
        self.s = schedule
        self.on_compute = on_compute
        self.on_complete = on_complete
        self.pc = [0] * schedule.world_size
        self.collective_count: list[dict[str, int]] = [{} for _ in range(schedule.world_size)]  # [rank][group]
        self.p2p_count: dict[tuple[str, int, int], int] = defaultdict(int)  # (side, src, dst) -> issued
        self.instances: dict[tuple, Instance] = {}
        self.handles: list[dict[str, Instance]] = [{} for _ in range(schedule.world_size)]
        self.blocked_on: dict[int, tuple[Instance, int]] = {}  # rank -> (instance, step)
        self.ready = deque(range(schedule.world_size))

    def run(self) -> None:
        with paused_gc():
            while self.ready:
                self._advance(self.ready.popleft())
        stuck = [r for r in range(self.s.world_size)
                 if r in self.blocked_on or self.pc[r] < len(self.s.programs[r])]
        if stuck:
            raise ScheduleError(self._deadlock_message(stuck))

    def _advance(self, rank: int) -> None:
        program = self.s.programs[rank]
        handles, on_compute, issue = self.handles[rank], self.on_compute, self._issue
        step, end = self.pc[rank], len(program)
        while step < end:
            op = program[step]
            if isinstance(op, CommOp):
                instance = issue(rank, step, op)
                if op.handle is not None:
                    handles[op.handle] = instance
                elif len(instance.arrived) < instance.expected:
                    self.pc[rank] = step + 1  # issued; the rank resumes after it once woken
                    return self._block(rank, instance, step)
            elif isinstance(op, Wait):
                instance = handles.pop(op.handle)
                if len(instance.arrived) < instance.expected:
                    handles[op.handle] = instance  # retried when woken
                    self.pc[rank] = step
                    return self._block(rank, instance, step)
            elif on_compute is not None:
                on_compute(rank, op)
            step += 1
        self.pc[rank] = step

    def _block(self, rank: int, instance: Instance, step: int) -> None:
        instance.waiters.append(rank)
        self.blocked_on[rank] = (instance, step)

    def _issue(self, rank: int, step: int, op: CommOp) -> Instance:
        # Labels are built once per instance, by its first participant: they are for messages only.
        if isinstance(op, (Send, Recv)):
            src, dst = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
            side = "send" if isinstance(op, Send) else "recv"
            n = self.p2p_count[(side, src, dst)]
            self.p2p_count[(side, src, dst)] = n + 1
            key = ("p2p", src, dst, n)
            spec = self.s.spec(rank, op.buf)
            signature = (spec.shape, spec.dtype)
            instance = self.instances.get(key)
            if instance is None:
                instance = self.instances[key] = Instance(key, f"send/recv #{n} from rank {src} to rank {dst}", 2)
        else:
            group = op.group
            issued = self.collective_count[rank]
            n = issued.get(group, 0)
            issued[group] = n + 1
            key = ("group", group, n)
            signature = _signature(self.s, rank, op)
            instance = self.instances.get(key)
            if instance is None:
                members = self.s.groups[group]
                label = f"collective #{n} on group {group} {list(members)}"
                instance = self.instances[key] = Instance(key, label, len(members))
        arrived = instance.arrived
        if not arrived:
            instance.signature = signature
        elif signature != instance.signature:
            other, (other_step, other_op, other_signature) = next(iter(arrived.items()))
            raise ScheduleError(
                f"mismatch in {instance.label}: {_describe(rank, step, op)} has {signature} but "
                f"{_describe(other, other_step, other_op)} has {other_signature}")
        if isinstance(op, Reduce) and self.s.groups[op.group][op.root] == rank:
            if self.s.spec(rank, op.out).shape != self.s.spec(rank, op.buf).shape:
                raise ScheduleError(f"{_describe(rank, step, op)}: root's out and buf shapes differ")
        arrived[rank] = (step, op, signature)
        if len(arrived) == instance.expected:
            del self.instances[key]
            if self.on_complete is not None:
                self.on_complete(instance)
            for waiter in instance.waiters:
                del self.blocked_on[waiter]
                self.ready.append(waiter)
        return instance

    def _deadlock_message(self, stuck: list[int]) -> str:
        rank = stuck[0]
        if rank not in self.blocked_on:
            return f"deadlock: rank {rank} cannot proceed at step {self.pc[rank]}"
        instance, step = self.blocked_on[rank]
        op = self.s.programs[rank][step]
        arrived = sorted(instance.arrived)
        if instance.label.startswith("send/recv"):
            missing = "the matching " + ("recv" if isinstance(op, Send) else "send") + " is never posted"
        else:
            members = self.s.groups[op.group] if isinstance(op, CommOp) and hasattr(op, "group") else ()
            absent = [r for r in members if r not in instance.arrived]
            where = ", ".join(self._position(r) for r in absent[:4])
            missing = f"ranks {absent} never issue it (they are at: {where})"
        return (f"deadlock: {_describe(rank, step, op)} waits in {instance.label}: ranks {arrived} "
                f"issued it but {missing}; {len(stuck)} of {self.s.world_size} ranks are stuck")

    def _position(self, rank: int) -> str:
        program = self.s.programs[rank]
        step = self.blocked_on[rank][1] if rank in self.blocked_on else self.pc[rank]
        if step >= len(program):
            return f"rank {rank} finished"
        return _describe(rank, step, program[step])
