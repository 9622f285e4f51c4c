"""One rank's whole job: rendezvous, groups, buffers, warm-up and timed iterations, check, gather.

The same function runs under ``tpsim run`` (forked ranks, FileStore rendezvous) and under torchrun
(``env://``), for gloo and NCCL alike; only the device and the clock differ.

Timing. Before every iteration (warm-up or timed) each rank restores its inputs and NaN-fills the rest
(untimed), then enters a barrier on the default group; t = 0 is the moment this rank leaves the
barrier (CPU: ``perf_counter``; GPU: a CUDA event recorded right after the barrier and a device
synchronise). Times are rank-local from there, so ranks are aligned to within the barrier's release
skew (gloo on one host: about a millisecond; NCCL: microseconds). Each op records ``start_s`` (before it
is issued) and ``end_s`` (when it is complete as seen by this rank's program: after the call returns, or
for an asynchronous op at the end of its ``wait``); a ``wait`` op also gets its own record, the time
spent blocked in it. Consecutive asynchronous sends and receives are issued as one batch
(``executor.ops_torch``): each of them records the batch's issue as its ``start_s`` (the first one's
start, when the program reached the batch) and the end of its own ``wait`` as its ``end_s``. On gloo
each op of a batch completes on its own; NCCL completes a batch as one, so there the batch's first
wait holds the whole exchange and its later waits return at once (their ops end together). A rank's
end-to-end time is t at the end of its last op; the iteration's time is the max over ranks (an
all_reduce MAX), and the measured record keeps the ops of the median timed iteration
(``statistics.median_low`` of those maxima: a real iteration, so its op times are coherent).
Each rank also keeps that iteration's t = 0 as a host-monotonic reading (``clock_origin_s``: the CPU
clock's ``perf_counter`` at t = 0, None on GPU): on one host, origin differences put every rank's op
times on one clock, which the barrier's release skew would otherwise blur (``tpsim compare`` uses
them to tell waiting for a late peer from the transfer itself).

Correctness is checked once, on the buffers the last iteration left (every iteration recomputes
everything from reset inputs), by ``executor.check`` on each rank; rank 0 gathers everything.
"""

from __future__ import annotations

import platform
import socket
import statistics
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist

from executor.buffers import allocate
from executor.check import check_rank
from executor.clock import clock_for
from executor.faults import Fault
from executor.groups import GroupCache
from executor.ops_torch import TorchOps
from simulator.errors import InputError
from simulator.ir.ops import Op, Wait
from simulator.ir.schedule import Schedule

BACKENDS = ("gloo", "nccl")
Report = Callable[..., None]
"""``report(state, schedule=-1, iteration=-1, step=-1)``: where this rank is (see executor.progress)."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: backend, iteration counts, input seed, timeouts, tolerance override, test hook."""

    backend: str = "gloo"
    warmup: int = 1
    """Untimed iterations before the timed ones."""
    iters: int = 5
    """Timed iterations."""
    seed: int = 0
    timeout_s: float = 300.0
    """Whole-job limit in the launcher; also the process groups' collective timeout."""
    tolerance: float | None = None
    """Override of the per-dtype tolerance (executor.check.TOLERANCES)."""
    fault: Fault | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"--backend {self.backend!r}: valid: {', '.join(BACKENDS)}")
        if self.warmup < 0:
            raise InputError(f"--warmup must be >= 0, got {self.warmup}")
        if self.iters < 1:
            raise InputError(f"--iters must be >= 1, got {self.iters}")
        if not self.timeout_s > 0:
            raise InputError(f"--timeout must be > 0 seconds, got {self.timeout_s}")
        if self.tolerance is not None and not self.tolerance > 0:
            raise InputError(f"--tolerance must be > 0, got {self.tolerance}")


@dataclass(frozen=True)
class Rendezvous:
    """Who this rank is and how it finds the others: a FileStore path, or None for ``env://``."""

    rank: int
    world_size: int
    local_rank: int
    store_path: str | None = None


def _nothing(*_args, **_kwargs) -> None:
    return None


def run_rank(schedules: list[Schedule], options: RunOptions, rdv: Rendezvous,
             report: Report = _nothing) -> list[dict] | None:
    """Run every schedule on this rank; rank 0 returns one gathered result per schedule, others None."""
    for schedule in schedules:
        if schedule.world_size != rdv.world_size:
            raise ValueError(f"schedule has {schedule.world_size} ranks but the job has {rdv.world_size}")
    if options.fault is not None:
        options.fault.fire(rdv.rank, None)
    report("rendezvous")
    device = init_distributed(options, rdv)
    try:
        cache = GroupCache()
        results = [_run_schedule(index, schedule, options, rdv.rank, device, cache, report)
                   for index, schedule in enumerate(schedules)]
    finally:
        report("done")
    dist.destroy_process_group()
    return results if rdv.rank == 0 else None


