"""`tpsim predict --global-batch G`: which tensor x pipeline x data arrangement trains a whole model fastest and fits.

    tpsim predict --gpus P --topology T (--model NAME | --workload transformer ...) --global-batch G
                  [--batch B] [--layers L] [--zero Z] [--recompute R] [--optimizer O] [--algos ...]
                  [--tp-sizes 1,8,64] [--pp-sizes 1,8,16] [--schedule S] [--virtual-stages V]
                  [--simulate-top K] [--bucket-mb MB] [--json] [--csv FILE] [--png FILE]
                  [--trace FILE [--trace-row N]]

Every ``simulator.training`` arrangement (pure data parallelism, and each algorithm's grids of every tp
size), cut into every pipeline size (``simulator.pipeline.search_space``: each row keeps its fastest
fitting schedule), is bounded, the leading ``--simulate-top`` fitting ones are simulated (``simulator.training.search``)
and the table ranks them: fitting rows first by step time (simulated, then bounds), then those that do not
fit with their peak memory against the device's usable memory, then the skipped ones with the reason.
The best simulated row gets its launch line. ``--batch`` fixes the micro-batch; without it each
arrangement gets the smallest one it can build, doubled while it fits and the step gets faster.
``--zero`` and ``--recompute`` pin the ZeRO stage and the recompute mode; without them each row searches
them (``simulator.training.settings``: the lightest settings that fit, the fastest of those), the table's
``ZeRO rc`` column, the JSON's and CSV's ``zero`` and ``recompute`` and the launch line say which.
``--json`` prints the rows (``PlanRow.to_dict``: arrangement, algorithm, grid, tp, pp, dp, schedule,
virtual_stages, micro_batch, step_time_s, tokens_per_s, mfu, compute_s, tp_comm_s, bubble_s, pp_comm_s,
dp_comm_s, memory (with ``stages``: each pipeline stage's), fits, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import functools
import math
import sys

from simulator.commands.schedule_args import tp_comm_overlap_cfg, vocab_of
from simulator.commands.sim_args import format_time
from simulator.commands.training_args import add_model_state_arguments
from simulator.errors import InputError
from simulator.files import replacing
from simulator.fp8 import fp8_label, recipe_of
from simulator.guard import guard
from simulator.guard.training import search_estimate
from simulator.memory import usable_device_bytes
from simulator.pipeline.search_space import check_schedule_flags, pipeline_sizes, pipelined, schedule_variants
from simulator.network.topology_cache import TopologyCache
from simulator.pipeline.stage_step import pipeline_floor_s
from simulator.pipeline.trace import step_trace
from simulator.timing.trace import write_trace
from simulator.predict_plot import plot_training
from simulator.progress import Progress
from simulator.training.arrangement import tp_sizes_of, training_arrangements
from simulator.training.fsdp_prefetch import BACKWARD_PREFETCH
from simulator.training.launch import fusion_flags, launch_lines, norm_note, precision_flags
from simulator.training.rate_note import gemm_rate_note
from simulator.training.main_grads import megatron_flags
from simulator.training.memory_fit import memory_of
from simulator.training.search import plan_training
from simulator.training.settings import settings_grid, short_label
from simulator.training.step import StepOptions
from simulator.workloads.attention_cost import selective_note
from simulator.workloads.models import resolve_model
from simulator.workloads.workload import Workload
from topologies import gpu_nodes

__all__ = ["add_training_plan_arguments", "plan_rows", "training_plan_command", "CSV_FIELDS"]

CSV_FIELDS = ("rank", "arrangement", "algorithm", "grid", "placement", "tp", "pp", "dp", "schedule", "virtual_stages",
              "zero", "recompute", "micro_batch", "micro_batches", "model", "step_time_s", "bound_step_time_s", "tokens_per_s", "mfu",
              "hfu", "tflops_per_gpu", "compute_s", "tp_comm_s", "bubble_s", "pp_comm_s", "dp_comm_s", "optimizer_s",
              "peak_bytes", "fits", "status", "reason")


def add_training_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The whole-model options of `tpsim predict` (they apply with ``--global-batch``)."""
    g = parser.add_argument_group("training plan (with --global-batch: the whole model, tensor x pipeline x data "
                                  "parallel)")
    g.add_argument("--global-batch", type=int, metavar="G", help="sequences per training step; turns on the "
                   "whole-model plan (--batch is then the micro-batch, searched when not given)")
    add_model_state_arguments(g, searched=True)
    g.add_argument("--tp-sizes", metavar="T,T", help="tensor-parallel sizes to try (default: every divisor of "
                   "--gpus up to 64; 1 is pure data parallelism)")
    g.add_argument("--pp-sizes", metavar="P,P", help="pipeline sizes to try (default: every divisor of --gpus "
                   "that divides the layers; 1 is no pipeline)")
    g.add_argument("--schedule", choices=("1f1b", "interleaved", "gpipe"), help="pin the pipeline schedule "
                   "(default: 1f1b and interleaved with every v dividing a stage's layers, the fastest that fits)")
    g.add_argument("--virtual-stages", type=int, metavar="V", help="pin interleaved 1F1B's model chunks per "
                   "pipeline rank (implies --schedule interleaved)")
    g.add_argument("--trace", metavar="FILE", help="write the chosen plan's step as a Chrome / Perfetto trace "
                   "(a track per pipeline stage: forwards, backwards, bubbles, sends, DP reduction)")
    g.add_argument("--trace-row", type=int, metavar="N", help="trace row N of the table instead of the plan")
    g.add_argument("--simulate-top", type=int, default=4, metavar="K", help="simulate the K fitting "
                   "arrangements with the best bound (default 4); the rest show their contention-free bound")
    g.add_argument("--bucket-mb", type=float, default=25.0, metavar="MB", help="gradient bucket size in MB "
                   "(10^6 B; default 25, PyTorch DDP's bucket_cap_mb)")
    g.add_argument("--overlap-grad-reduce", action=argparse.BooleanOptionalAction, default=True,
                   help="reduce gradients in buckets under the last backward, as Megatron-LM's "
                   "--overlap-grad-reduce (default on; --no-overlap-grad-reduce: one reduction after the "
                   "backward, Megatron-LM's default)")
    g.add_argument("--no-gradient-accumulation-fusion", dest="gradient_accumulation_fusion", action="store_false",
                   help="add each micro-batch's weight gradients into the main gradients in a memory pass, as "
                   "Megatron-LM before 2022 (default: fused into the weight-gradient GEMM)")
    g.add_argument("--deepspeed-bf16-optimizer", action="store_true",
                   help="accumulate as DeepSpeed's BF16_Optimizer (ds_config bf16 enabled, ZeRO 0; BLOOM 176B): "
                   "each micro-batch's gradients cast to fp32 and added in a memory pass (bf16 only)")
    reduce = g.add_mutually_exclusive_group()
    reduce.add_argument("--grad-reduce-in-bf16", dest="grad_reduce_in_fp32", action="store_false", default=None,
                        help="keep and reduce the main gradients in bf16 (default under bf16: fp32, as Megatron-LM)")
    reduce.add_argument("--accumulate-allreduce-grads-in-fp32", dest="grad_reduce_in_fp32", action="store_true",
                        help="keep and reduce the main gradients in fp32 (Megatron-LM's default under bf16; "
                        "fp16: fp16); at --zero 2|3 reduce-scatter them in fp32, as FSDP's "
                        "reduce_dtype=torch.float32 (torchtitan's only choice; default there: the parameters' dtype)")
    g.add_argument("--backward-prefetch", default="BACKWARD_PRE", metavar="|".join(BACKWARD_PREFETCH),
                   help="ZeRO-3: when FSDP all-gathers the next unit's parameters in the backward: before the "
                        "current unit's gradients (BACKWARD_PRE, FSDP's default), after them, or on demand (NONE)")
    g.add_argument("--fsdp-version", type=int, default=2, choices=(1, 2),
                   help="--zero 2|3: the PyTorch FSDP whose per-micro-batch casts and copies are timed: 1 "
                        "(FullyShardedDataParallel, Composer / llm-foundry) or 2 (fully_shard, torchtitan; default)")
    g.add_argument("--use-megatron-fsdp", dest="megatron_fsdp", action="store_true",
                   help="--zero 2|3 as Megatron-Core's own FSDP (Megatron-LM's flag; NeMo, Megatron-Bridge): "
                        "Megatron-LM's distributed-optimizer passes, none of PyTorch FSDP's casts and copies")


