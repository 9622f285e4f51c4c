"""How long `tpsim bench` takes at the least, from its cases and repetitions, held against ``--timeout`` up front.

Every case repeats its op ``warmup + iters`` times (``executor.bench_cases``), and each repetition is a
schedule step built before any rank starts: ``--iters 100000000`` used to build for half a minute and
gigabytes, then time out in the ranks' first step. So before the cases are built, their one-repetition
forms are counted (cheap), and

- the time is at least ``FLOOR_US_PER_OP`` per repeated op on the busiest rank: a floor well under what
  gloo takes here (a 1 KiB all_reduce over 2 ranks measured 1,330 us per op on the 2-core development
  machine, loaded; a 256 MiB one is hundreds of ms), so a refusal is certain to be right; over
  ``--timeout`` it is refused in one line with what to change;
- building the repeated cases is guarded like any schedule (``simulator.guard``: past 5 minutes or the
  free memory it needs ``--force``).
"""

from __future__ import annotations

import dataclasses
import math

from simulator.errors import InputError
from simulator.guard.check import Estimate, format_seconds, guard
from simulator.guard.costs import BUILD_BYTES_PER_OP, BUILD_US_PER_OP

__all__ = ["FLOOR_US_PER_OP", "check_bench_time"]

FLOOR_US_PER_OP = 50.0
"""Microseconds a rank spends at the least on one repetition of a bench op (module doc)."""


def check_bench_time(settings, nproc: int, timeout_s: float, force: bool = False) -> None:
    """InputError when ``settings``' cases on ``nproc`` ranks cannot finish within ``timeout_s`` even at
    ``FLOOR_US_PER_OP``; the build of their repetitions guarded (``force``: run past the guard)."""
    reps = settings.warmup + settings.iters
    once = dataclasses.replace(settings, warmup=0, iters=1).cases(nproc)
    steps = sum(max((len(program) for program in case.programs), default=0) for case in once)
    ops = sum(len(program) for case in once for program in case.programs)
    seconds = steps * reps * FLOOR_US_PER_OP * 1e-6
    if seconds > timeout_s:
        raise InputError(f"--timeout {timeout_s:g}: {len(once):,} measurements x {reps:,} repetitions "
                         f"(--warmup {settings.warmup} + --iters {settings.iters}) take at least "
                         f"{format_seconds(seconds)} here ({FLOOR_US_PER_OP:g} us per op, a floor), more than "
                         f"the timeout; use fewer --iters/--warmup, sizes or ops, or --timeout "
                         f"{math.ceil(seconds * 10):,} or more")
    guard(Estimate(f"building {len(once):,} measurements x {reps:,} repetitions: {ops * reps:,} ops",
                   ops * reps * BUILD_US_PER_OP * 1e-6, ops * reps * BUILD_BYTES_PER_OP), "tpsim bench", force)
