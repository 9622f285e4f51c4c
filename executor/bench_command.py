"""`tpsim bench`: microbenchmarks through the executor: collectives, point-to-point and gemm throughput.

    tpsim bench --backend gloo|nccl --nproc N [--ops OP,...] [--sizes 1KiB:64MiB[:F] | --sizes A,B,...]
                [--group-sizes G,...] [--groups all|one] [--gemm-shapes MxKxN,...]
                [--gemm-concurrency C,...] [--form lock-step|interleaved|both] [--dtype D]
                [--warmup W] [--iters I] [--timeout S] [--json] [-o|--out OUT.json]

Every collective over every group size and message size, the pairwise send/recv exchange, and gemm
throughput over shapes, each timed the nccl-tests way (``executor.bench``) and printed as nccl-tests
tables (``--form interleaved``: each collective after a gemm of every ``--gemm-shapes`` shape, timed
the way a schedule meets it; ``executor.bench_cases``); ``--out`` writes the ``tpsim-bench`` record
(``executor.bench_report``) that ``tpsim calibrate --from-bench`` reads, and ``--json`` prints it on
stdout instead of the tables (the old ``--json FILE`` still writes FILE, with a deprecation note on
stderr). ``--dtype`` defaults to float32, not the schedule commands' bfloat16: bfloat16 on gloo's CPU
ranks is far slower than what a calibration wants to measure. Exit status 0, 1 for a failed job, 2 for
bad input.
While it runs, a line every 10 s on a non-terminal stderr counts the measurements done
(``simulator.progress``).

Registration imports neither torch nor the rest of the executor; ``bench_command`` does.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys

from executor.bench_cases import BENCH_OPS, BenchSettings
from executor.bench_memory import check_bench_memory
from executor.bench_report import bench_record, bench_rows, host_info, tables
from executor.bench_time import check_bench_time
from executor.command import add_json_out_arguments, json_out_from_args
from simulator.errors import InputError
from simulator.files import write_json_atomic
from simulator.guard import add_force_argument
from simulator.limits import check_local_ranks, check_shape, check_timeout
from simulator.progress import Progress
from simulator.sizes import parse_size

log = logging.getLogger(__name__)

BENCH_DTYPE = "float32"
"""``--dtype``'s default: float32, as calibration wants it (module doc)."""

OPS_HELP = "broadcast, reduce, all_reduce, all_gather, reduce_scatter, send, gemm"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `bench`."""
    p = subparsers.add_parser(
        "bench", help="microbenchmark collectives, send/recv and gemm through the executor (nccl-tests style)",
        description="Time every collective over group and message sizes, the pairwise send/recv exchange and "
                    "gemm throughput over shapes on N local ranks; print nccl-tests tables and write the "
                    "tpsim-bench JSON that `tpsim calibrate --from-bench` reads.")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo", help="default gloo")
    p.add_argument("--nproc", type=int, required=True, metavar="N", help="local ranks to start")
    p.add_argument("--ops", metavar="OP,...", help=f"what to measure (default all): {OPS_HELP}")
    p.add_argument("--sizes", default="1KiB:64MiB", metavar="MIN:MAX[:F] | S,S,...",
                   help="nccl-tests S values: MIN to MAX by factor F (default 2), or a list; default 1KiB:64MiB")
    p.add_argument("--group-sizes", metavar="G,...", help="collective group sizes (default: divisors of N from 2)")
    p.add_argument("--groups", choices=("all", "one"), default="all",
                   help="all: every disjoint group of a size runs at once, so every rank is busy as in a "
                        "schedule (default); one: a single group, the other ranks idle")
    p.add_argument("--gemm-shapes", metavar="MxKxN,...", help="gemm shapes (default 128^3 .. 1024^3 and two thin)")
    p.add_argument("--gemm-concurrency", metavar="C,...",
                   help="ranks running each gemm at once (default 1 and N)")
    p.add_argument("--form", choices=("lock-step", "interleaved", "both"), default="lock-step",
                   help="lock-step: each collective back to back, as nccl-tests (default); interleaved: each "
                        "repetition a gemm of every --gemm-shapes shape then the collective, on every rank, timed "
                        "as a schedule's op is (what CPU ranks sharing cores see in a schedule); both")
    p.add_argument("--dtype", choices=("float32", "float64", "bfloat16"), default=BENCH_DTYPE,
                   help=f"element type of every buffer and gemm (default {BENCH_DTYPE})")
    p.add_argument("--warmup", type=int, default=5, metavar="W", help="untimed ops per size (nccl-tests -w; default 5)")
    p.add_argument("--iters", type=int, default=20, metavar="I", help="timed ops per size (nccl-tests -n; default 20)")
    p.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                   help="end the whole job after this long (default 3600)")
    add_json_out_arguments(p, "the tpsim-bench record", "the tables")
    add_force_argument(p)
    p.set_defaults(func=bench_command)


def _ints(text: str | None, flag: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected integers separated by commas") from None
    if not values:
        raise InputError(f"{flag} {text!r}: give at least one value")
    return values


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"1KiB:64MiB"`` (factor 2), ``"1KiB:1MiB:4"`` or ``"1KiB,4KiB"`` -> sizes in bytes, ascending."""
    if ":" not in text:
        return tuple(sorted({parse_size(part) for part in text.split(",") if part.strip()}))
    parts = text.split(":")
    if len(parts) > 3:
        raise InputError(f"--sizes {text!r}: expected MIN:MAX or MIN:MAX:FACTOR")
    low, high = parse_size(parts[0]), parse_size(parts[1])
    try:
        factor = int(parts[2]) if len(parts) == 3 else 2
    except ValueError:
        raise InputError(f"--sizes {text!r}: the factor {parts[2]!r} is not an integer") from None
    if low < 1 or high < low or factor < 2:
        raise InputError(f"--sizes {text!r}: need 1 <= MIN <= MAX and FACTOR >= 2")
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= factor
    return tuple(sizes)


