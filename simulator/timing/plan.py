"""A Schedule compiled for timing: per-rank item lists and the shared communication instances.

The simpy engine (``simulator.timing.engine``) and the analytic critical-path model
(``simulator.timing.critical_path``) both run this form, so they agree on everything but how long a
communication takes. Compiling resolves, once and ahead of time, what both would otherwise look up per
op: each compute op's duration (from ``simulator.compute``), each communication op's instance under
NCCL's matching rules (``simulator.ir.walk``: the n-th collective a rank issues on a group is every other
member's n-th; the n-th send a->b meets the n-th recv at b from a), each ``Wait``'s instance, and the
GPUs every instance runs on (ranks mapped through the placement).

A rank's plan is a list of tuples, one per item:

- ``(RUN, total_s, first_step, stop_step)``: consecutive compute ops, timed as one stretch;
- ``(COMM, instance, step, is_async)``: issue a collective or a send/recv;
- ``(WAIT, instance, step)``: block until an asynchronous op's instance has completed.
"""

from __future__ import annotations

from array import array

from simulator.compute import ComputeModel
from simulator.errors import ScheduleError
from simulator.fp8_comm import Fp8Wire
from simulator.ir.ops import (AllGather, AllReduce, Broadcast, Gemm, Local, Recv, Reduce, ReduceScatter, Send, Slice,
                              Wait)
from simulator.ir.schedule import Schedule

__all__ = ["RUN", "COMM", "WAIT", "OP_ROLE", "Instance", "Plan", "compile_schedule", "fill_timeline", "zeros"]

RUN, COMM, WAIT = 0, 1, 2


class Instance:
    """One collective (all members' n-th op on a group) or one send/recv pair, and its timing."""

    __slots__ = ("index", "kind", "group", "ranks", "gpus", "nbytes", "root", "sms", "expected", "arrived",
                 "last_arrival_s", "start_s", "end_s", "done", "algorithm")

    def __init__(self, index: int, kind: str, group: str | None, ranks: tuple[int, ...], gpus: tuple[str, ...],
                 nbytes: int, root: int | None, sms: int | None = None):
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
        self.sms = sms
        """SMs its kernel holds (a userbuffers kernel's ``num_sm``); None: NCCL's channels (``sm_sharing``)."""
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
    """A compiled schedule: ``items[rank]``, ``durations[rank][step]`` (compute seconds, 0 for others; one
    tuple per distinct rank), ``instances`` in creation order, and the static per-rank compute totals."""

    def __init__(self, schedule: Schedule, gpus: list[str], items: list[list[tuple]],
                 durations: list[tuple[float, ...]], instances: list[Instance]):
        self.schedule = schedule
        self.gpus = gpus
        self.items = items
        self.durations = durations
        self.instances = instances
        self.compute_s = [sum(d) for d in durations]
        self.sharing = None
        """A ``simulator.timing.sm_sharing.SmSharing``: what a GEMM beside an asynchronous collective loses;
        None: nothing (``plan_on_graph`` sets it from the topology)."""

    def reset(self) -> None:
        """Clear the instances' timing so the plan can be run again."""
        for inst in self.instances:
            inst.arrived = 0
            inst.last_arrival_s = 0.0
            inst.start_s = inst.end_s = inst.done = inst.algorithm = None


# How compile_schedule treats each op type: 0 compute, 1 collective, 2 send, 3 recv, 4 wait.
OP_ROLE = {Gemm: 0, Local: 0, Slice: 0, Broadcast: 1, Reduce: 1, AllReduce: 1, AllGather: 1, ReduceScatter: 1,
         Send: 2, Recv: 3, Wait: 4}


