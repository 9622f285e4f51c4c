"""`tpsim sweep SPEC.yaml`: a grid of `predict --global-batch` plans, one row each, resumable.

    tpsim sweep SPEC.yaml [--out FILE.csv|FILE.parquet] [--workers N] [--dask [ADDRESS]]
                          [--resume | --overwrite] [--dry-run]

The spec (``simulator.sweep.spec``) lists axes, whose Cartesian product is the plans, and fixed
options; every key and value is checked before any work (``simulator.sweep.checks``). Each plan is one
`tpsim predict` run, reduced to its best row with a status (``simulator.sweep.plan_run``), on this
machine's processes (``--workers``, default 1) or a Dask cluster (``--dask``: a local one of
``--workers`` processes, or a running scheduler's address). Rows are appended and synced as they
finish, so a killed sweep rerun with the same command resumes (``simulator.sweep.journal``); the
finished file is sorted by plan number. stdout gets one line before the work (how many plans, how
many already done, where they run) and one after (the statuses); stderr the progress bar.
"""

from __future__ import annotations

import argparse
import os
import sys

from simulator.errors import InputError
from simulator.sweep.executor import MAX_WORKERS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `sweep`."""
    p = subparsers.add_parser("sweep", help="run a grid of training plans (predict --global-batch), one row each",
                              description="Run the Cartesian product of a spec's axes as `tpsim predict "
                                          "--global-batch` plans and write one row per plan, resumably "
                                          "(docs/sweep.md).")
    p.add_argument("spec", metavar="SPEC.yaml", help="axes (lists of predict option values) and fixed options")
    p.add_argument("--out", metavar="FILE", help="rows as CSV, or Parquet for a .parquet name (needs pyarrow); "
                                                  "default: the spec's name with .csv")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="plans side by side: N local processes, or a local Dask cluster's N (default 1)")
    p.add_argument("--dask", nargs="?", const=True, metavar="ADDRESS",
                   help="run the plans on Dask: a local cluster of --workers processes, or the scheduler at "
                        "ADDRESS (tcp://host:8786); needs pip install -e '.[cluster]'")
    # Not an engine here (docs/sweep.md says why Dask); the option is kept to say so in one line.
    p.add_argument("--ray", nargs="?", const=True, help=argparse.SUPPRESS)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="require the output to exist and hold this sweep's rows (resuming is the default "
                           "when it does)")
    mode.add_argument("--overwrite", action="store_true", help="start afresh, replacing the output")
    p.add_argument("--dry-run", action="store_true", help="check the spec and list the plans' commands; run none")
    p.set_defaults(func=sweep_command)


def _axes_line(spec) -> str:
    if not spec.axes:
        return "1 plan"
    sizes = " x ".join(f"{len(v)} {k}" for k, v in spec.axes)
    return f"{spec.size:,} plan{'s' if spec.size != 1 else ''} ({sizes})"


def sweep_command(args: argparse.Namespace) -> int:
    from simulator.files import read_text
    from simulator.progress import Progress
    from simulator.sweep.checks import check_spec, predict_parser
    from simulator.sweep.executor import WorkerLost, make_executor
    from simulator.sweep.journal import Journal
    from simulator.sweep.output import check_format, journal_path, parquet_done, write_parquet
    from simulator.sweep.plan_run import STATUSES
    from simulator.sweep.plans import columns_of, plans_of
    from simulator.sweep.runner import run_sweep
    from simulator.sweep.spec import parse_spec

    if args.ray is not None:
        raise InputError("--ray: sweeps run on Dask distributed, not Ray: --dask [ADDRESS] (pip install -e "
                         "'.[cluster]'); docs/sweep.md says why")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise InputError(f"--workers must be 1..{MAX_WORKERS} (processes), got {args.workers}")
    out = args.out or os.path.splitext(args.spec)[0] + ".csv"
    fmt = check_format(out)
    spec = parse_spec(read_text(args.spec, "sweep spec"), args.spec)
    parser = predict_parser()
    plans = plans_of(spec, parser, check_spec(spec, args.spec, parser))
    if args.dry_run:
        print(f"tpsim sweep: {_axes_line(spec)}, spec {spec.digest}")
        for plan in plans:
            print(f"  {plan.index:>4}  {plan.command()}")
        return 0
    path = journal_path(out)
    if fmt == "parquet" and not args.overwrite and not os.path.exists(path) and parquet_done(out, spec.digest,
                                                                                             len(plans)):
        print(f"tpsim sweep: {_axes_line(spec)}, all done already: {out}")
        return 0
    if args.resume and not os.path.exists(path):
        raise InputError(f"--resume: {path} does not exist; leave --resume out to start the sweep")
    journal = Journal(path, columns_of(spec), spec.digest)
    done = journal.open(fresh=args.overwrite)
    todo = [plan for plan in plans if plan.index not in done]
    executor = make_executor(min(args.workers, max(len(todo), 1)) if not args.dask else args.workers, args.dask)
    print(f"tpsim sweep: {_axes_line(spec)}, {len(done):,} done, {len(todo):,} to run on {executor.describe()}",
          flush=True)
    try:
        if todo:  # a finished sweep starts no processes, nor a cluster
            with executor, Progress("tpsim sweep", total=len(todo), unit="plan", background=False) as bar:
                run_sweep(todo, journal, executor, bar)
    except KeyboardInterrupt:
        journal.close()
        sys.stderr.write(f"tpsim sweep: interrupted; the finished rows are in {path}: rerun the same command to "
                         f"resume\n")
        raise
    except WorkerLost as error:
        journal.close()
        sys.stderr.write(f"tpsim sweep: error: {error}; the finished rows are in {path}: rerun to resume\n")
        return 1
    rows = journal.finish()
    if fmt == "parquet":
        write_parquet(path, out)
    column = journal.columns.index("status")
    statuses = [row[column] for row in rows]
    summary = ", ".join(f"{statuses.count(s):,} {s}" for s in STATUSES if s in statuses)
    print(f"tpsim sweep: {len(rows):,} rows ({summary}) in {out}")
    return 0
