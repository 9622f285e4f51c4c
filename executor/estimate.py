"""How long a `tpsim run` on CPU ranks computes, estimated before a rank starts.

gloo ranks compute on this host's cores, one thread each (``executor.launch``), and how fast depends
on the dtype and the CPU: issue 15's host ran bfloat16 on gloo at well under 1 GFLOP/s, while the
development machine, whose cores have bfloat16 instructions (avx512_bf16), runs it twice as fast as
float32. A rate written down here would be wrong by two orders of magnitude somewhere, so it is
measured here and now: ``probe_rates`` times 256 x 256 x 256 products (``torch.mm``, one thread, in
a forked child as a rank runs; the best of a few, some 20 ms in all on a fast core, 0.1 s at
1 GFLOP/s) for each dtype the schedule computes in.

Measured on the development machine (AMD EPYC, 2 cores with avx512_bf16; torch 2.13.0 CPU, one
thread, GFLOP/s per core; ``torch.mm`` of n x n x n, best of 1 s of repeats):

===========  ======  ======  ======  ======
dtype        n=128   n=256   n=512   n=1024
===========  ======  ======  ======  ======
float32      75      83      74      73
bfloat16     82      156     190     184
float64      27      33      31      36
===========  ======  ======  ======  ======

and its 256 probe there gives float32 80-90, bfloat16 about 175, float64 30-37. Whole runs there
sit above the estimate, as they must: 1d on 2 ranks, gemm m = k = n = 4096, bfloat16 (206 GFLOP per
rank per iteration) is estimated at 1.18 s per iteration and measured at 1.39 s; summa25d [2,2,2] on
mlp m = 2048, h = 1024, float32 (12.9 GFLOP per rank, 8 ranks on 2 cores) at 0.63 s and measured at
2.2 s (the rest is gloo's communication).

The estimate: the busiest rank's FLOPs per iteration (``Schedule.flops`` of every op, each at the
probed rate of its output's dtype), times the iterations (``--warmup`` + ``--iters``), times the
oversubscription ``max(1, ranks / cores)`` (ranks share the cores). Communication, start-up and the
float64 check are not in it: it is what the arithmetic alone needs, which a run does not beat by
more than the probe's error (a 256 product runs a little below larger ones: 175 against 190 GFLOP/s
above). ``tpsim run`` refuses a run whose estimate exceeds ``--timeout`` and says so before one
estimated at over ``NOTE_AFTER_S``. A run too small to take ``NOTE_AFTER_S`` even at ``FLOOR_GFLOPS``
is not probed at all.
"""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from simulator.errors import InputError
from simulator.ir.ops import Gemm, Local
from simulator.ir.schedule import Schedule

__all__ = ["FLOOR_GFLOPS", "NOTE_AFTER_S", "PROBE_N", "Estimate", "check_run_time", "cores", "estimate",
           "probe_rates"]

NOTE_AFTER_S = 5.0
"""An estimate above this many seconds is said on stderr before the run starts."""

PROBE_N = 256
"""Side of the probe's square products."""

FLOOR_GFLOPS = 0.1
"""A rate below any CPU core's: a run that would be quick even at it is not probed (most test-sized runs)."""


@dataclass(frozen=True)
class Estimate:
    """The arithmetic of a run on CPU ranks: ``seconds`` in all, and what it is made of."""

    seconds: float
    iterations: int
    flops_per_iteration: int
    """The busiest rank's FLOPs in one iteration."""
    rate_GFLOPs: float
    """That rank's effective rate: its FLOPs over its time, the cores shared (GFLOP/s)."""
    ranks: int
    cores: int
    dtypes: tuple[str, ...]

    def about(self) -> str:
        """The seconds as the messages say them: ``0.52 s``, ``6.4 s``, ``2,474 s``."""
        return _seconds(self.seconds)

    def describe(self) -> str:
        """``6 iterations x 25.8 GFLOP on the busiest of 8 ranks at 1.1 GFLOP/s (bfloat16, 2 cores)``."""
        share = f", {self.cores} core{'s' if self.cores != 1 else ''}" if self.ranks > self.cores else ""
        return (f"{self.iterations} iteration{'s' if self.iterations != 1 else ''} x "
                f"{self.flops_per_iteration / 1e9:.3g} GFLOP on the busiest of {self.ranks} ranks at "
                f"{self.rate_GFLOPs:.3g} GFLOP/s ({'/'.join(self.dtypes)}{share})")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _flops_by_dtype(schedule: Schedule) -> list[dict[str, int]]:
    per_rank = []
    for rank, program in enumerate(schedule.programs):
        flops: dict[str, int] = defaultdict(int)
        for op in program:
            if isinstance(op, (Gemm, Local)):
                flops[schedule.spec(rank, op.out).dtype] += schedule.flops(rank, op)
        per_rank.append(flops)
    return per_rank