MAX_GLOBAL_BATCH = 1 << 20
"""Most sequences per step ``--global-batch`` takes: 1,048,576 (published runs use some 10^3 to 10^4,
GPT-3 175B 1,536); a count beyond it would only make the micro-batch search slow."""


def _options(args, workload: Workload) -> StepOptions:
    if args.passes not in (None, "both"):
        raise InputError(f"--pass {args.passes}: a training step runs fwd+bwd; drop --pass with --global-batch")
    if args.simulate_top < 0:
        raise InputError(f"--simulate-top {args.simulate_top}: must be >= 0")
    if math.isfinite(args.bucket_mb) and 0 < args.bucket_mb < 1e-6:  # 1e-320 MB is no bucket at all
        raise InputError(f"--bucket-mb {args.bucket_mb:g}: a bucket size is a finite number of MB > 0, at least 1e-06 "
                         f"(one byte)")
    if not (math.isfinite(args.bucket_mb) and args.bucket_mb > 0):
        raise InputError(f"--bucket-mb {args.bucket_mb:g}: a bucket size is a finite number of MB > 0")
    model = resolve_model(args.model) if args.model else None
    tied = model.tied if model is not None else True
    return StepOptions(global_batch=args.global_batch, layers=args.layers, vocab=vocab_of(args), tied=tied,
                       zero=args.zero if args.zero is not None else 0, optimizer=args.optimizer,
                       recompute=args.recompute if args.recompute is not None else "none",
                       bucket_bytes=args.bucket_mb * 1e6,
                       dtype=args.dtype, overlap_grad_reduce=args.overlap_grad_reduce,
                       grad_reduce_in_fp32=args.grad_reduce_in_fp32,
                       gradient_accumulation_fusion=args.gradient_accumulation_fusion,
                       deepspeed_bf16_optimizer=args.deepspeed_bf16_optimizer,
                       async_dgrad=args.async_dgrad, tp_comm_overlap=args.tp_comm_overlap,
                       tp_comm_overlap_cfg=tp_comm_overlap_cfg(args),
                       backward_prefetch=args.backward_prefetch, fsdp_version=args.fsdp_version,
                       megatron_fsdp=args.megatron_fsdp)


