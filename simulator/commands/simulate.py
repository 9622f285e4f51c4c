"""`tpsim simulate`: time one schedule on one topology with the flow-level simulator.

    tpsim simulate <schedule args> --topology NAME|FILE [--placement P] [--algo-override KIND=ALGO ...]
                   [--optimizer adam|sgd] [--zero 0..3] [--recompute none|selective|selective-op|full] [--dp D]
                   [--trace OUT.json] [--json] [--ops] [--analytic]

Human output is a short summary (for a schedule that names layer parts, a table of the critical rank's
time per part); ``--json`` prints ``simulator.timing.results.SimResult.to_dict`` (makespan, the critical
rank's compute/comm/wait split and its split per layer part, per rank, the busiest links, and per-op
records). Per-op records are included up to ``OPS_INLINE_LIMIT`` ops in total; above that they are
left out (the object says so in ``ops_omitted``) unless ``--ops`` asks for them. For a transformer
block, ``--layers L`` (or ``--model``'s count) adds the whole model, L x the one block's makespan
(``layers``, ``model_time_s`` in the JSON): one block is simulated, not L. With ``--pp`` the schedule is
the whole pipelined step (``simulator.pipeline.lower``; ``pipeline`` in the JSON): its makespan is the
step's, the stage boundaries' sends and receives are flows between the GPUs holding the ranks, and the
memory per stage is left to the planner. A transformer block's
fwd+bwd also gets its training memory per GPU (``simulator.memory``: parameters, gradients, optimizer
state, the L layers' kept activations, live workspace, the peak and whether it fits the topology's
smallest GPU; ``memory`` in the JSON) under ``--optimizer --zero --recompute --dp``, with ``--model``'s
vocabulary for the embedding and LM head. A run longer than 10 s says on stderr what it is doing
(``simulator.progress``).

Validation is proportional to need (``--validate``). A schedule file is always validated in full as
it is loaded (``simulator.ir.serialize.load_schedule``), and not again here. A schedule a generator
builds in this process gets the static checks (declarations, shapes, groups: ``simulator.ir.checks``)
of its declarations and of 64 ranks' programs spread over the grid (``checks.spread_ranks``; every
rank up to 64), and skips the dry run of every rank (``simulator.ir.walk``): each generator's programs
and dry run are proven by the tests on every legal grid of 4 and 8 GPUs, every workload and pass
(``tests/simulator/test_registry.py``), and a generator emits the same program shape on any grid.
At 4,096 ranks the programs' static checks alone took 27 s of 2d [64,64,1]'s 343 s (under cProfile).
``--validate full`` checks every rank and dry-runs it as well.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

from simulator.commands.defaults import default_schedule_gpus, topology_gpu_count
from simulator.commands.pipeline_args import pipelined
from simulator.commands.pipeline_show import pipeline_line
from simulator.commands.schedule_args import add_schedule_arguments, layers_of, schedule_from_args, vocab_of
from simulator.commands.sim_args import (add_topology_arguments, check_placement, format_bytes, format_time,
                                         load_graph, parse_overrides)
from simulator.commands.training_args import add_training_arguments, setup_from_args
from simulator.gcpause import paused_gc
from simulator.guard import watch_topologies
from simulator.guard.schedules import before_build, guard_loaded
from simulator.ir.checks import check_static, spread_ranks
from simulator.ir.validate import validate_schedule
from simulator.memory.device import usable_device_bytes
from simulator.memory.training import training_memory
from simulator.progress import Progress
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import simulate
from simulator.timing.trace import simulated_trace, write_trace
from simulator.training.main_grads import grad_bytes
from simulator.workloads.attention_cost import selective_note
from simulator.workloads.models import resolve_model
from simulator.workloads.workload import Workload

OPS_INLINE_LIMIT = 100_000
"""Most per-op records ``--json`` prints without ``--ops``."""

VALIDATE_CHOICES = ("auto", "full")
"""``--validate``: see the module docstring."""

TRACE_LINK_SAMPLES = 200
"""Link-utilisation samples taken for the trace's counter tracks."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `simulate`."""
    p = subparsers.add_parser("simulate", help="simulate one schedule on a topology (flow-level network)",
                              description="Simulate one schedule on a topology: makespan, per-rank split, "
                                          "busiest links, per-op times, Perfetto trace.")
    add_schedule_arguments(p)
    add_topology_arguments(p)
    add_training_arguments(p)
    out = p.add_argument_group("output")
    out.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    out.add_argument("--json", action="store_true", help="print the result as one JSON object")
    out.add_argument("--ops", action="store_true",
                     help=f"with --json: include per-op records even above {OPS_INLINE_LIMIT:,} ops")
    out.add_argument("--analytic", action="store_true",
                     help="also compute the analytic, contention-free bound (the critical path without link "
                          "sharing)")
    checks = p.add_argument_group("checks")
    checks.add_argument("--validate", choices=VALIDATE_CHOICES, default="auto",
                        help="auto (default): a schedule built here gets the static checks of its declarations "
                             "and of 64 ranks' programs spread over the grid, the rest being proven by the "
                             "tests; a --schedule file is validated in full as it loads; full: every rank's "
                             "static checks and dry run")
    p.set_defaults(func=simulate_command)


