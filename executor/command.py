"""`tpsim run`: execute a schedule on N local ranks with torch.distributed, check it, time it.

    tpsim run <schedule args> --backend gloo|nccl --nproc N [--warmup W] [--iters I] [--seed S]
              [--timeout SECONDS] [--tolerance X] [--json] [-o|--out OUT.json] [--trace TRACE.json]

``<schedule args>`` are those of `tpsim schedule` (``--algo ... | --schedule FILE``). ``--out`` writes
the measured record (tpsim-measured JSON, what `tpsim compare` reads); ``--json`` prints it on stdout
instead of the summary. The old ``--json FILE`` still writes FILE, as ``--out FILE`` does, with a
deprecation note on stderr. Exit status: 0 correct, 1 wrong results (with a per-rank report) or a
failed job (the first failing rank's traceback, or the ranks that never arrived within ``--timeout``),
2 bad input (one line, nothing written).

On gloo, a run whose arithmetic alone would outlast ``--timeout`` at this host's measured gemm rate is
refused before it starts, and one estimated at more than a few seconds says so first
(``executor.estimate``); while it runs, a line every 10 s on a non-terminal stderr (a bar on a
terminal) counts the iterations the slowest rank has finished (``simulator.progress``).

Registration imports neither torch nor the rest of the executor; ``run_command`` does.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from executor.preflight import check_nccl_host, check_run_flags, check_world_size
from simulator.commands.defaults import default_schedule_gpus
from simulator.commands.pipeline_show import pipeline_line
from simulator.commands.schedule_args import add_schedule_arguments, layers_of, schedule_from_args
from simulator.errors import InputError
from simulator.files import write_json_atomic
from simulator.guard.schedules import before_build
from simulator.limits import check_local_ranks
from simulator.progress import Progress

RUN_DTYPE_HELP = "; the ranks compute in it"
"""What ``--dtype`` means to `tpsim run` (added to the shared help)."""


def add_run_arguments(parser: argparse.ArgumentParser, under_torchrun: bool = False) -> None:
    """The executor's own arguments (shared by `tpsim run` and `torchrun -m executor`)."""
    group = parser.add_argument_group("run")
    group.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                       help="gloo (CPU tensors) or nccl (one CUDA GPU per rank); default gloo")
    if under_torchrun:
        group.add_argument("--nproc", type=int, metavar="N", help="optional; must equal torchrun's WORLD_SIZE")
    else:
        group.add_argument("--nproc", type=int, metavar="N",
                           help="local ranks to start (default: the schedule's world size; must equal it)")
    group.add_argument("--warmup", type=int, default=1, metavar="W", help="untimed iterations first (default 1)")
    group.add_argument("--iters", type=int, default=5, metavar="I", help="timed iterations (default 5)")
    group.add_argument("--seed", type=int, default=0, help="seed of the input values (default 0)")
    group.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                       help="end the whole job after this long, naming ranks that never arrived (default 300)")
    group.add_argument("--tolerance", type=float, metavar="X",
                       help="max-norm relative error allowed (default per dtype: float64 1e-12, float32 1e-5, "
                            "bfloat16 2e-2)")
    add_json_out_arguments(group, "the measured record (tpsim-measured JSON)", "the summary")
    group.add_argument("--trace", metavar="TRACE.json", help="write a Chrome trace of the median iteration")
    # Test hook (executor.faults): make RANK raise or hang at step WHERE (or at init).
    group.add_argument("--inject-fault", metavar="RANK:WHERE[:ACTION]", help=argparse.SUPPRESS)


def add_json_out_arguments(group: argparse._ArgumentGroup, record: str, human: str) -> None:
    """``--json`` (print ``record`` on stdout instead of ``human``) and ``-o/--out FILE`` (write it).

    ``--json FILE``, the old spelling of ``--out FILE``, still parses (``nargs="?"``) and is read back
    by ``json_out_from_args``, which says it is deprecated.
    """
    group.add_argument("--json", nargs="?", const=True, default=False, metavar="FILE",
                       help=f"print {record} on stdout instead of {human} (--json FILE, the old form of "
                            f"--out FILE, is deprecated)")
    group.add_argument("-o", "--out", metavar="OUT.json", help=f"write {record} to this file")


