"""One rank of a run under torchrun: ``torchrun --nproc-per-node G [--nnodes ...] -m executor -- <args>``.

The arguments are those of `tpsim run` (``--nproc`` is optional here and, if given, must equal
WORLD_SIZE). The ``--`` matters: without it torchrun's own parser reads ``--m`` / ``--n`` as
ambiguous prefixes of its options and refuses to start.

Rank, world size and local rank come from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK);
the rendezvous is ``env://`` (MASTER_ADDR, MASTER_PORT), so multi-node runs use torchrun's own. Rank
0 writes ``--out`` / ``--trace``, prints the summary (with ``--json`` the measured record instead),
and exits 1 when results are wrong, which makes torchrun fail the job. torchrun, not this module,
stops the other ranks when one fails (its error summary shows the first failure's traceback,
recorded by ``@record``); ``--timeout`` is the process groups' collective timeout.
"""

from __future__ import annotations

import argparse
import os
import sys

from executor.command import RUN_DTYPE_HELP, add_run_arguments, finish, json_out_from_args, options_from_args
from simulator.commands.schedule_args import add_schedule_arguments, schedule_from_args
from simulator.command_files import check_command_files
from simulator.errors import InputError


def _environment() -> tuple[int, int, int]:
    missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise InputError(f"{', '.join(missing)} not set: start this under torchrun "
                         f"(torchrun --nproc-per-node G -m executor -- ...), or use `tpsim run` for local ranks")
    rank = os.environ["RANK"]
    values = {"RANK": rank, "WORLD_SIZE": os.environ["WORLD_SIZE"], "LOCAL_RANK": os.environ.get("LOCAL_RANK", rank)}
    bad = [name for name, value in values.items() if not value.isdecimal()]
    if bad:
        raise InputError(f"{bad[0]}={values[bad[0]]!r}: torchrun sets it to a non-negative integer")
    return int(values["RANK"]), int(values["WORLD_SIZE"]), int(values["LOCAL_RANK"])


def build_parser() -> argparse.ArgumentParser:
    """The arguments of `tpsim run`, ``--nproc`` optional."""
    parser = argparse.ArgumentParser(prog="python -m executor",
                                     description="One rank of a run under torchrun: torchrun --nproc-per-node G "
                                                 "[--nnodes ...] -m executor -- <the arguments of tpsim run>.")
    add_schedule_arguments(parser, dtype_help=RUN_DTYPE_HELP)
    add_run_arguments(parser, under_torchrun=True)
    return parser


def _main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        rank, world, local_rank = _environment()
        note = json_out_from_args(args, "python -m executor")
        if rank == 0:  # the rank that writes --out and --trace: before any rank starts work
            check_command_files(args, "run")
        schedule = schedule_from_args(args)
        options = options_from_args(args)
        if args.nproc is not None and args.nproc != world:
            raise InputError(f"--nproc {args.nproc} but torchrun's WORLD_SIZE is {world}")
        if schedule.world_size != world:
            raise InputError(f"WORLD_SIZE {world} but the schedule ({schedule.algorithm} on grid "
                             f"{list(schedule.grid)}) has {schedule.world_size} ranks")
        if options.backend == "nccl":
            from executor.launch import visible_gpus  # torch: environment errors are reported without it

            gpus = visible_gpus()  # the fork-safe count: this function also runs in pytest's process
            if local_rank >= gpus:
                raise InputError(f"--backend nccl: LOCAL_RANK {local_rank} has no CUDA GPU "
                                 f"({gpus} visible); use --backend gloo")
    except InputError as error:
        sys.stderr.write(f"python -m executor: error: {str(error).splitlines()[0]}\n")
        return 2
    if note and rank == 0:
        sys.stderr.write(note + "\n")
    from executor.run_rank import Rendezvous, run_rank  # torch: argument errors are reported without it

    results = run_rank([schedule], options, Rendezvous(rank, world, local_rank))
    if rank != 0:
        return 0
    return finish(schedule, results[0], options, args)


def main(argv: list[str] | None = None) -> int:
    """Entry point; under torchrun, failures are recorded for its error summary."""
    try:
        from torch.distributed.elastic.multiprocessing.errors import record  # optional: some torch builds lack it
    except ImportError:  # pragma: no cover - torch without elastic
        return _main(argv)
    return record(_main)(argv)


if __name__ == "__main__":
    sys.exit(main())
