"""`tpsim compare`: predicted vs measured for a run the executor recorded.

    tpsim compare MEASURED.json --topology NAME|FILE [--placement P] [--png OUT.png] [--trace OUT.json] [--json]

Simulates the schedule inside ``MEASURED.json`` (``tpsim run --out``) on the topology (typically the
one ``tpsim calibrate`` wrote) and prints measured and predicted seconds end to end and per op class,
with relative errors (``simulator.compare.measured``); under each communication class, when the measured run
put its ranks on one clock (``clock_origins_s``), the part of it spent waiting for peers, measured and
predicted. ``--png`` draws paired bars (the waiting part hatched), ``--trace`` writes one Chrome trace
with both runs as separate processes, ``--json`` prints the comparison as one object (``measured_s``,
``predicted_s``, ``rel_error``, the measured spread and ``classes``, each with ``measured_wait_s`` and
``predicted_wait_s``, null where unknown). Exit status 0, or 2 for bad input (a file that is missing
or not a tpsim-measured version 1 record, a topology with fewer GPUs than the run has ranks).
"""

from __future__ import annotations

import argparse
import json
import sys

from simulator.commands.sim_args import format_time, load_graph
from simulator.compare.measured import compare_record, load_measured
from simulator.compare.plot import plot_comparison
from simulator.compare.trace import comparison_trace
from simulator.errors import InputError
from simulator.timing.trace import write_trace


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `compare`."""
    p = subparsers.add_parser(
        "compare", help="simulate a measured run's schedule and compare predicted vs measured",
        description="Simulate the schedule recorded in a measured run (tpsim run --out) on a topology and "
                    "report predicted vs measured, end to end and per op class, with relative errors.")
    p.add_argument("measured", metavar="MEASURED.json", help="a tpsim-measured record (tpsim run --out)")
    p.add_argument("--topology", required=True, metavar="NAME|FILE",
                   help="a preset (loopback:8, ...) or a topology file, e.g. one tpsim calibrate wrote")
    p.add_argument("--calibration", metavar="FILE",
                   help="a calibration profile (tpsim calibrate --profile, or the topology file it "
                        "wrote) applied to the topology: fitted link rates and latencies carry to any "
                        "topology of the same node kind")
    p.add_argument("--placement", metavar="P", help="rank -> GPU placement (default linear)")
    p.add_argument("--png", metavar="OUT.png", help="draw measured and predicted bars per op class")
    p.add_argument("--trace", metavar="OUT.json", help="write one Chrome trace with both runs")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.set_defaults(func=compare_command)


WAIT_LABEL = "waiting on peers"


def _pct(rel: float | None) -> str:
    return "n/a" if rel is None else f"{rel * 100:+.1f}%"


def table_lines(comparison) -> list[str]:
    """The human table: end to end, then one line per op class."""
    meta = comparison.meta
    its = comparison.iterations_s
    lines = [f"{meta['algorithm']} grid {meta['grid']} on {meta['world_size']} ranks ({meta['backend']}) "
             f"vs {meta['topology']} (placement {meta['placement']})",
             f"  {'':<16} {'measured':>12} {'predicted':>12} {'error':>8}",
             f"  {'end to end':<16} {format_time(comparison.measured_s):>12} {format_time(comparison.predicted_s):>12} "
             f"{_pct(comparison.rel_error):>8}   (measured: median of {len(its)} iterations, "
             f"{format_time(min(its))}..{format_time(max(its))})",
             "  per op class (mean per rank of the time in its ops):"]
    split = False
    for row in comparison.classes:
        lines.append(f"  {row.name:<16} {format_time(row.measured_s):>12} {format_time(row.predicted_s):>12} "
                     f"{_pct(row.rel_error):>8}   ({row.ops} ops)")
        if row.measured_wait_s is not None and row.predicted_wait_s is not None:
            split = True
            # The label overhangs the name column; the values end where the class row's do.
            lines.append(f"    {WAIT_LABEL:<16}{format_time(row.measured_wait_s):>11} "
                         f"{format_time(row.predicted_wait_s):>12}")
    if split:
        lines.append(f"  ({WAIT_LABEL}: the part of a class's time before the last rank had issued each op; "
                     f"the rest is the transfer)")
    return lines


def compare_command(args: argparse.Namespace) -> int:
    """`tpsim compare`."""
    if args.trace and args.png and args.trace == args.png:
        raise InputError(f"--trace and --png name the same file {args.trace!r}")
    record = load_measured(args.measured)
    G = load_graph(args.topology, args.calibration)
    comparison = compare_record(record, G, args.placement, source=args.measured)
    if args.png:
        plot_comparison(comparison, args.png)
    if args.trace:
        write_trace(args.trace, comparison_trace(comparison))
    if args.json:
        json.dump(comparison.to_dict(), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    lines = table_lines(comparison)
    written = [f"{label} {path}" for label, path in (("plot", args.png), ("trace", args.trace)) if path]
    if written:
        lines.append("wrote " + ", ".join(written))
    print("\n".join(lines))
    return 0