def plan_rows(args: argparse.Namespace, G, workload: Workload, micro_batch: int | None,
              algorithms: tuple[str, ...], placements, overrides, show_progress: bool = True
              ) -> tuple[list, StepOptions, dict, object]:
    """The whole-model plan's rows for ``args`` on ``G`` (``plan_training``), with the step options, the
    block-time cache and the router it used; ``show_progress``: `tpsim predict`'s progress on stderr.
    ``tpsim calibrate --from-steps`` times its entries through it, without progress."""
    if workload.name != "transformer":
        raise InputError(f"--global-batch plans a transformer's training; --workload {workload.name} has none "
                         f"(give --model NAME or --workload transformer)")
    if not 1 <= args.global_batch <= MAX_GLOBAL_BATCH:
        raise InputError(f"--global-batch {args.global_batch}: sequences per step must be from 1 to "
                         f"{MAX_GLOBAL_BATCH:,}")
    options = _options(args, workload)
    if getattr(args, "fp8", False):  # TE keeps the linears' inputs in FP8 (simulator.memory.activations)
        options = dataclasses.replace(options, fp8_recipe=recipe_of(G, G.nodes[gpu_nodes(G)[0]]["device"]))
    sizes = tp_sizes_of(args.gpus, args.tp_sizes)
    check_schedule_flags(args.schedule, args.virtual_stages)
    pps = pipeline_sizes(args.gpus, options.layers, args.pp_sizes)
    candidates = pipelined(training_arrangements(args.gpus, algorithms, placements, sizes, args.overlap), pps)

    def variants(a):
        return schedule_variants(a, options.layers, args.schedule, args.virtual_stages)

    def settings(a, block):
        return settings_grid(args.zero, args.recompute, block.attention, a.pp)

    def make_block(b: int) -> Workload:
        return workload.with_batch(b)

    usable = usable_device_bytes(G.nodes[gpu_nodes(G)[0]]["device"])
    if args.trace_row is not None and not args.trace:
        raise InputError(f"--trace-row {args.trace_row} needs --trace FILE")
    guard(search_estimate(candidates, variants, args.zero, args.recompute, workload.attention, args.simulate_top,
                          args.gpus), "tpsim predict", args.force)
    cache: dict = {}  # block times and memory parts, shared by every pipeline size and schedule of a row
    router = TopologyCache(G)
    shown = (Progress("tpsim predict", total=len(candidates) + args.simulate_top, unit="arrangement")
             if show_progress else contextlib.nullcontext())
    with shown as bar:
        rows = plan_training(G, candidates, make_block, options, micro_batch, args.simulate_top,
                             functools.partial(memory_of, cache=cache), usable, algorithms=overrides,
                             progress=None if bar is None else lambda _: bar.update(), variants=variants, cache=cache, floor=pipeline_floor_s,
                             router=router, settings=settings)
    return rows, options, cache, router