def _memory(args: argparse.Namespace, schedule):
    """The training memory of a transformer block's fwd+bwd schedule, None for any other (the training flags
    are checked either way, so a bad one is refused); the vocabulary is ``--vocab``, else ``--model``'s, else
    GPT-2's."""
    transformer = schedule.workload.get("name") == "transformer"
    model = resolve_model(args.model) if transformer and args.model else None
    vocab = vocab_of(args) if transformer else None
    tied = model.tied if model is not None else True
    setup = setup_from_args(args, layers_of(args, schedule.workload), vocab, tied)
    # Gradients as Megatron-LM keeps them for the schedule's dtype (fp32 main gradients under bf16), as predict.
    setup = replace(setup, grad_bytes=grad_bytes(schedule.dtype, setup.zero, None))
    if not transformer or schedule.passes != "both" or pipelined(schedule) is not None:
        return None  # a pipelined step's memory per stage is the planner's (simulator.memory)
    return training_memory(schedule, setup)


def _usable_line(G, memory) -> str | None:
    """Whether the peak fits the smallest GPU of the topology, less the reserve; None without device specs."""
    devices = sorted({(usable_device_bytes(d["device"]), d["device"].get("name", "?"), d["device"]["memory_GB"])
                      for _, d in G.nodes(data=True) if d.get("kind") == "gpu" and "device" in d})
    if not devices:
        return None
    usable, name, size = devices[0]
    verdict = "fits" if memory.fits(usable) else "does not fit"
    return f"    {'usable':<15}  {format_bytes(usable):>9}  of {name}'s {size:g} GB, less the reserve: {verdict}"


def simulate_command(args: argparse.Namespace) -> int:
    # One pause for the whole command, not one per phase: at 4,096 GPUs the schedule, the plan and the
    # result are millions of objects without cycles, and the first full collection after a phase's
    # pause (set off by the few thousand result rows made after it) walked them all, for a second.
    with paused_gc():
        return _simulate(args)