def init_distributed(options: RunOptions, rdv: Rendezvous) -> torch.device:
    """Join the job's default process group (FileStore or ``env://``); the device this rank computes on."""
    device = torch.device("cpu")
    init = {"backend": options.backend, "rank": rdv.rank, "world_size": rdv.world_size,
            "timeout": timedelta(seconds=options.timeout_s)}
    if options.backend == "nccl":
        device = torch.device("cuda", rdv.local_rank)
        torch.cuda.set_device(device)
        init["device_id"] = device
    if rdv.store_path is not None:
        init["store"] = dist.FileStore(rdv.store_path, rdv.world_size)
    else:
        init["init_method"] = "env://"
    dist.init_process_group(**init)
    return device


def _run_schedule(index: int, schedule: Schedule, options: RunOptions, rank: int, device: torch.device,
                  cache: GroupCache, report: Report) -> dict | None:
    report("creating groups", index)
    groups = cache.create(schedule, rank)
    report("allocating", index)
    memory = allocate(schedule, rank, device, options.seed)
    ops = TorchOps(schedule, rank, memory.buffers, groups, reduce_clobbers_input=options.backend == "gloo",
                   seed=options.seed)
    clock = clock_for(device)
    rank_times, spans, origins = [], [], []
    for iteration in range(options.warmup + options.iters):
        memory.reset()
        report("communicating", index, iteration)
        dist.barrier()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        iteration_spans, total = _run_program(schedule.programs[rank], ops, clock, options.fault, rank,
                                              lambda state, step: report(state, index, iteration, step))
        if iteration >= options.warmup:
            rank_times.append(total)
            spans.append(iteration_spans)
            origins.append(clock.origin_s())
    report("checking", index)
    blocks = check_rank(schedule, rank, memory.buffers, options.seed)
    report("gathering results", index)
    times = torch.tensor(rank_times, dtype=torch.float64, device=device)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    iteration_time_s = times.tolist()
    median = iteration_time_s.index(statistics.median_low(iteration_time_s))
    mine = {"rank": rank, "device": _device_name(device), "host": socket.gethostname(),
            "rank_time_s": rank_times, "clock_origin_s": origins[median], "blocks": blocks,
            "ops": [op_record(schedule, rank, step, op, *spans[median][step])
                    for step, op in enumerate(schedule.programs[rank])]}
    gathered = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(mine, gathered, dst=0)
    if rank != 0:
        return None
    return {"iteration_time_s": iteration_time_s, "median_iteration": median, "ranks": gathered}


def _run_program(program: list[Op], ops: TorchOps, clock, fault: Fault | None, rank: int,
                 report: Callable[[str, int], None]) -> tuple[list[tuple[float, float]], float]:
    """Run one iteration of ``program``; (start_s, end_s) per step and the end-to-end seconds."""
    marks: list[list] = [[None, None] for _ in program]
    pending = {}
    clock.start()
    for step, op in enumerate(program):
        waits = op.is_comm or isinstance(op, Wait)
        report("communicating" if waits else "computing", step)
        if fault is not None and fault.hits(rank, step):
            # Before the op is issued (a send/recv batch's later ops went out with its first).
            report("busy in its own code", step)
            fault.fire(rank, step)
        start = clock.mark()
        if isinstance(op, Wait):
            issued, work = pending.pop(op.handle)
            work.wait()
            end = clock.mark()
            marks[issued][1] = end
        else:
            work = ops.run(step, op)
            end = clock.mark()
            if work is not None:
                pending[op.handle] = (step, work)
        first = ops.issued_at(step)
        marks[step][0] = start if first == step else marks[first][0]  # issued with its batch
        if marks[step][1] is None:
            marks[step][1] = end
    stop = clock.mark()
    clock.finish()
    spans = [(clock.seconds(start), clock.seconds(end)) for start, end in marks]
    return spans, clock.seconds(stop)


def op_record(schedule: Schedule, rank: int, step: int, op: Op, start_s: float, end_s: float) -> dict:
    """The per-op record shared with the simulator's per-op output (same keys, same units)."""
    return {"rank": rank, "step": step, "kind": op.kind, "group": getattr(op, "group", None),
            "bytes": schedule.payload_bytes(rank, op), "flops": schedule.flops(rank, op),
            "start_s": start_s, "end_s": end_s, "duration_s": end_s - start_s}


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()})"
