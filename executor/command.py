"""`tpsim run`: execute a schedule on N local ranks with torch.distributed, check it, time it.

    tpsim run <schedule args> --backend gloo|nccl --nproc N [--warmup W] [--iters I] [--seed S]
              [--timeout SECONDS] [--tolerance X] [--json OUT.json] [--trace TRACE.json]

``<schedule args>`` are those of `tpsim schedule` (``--algo ... | --schedule FILE``). Exit status: 0
correct, 1 wrong results (with a per-rank report) or a failed job (the first failing rank's traceback,
or the ranks that never arrived within ``--timeout``), 2 bad input (one line, nothing written).

Registration imports neither torch nor the rest of the executor; ``run_command`` does.
"""

from __future__ import annotations

import argparse
import signal
import sys

from executor.faults import Fault
from simulator.commands.schedule_args import add_schedule_arguments, layers_of, schedule_from_args
from simulator.errors import InputError
from simulator.files import write_json_atomic
from simulator.limits import check_local_ranks, check_seed, check_timeout, check_tolerance


def add_run_arguments(parser: argparse.ArgumentParser, under_torchrun: bool = False) -> None:
    """The executor's own arguments (shared by `tpsim run` and `torchrun -m executor`)."""
    group = parser.add_argument_group("run")
    group.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                       help="gloo (CPU tensors) or nccl (one CUDA GPU per rank); default gloo")
    if under_torchrun:
        group.add_argument("--nproc", type=int, metavar="N", help="optional; must equal torchrun's WORLD_SIZE")
    else:
        group.add_argument("--nproc", type=int, metavar="N", required=True,
                           help="local ranks to start (must equal the schedule's world size)")
    group.add_argument("--warmup", type=int, default=1, metavar="W", help="untimed iterations first (default 1)")
    group.add_argument("--iters", type=int, default=5, metavar="I", help="timed iterations (default 5)")
    group.add_argument("--seed", type=int, default=0, help="seed of the input values (default 0)")
    group.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                       help="end the whole job after this long, naming ranks that never arrived (default 300)")
    group.add_argument("--tolerance", type=float, metavar="X",
                       help="max-norm relative error allowed (default per dtype: float64 1e-12, float32 1e-5, "
                            "bfloat16 2e-2)")
    group.add_argument("--json", metavar="OUT.json", help="write the measured record (tpsim-measured JSON)")
    group.add_argument("--trace", metavar="TRACE.json", help="write a Chrome trace of the median iteration")
    # Test hook (executor.faults): make RANK raise or hang at step WHERE (or at init).
    group.add_argument("--inject-fault", metavar="RANK:WHERE[:ACTION]", help=argparse.SUPPRESS)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `run`."""
    p = subparsers.add_parser(
        "run", help="run a schedule with torch.distributed (gloo or NCCL): check it and time it",
        description="Run a schedule on N local ranks (forked, FileStore rendezvous), check every output block "
                    "against float64, and time it. On a cluster: "
                    "torchrun --nproc-per-node G -m executor -- <same args>.")
    add_schedule_arguments(p)
    add_run_arguments(p)
    p.set_defaults(func=run_command)


def options_from_args(args: argparse.Namespace):
    """The RunOptions the arguments describe; InputError for bad values (imports torch)."""
    from executor.run_rank import RunOptions  # torch: registration must not import it (module doc)

    if args.json is not None and args.json == args.trace:
        raise InputError(f"--json and --trace name the same file {args.json!r}")
    check_seed(args.seed)
    if args.tolerance is not None:
        check_tolerance(args.tolerance)
    check_timeout(args.timeout)
    fault = Fault.parse(args.inject_fault) if args.inject_fault else None
    return RunOptions(backend=args.backend, warmup=args.warmup, iters=args.iters, seed=args.seed,
                      timeout_s=args.timeout, tolerance=args.tolerance, fault=fault)


def finish(schedule, result: dict, options, args: argparse.Namespace, out=None) -> int:
    """Write the measured JSON and trace (atomically), print the summary; 0 if correct, else 1."""
    from executor.measure import chrome_trace, measured_record, summary  # torch, as above

    record = measured_record(schedule, result, options)
    if args.json:
        write_json_atomic(args.json, record)
    if args.trace:
        write_json_atomic(args.trace, chrome_trace(schedule, record))
    lines = summary(record)
    layers = layers_of(args, schedule.workload)
    if layers > 1:
        lines.append(f"model: {layers} blocks, {layers * record['time_s'] * 1e3:.3f} ms ({layers} x the measured "
                     f"block; one block ran)")
    written = [f"{label} {path}" for label, path in (("measured JSON", args.json), ("trace", args.trace)) if path]
    if written:
        lines.append("wrote " + ", ".join(written))
    (out or sys.stdout).write("\n".join(lines) + "\n")
    return 0 if record["ok"] else 1


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def run_command(args: argparse.Namespace) -> int:
    """`tpsim run`: the arguments, then the schedule, then whether it fits in memory, before any rank starts."""
    check_local_ranks(args.nproc)  # forked here; torchrun's ranks (executor.__main__) are not
    options = options_from_args(args)
    schedule = schedule_from_args(args)
    from executor.launch import JobFailed, check_job, run_local  # torch, as above
    from executor.memory import check_run_memory

    check_job([schedule], options, args.nproc)  # a wrong --nproc first: it needs no estimate
    check_run_memory(schedule, options.backend)

    previous = signal.signal(signal.SIGTERM, _terminate)  # so the launcher's cleanup runs
    try:
        [result] = run_local([schedule], options, args.nproc)
    except JobFailed as failure:
        sys.stderr.write(f"tpsim run: {failure.report}\n")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    return finish(schedule, result, options, args)