def dtypes_of(schedule: Schedule) -> set[str]:
    """The dtypes the schedule computes in (of its gemm and local ops' outputs)."""
    return {dtype for flops in _flops_by_dtype(schedule) for dtype, n in flops.items() if n}


def estimate(schedule: Schedule, iterations: int, rates_GFLOPs: dict[str, float],
             n_cores: int | None = None) -> Estimate:
    """The arithmetic of ``iterations`` iterations of ``schedule`` at ``rates_GFLOPs`` (dtype -> GFLOP/s of
    one core) on ``n_cores`` cores (default: ``cores()``)."""
    n_cores = n_cores or cores()
    share = max(1.0, schedule.world_size / n_cores)
    busiest, busiest_s = {}, 0.0
    for flops in _flops_by_dtype(schedule):
        seconds = sum(n / (rates_GFLOPs[dtype] * 1e9) for dtype, n in flops.items() if n)
        if seconds >= busiest_s:
            busiest, busiest_s = flops, seconds
    total = sum(busiest.values())
    seconds = busiest_s * share * iterations
    rate = total / (busiest_s * share) / 1e9 if busiest_s > 0 else 0.0
    return Estimate(seconds, iterations, total, rate, schedule.world_size, n_cores,
                    tuple(sorted(d for d, n in busiest.items() if n)))


def check_run_time(schedule: Schedule, warmup: int, iters: int, timeout_s: float, *, dtype_flag: bool = True,
                   probe: Callable[[set[str]], dict[str, float]] | None = None) -> Estimate | None:
    """The estimate of a run on CPU ranks when it is worth saying (over ``NOTE_AFTER_S``), else None;
    InputError when it exceeds ``timeout_s``, naming the estimate, the timeout and what to change
    (``dtype_flag``: the schedule came from ``--dtype``, so suggesting float32 makes sense)."""
    iterations = warmup + iters
    dtypes = dtypes_of(schedule)
    if not dtypes:
        return None
    if estimate(schedule, iterations, dict.fromkeys(dtypes, FLOOR_GFLOPS)).seconds <= min(NOTE_AFTER_S, timeout_s):
        return None  # quick at any rate: no probe
    probe = probe or probe_rates
    rates = probe(dtypes)
    if not dtypes <= set(rates):
        return None  # the probe failed: no estimate rather than a wrong one
    found = estimate(schedule, iterations, rates)
    if found.seconds > timeout_s:
        advice = ["smaller sizes"]
        if dtype_flag and dtypes != {"float32"}:
            f32 = rates.get("float32") or probe({"float32"}).get("float32")
            if f32:
                as_f32 = estimate(schedule, iterations, dict.fromkeys(dtypes, f32)).seconds
                if as_f32 <= timeout_s:  # slow bfloat16 on a core without its instructions
                    advice.append(f"--dtype float32 (about {_seconds(as_f32)})")
        if iterations > 1:
            advice.append("fewer --iters/--warmup")
        advice.append(f"--timeout {math.ceil(3 * found.seconds)} or more (gloo's communication comes on top)")
        raise InputError(f"--timeout {timeout_s:g}: the run's arithmetic alone takes about {found.about()} "
                         f"here ({found.describe()}), more than the timeout; use {', '.join(advice[:-1])} or "
                         f"{advice[-1]}")
    return found if found.seconds > NOTE_AFTER_S else None


def _seconds(value: float) -> str:
    return f"{value:.2g} s" if value < 10 else f"{value:,.0f} s"


def probe_rates(dtypes) -> dict[str, float]:
    """GFLOP/s of one core of this host for ``PROBE_N``-cube products in each dtype (``torch.mm``, one
    thread), measured in a forked child so that this process never runs a torch kernel before it forks
    its ranks (``executor.launch``). A dtype whose probe failed is missing from the answer."""
    from executor.launch import _in_a_fork  # torch: only `tpsim run` gets here

    names = sorted(set(dtypes))
    text = _in_a_fork(lambda: "\n".join(f"{name} {_rate(name)!r}" for name in names))
    rates = {}
    for line in text.splitlines():
        name, value = line.split()
        rates[name] = float(value)
    return rates


def _rate(dtype: str) -> float:  # pragma: no cover - runs in the probe's child
    import torch

    from executor.buffers import TORCH_DTYPES

    torch.set_num_threads(1)
    a = torch.rand(PROBE_N, PROBE_N).to(TORCH_DTYPES[dtype])
    b = torch.rand(PROBE_N, PROBE_N).to(TORCH_DTYPES[dtype])
    out = torch.empty(PROBE_N, PROBE_N, dtype=TORCH_DTYPES[dtype])
    torch.mm(a, b, out=out)  # warm: the first call picks and loads the kernel
    best, spent, reps = float("inf"), 0.0, 0
    while reps < 2 or (spent < 0.02 and reps < 50):
        began = time.perf_counter()
        torch.mm(a, b, out=out)
        took = time.perf_counter() - began
        best, spent, reps = min(best, took), spent + took, reps + 1
    return 2 * PROBE_N ** 3 / best / 1e9