def training_plan_command(args: argparse.Namespace, G, workload: Workload, micro_batch: int | None,
                          algorithms: tuple[str, ...], placements, overrides) -> int:
    """Run the whole-model plan of `tpsim predict`; print the table (or JSON) and the launch line."""
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    usable = usable_device_bytes(device)
    rows, options, cache, router = plan_rows(args, G, workload, micro_batch, algorithms, placements, overrides)

    def make_block(b: int) -> Workload:
        return workload.with_batch(b)

    records = [dict(rank=i + 1 if not r.skipped else None, **r.to_dict()) for i, r in enumerate(rows)]
    if args.trace:
        _write_step_trace(args, G, rows, make_block, options, router, overrides, cache)
    title = _title(args, G, workload, options, device, usable)
    if args.csv:
        _write_csv(args.csv, records)
    if args.png:
        plot_training(rows, args.png, title, usable)
    if args.json:
        json.dump(records, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    precision = precision_flags(options.dtype, recipe_of(G, device) if args.fp8 else None) + fusion_flags(workload)
    for line in table_lines(rows, title, options, usable, precision):
        print(line)
    for note in (selective_note(workload.attention, args.recompute), norm_note(workload), gemm_rate_note(G, device)):
        if note:
            print(f"  note: {note}")
    for label, path in (("csv", args.csv), ("png", args.png), ("trace", args.trace)):
        if path:
            print(f"{label}: {path}")
    return 0


def _write_step_trace(args, G, rows, make_block, options, router, overrides, cache) -> None:
    """``--trace``: the step of the plan (the best simulated fitting row) or of ``--trace-row N``."""
    listed = [r for r in rows if not r.skipped]
    if args.trace_row is not None:
        if not 1 <= args.trace_row <= len(listed):
            raise InputError(f"--trace-row {args.trace_row}: the table has rows 1 to {len(listed)}")
        row = listed[args.trace_row - 1]
    else:
        row = next((r for r in listed if r.fits is not False and r.simulated), None)
        if row is None:
            raise InputError("--trace: no fitting row was simulated to trace; give --trace-row N")
    trace = step_trace(G, row.arrangement, make_block(row.best.micro_batch), row.options, bound=row.simulated is None,
                       router=router, algorithms=overrides, cache=cache)
    write_trace(args.trace, trace)


def _title(args, G, workload, options, device, usable) -> str:
    name = (resolve_model(args.model).name if args.model else
            f"transformer (seq={workload.seq}, hidden={workload.hidden}, heads={workload.heads})")
    opt = {"adam": "Adam", "sgd": "SGD"}[options.optimizer]
    if args.zero is None and args.recompute is None:
        settings = "ZeRO and recompute searched"
    else:
        settings = (f"{'ZeRO searched' if args.zero is None else f'ZeRO-{args.zero}'}, "
                    f"{'recompute searched' if args.recompute is None else f'recompute {args.recompute}'}")
    return (f"{name} x {options.layers} layers, vocab {options.vocab:,}, global batch {options.global_batch}, {opt}, "
            f"{settings}, {workload.attention} attention, "
            f"{'' if workload.norm_kernel == 'fused' else f'{workload.norm_kernel} norms, '}"
            f"{'' if workload.pointwise_kernel == 'fused' else 'eager rotary/SwiGLU, '}"
            f"{fp8_label(G, device) if args.fp8 else options.dtype}, on {args.gpus} GPUs of "
            f"{G.graph.get('name', args.topology)} ({device.get('name', '?')}, {_gb(usable)} usable)")


def _gb(nbytes: float | None) -> str:
    """Memory in GB with one decimal ("35.7 GB", "1,543.2 GB"): the columns compare at a glance."""
    return "-" if nbytes is None else f"{nbytes / 1e9:,.1f} GB"


def _row(i, r, width: int, best: float, rc: int = 7) -> str:
    s, m = r.best, r.memory
    mem = _gb(None if m is None else m.peak_bytes)
    states = _gb(None if m is None else m.params_bytes + m.grads_bytes + m.optimizer_bytes)
    acts = _gb(None if m is None else m.activations_bytes)
    setting = short_label(r.options.zero, r.options.recompute)
    return (f"  {i:>3}  {r.arrangement.label:<{width}}  {setting:<{rc}}  {s.micro_batch:>3} {s.micro_batches:>4}  "
            f"{format_time(s.step_s):>10}  {s.tokens_per_s:>9,.0f}  {100 * s.mfu:>5.1f}%  "
            f"{format_time(s.tp_comm_s):>10}  {format_time(s.bubble_s):>10}  {format_time(s.pp_comm_s):>10}  "
            f"{format_time(s.dp_comm_s):>10}  {states:>10}  {acts:>9}  {mem:>10}  "
            f"{s.step_s / best:>6.2f}x  {s.model}")


def comm_line(label: str, s) -> str:
    """The plan's communication per kind, exposed (on the critical path) + hidden (under compute), per step."""
    names = {"tp": "TP", "dp": "DP reduction", "zero_gather": "ZeRO all-gather", "pp": "PP"}
    parts = [f"{names[k]} {format_time(v['exposed_s'])} + {format_time(v['hidden_s'])}"
             for k, v in s.comm_breakdown().items() if v["total_s"] > 0]
    return f"  communication of {label} per step, exposed + hidden: " + (", ".join(parts) or "none")


def table_lines(rows, title: str, options: StepOptions, usable: int | None,
                precision: tuple[str, ...] = ()) -> list[str]:
    """The ranked table: fitting rows, the rows that do not fit, the skipped ones; then the launch line."""
    fit = [r for r in rows if not r.skipped and r.fits is not False]
    over = [r for r in rows if not r.skipped and r.fits is False]
    skipped = [r for r in rows if r.skipped]
    lines = [f"tpsim predict: {title}"]
    shown = fit + over
    if not shown:
        lines.append("  no arrangement applies to this model and batch")
    else:
        width = max(len(r.arrangement.label) for r in shown)
        best = (fit or over)[0].best.step_s
        rc = max(7, *(len(short_label(r.options.zero, r.options.recompute)) for r in shown))  # "Z3 sel-op"
        lines.append(f"  {'#':>3}  {'arrangement':<{width}}  {'ZeRO rc':<{rc}}  {'B':>3} {'m':>4}  {'step':>10}  "
                     f"{'tokens/s':>9}  "
                     f"{'MFU':>6}  {'TP comm':>10}  {'bubble':>10}  {'PP comm':>10}  {'DP comm':>10}  {'states':>10}  "
                     f"{'acts':>9}  {'peak':>10}  "
                     f"{'vs best':>7}")
        lines += [_row(i, r, width, best, rc) for i, r in enumerate(fit, 1)]
        if not fit:
            lines.append("  no arrangement fits in memory (--zero 1|2|3, --recompute selective|full where pinned, "
                         "larger --tp-sizes or --pp-sizes shrink the peak)")
        if over:
            lines.append(f"  do not fit ({_gb(usable)} usable per GPU):")
            lines += [_row(len(fit) + i, r, width, best, rc) for i, r in enumerate(over, 1)]
        per_op = any(r.options.recompute == "selective-op" for r in (*fit, *over))  # the legend grows only then
        lines.append(f"  ZeRO rc: ZeRO stage and recompute (-: none, sel: selective, "
                     f"{'sel-op: per-op selective, ' if per_op else ''}full); "
                     "B: micro-batch, m: micro-batches per step; step = compute + TP comm + pipeline bubble + "
                     "PP comm + DP comm (exposed); states: parameters + gradients + optimizer; acts: kept "
                     "activations; peak per GPU (pipelines: the worst stage's)")
        lines.append("  simulated: flow network, contention included; bound: contention-free analytic "
                     "(not simulated: --simulate-top K)")
    if skipped:
        lines.append(f"  skipped {len(skipped)}:")
        lines += [f"    {r.arrangement.label}: {r.skipped}" for r in skipped]
    winner = next((r for r in fit if r.simulated), None)
    if winner is not None and fit[0] is not winner:
        lines.append(f"  note: {fit[0].arrangement.label}'s bound is below the best simulated step; it may be "
                     f"faster: raise --simulate-top to simulate it")
    if winner is not None:
        lines.append(comm_line(winner.arrangement.label, winner.best))
        lines.append(f"  launch {winner.arrangement.label}:")
        o = winner.options
        reduction = megatron_flags(o.dtype, o.zero, winner.arrangement.dp, o.overlap_grad_reduce,
                                   o.grad_reduce_in_fp32, o.gradient_accumulation_fusion)
        lines += ["    " + line for line in launch_lines(winner.arrangement, winner.best.micro_batch, o, reduction,
                                                         precision)]
    return lines


def _write_csv(path: str, records: list[dict]) -> None:
    with replacing(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for record in records:
            row = {k: record.get(k) for k in CSV_FIELDS}
            row["grid"] = "x".join(map(str, record["grid"]))
            row["peak_bytes"] = (record.get("memory") or {}).get("peak_bytes")
            writer.writerow(row)
