"""`tpsim predict`: which arrangement of P GPUs runs a workload fastest on a topology (the main job).

    tpsim predict --gpus P --topology T --workload {gemm,mlp,transformer} (--m M --k K --n N | --m M --hidden H
                  | --batch B --seq S --hidden H --heads A [--ffn F] [--dropout P] | --model NAME --batch B)
                  [--layers L]
                  [--pass both] [--dtype bfloat16] [--placement P|all] [--algos 1d,2d,...] [--overlap]
                  [--algo-override KIND=ALGO ...] [--no-prune] [--workers N] [--json] [--csv FILE] [--png FILE]

Every legal arrangement (``simulator.predict``) is bounded, and simulated in bound order while it
could still be the fastest: one whose contention-free bound exceeds the best simulated time is left at
its bound, and one whose schedule equals an arrangement already simulated is listed as its duplicate
(``--no-prune`` simulates every arrangement); ``--workers N`` does both in N forked processes (the
local pool of ``simulator.sweep``, the executor `tpsim sweep` runs on) with the same table. The table
ranks the simulated ones by predicted time with the critical rank's compute / communication / wait
split, the contention-free bound, per-GPU block memory and the slowdown against the best. Skipped
arrangements are listed with the reason.
Progress goes to stderr: a bar on a terminal, else a line every 10 s (``simulator.progress``).
``--json`` prints a list of objects (every row of the table with ``status`` "ok" when simulated,
"bound" (``analytic_s``, or only ``solo_s`` where the cheaper solo-rank bound sufficed) or "duplicate"
(with ``duplicate_of``) when pruned, then the skipped ones with ``status:
"skipped"`` and ``reason``); ``--csv`` writes the same rows; ``--png`` draws a bar chart. For a
transformer, ``--layers L`` (or ``--model``'s count) adds the whole model's time, L x one block's
(``layers``, ``model_time_s``): one block is simulated, not L.

With ``--global-batch G`` (a transformer) the command plans the whole model's training instead: tensor x
data parallel arrangements, step time, memory per GPU and the launch line
(``simulator.commands.predict_training``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

from simulator.algorithms.registry import ALGORITHMS, ALIASES, OVERLAP_ALGORITHMS
from simulator.commands.defaults import default_gpus
from simulator.commands.predict_training import add_training_plan_arguments, training_plan_command
from simulator.commands.schedule_args import (add_async_dgrad_argument, add_workload_arguments, layers_of,
                                              tp_comm_overlap_cfg, workload_from_args)
from simulator.commands.sim_args import (add_topology_arguments, check_placement, format_bytes, format_time,
                                         parse_overrides)
from simulator.errors import InputError
from simulator.files import replacing
from simulator.fp8 import fp8_label, fp8_topology
from simulator.fp8_cost import RECIPES
from simulator.guard import add_force_argument, guard, watch_topologies
from simulator.guard.costs import predict_estimate
from simulator.limits import check_ranks
from simulator.predict import Overlaps, arrangements, predict
from simulator.predict_plot import plot_predictions
from simulator.progress import Progress
from simulator.sweep.executor import MAX_WORKERS
from simulator.workloads.workload import Workload
from topologies import PLACEMENTS, gpu_nodes, load_topology

CSV_FIELDS = ("rank", "algorithm", "grid", "placement", "overlap", "status", "time_s", "compute_s", "comm_s",
              "wait_s", "analytic_s", "solo_s", "memory_bytes", "collectives", "reason", "duplicate_of")
MODEL_FIELDS = ("layers", "model_time_s")
"""Added to every row for a transformer: the model's block count, and its time (layers x one block's)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `predict`."""
    p = subparsers.add_parser("predict", help="rank every arrangement of P GPUs for a workload (the main job)",
                              description="Simulate every legal arrangement of P GPUs for every algorithm and "
                                          "rank them by predicted time.")
    p.add_argument("--gpus", type=int, metavar="P",
                   help="number of GPUs to arrange (default: every GPU of --topology)")
    add_topology_arguments(p)
    w = p.add_argument_group("workload")
    add_workload_arguments(w)
    w.add_argument("--fp8-recipe", choices=RECIPES,
                   help="with --dtype fp8: Transformer Engine's scaling recipe, whose casts are timed "
                        "(default TE's: mxfp8 on Blackwell, else delayed; current: per-tensor current scaling)")
    s = p.add_argument_group("search")
    s.add_argument("--algos", metavar="A,B", help=f"only these algorithms (default all: {','.join(ALGORITHMS)}; "
                                                   f"or the names the plan prints: {','.join(ALIASES)})")
    s.add_argument("--overlap", action="store_true",
                   help=f"also try {'/'.join(OVERLAP_ALGORITHMS)} with SUMMA prefetch")
    add_async_dgrad_argument(s)
    s.add_argument("--no-prune", action="store_true",
                   help="simulate every arrangement (default: only those whose contention-free bound could "
                        "still beat the best simulated time, and no schedule twice)")
    s.add_argument("--workers", type=int, default=1, metavar="N",
                   help="bound and simulate arrangements in N forked processes side by side (default 1); "
                        "the table is the same for every N, and each process needs one simulation's memory")
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="print the ranked rows as a JSON list")
    o.add_argument("--csv", metavar="FILE", help="write the ranked rows as CSV")
    o.add_argument("--png", metavar="FILE", help="draw the ranking as a bar chart")
    add_training_plan_arguments(p)
    add_force_argument(p)
    p.set_defaults(func=predict_command, fp8_ok=True)  # --dtype fp8: a plan's recipe (simulator.fp8)


def algorithms_of(text: str | None) -> tuple[str, ...]:
    """The algorithms ``--algos`` names (every one when not given); InputError naming an unknown one."""
    if text is None:
        return ALGORITHMS
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [n for n in names if n not in ALGORITHMS and n not in ALIASES]
    if not names or bad:
        raise InputError(f"--algos {text!r}: unknown algorithm {bad[0] if bad else '(none)'!r}; valid: "
                         f"{', '.join(ALGORITHMS + tuple(ALIASES))}")
    return tuple(names)


def placements_of(text: str | None) -> tuple[str | None, ...]:
    """The placements ``--placement`` names (``all``: every one; None stands for linear)."""
    if text == "all":
        return tuple(None if name == "linear" else name for name in PLACEMENTS)
    return (None if text in (None, "linear") else text,)


def checked_arguments(args: argparse.Namespace) -> tuple[dict, Workload, int | None, str | None]:
    """Check ``args`` before any topology is loaded: (algorithm overrides, workload, the micro-batch given
    or None, the ``--pass`` given or None). ``tpsim calibrate --from-steps`` reads its entries through it."""
    overrides = parse_overrides(args.algo_override)
    if args.gpus is not None and args.gpus < 1:
        raise InputError(f"--gpus must be >= 1, got {args.gpus}")
    if args.gpus is not None:
        check_ranks(args.gpus, f"--gpus {args.gpus}")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise InputError(f"--workers must be 1..{MAX_WORKERS} (processes), got {args.workers}")
    training = args.global_batch is not None
    if training and args.workers != 1:
        raise InputError("--workers applies to ranking one block; the training plan (--global-batch) runs in "
                         "one process: leave --workers out")
    if not training:
        _no_training_flags(args)
    micro_batch = args.batch
    if training and args.batch is None and (args.model is not None or args.workload == "transformer"):
        args.batch = 1  # a placeholder: each arrangement's micro-batch is searched
    passes_given = args.passes
    return overrides, workload_from_args(args), micro_batch, passes_given


def on_topology(args: argparse.Namespace, G):
    """``G`` as ``args`` runs on it (``--dtype fp8``'s recipe), with ``args.gpus`` defaulted to its GPUs and
    checked against them and the placement."""
    if args.fp8:
        G = fp8_topology(G, args.fp8_recipe)
    elif args.fp8_recipe is not None:
        raise InputError(f"--fp8-recipe {args.fp8_recipe} needs --dtype fp8")
    if args.gpus is None:
        default_gpus(args, G)
        check_ranks(args.gpus, f"--gpus {args.gpus} (every GPU of {args.topology})")
    available = sum(1 for _, kind in G.nodes(data="kind") if kind == "gpu")
    if args.gpus > available:
        raise InputError(f"--gpus {args.gpus}: the topology {G.graph.get('name', args.topology)} has only "
                         f"{available} GPUs (world size {args.gpus} needs {args.gpus} GPUs)")
    check_placement(args.placement, G, args.gpus, all_ok=True)
    return G


def predict_command(args: argparse.Namespace) -> int:
    overrides, workload, micro_batch, passes_given = checked_arguments(args)
    with watch_topologies("tpsim predict", args.force):
        G = load_topology(args.topology, args.calibration)
    G = on_topology(args, G)
    if args.global_batch is not None:
        args.passes = passes_given
        return training_plan_command(args, G, workload, micro_batch, algorithms_of(args.algos),
                                     placements_of(args.placement), overrides)
    candidates = arrangements(args.gpus, algorithms_of(args.algos), placements_of(args.placement), args.overlap)
    guard(predict_estimate(candidates, workload, args.passes, prune=not args.no_prune, workers=args.workers,
                           cores=os.cpu_count()), "tpsim predict", args.force)
    with Progress("tpsim predict", total=len(candidates), unit="arrangement") as bar:
        rows = predict(G, workload, args.gpus, args.passes, args.dtype, overrides, candidates,
                       progress=lambda _: bar.update(), prune=not args.no_prune, workers=args.workers,
                       overlaps=Overlaps(args.async_dgrad, args.tp_comm_overlap, tp_comm_overlap_cfg(args)))
    records = [dict(rank=i + 1 if not r.skipped else None, **r.to_dict()) for i, r in enumerate(rows)]
    layers = layers_of(args, workload)
    if workload.name == "transformer":
        for record in records:
            record["layers"] = layers
            record["model_time_s"] = None if record["time_s"] is None else layers * record["time_s"]
    if args.csv:
        _write_csv(args.csv, records)
    if args.png:
        plot_predictions(rows, args.png, title=_title(args, G, workload))
    if args.json:
        json.dump(records, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for line in table_lines(rows, _title(args, G, workload), G, layers):
        print(line)
    for label, path in (("csv", args.csv), ("png", args.png)):
        if path:
            print(f"{label}: {path}")
    return 0


def _no_training_flags(args) -> None:
    """The whole-model flags mean nothing without --global-batch: say so rather than ignore them."""
    given = [flag for flag, value, default in (("--zero", args.zero, None), ("--recompute", args.recompute, None),
                                                ("--optimizer", args.optimizer, "adam"),
                                                ("--tp-sizes", args.tp_sizes, None),
                                                ("--simulate-top", args.simulate_top, 4),
                                                ("--bucket-mb", args.bucket_mb, 25.0),
                                                ("--backward-prefetch", args.backward_prefetch, "BACKWARD_PRE"),
                                                ("--fsdp-version", args.fsdp_version, 2),
                                                ("--use-megatron-fsdp", args.megatron_fsdp, False))
             if value != default]
    if given:
        raise InputError(f"{' '.join(given)} plan a whole model's training step; add --global-batch G")


def _title(args, G, workload) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in workload.to_dict().items() if k != "name")
    passes = {"both": "fwd+bwd", "fwd": "fwd", "bwd": "bwd"}[args.passes]
    dtype = fp8_label(G, G.nodes[gpu_nodes(G)[0]]["device"]) if args.fp8 else args.dtype
    return (f"{workload.name} ({sizes}) {passes} {dtype} on {args.gpus} GPU{'' if args.gpus == 1 else 's'} of "
            f"{G.graph.get('name', args.topology)}")


def _write_csv(path: str, records: list[dict]) -> None:
    with replacing(path) as tmp, open(tmp, "w", newline="") as handle:
        fields = CSV_FIELDS + tuple(f for f in MODEL_FIELDS if records and f in records[0])
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for record in records:
            writer.writerow({k: ("x".join(map(str, record[k])) if k == "grid" else record[k]) for k in fields})


def table_lines(rows, title: str, G=None, layers: int = 1) -> list[str]:
    """The ranked table, then the rows pruning left unsimulated, then the skipped arrangements with their
    reasons; with ``layers`` > 1 a column of the whole model's time (layers x one block's)."""
    ok = [r for r in rows if not r.skipped and r.simulated]
    bounds = [r for r in rows if not r.skipped and not r.simulated and not r.duplicate_of]
    twins = [r for r in rows if r.duplicate_of]
    skipped = [r for r in rows if r.skipped]
    lines = [f"tpsim predict: {title}"]
    if not ok:
        lines.append("  no arrangement fits this workload")
    else:
        best = ok[0].time_s
        memory_GB = _device_memory_GB(G)
        width = max(len(r.arrangement.label) for r in ok + bounds)
        lines.append(f"  {'#':>2}  {'arrangement':<{width}}  {'time':>10}  {'compute':>10}  {'comm':>10}  "
                     f"{'wait':>10}  {'bound':>10}  {'mem/GPU':>8}  {'vs best':>7}"
                     + (f"  {'model':>10}" if layers > 1 else ""))
        for i, r in enumerate(ok, 1):
            fits = "" if memory_GB is None or r.memory_bytes <= memory_GB * 1e9 else " (over GPU memory)"
            lines.append(f"  {i:>2}  {r.arrangement.label:<{width}}  {format_time(r.time_s):>10}  "
                         f"{format_time(r.compute_s):>10}  {format_time(r.comm_s):>10}  "
                         f"{format_time(r.wait_s):>10}  {format_time(r.analytic_s):>10}  "
                         f"{format_bytes(r.memory_bytes):>8}  {r.time_s / best:>6.2f}x"
                         + (f"  {format_time(layers * r.time_s):>10}" if layers > 1 else "") + fits)
        for i, r in enumerate(bounds, len(ok) + 1):
            bound = format_time(r.bound_s) + ("" if r.analytic_s is not None else "*")
            lines.append(f"  {i:>2}  {r.arrangement.label:<{width}}  {'-':>10}  {'':>10}  {'':>10}  {'':>10}  "
                         f"{bound:>10}  {format_bytes(r.memory_bytes):>8}  "
                         f"{'>' + format(r.bound_s / best, '.2f'):>6}x")
        lines.append("  time: simulated makespan (contention); compute/comm/wait: the critical rank's split; "
                     "bound: contention-free analytic")
        if bounds:
            lines.append(f"  not simulated {len(bounds)}: their bound already exceeds the best simulated time "
                         f"(--no-prune simulates them)")
        if any(r.analytic_s is None for r in bounds):
            lines.append("  bound*: solo-rank bound (a few ranks walked alone, peers on time), at most the analytic "
                         "one")
        if layers > 1:
            lines.append(f"  model: {layers} identical blocks, {layers} x the time of the one block simulated; "
                         f"mem/GPU is one block's")
    if twins:
        lines.append(f"  duplicates {len(twins)}:")
        for r in twins:
            lines.append(f"    {r.arrangement.label}: the same schedule as {r.duplicate_of}")
    if skipped:
        lines.append(f"  skipped {len(skipped)}:")
        for r in skipped:
            lines.append(f"    {r.arrangement.label}: {r.skipped}")
    return lines


def _device_memory_GB(G) -> float | None:
    if G is None:
        return None
    sizes = [d["device"].get("memory_GB") for _, d in G.nodes(data=True) if d.get("kind") == "gpu" and "device" in d]
    sizes = [s for s in sizes if s]
    return min(sizes) if sizes else None
