"""What each rank runs under `tpsim bench`: every microbenchmark schedule, timed the nccl-tests way.

``bench_rank`` is a launcher job (``executor.launch.run_local(cases, options, nproc, job=bench_rank)``),
so ranks are forked, rendezvous and are supervised exactly as under `tpsim run`. For each case
(``executor.bench_cases``): create its groups (``executor.groups``, in declared order on every rank),
allocate its buffers, enter a barrier on the default group, run the ``warmup`` untimed repetitions
back to back, then time the ``iters`` timed ones back to back, and keep ``elapsed / iters``, the
time per op, as nccl-tests does (its ``-w`` / ``-n``). The warm-up absorbs the barrier's release
skew, so the timed ops run in steady state. Ops are issued by ``executor.ops_torch``, the calls a
schedule's own ops make; an asynchronous op (the send/recv exchange) completes at its ``wait``.

Buffers hold zeros for communication (sums of zeros never overflow nor go denormal, whatever the
repetition count) and uniform [0, 1) values for gemm operands. Nothing is checked: the values are
meaningless after a repeated in-place reduce, so the reduce's scratch copy that ``tpsim run`` makes on
gloo for live non-root buffers is not made here either (a schedule's reduce partials are overwritten
next, so they need none).

A gemm run by several CPU ranks at once is timed as a lock-step schedule runs it: each rank runs one
gemm, then all wait for each other (a barrier on their group), ``iters`` times; the barrier's own time
is taken off (and the result is never below the rank's own back-to-back gemm). Ranks that share
cores finish such a phase apart, and the phase lasts until the last one: back-to-back gemms, each rank at its own pace, would hide that (and did: they read up to twice as
fast as the phases of a real schedule on this kind of host). On GPU, where ranks share nothing, gemms
run back to back.

An interleaved case (``executor.bench_cases``: a gemm, then the op, each repetition) is timed per step
instead: the op from its issue to its completion (for the send/recv exchange, from the batch that
issues its ``isend`` and ``irecv`` to the last ``wait``), as ``tpsim run`` times a schedule's ops, and
the gemm on its own; the rank keeps both, as seconds per repetition (``{"op_s", "gemm_s"}``).

At the end rank 0 gathers, per case, every rank's seconds per op (None where the rank took no part).
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from executor.buffers import TORCH_DTYPES
from executor.clock import clock_for
from executor.groups import GroupCache
from executor.ops_torch import TorchOps
from executor.run_rank import Rendezvous, RunOptions, init_distributed
from simulator.ir.ops import Wait
from simulator.ir.schedule import Schedule

__all__ = ["bench_rank"]


def _nothing(*_args, **_kwargs) -> None:
    return None


def bench_rank(cases: list[Schedule], options: RunOptions, rdv: Rendezvous, report=_nothing) -> list | None:
    """Time every case on this rank; rank 0 returns ``times[case][rank]``, seconds per op (None for a
    rank that took no part; ``{"op_s", "gemm_s"}`` for an interleaved case)."""
    report("rendezvous")
    device = init_distributed(options, rdv)
    try:
        cache = GroupCache()
        mine = [_time_case(index, case, rdv.rank, device, cache, report) for index, case in enumerate(cases)]
        report("gathering results")
        gathered = [None] * rdv.world_size if rdv.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
    finally:
        report("done")
    dist.destroy_process_group()
    if rdv.rank != 0:
        return None
    return [[gathered[rank][index] for rank in range(rdv.world_size)] for index in range(len(cases))]


def _buffers(case: Schedule, rank: int, device: torch.device) -> dict[str, torch.Tensor]:
    out = {}
    gemm = case.options["bench"]["op"] == "gemm"
    for name, spec in case.buffers[rank].items():
        make = torch.rand if gemm and name in ("a", "b") else torch.zeros
        out[name] = make(spec.shape, dtype=TORCH_DTYPES[spec.dtype], device=device)
    return out


def _time_case(index: int, case: Schedule, rank: int, device: torch.device, cache: GroupCache,
               report) -> float | dict | None:
    """Seconds per timed repetition of ``case`` on ``rank`` (interleaved: op and gemm apart); None if the
    rank has no ops in it."""
    report("creating groups", index)
    groups = cache.create(case, rank)
    program = case.programs[rank]
    buffers = _buffers(case, rank, device)
    ops = TorchOps(case, rank, buffers, groups, reduce_clobbers_input=False, seed=0)  # timing only: no check
    bench = case.options["bench"]
    # One report per case, none inside the timed loop: the case index is enough to name a hang.
    report("communicating", index, 0, 0 if program else -1)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if not program:
        return None
    if "gemm" in groups and device.type == "cpu":
        return _synchronised_gemm_s(program[0], ops, groups["gemm"].handle, bench)
    if bench.get("form") == "interleaved":
        return _interleaved_s(program, ops, clock_for(device), bench)
    clock = clock_for(device)
    pending = {}
    clock.start()
    begin = clock.mark() if bench["warmup_steps"] == 0 else None
    for step, op in enumerate(program):
        if step == bench["warmup_steps"] and step > 0:
            begin = clock.mark()
        if isinstance(op, Wait):
            pending.pop(op.handle).wait()
            continue
        work = ops.run(step, op)
        if work is not None:
            pending[op.handle] = work
    end = clock.mark()
    clock.finish()
    return (clock.seconds(end) - clock.seconds(begin)) / bench["iters"]


def _interleaved_s(program: list, ops: TorchOps, clock, bench: dict) -> dict[str, float]:
    """Seconds per repetition in the op and in the gemm before it, over the timed repetitions of an
    interleaved case (each repetition: the gemm, then the op's steps)."""
    per_rep = bench["steps_per_rep"]
    pending = {}
    marks = []  # (gemm start, gemm end = op issue, op completion) per timed repetition
    clock.start()
    for first in range(0, len(program), per_rep):
        begin = clock.mark()
        ops.run(first, program[first])
        issued = clock.mark()
        for step in range(first + 1, first + per_rep):
            op = program[step]
            if isinstance(op, Wait):
                pending.pop(op.handle).wait()
                continue
            work = ops.run(step, op)
            if work is not None:
                pending[op.handle] = work
        done = clock.mark()
        if first >= bench["warmup_steps"]:
            marks.append((begin, issued, done))
    clock.finish()
    iters = bench["iters"]
    gemm_s = sum(clock.seconds(issued) - clock.seconds(begin) for begin, issued, _ in marks) / iters
    op_s = sum(clock.seconds(done) - clock.seconds(issued) for _, issued, done in marks) / iters
    return {"op_s": op_s, "gemm_s": gemm_s}


def _synchronised_gemm_s(gemm, ops: TorchOps, group, bench: dict) -> float:
    """Seconds per gemm when the ranks of ``group`` each run one and then wait for all: a compute phase
    of a lock-step schedule. Ranks sharing cores finish such a phase apart (the OS runs some before
    others), and the phase lasts until the last; back-to-back gemms would hide that. The barrier's
    own time, measured alone just before, is taken off; a phase is never counted shorter than the
    rank's own back-to-back gemm (for tiny gemms the difference is below the barrier's noise)."""
    for _ in range(bench["warmup"]):
        ops.run(0, gemm)
        dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(bench["iters"]):
        ops.run(0, gemm)
    alone_s = (time.perf_counter() - start) / bench["iters"]
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(bench["iters"]):
        dist.barrier(group=group)
    barrier_s = (time.perf_counter() - start) / bench["iters"]
    start = time.perf_counter()
    for _ in range(bench["iters"]):
        ops.run(0, gemm)
        dist.barrier(group=group)
    return max(alone_s, (time.perf_counter() - start) / bench["iters"] - barrier_s)