def parse_shapes(text: str | None) -> tuple[tuple[int, int, int], ...] | None:
    """``"512x512x512,1024x128x1024"`` -> ((512, 512, 512), (1024, 128, 1024))."""
    if text is None:
        return None
    shapes = []
    for part in (p.strip() for p in text.split(",")):
        try:
            m, k, n = (int(x) for x in part.lower().split("x"))
        except ValueError:
            raise InputError(f"--gemm-shapes {part!r}: expected MxKxN, e.g. 512x512x512") from None
        for shape in ((m, k), (k, n), (m, n)):  # A, B and C within simulator.limits
            check_shape(shape, f"--gemm-shapes {part}: a matrix")
        shapes.append((m, k, n))
    return tuple(shapes)


def settings_from_args(args: argparse.Namespace):
    """The BenchSettings the arguments describe; InputError for bad values."""
    if args.nproc < 1:
        raise InputError(f"--nproc must be >= 1, got {args.nproc}")
    check_local_ranks(args.nproc)
    check_timeout(args.timeout)
    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip()) if args.ops else BENCH_OPS
    changes = {"ops": ops, "sizes_bytes": parse_sizes(args.sizes),
               "group_sizes": _ints(args.group_sizes, "--group-sizes"),
               "groups": args.groups, "gemm_concurrency": _ints(args.gemm_concurrency, "--gemm-concurrency"),
               "dtype": args.dtype, "warmup": args.warmup, "iters": args.iters,
               "forms": ("lock-step", "interleaved") if args.form == "both" else (args.form,)}
    shapes = parse_shapes(args.gemm_shapes)
    if shapes is not None:
        changes["gemm_shapes"] = shapes
    return BenchSettings(**changes)


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def _warn_if_loaded(load: tuple[float, float, float]) -> None:
    """Warn that timings are noisy when the load average before the job (``load``) was over half the cores;
    said after the job, so that a failed job's report comes first."""
    cores = os.cpu_count() or 1
    if load[0] > 0.5 * cores:
        log.warning("load average %.2f on %d cores before the bench: other work shares this machine, timings "
                    "will be noisy", load[0], cores)


def bench_command(args: argparse.Namespace) -> int:
    """`tpsim bench`."""
    note = json_out_from_args(args, "tpsim bench")
    settings = settings_from_args(args)
    check_bench_time(settings, args.nproc, args.timeout, args.force)  # before the repetitions are built
    cases = settings.cases(args.nproc)
    if not cases:
        raise InputError(f"nothing to measure: --ops {','.join(settings.ops)} on --nproc {args.nproc} "
                         f"(collectives and send need 2 ranks or more)")
    check_bench_memory(cases, args.backend)  # before torch: a rank's allocator failure is a traceback
    if note:
        sys.stderr.write(note + "\n")
    # These import torch, which registering `tpsim bench` must not.
    from executor.bench import bench_rank
    from executor.launch import JobFailed, run_local
    from executor.run_rank import RunOptions

    options = RunOptions(backend=args.backend, timeout_s=args.timeout)
    load = os.getloadavg()
    log.info("bench: %d measurements on %d ranks (%s)", len(cases), args.nproc, args.backend)
    previous = signal.signal(signal.SIGTERM, _terminate)  # so the launcher's cleanup runs
    progress = Progress("tpsim bench", total=len(cases), unit="measurement", note=f"--timeout {args.timeout:g}",
                        background=False)  # no thread: the launcher forks
    try:
        times = run_local(cases, options, args.nproc, job=bench_rank,
                          on_poll=lambda board: progress.moveto(board.completed(1, len(cases))))
    except JobFailed as failure:
        # The root cause first: a busy host is context for it, never the headline.
        progress.close()
        sys.stderr.write(f"tpsim bench: {failure.report}\n")
        _warn_if_loaded(load)
        return 1
    finally:
        progress.close()
        signal.signal(signal.SIGTERM, previous)
    _warn_if_loaded(load)
    record = bench_record(settings, args.nproc, args.backend, bench_rows(cases, times), host_info(args.backend, load))
    if args.out:
        write_json_atomic(args.out, record)
    if args.json:
        json.dump(record, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"# tpsim bench: {args.nproc} ranks, {args.backend}, {record['host']['hostname']} "
          f"({record['host']['cpu_count']} cores, load average {load[0]:.2f} before, "
          f"{record['host']['load_average_after'][0]:.2f} after)")
    print("\n".join(tables(record)))
    if args.out:
        print(f"wrote bench JSON {args.out}")
    return 0
