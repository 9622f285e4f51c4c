"""A Schedule compiled for timing: per-rank item lists and the shared communication instances.

The simpy engine (``simulator.engine``) and the analytic critical-path model
(``simulator.cost_schedule``) both run this form, so they agree on everything but how long a
communication takes. Compiling resolves, once and ahead of time, what both would otherwise look up per
op: each compute op's duration (from ``simulator.compute``), each communication op's instance under
NCCL's matching rules (``simulator.walk``: the n-th collective a rank issues on a group is every other
member's n-th; the n-th send a->b meets the n-th recv at b from a), each ``Wait``'s instance, and the
GPUs every instance runs on (ranks mapped through the placement).

A rank's plan is a list of tuples, one per item:

- ``(RUN, total_s, first_step, stop_step)``: consecutive compute ops, timed as one stretch;
- ``(COMM, instance, step, is_async)``: issue a collective or a send/recv;
- ``(WAIT, instance, step)``: block until an asynchronous op's instance has completed.
"""

from __future__ import annotations

from simulator.compute import ComputeModel
from simulator.ir import Schedule
from simulator.ops import CommOp, Recv, Send, Wait

__all__ = ["RUN", "COMM", "WAIT", "Instance", "Plan", "compile_schedule"]

RUN, COMM, WAIT = 0, 1, 2


class Instance:
    """One collective (all members' n-th op on a group) or one send/recv pair, and its timing."""

    __slots__ = ("index", "kind", "group", "ranks", "gpus", "nbytes", "root", "expected", "arrived",
                 "last_arrival_s", "start_s", "end_s", "done", "algorithm")

    def __init__(self, index: int, kind: str, group: str | None, ranks: tuple[int, ...], gpus: tuple[str, ...],
                 nbytes: int, root: int | None):
        self.index = index
        self.kind = kind
        """A collective kind, or "p2p" for a send/recv pair."""
        self.group = group
        """The group's name; None for send/recv."""
        self.ranks = ranks
        """Members in group-local order; (src, dst) for send/recv."""
        self.gpus = gpus
        """The members' GPU node names, in the same order."""
        self.nbytes = nbytes
        """nccl-tests' S (buffer size; all_gather's output, reduce_scatter's input); the message for p2p."""
        self.root = root
        """Group-local root of a broadcast or reduce, else None."""
        self.expected = len(ranks)
        self.arrived = 0
        self.last_arrival_s = 0.0
        self.start_s: float | None = None
        self.end_s: float | None = None
        self.done = None
        """The engine's completion event, made when a rank first blocks on the instance."""
        self.algorithm: str | None = None
        """The collective algorithm it ran with, filled in by whoever times it."""

    def label(self) -> str:
        """A short description for error messages, e.g. "broadcast on row_j0_k0 #3"."""
        if self.group is None:
            return f"send/recv rank {self.ranks[0]} -> rank {self.ranks[1]}"
        return f"{self.kind} on {self.group} {list(self.ranks)}"


class Plan:
    """A compiled schedule: ``items[rank]``, ``durations[rank][step]`` (compute seconds, 0 for others),
    ``instances`` in creation order, and the static per-rank compute totals."""

    def __init__(self, schedule: Schedule, gpus: list[str], items: list[list[tuple]],
                 durations: list[list[float]], instances: list[Instance]):
        self.schedule = schedule
        self.gpus = gpus
        self.items = items
        self.durations = durations
        self.instances = instances
        self.compute_s = [sum(d) for d in durations]

    def reset(self) -> None:
        """Clear the instances' timing so the plan can be run again."""
        for inst in self.instances:
            inst.arrived = 0
            inst.last_arrival_s = 0.0
            inst.start_s = inst.end_s = inst.done = inst.algorithm = None


def compile_schedule(schedule: Schedule, gpus: list[str], devices: list[dict], compute: ComputeModel) -> Plan:
    """Compile ``schedule`` with rank r on GPU ``gpus[r]`` whose device dict is ``devices[r]``."""
    world = schedule.world_size
    if len(gpus) != world or len(devices) != world:
        raise ValueError(f"placement names {len(gpus)} GPUs for {world} ranks")
    group_gpus = {name: tuple(gpus[r] for r in ranks) for name, ranks in schedule.groups.items()}
    collective_count: dict[tuple[str, int], int] = {}
    p2p_count: dict[tuple[bool, int, int], int] = {}
    by_key: dict[tuple, Instance] = {}
    instances: list[Instance] = []
    nbytes_of: dict[int, int] = {}  # id(BufferSpec) -> bytes; specs are shared, and math.prod is not free
    all_items, all_durations = [], []
    for rank, program in enumerate(schedule.programs):
        buffers = schedule.buffers[rank]
        device = devices[rank]
        items: list[tuple] = []
        durations = [0.0] * len(program)
        handles: dict[str, Instance] = {}
        run_first, run_total = -1, 0.0
        for step, op in enumerate(program):
            if not isinstance(op, (CommOp, Wait)):
                d = compute.op_time_s(schedule, rank, op, device)
                durations[step] = d
                if run_first < 0:
                    run_first, run_total = step, 0.0
                run_total += d
                continue
            if run_first >= 0:
                items.append((RUN, run_total, run_first, step))
                run_first = -1
            if isinstance(op, Wait):
                inst = handles.pop(op.handle, None)
                if inst is None:
                    raise ValueError(f"rank {rank} step {step}: wait for handle {op.handle!r}, which no "
                                     f"earlier op of this rank issued")
                items.append((WAIT, inst, step))
                continue
            spec = buffers.get(op.payload_buffer())
            if spec is None:
                raise ValueError(f"rank {rank}: buffer {op.payload_buffer()!r} is not declared")
            nbytes = nbytes_of.get(id(spec))
            if nbytes is None:
                nbytes = nbytes_of[id(spec)] = spec.nbytes
            if isinstance(op, (Send, Recv)):
                is_send = isinstance(op, Send)
                src, dst = (rank, op.peer) if is_send else (op.peer, rank)
                if not 0 <= op.peer < world:
                    raise ValueError(f"rank {rank} step {step}: peer {op.peer} outside 0..{world - 1}")
                count_key = (is_send, src, dst)
                n = p2p_count.get(count_key, 0)
                p2p_count[count_key] = n + 1
                key = ("p2p", src, dst, n)
                inst = by_key.get(key)
                if inst is None:
                    inst = by_key[key] = Instance(len(instances), "p2p", None, (src, dst),
                                                  (gpus[src], gpus[dst]), nbytes, None)
                    instances.append(inst)
            else:
                count_key = (op.group, rank)
                n = collective_count.get(count_key, 0)
                collective_count[count_key] = n + 1
                key = (op.group, n)
                inst = by_key.get(key)
                if inst is None:
                    members = schedule.group_ranks(op.group)
                    inst = by_key[key] = Instance(len(instances), op.kind, op.group, members,
                                                  group_gpus[op.group], nbytes, getattr(op, "root", None))
                    instances.append(inst)
            if op.handle is not None:
                handles[op.handle] = inst
            items.append((COMM, inst, step, op.handle is not None))
        if run_first >= 0:
            items.append((RUN, run_total, run_first, len(program)))
        all_items.append(items)
        all_durations.append(durations)
    return Plan(schedule, list(gpus), all_items, all_durations, instances)
