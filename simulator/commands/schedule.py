"""`tpsim schedule` (build, save, show, account) and `tpsim verify` (prove it on numbers)."""

from __future__ import annotations

import argparse
import json
import sys

from simulator.commands.pipeline_args import pipelined
from simulator.commands.pipeline_show import pipeline_grid, pipeline_line, verify_pipeline
from simulator.commands.schedule_args import add_schedule_arguments, schedule_from_args
from simulator.errors import InputError
from simulator.ir.accounting import account
from simulator.ir.checks import check_workload
from simulator.ir.interpret import DEFAULT_TOLERANCE, float64_bytes, interpret
from simulator.ir.printout import format_schedule, workload_label
from simulator.ir.schedule import Schedule
from simulator.ir.serialize import save_schedule
from simulator.ir.validate import validate_schedule
from simulator.guard.check import guard
from simulator.guard.costs import verify_estimate, workload_flops
from simulator.guard.schedules import before_build
from simulator.limits import check_memory, check_seed, check_tolerance
from simulator.progress import Progress


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `schedule` and `verify`."""
    p = subparsers.add_parser("schedule", help="build a schedule; print its accounting, grid or JSON",
                              description="Build the schedule of one algorithm on one grid for one workload.")
    add_schedule_arguments(p, dtype_help="; it sizes every buffer and message")
    p.add_argument("--out", metavar="FILE.json", help="save the schedule (lossless JSON; missing folders are made)")
    # One printout per run: --json's stdout must stay one parseable object, so the grid cannot join it.
    printout = p.add_mutually_exclusive_group()
    printout.add_argument("--show", action="store_true", help="print the step x rank grid (not with --json)")
    p.add_argument("--ranks", metavar="R0-R1", help="with --show: which ranks (default the first 8)")
    printout.add_argument("--json", action="store_true",
                          help="print algorithm, grid and per-rank accounting as JSON (not with --show)")
    p.set_defaults(func=schedule_command)

    v = subparsers.add_parser("verify", help="run a schedule in the numpy interpreter against dense float64",
                              description="Prove a schedule correct on seeded numbers; exit 1 if it is not.")
    add_schedule_arguments(v, dtype_help="; verify computes in float64 whatever it is")
    v.add_argument("--seed", type=int, default=0, help="seed of the input values (default 0)")
    v.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"max-norm relative error allowed (default {DEFAULT_TOLERANCE:g})")
    v.set_defaults(func=verify_command)


def _rank_range(text: str | None, world: int) -> list[int] | None:
    if text is None:
        return None
    try:
        first, _, last = text.partition("-")
        first, last = int(first), int(last or first)
    except ValueError:
        raise InputError(f"--ranks {text!r}: expected R or R0-R1, e.g. 0-7") from None
    if first > last or first < 0 or last >= world:  # before the list: 0-99999999999 is not built
        raise InputError(f"--ranks {text!r}: ranks run 0..{world - 1}")
    return list(range(first, last + 1))


def summary(schedule: Schedule) -> dict:
    """The JSON object of `tpsim schedule --json`."""
    accounts = account(schedule)
    pipeline = {"pipeline": pipelined(schedule)} if pipelined(schedule) is not None else {}
    return {"algorithm": schedule.algorithm, "grid": list(schedule.grid), "world_size": schedule.world_size,
            "workload": schedule.workload, "passes": schedule.passes, "dtype": schedule.dtype, **pipeline,
            "ops": sum(len(p) for p in schedule.programs),
            "per_rank": [a.to_dict() for a in accounts]}


def schedule_command(args: argparse.Namespace) -> int:
    if args.ranks is not None and not args.show:  # before building: a flag mistake needs no schedule
        raise InputError(f"--ranks {args.ranks} chooses the ranks --show prints; add --show or drop --ranks")
    with Progress("tpsim schedule", what="building the schedule") as progress:
        schedule = schedule_from_args(args, before_build("tpsim schedule", args.force, check=True))
        progress.phase(f"validating the schedule of {schedule.world_size:,} ranks")
        validate_schedule(schedule)
    ranks = _rank_range(args.ranks, schedule.world_size)
    if args.out:
        save_schedule(schedule, args.out)
    if args.json:
        json.dump(summary(schedule), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    pipeline = pipelined(schedule)
    if args.show:
        if pipeline is not None:
            print(pipeline_grid(pipeline))
        print(format_schedule(schedule, ranks))
        return 0
    accounts = account(schedule)
    payload = [a.payload_bytes for a in accounts]
    collectives = [a.collectives for a in accounts]
    print(f"{schedule.algorithm} grid {list(schedule.grid)} on {schedule.world_size} ranks, "
          f"{workload_label(schedule)}, pass {schedule.passes}, {schedule.dtype}")
    if pipeline is not None:
        print(f"  pipeline            {pipeline_line(pipeline)}")
    print(f"  ops per rank        {min(len(p) for p in schedule.programs)}..{max(len(p) for p in schedule.programs)}")
    print(f"  collectives / rank  {min(collectives)}..{max(collectives)}")
    print(f"  p2p msgs / rank     {max(a.p2p_messages for a in accounts)} (max)")
    print(f"  payload / rank      {min(payload):,}..{max(payload):,} bytes")
    print(f"  gemm FLOPs (total)  {sum(a.gemm_flops for a in accounts):,}")
    if args.out:
        print(f"  saved               {args.out}")
    return 0


def verify_command(args: argparse.Namespace) -> int:
    check_seed(args.seed)
    check_tolerance(args.tolerance)
    with Progress("tpsim verify", what="building the schedule") as progress:
        schedule = schedule_from_args(args, before_build("tpsim verify", args.force))
    if pipelined(schedule) is not None:
        return verify_pipeline(schedule, args.seed, args.tolerance)
    # Refused up front where it cannot fit: an allocation the kernel grants lazily would otherwise run
    # into the out-of-memory killer instead of a MemoryError. That floor is certain; the guard's estimate
    # adds the attention scores' [b, a, s, s] arrays, which the dense reference holds whole.
    workload = check_workload(schedule)
    what = f"{schedule.algorithm} {list(schedule.grid)} {workload.label()}"
    check_memory(float64_bytes(schedule), f"verifying {what}", "verify smaller sizes on the same grid",
                 " of float64 arrays (every rank's buffers and the dense reference)")
    guard(verify_estimate(what, workload_flops(workload), float64_bytes(schedule), workload), "tpsim verify",
          args.force)
    try:
        with Progress("tpsim verify", what=f"interpreting {what} in float64"):
            result = interpret(schedule, seed=args.seed)
    except MemoryError as error:
        raise InputError(f"verifying {what} ran out of memory ({error}); verify smaller sizes on the same "
                         f"grid") from None
    print(f"{schedule.algorithm} grid {list(schedule.grid)} {workload_label(schedule)} pass {schedule.passes}: "
          f"max relative error per output (float64 interpreter, seed {args.seed})")
    width = max(4, *map(len, result.errors))
    for name, error in result.errors.items():
        verdict = "ok" if error <= args.tolerance else "FAIL"
        print(f"  {name:{width}s} {error:.2e}  {verdict}")
    ok = result.ok(args.tolerance)
    print("verified" if ok else f"FAILED: an output exceeds the tolerance {args.tolerance:g}")
    return 0 if ok else 1