def json_out_from_args(args: argparse.Namespace, prog: str) -> str | None:
    """Turn the deprecated ``--json FILE`` into ``--out FILE``, leaving ``args.json`` a bool (print JSON
    on stdout) and ``args.out`` the file or None; the deprecation note to print (one line), or None.

    The caller prints the note once the rest of the input has passed its checks, so that bad input
    still gets one line on stderr, the error.
    """
    note = None
    if isinstance(args.json, str):
        if not args.json:
            raise InputError("--json '': --json takes no file now; write one with --out FILE (--json alone "
                             "prints the JSON on stdout)")
        if args.out is not None:
            raise InputError(f"--json {args.json} is the deprecated form of --out FILE, and --out {args.out} is "
                             f"given too; give --out FILE only (add --json, without a file, to print the JSON)")
        note = (f"{prog}: note: --json FILE is deprecated; use --out {args.json} (--json alone prints the JSON "
                f"on stdout)")
        args.out, args.json = args.json, False
    if args.out == "":
        raise InputError("--out '': give a file name, e.g. --out measured.json")
    return note


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `run`."""
    p = subparsers.add_parser(
        "run", help="run a schedule with torch.distributed (gloo or NCCL): check it and time it",
        description="Run a schedule on N local ranks (forked, FileStore rendezvous), check every output block "
                    "against float64, and time it. On a cluster: "
                    "torchrun --nproc-per-node G -m executor -- <same args>.")
    add_schedule_arguments(p, dtype_help=RUN_DTYPE_HELP)
    add_run_arguments(p)
    p.set_defaults(func=run_command)


def options_from_args(args: argparse.Namespace):
    """The RunOptions the arguments describe; InputError for bad values (imports torch)."""
    fault = check_run_flags(args)
    from executor.run_rank import RunOptions  # torch: registration must not import it (module doc)

    return RunOptions(backend=args.backend, warmup=args.warmup, iters=args.iters, seed=args.seed,
                      timeout_s=args.timeout, tolerance=args.tolerance, fault=fault)


def finish(schedule, result: dict, options, args: argparse.Namespace, out=None) -> int:
    """Write the measured JSON and trace (atomically), print the summary (with ``--json`` the record);
    0 if correct, else 1."""
    from executor.measure import chrome_trace, measured_record, summary  # torch, as above

    record = measured_record(schedule, result, options)
    pipeline = schedule.options.get("pipeline")
    if pipeline is not None:  # a whole pipelined step (simulator.pipeline.lower): its time is the step's
        record["pipeline"] = pipeline
    if args.out:
        write_json_atomic(args.out, record)
    if args.trace:
        write_json_atomic(args.trace, chrome_trace(schedule, record))
    stream = out or sys.stdout
    if args.json:
        json.dump(record, stream, indent=1)
        stream.write("\n")
        return 0 if record["ok"] else 1
    lines = summary(record)
    if pipeline is not None:
        lines.insert(1, f"pipeline: {pipeline_line(pipeline)}; time_s is the whole step")
    layers = layers_of(args, schedule.workload)
    if layers > 1:
        lines.append(f"model: {layers} blocks, {layers * record['time_s'] * 1e3:.3f} ms ({layers} x the measured "
                     f"block; one block ran)")
    written = [f"{label} {path}" for label, path in (("measured JSON", args.out), ("trace", args.trace)) if path]
    if written:
        lines.append("wrote " + ", ".join(written))
    stream.write("\n".join(lines) + "\n")
    return 0 if record["ok"] else 1


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def run_command(args: argparse.Namespace) -> int:
    """`tpsim run`: the arguments, then the schedule, then whether it fits in memory and time, before any
    rank starts."""
    if args.nproc is not None:
        check_local_ranks(args.nproc)  # forked here; torchrun's ranks (executor.__main__) are not
        default_schedule_gpus(args, args.nproc, "--nproc")
    note = json_out_from_args(args, "tpsim run")
    check_run_flags(args)  # everything the input decides, before torch (executor.preflight)
    schedule = schedule_from_args(args, before_build("tpsim run", args.force))
    if args.nproc is None:
        args.nproc = schedule.world_size
        check_local_ranks(args.nproc, f"--nproc (the schedule's {schedule.world_size} ranks)")
    check_world_size(schedule, args.nproc)  # a wrong --nproc first: it needs no estimate
    from executor.memory import check_run_memory  # numpy, not torch: registration imports neither
    if args.backend == "nccl":
        check_nccl_host(args.nproc)
    else:
        check_run_memory(schedule, args.backend)  # NCCL's is against free GPU memory, which needs torch
    options = options_from_args(args)
    from executor.estimate import check_run_time  # torch, as above
    from executor.launch import JobFailed, check_job, run_local

    check_job([schedule], options, args.nproc)  # NCCL: what torch sees (a CPU-only build)
    if options.backend == "nccl":
        check_run_memory(schedule, options.backend)
    if options.backend == "gloo":
        found = check_run_time(schedule, options.warmup, options.iters, options.timeout_s,
                               dtype_flag=getattr(args, "schedule", None) is None)
        if found is not None:
            sys.stderr.write(f"tpsim run: the arithmetic alone takes about {found.about()} here "
                             f"({found.describe()}); --timeout {options.timeout_s:g}\n")
    if note:  # after every check: bad input stays one line
        sys.stderr.write(note + "\n")
    iterations = options.warmup + options.iters
    progress = Progress("tpsim run", total=iterations, unit="iteration", note=f"--timeout {options.timeout_s:g}",
                        background=False)  # no thread: the launcher forks

    def on_poll(board) -> None:
        done = board.completed(iterations, 1)
        if done == iterations and not progress.what:
            progress.phase("checking the results")
        progress.moveto(done)

    previous = signal.signal(signal.SIGTERM, _terminate)  # so the launcher's cleanup runs
    try:
        [result] = run_local([schedule], options, args.nproc, on_poll=on_poll)
    except JobFailed as failure:
        progress.close()
        sys.stderr.write(f"tpsim run: {failure.report}\n")
        return 1
    finally:
        progress.close()
        signal.signal(signal.SIGTERM, previous)
    return finish(schedule, result, options, args)
