"""The ``<schedule args>`` shared by `tpsim schedule`, `verify`, `simulate` and `run`.

Either generator arguments ``--algo A (--grid Q,Q,D | --gpus P) --workload {gemm,mlp}
(--m M --k K --n N | --m M --hidden H) [--pass fwd|bwd|both] [--dtype D] [--overlap]`` or ``--schedule FILE.json``.
"""

from __future__ import annotations

import argparse

from simulator.algorithms.registry import (ALGORITHMS, ALIASES, DTYPES, OVERLAP_ALGORITHMS, SQUARE_GRID_ALGORITHMS,
                                           build_schedule)
from simulator.errors import InputError
from simulator.ir.schedule import Schedule
from simulator.ir.serialize import load_schedule
from simulator.workloads.workload import PASSES, Workload

DEFAULT_PASS = "both"

GENERATOR_FLAGS = {"--algo": "algo", "--grid": "grid", "--gpus": "gpus", "--workload": "workload", "--m": "m",
                   "--k": "k", "--n": "n", "--hidden": "hidden", "--pass": "passes", "--dtype": "dtype",
                   "--overlap": "overlap"}
"""Option -> attribute of every generator argument: what ``--schedule FILE`` replaces."""


def parse_grid(text: str) -> tuple[int, ...]:
    """``"4,4,2"`` -> (4, 4, 2); InputError for anything else."""
    try:
        grid = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--grid {text!r}: expected Q,Q,D with integers, e.g. 4,4,2") from None
    if len(grid) != 3:
        raise InputError(f"--grid {text!r}: expected three integers Q,Q,D, e.g. 4,4,2")
    return grid


def add_schedule_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the generator arguments and ``--schedule FILE`` to ``parser``."""
    group = parser.add_argument_group("schedule (generate one, or load --schedule FILE)")
    group.add_argument("--schedule", metavar="FILE", help="a schedule saved by `tpsim schedule --out`")
    group.add_argument("--algo", choices=ALGORITHMS + tuple(ALIASES), help="parallel algorithm")
    group.add_argument("--grid", metavar="Q,Q,D", help=f"process grid [q, q, d] ({', '.join(SQUARE_GRID_ALGORITHMS)})")
    group.add_argument("--gpus", type=int, metavar="P", help="number of ranks (1d; or 2d when P = q*q)")
    add_workload_arguments(group, default_dtype="float32")
    group.add_argument("--overlap", action="store_true",
                       help=f"{'/'.join(OVERLAP_ALGORITHMS)}: prefetch each SUMMA step's broadcasts during the "
                            "previous gemm")


def add_workload_arguments(group: argparse._ArgumentGroup, default_dtype: str) -> None:
    """Add ``--workload --m --k --n --hidden --pass --dtype`` (read back by ``workload_from_args``)."""
    group.add_argument("--workload", choices=("gemm", "mlp"), help="one linear (gemm) or a transformer MLP")
    group.add_argument("--m", type=int, metavar="M", help="rows of A / tokens (batch x sequence)")
    group.add_argument("--k", type=int, metavar="K", help="gemm: columns of A, rows of B")
    group.add_argument("--n", type=int, metavar="N", help="gemm: columns of B")
    group.add_argument("--hidden", type=int, metavar="H", help="mlp: hidden size h (FC1 h->4h, FC2 4h->h)")
    # Defaults None, filled in by workload_from_args: a value given together with --schedule FILE
    # (which carries its own pass and dtype) must be told apart from a default, and refused.
    group.add_argument("--pass", dest="passes", choices=PASSES, help=f"default: {DEFAULT_PASS}")
    group.add_argument("--dtype", choices=DTYPES, help=f"element type (default {default_dtype})")
    group.set_defaults(default_dtype=default_dtype)


def workload_from_args(args: argparse.Namespace) -> Workload:
    """The Workload the arguments describe; InputError naming what is missing or extra.

    Also fills ``args.passes`` and ``args.dtype`` with their defaults where they were not given.
    """
    args.passes = args.passes or DEFAULT_PASS
    args.dtype = args.dtype or args.default_dtype
    if args.workload is None:
        raise InputError("--workload is required: gemm (with --m --k --n) or mlp (with --m --hidden)")
    if args.workload == "gemm":
        if args.hidden is not None:
            raise InputError("--hidden belongs to --workload mlp; gemm takes --m --k --n")
        missing = [f"--{name}" for name in ("m", "k", "n") if getattr(args, name) is None]
        if missing:
            raise InputError(f"--workload gemm needs {' '.join(missing)} (A is [M, K], B is [K, N])")
        return Workload.gemm(args.m, args.k, args.n)
    if args.k is not None or args.n is not None:
        raise InputError("--k/--n belong to --workload gemm; mlp takes --m --hidden")
    missing = [f"--{name}" for name in ("m", "hidden") if getattr(args, name) is None]
    if missing:
        raise InputError(f"--workload mlp needs {' '.join(missing)} (tokens M, hidden size H)")
    return Workload.mlp(args.m, args.hidden)


def schedule_from_args(args: argparse.Namespace) -> Schedule:
    """Load ``--schedule`` or generate from the generator arguments; InputError for bad input."""
    if args.schedule is not None:
        # `is`, not `in`: a given 0 (`--m 0`) equals False and must still count as given.
        given = [flag for flag, dest in GENERATOR_FLAGS.items()
                 if getattr(args, dest) is not None and getattr(args, dest) is not False]
        if given:
            raise InputError(f"--schedule FILE replaces the generator arguments; drop {' '.join(given)}")
        return load_schedule(args.schedule)
    if args.algo is None:
        raise InputError(f"--algo is required ({', '.join(ALGORITHMS)}), or give --schedule FILE")
    workload = workload_from_args(args)
    grid = parse_grid(args.grid) if args.grid is not None else None
    return build_schedule(args.algo, workload, args.passes, args.dtype, grid=grid, gpus=args.gpus,
                          overlap=args.overlap)