def compile_schedule(schedule: Schedule, gpus: list[str], devices: list[dict], compute: ComputeModel) -> Plan:
    """Compile ``schedule`` with rank r on GPU ``gpus[r]`` whose device dict is ``devices[r]``."""
    world = schedule.world_size
    if len(gpus) != world or len(devices) != world:
        raise ValueError(f"placement names {len(gpus)} GPUs and {len(devices)} devices for {world} ranks")
    group_gpus = {name: tuple(gpus[r] for r in ranks) for name, ranks in schedule.groups.items()}
    per_group: dict[str, list[Instance]] = {name: [] for name in schedule.groups}
    p2p: dict[tuple[int, int], list[Instance]] = {}  # (src, dst) -> pairs in order
    p2p_issued: dict[tuple[bool, int, int], int] = {}
    instances: list[Instance] = []
    nbytes_of: dict[int, int] = {}  # id(BufferSpec) -> bytes: specs are shared, and math.prod is not free
    # Items are immutable and the members of a group mostly hold the same ones (the same instance at
    # the same step, the same compute stretch): one object each keeps 16,384 ranks' plans small.
    shared: dict[tuple, tuple] = {}
    share = shared.setdefault
    shared_durations: dict[tuple, tuple] = {}  # ranks with the same compute (most) share one tuple
    op_time = compute.op_time_s
    # Under --dtype fp8, Transformer Engine gathers the linears' operands in FP8 (simulator.fp8_comm); a
    # compute model without a config (a test's stand-in that only times ops) is not an fp8 plan.
    config = getattr(compute, "config", None)
    wire = Fp8Wire(schedule, devices, config.fp8_recipe) if config is not None and config.fp8_gemms else None
    # A compute op's time depends on the op, its rank's buffer table and the GPU: ranks share ops and
    # tables (``ScheduleBuilder``), and GPUs of one kind are alike, so each distinct time is computed once.
    op_times: dict[tuple, float] = {}
    device_numbers: dict[str, int] = {}
    all_items, all_durations = [], []
    for rank, program in enumerate(schedule.programs):
        buffers = schedule.buffers[rank]
        device = devices[rank]
        alike = (id(buffers), device_numbers.setdefault(repr(device), len(device_numbers)))
        items: list[tuple] = []
        durations = [0.0] * len(program)
        handles: dict[str, Instance] = {}
        issued: dict[str, int] = {}  # group -> collectives this rank has issued on it
        run_first, run_total = -1, 0.0
        for step, op in enumerate(program):
            role = OP_ROLE[type(op)]
            if role == 0:
                # The previous op communicated or waited: compute.py times such a gemm apart.
                after_comm = step > 0 and OP_ROLE[type(program[step - 1])] != 0
                key = (id(op), alike, after_comm)
                d = op_times.get(key)
                if d is None:
                    d = op_times[key] = op_time(schedule, rank, op, device, after_comm)
                durations[step] = d
                if run_first < 0:
                    run_first, run_total = step, 0.0
                run_total += d
                continue
            if run_first >= 0:
                item = (RUN, run_total, run_first, step)
                items.append(share(item, item))
                run_first = -1
            if role == 4:
                inst = handles.pop(op.handle, None)
                if inst is None:
                    raise ScheduleError(f"rank {rank} step {step}: wait for handle {op.handle!r}, which no "
                                        f"earlier op of this rank issued")
                item = (WAIT, inst, step)
                items.append(share(item, item))
                continue
            spec = buffers.get(op.payload_buffer())
            if spec is None:
                raise ScheduleError(f"rank {rank} step {step}: buffer {op.payload_buffer()!r} is not declared")
            nbytes = nbytes_of.get(id(spec))
            if nbytes is None:
                nbytes = nbytes_of[id(spec)] = spec.nbytes
            if wire is not None:
                nbytes = wire.nbytes(rank, step, nbytes)
            if role == 1:
                group = op.group
                n = issued.get(group, 0)
                issued[group] = n + 1
                seen = per_group.get(group)
                if seen is None:
                    raise ScheduleError(f"rank {rank} step {step}: group {group!r} is not declared")
                if n < len(seen):
                    inst = seen[n]
                else:
                    inst = Instance(len(instances), op.kind, group, schedule.groups[group], group_gpus[group],
                                    nbytes, getattr(op, "root", None), getattr(op, "sms", None))
                    seen.append(inst)
                    instances.append(inst)
            else:
                if not 0 <= op.peer < world:
                    raise ScheduleError(f"rank {rank} step {step}: peer {op.peer} outside 0..{world - 1}")
                pair = (rank, op.peer) if role == 2 else (op.peer, rank)
                side = (role == 2, *pair)
                n = p2p_issued.get(side, 0)
                p2p_issued[side] = n + 1
                seen = p2p.setdefault(pair, [])
                if n < len(seen):
                    inst = seen[n]
                else:
                    inst = Instance(len(instances), "p2p", None, pair, (gpus[pair[0]], gpus[pair[1]]), nbytes, None)
                    seen.append(inst)
                    instances.append(inst)
            if op.handle is not None:
                handles[op.handle] = inst
            item = (COMM, inst, step, op.handle is not None)
            items.append(share(item, item))
        if run_first >= 0:
            item = (RUN, run_total, run_first, len(program))
            items.append(share(item, item))
        all_items.append(items)
        rank_durations = tuple(durations)
        all_durations.append(shared_durations.setdefault(rank_durations, rank_durations))
    return Plan(schedule, list(gpus), all_items, all_durations, instances)


def zeros(n: int) -> array:
    """``n`` zeros as an array of doubles: the per-step times of a run (8 bytes a step where a list of
    floats takes 32; 16,384 ranks hold ten million steps)."""
    return array("d", bytes(8 * n))


def fill_timeline(plan: Plan, starts: list[list[float]], ends: list[list[float]]) -> None:
    """Complete per-op times after a run that recorded only each compute stretch's start and each
    blocking op's end: compute ops follow from their stretch; an asynchronous op ends when its wait
    returns (what a measured run observes, as the executor records it), or with its instance if no
    wait follows."""
    for rank, items in enumerate(plan.items):
        durations, rank_starts, rank_ends = plan.durations[rank], starts[rank], ends[rank]
        waited = {item[1].index: item[2] for item in items if item[0] == WAIT}
        for item in items:
            code = item[0]
            if code == RUN:
                t = rank_starts[item[2]]
                for step in range(item[2], item[3]):
                    rank_starts[step] = t
                    t += durations[step]
                    rank_ends[step] = t
        for item in items:
            if item[0] == COMM and item[3]:
                wait_step = waited.get(item[1].index)
                rank_ends[item[2]] = item[1].end_s if wait_step is None else rank_ends[wait_step]