def _simulate(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.algo_override)
    with watch_topologies("tpsim simulate", args.force):
        G = load_graph(args.topology, args.calibration)
    default_schedule_gpus(args, topology_gpu_count(G), f"the topology {args.topology}")
    check_placement(args.placement, G, None)  # the name now, before the schedule is built
    setup_from_args(args, 1, None)  # the training flags too
    with Progress("tpsim simulate", what="building the schedule") as progress:
        gpus = topology_gpu_count(G)
        schedule = schedule_from_args(args, before_build("tpsim simulate", args.force, simulate_on_gpus=gpus))
        if args.schedule is not None:  # read from a file: its ops are known now
            guard_loaded(schedule, gpus, "tpsim simulate", args.force)
        memory = _memory(args, schedule)
        check_placement(args.placement, G, schedule.world_size)  # a file's GPUs, once the ranks are known
        if args.schedule is None:  # built here; a file was validated as it loaded
            progress.phase(f"validating the schedule of {schedule.world_size:,} ranks")
            if args.validate == "full":
                validate_schedule(schedule)
            else:
                check_static(schedule, spread_ranks(schedule.world_size))
        n_ops = sum(len(program) for program in schedule.programs)
        with_ops = args.json and (args.ops or n_ops <= OPS_INLINE_LIMIT)
        progress.phase(f"simulating {schedule.world_size:,} ranks, {n_ops:,} ops")
        began = time.perf_counter()
        result = simulate(schedule, G, args.placement, algorithms=overrides, timeline=bool(with_ops or args.trace),
                          link_samples=TRACE_LINK_SAMPLES if args.trace else 0)
        wall_s = time.perf_counter() - began
        if args.analytic:
            progress.phase("computing the analytic bound")
        bound = analyze(schedule, G, args.placement, algorithms=overrides, timeline=False) if args.analytic else None
        if args.trace:
            progress.phase(f"writing the trace {args.trace}")
            write_trace(args.trace, simulated_trace(result))
    layers = layers_of(args, schedule.workload)
    if args.json:
        data = result.to_dict(ops=with_ops)
        if schedule.workload.get("name") == "transformer":
            data["layers"], data["model_time_s"] = layers, layers * result.makespan_s
        if memory is not None:
            data["memory"] = memory.to_dict()
        if pipelined(schedule) is not None:
            data["pipeline"] = pipelined(schedule)
        if not with_ops:
            data["ops_omitted"] = f"{n_ops:,} ops > {OPS_INLINE_LIMIT:,}; pass --ops to include them"
        if bound is not None:
            data["analytic_makespan_s"] = bound.makespan_s
        json.dump(data, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    for line in summary_lines(result, bound, wall_s):
        print(line)
    if pipelined(schedule) is not None:
        print(f"  pipeline        {pipeline_line(pipelined(schedule))}: the makespan is the whole step")
    if layers > 1:
        print(f"  model           {layers} blocks: {format_time(layers * result.makespan_s)} ({layers} x the "
              f"makespan of the one block simulated)")
    if memory is not None:
        for line in memory.lines(format_bytes):
            print(f"  {line}")
        usable = _usable_line(G, memory)
        if usable is not None:
            print(usable)
        note = selective_note(Workload.from_dict(schedule.workload).attention, args.recompute)
        if note:
            print(f"  note: {note}")
    if args.trace:
        print(f"  trace           {args.trace} (open in https://ui.perfetto.dev)")
    return 0


def summary_lines(result, bound=None, wall_s: float | None = None) -> list[str]:
    """The human summary of a simulated result."""
    meta, stats = result.meta, result.stats
    workload = ", ".join(f"{k}={v}" for k, v in meta["workload"].items() if k != "name")
    critical = result.critical
    span = result.makespan_s or 1.0
    per_rank = result.per_rank

    def spread(attr: str) -> str:
        values = [getattr(r, attr) for r in per_rank]
        return f"{format_time(min(values))}..{format_time(max(values))}"

    lines = [f"{meta['algorithm']} grid {meta['grid']} {meta['workload']['name']} ({workload}) {meta['passes']} "
             f"{meta['dtype']} on {meta['topology']}, {meta['world_size']} GPUs, placement "
             f"{meta['placement'] or 'linear'}",
             f"  makespan        {format_time(result.makespan_s)}"
             + (f"   (analytic, contention-free: {format_time(bound.makespan_s)})" if bound is not None else ""),
             f"  critical rank   {critical.rank} on {critical.gpu}: compute {format_time(critical.compute_s)} "
             f"({100 * critical.compute_s / span:.0f}%), comm {format_time(critical.comm_s)} "
             f"({100 * critical.comm_s / span:.0f}%), wait {format_time(critical.wait_s)} "
             f"({100 * critical.wait_s / span:.0f}%)",
             f"  per rank        compute {spread('compute_s')}, comm {spread('comm_s')}, wait {spread('wait_s')}"]
    lines += part_lines(result)
    for i, link in enumerate(result.links[:5]):
        label = "  busiest links   " if i == 0 else "                  "
        lines.append(f"{label}{link.label} ({link.kind}): {format_bytes(link.bytes)}, "
                     f"busy {100 * link.busy_fraction:.0f}%")
    run = f"  simulated       {stats['collectives']:,} collectives, {stats['p2p']:,} send/recv, {stats['flows']:,} flows"
    if stats.get("events") is not None:
        run += f", {stats['events']:,} events"
    if wall_s is not None:
        run += f" in {wall_s:.2f} s"
    lines.append(run)
    return lines


def part_lines(result) -> list[str]:
    """The critical rank's time per layer part as a small table; none when the schedule names no parts."""
    if not result.parts:
        return []
    names = [label or "(other)" for label in result.parts]
    width = max(map(len, names)) + 2
    lines = [f"  per part        {'':<{width}}{'compute':>11}{'comm':>11}{'wait':>11}   "
             f"(critical rank {result.critical.rank})"]
    for name, part in zip(names, result.parts.values()):
        lines.append(f"                  {name:<{width}}{format_time(part.compute_s):>11}"
                     f"{format_time(part.comm_s):>11}{format_time(part.wait_s):>11}")
    return lines
