"""FSDP training throughput published by MosaicML llm-foundry and torchtitan, against tpsim's prediction.

What it shows: how close tpsim's whole training step comes to measured PyTorch FSDP runs of dense GPT
and Llama models, 7B to 70B, on 8 to 512 A100s and H100s, row by row (``experiments.fsdp_tables``
holds the published rows and their sources). FSDP full sharding is tpsim's pure data parallelism with
ZeRO-3 (``--tp-sizes 1 --pp-sizes 1 --zero 3``); each row pins what the source prints: the model
(MPT's yamls as model files in ``experiments/models``, torchtitan's ``llama3-8b`` preset), the sequence
length, the GPUs, the micro-batch and the global batch (so the gradient accumulation), activation
checkpointing as ``--recompute full``, ``none`` or ``selective-op`` (torchtitan's per-op policy), the
attention kernel and bfloat16. The cluster is the
preset of the source's GPU: ``dgx-h100`` (H100 80GB; llm-foundry does not name its H100 fabric, the
preset has one 400 Gb/s NIC per GPU), ``dgx-a100-80gb`` and ``dgx-a100`` (A100 80 and 40 GB with 8 x
200 Gb/s per server: the tables' "1600 Gbps node-node interconnect").

The attention kernel is the one the run ran (``FsdpRun.attention``: llm-foundry's launcher defaults to
``attn_impl: triton``) where tpsim has a published rate for it: ``--attention triton`` on the A100 rows.
The Triton kernel has no published H100 figure, so the H100 rows that ran it keep ``--attention flash``
(FlashAttention-2's rate, faster) and say so in their explanation.

The figure compared is the measured tokens per second per GPU; tpsim's is its step's tokens/s over the
GPUs. Each row's explanation gives tpsim's step split, its MFU against the one the source prints, and
(full runs) the suspected cause of the common gap varied: the same command on the same cluster with
every GEMM capped at a flat 70% of the device's dense peak (``gemm_efficiency``, what ``tpsim
calibrate`` sets) instead of the published large-GEMM rate the presets carry. Each row
also gets ``comm_share``: how long FSDP's collectives of one micro-batch take (``tpsim collective``) over
tpsim's compute time of that micro-batch. tpsim hides those collectives under the compute, charging it
only the SMs their NCCL kernels hold (``dp_overlap_sms``, ``simulator.timing.sm_sharing``); the summary
groups the errors by that share on each kind of GPU.

The gradient reduction's dtype is the run's where its source says it (``FsdpRun.gradient_reduction``):
``--accumulate-allreduce-grads-in-fp32`` (FSDP's ``reduce_dtype=torch.float32``) on torchtitan's rows (its
only choice, ``--training.mixed_precision_reduce float32``) and on the llm-foundry rows whose table is of
2024 (``amp_bf16 DEFAULT`` under Composer >= 0.16.4); ``bf16 PURE`` rows reduce in bfloat16, and the
``DEFAULT`` rows of 2023-10-19, whose Composer version is not named, stay in bfloat16 and say so.
What tpsim does not express, named in the rows it touches: torchtitan's H100s (96 GB HBM2e at 500 W, below
the H100 SXM5 80GB of the preset).
torchtitan's per-op selective checkpointing (every second matmul of a block, the norms, the rotary embedding
and the SwiGLU product recomputed; ``simulator.workloads.op_checkpoint``) runs as ``--recompute
selective-op``; its rows also give ``--recompute full`` as the slower bound. Its RMSNorm is eager PyTorch
ops (``norm_type = "rmsnorm"`` with ``compile = false`` in its llama3 8B toml at 9dec370ad): ``--norm-kernel
eager``; llm-foundry's ``low_precision_layernorm`` is PyTorch's native kernel, the default ``fused``. Its
rotary embedding, GQA key/value copies and SwiGLU product run eagerly by the same switch: ``--pointwise-kernel
eager`` (``simulator.workloads.kernels.pointwise_variants``). Its rows with ``torch.compile`` (``FsdpRun.compiled``:
each TransformerBlock compiled by inductor) run ``--norm-kernel fused --pointwise-kernel fused`` instead; what
inductor fuses beyond those kernels, and what it does not, each such row's explanation says (``COMPILE_NOTE``).
A row whose predicted peak memory is ``MEMORY_PRESSURE`` of the usable or more, and which tpsim reads fast, names
the caching allocator's retries under memory pressure among its suspects (``memory_pressure``).
``experiments.fsdp_tables.NOT_EXPRESSED`` lists the rows left out and why.

Writes the CSV, the PNG of every row's bars and beside it ``*_share.png``, each row's error against its
communication share (``experiments.fsdp_share_plot``). Deterministic. ``--quick`` (the CI smoke test)
runs four rows on 8 GPUs without the GEMM-cap variation and writes to a temporary folder unless
``--csv`` / ``--png`` are given.

    python -m experiments.repro_fsdp [--quick] [--csv FILE] [--png FILE]
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import tempfile

from experiments.fsdp_share_plot import write_share_png
from experiments.fsdp_tables import MOSAICML, NOT_EXPRESSED, TORCHTITAN, FsdpRun
from experiments.gemm_cap import capped_file
from experiments.published import Comparison, error_summary, geomean_error, pinned_row, report, script_arguments, tpsim_json
from simulator.workloads.models import resolve_model
from topologies import gpu_nodes
from topologies.presets import build_preset
from topologies.triton_rates import triton_devices

__all__ = ["Result", "attention", "command", "fp32_reduction", "predicted_row", "comm_share", "memory_pressure", "results",
           "comparisons", "quick_runs", "summary", "by_comm_share", "cli"]

NAME = "repro_fsdp"
MODELS = os.path.join("experiments", "models")
PRESETS = {"h100_80gb": "dgx-h100", "h100_96gb_500w": "dgx-h100", "a100_80gb": "dgx-a100-80gb",
           "a100_40gb": "dgx-a100"}
GPUS_PER_SERVER = 8
GEMM_CAP = 0.7
"""The flat fraction of peak the variation caps every GEMM at (repro_pipeline's finding on A100)."""
QUICK = (("h100_80gb", "7b", 2048, 8), ("a100_80gb", "7b", 2048, 8), ("a100_40gb", "13b", 2048, 8),
         ("h100_96gb_500w", "llama3-8b", 8192, 8))
"""(device, model, seq, GPUs) of the ``--quick`` rows: one per cluster, each on one server."""
MEMORY_PRESSURE = 0.95
"""Predicted peak over usable memory from which a fast row names memory pressure: the usable memory already sets
aside 5% of the device for the allocator's fragmentation (``simulator.memory.device.RESERVE_FRACTION``), and a
peak at 95% of it leaves less than that again; no row of the tables lies between 0.943 and 0.959, so the split
does not hang on the figure (experiments/README.md, "Memory pressure"). Not fitted: no time is charged."""
PRESET_MEMORY_DIFFERS = {"h100_96gb_500w": "96 GB HBM2e against the preset's 80 GB"}
"""Devices whose memory the preset does not have: their peak over usable says nothing of the run's pressure."""
COMPILE_NOTE = (
    "torch.compile on each block (apply_compile, fullgraph=True, at 9dec370ad) timed as --norm-kernel fused "
    "--pointwise-kernel fused; inductor also fuses the first residual add into ffn_norm and the residual gradients "
    "into the norms' backward, and leaves V out of the rotary, which tpsim's kernels charge (tpsim slow there), "
    "while it still copies repeat_kv's keys and values for SDPA and runs the final norm, outside the blocks, "
    "eagerly, which tpsim's fused kernels do not charge (fast there)")
"""What a compiled torchtitan row's explanation says of the kernels it is timed with."""


def _model(run: FsdpRun) -> str:
    return run.model if run.framework == "torchtitan" else os.path.join(MODELS, f"mpt-{run.model}.yaml")


def _recompute(run: FsdpRun, bound: str = "") -> str:
    if run.checkpointing == "selective-op":
        return bound or "selective-op"  # torchtitan's per-op policy; ``bound``: full, the slower bound
    return run.checkpointing


@functools.lru_cache(maxsize=None)
def _gpu_name(device: str) -> str:
    G = build_preset(f"{PRESETS[device]}:1")
    return G.nodes[gpu_nodes(G)[0]]["device"]["name"]


def attention(run: FsdpRun) -> str:
    """The ``--attention`` kernel of ``run``: the one it ran, or ``flash`` where that one is ``triton`` and
    the run's GPU has no published Triton figure (the H100s)."""
    if run.attention == "triton" and _gpu_name(run.device) not in triton_devices():
        return "flash"
    return run.attention


def topology(run: FsdpRun) -> str:
    """The preset cluster of ``run``'s GPUs: its servers of 8."""
    return f"{PRESETS[run.device]}:{max(1, run.gpus // GPUS_PER_SERVER)}"


def command(run: FsdpRun, topology_spec: str | None = None, recompute: str = "") -> list[str]:
    """The ``tpsim predict`` arguments of ``run``: FSDP full sharding as ZeRO-3 over pure data parallelism,
    everything the source prints pinned (the reduction in float32 where known, ``fp32_reduction``; torchtitan's
    eager RMSNorm, rotary and SwiGLU; the FSDP each ran: Composer's ``FullyShardedDataParallel``, torchtitan's
    ``fully_shard``); ``topology_spec`` replaces the preset (the GEMM-cap variation),
    ``recompute`` another recompute mode for a per-op selective row (``full``, its slower bound)."""
    return ["predict", "--gpus", str(run.gpus), "--topology", topology_spec or topology(run), "--model", _model(run),
            "--seq", str(run.seq), "--global-batch", str(run.global_batch), "--batch", str(run.micro_batch),
            "--tp-sizes", "1", "--pp-sizes", "1", "--zero", "3" if run.sharding == "FULL_SHARD" else "2",
            "--recompute", _recompute(run, recompute), "--attention", attention(run), "--dtype", "bfloat16",
            "--simulate-top", "1", *(_kernels(run) if run.framework == "torchtitan" else []),
            *(["--accumulate-allreduce-grads-in-fp32"] if fp32_reduction(run) else []),
            "--fsdp-version", "2" if run.framework == "torchtitan" else "1"]


def _kernels(run: FsdpRun) -> list[str]:
    """torchtitan's norm and pointwise kernels: eager PyTorch ops (``compile = false`` in its llama3 8B toml at
    9dec370ad), or inductor's fused kernels where the row compiled each block."""
    kernel = "fused" if run.compiled else "eager"
    return ["--norm-kernel", kernel, "--pointwise-kernel", kernel]


def fp32_reduction(run: FsdpRun) -> bool:
    """Whether ``run`` is known to reduce its gradients in float32 (``FsdpRun.gradient_reduction``); an
    undetermined dtype (``float32 or bfloat16``) is timed in bfloat16."""
    return run.gradient_reduction == "float32"


predicted_row = pinned_row
"""The one row ``predict`` prints for a pinned command (``experiments.published.pinned_row``)."""


def _per_gpu(row: dict, run: FsdpRun) -> float:
    return row["tokens_per_s"] / run.gpus


def _split(row: dict) -> str:
    peak, usable = row["memory"]["peak_bytes"] / 1e9, row["device_memory_bytes"] / 1e9
    return (f"tpsim step {row['step_time_s']:.3f} s = compute {row['compute_s']:.3f} + DP comm exposed "
            f"{row['dp_comm_s']:.3f} s, MFU {row['mfu']:.1%}, peak memory {peak:.1f} GB of {usable:.1f} usable"
            + (" (does not fit)" if row["fits"] is False else ""))


@functools.lru_cache(maxsize=None)
def _collective_s(op: str, nbytes: int, topology_spec: str) -> float:
    return tpsim_json(["collective", "--op", op, "--bytes", str(nbytes), "--topology", topology_spec])["time_s"]


def comm_share(run: FsdpRun, row: dict) -> float:
    """The time FSDP's collectives of one micro-batch take (two all-gathers of the bfloat16 parameters,
    forward and backward, and one reduce-scatter of the gradients, in float32 where the run is known to
    reduce in float32, else bfloat16), each as ``tpsim collective`` times it over all the run's GPUs, over
    tpsim's compute time of one micro-batch: the share of the compute that has a collective beside it."""
    params = dataclasses.replace(resolve_model(_model(run)), seq=run.seq).parameter_count()
    grad_bytes = 4 if run.gradient_reduction == "float32" else 2
    spec = topology(run)
    gathers = 2 * _collective_s("all_gather", 2 * params, spec)
    comm = gathers + _collective_s("reduce_scatter", grad_bytes * params, spec)
    return comm / ((row["compute_s"] - row["optimizer_s"]) / row["micro_batches"])


def memory_pressure(run: FsdpRun, row: dict) -> float | None:
    """tpsim's predicted peak memory over the usable memory of ``run``'s GPU, or None where the preset's memory
    is not the run's (``PRESET_MEMORY_DIFFERS``)."""
    if run.device in PRESET_MEMORY_DIFFERS:
        return None
    return row["memory"]["peak_bytes"] / row["device_memory_bytes"]


@dataclasses.dataclass(frozen=True)
class Result:
    """One row: the published run, its comparison, its ``comm_share`` and (full runs) tpsim's figure over the
    published one with every GEMM capped at ``GEMM_CAP``."""

    run: FsdpRun
    comparison: Comparison
    comm_share: float
    capped_ratio: float | None = None


def _suspected(run: FsdpRun, ratio: float, share: float, capped: float | None, sms_s: float,
               pressure: float | None = None) -> str:
    """One sentence on what the row's own variations point to, for an error over 5%; ``sms_s``: the step's
    ``dp_overlap_sms`` term, ``pressure``: ``memory_pressure`` of the row."""
    causes = []
    if pressure is not None and pressure >= MEMORY_PRESSURE and ratio > 1:
        # PyTorch's caching allocator, short of a free block, frees its cache and retries cudaMalloc
        # (torch.cuda.memory_stats' num_alloc_retries); pytorch/pytorch#104509 measured 7.3 s an iteration with
        # 46 retries against 5.0 s with none (FSDP's limit_all_gathers).
        causes.append(f"memory pressure: the predicted peak is {pressure:.0%} of the usable memory, where PyTorch's "
                      f"caching allocator frees its cache and retries cudaMalloc (num_alloc_retries), which tpsim "
                      f"does not model")
    if share >= 0.1:
        causes.append(f"FSDP's collectives run beside {share:.0%} of the compute, which tpsim charges only the SMs "
                      f"their NCCL kernels hold ({sms_s:.3f} s a step), not the memory bandwidth they share")
    if capped is not None:
        if abs(capped - 1) <= 0.05:
            causes.append(f"the GEMM rate: capped at {GEMM_CAP:.0%} of peak, tpsim is within 5% ({capped - 1:+.1%})")
        elif capped < 0.95:
            causes.append(f"a GEMM rate between the preset's and a {GEMM_CAP:.0%} cap ({capped - 1:+.1%} with it)")
        else:
            causes.append(f"the GEMM rate in part ({capped - 1:+.1%} with a {GEMM_CAP:.0%} cap)")
    if run.framework == "torchtitan":
        causes.append("500 W H100s, which tpsim does not express")
    return f"{ratio - 1:+.1%}, suspected: " + ("; ".join(causes) or "not varied under --quick")


def _result(run: FsdpRun, vary_folder: str | None) -> Result:
    """``run`` predicted, explained, and varied with the GEMM cap when ``vary_folder`` is given."""
    argv = command(run)
    row = predicted_row(argv)
    share = comm_share(run, row)
    notes = [_split(row), f"FSDP's collectives take {share:.0%} of each micro-batch's compute time"]
    if run.mfu_percent is not None:
        notes.append(f"published MFU {run.mfu_percent:.1f}% (6N + 12lsh per token)")
    if run.checkpointing == "selective-op":
        full = _per_gpu(predicted_row(command(run, recompute="full")), run)
        notes.append(f"per-op selective checkpointing timed as --recompute selective-op; with --recompute full "
                     f"tpsim gives {full:,.0f} tokens/s/GPU ({full / run.tokens_per_s_per_gpu - 1:+.1%})")
    if run.compiled:
        eager = next(r for r in TORCHTITAN if r.table == run.table and not r.compiled)
        gain = _per_gpu(row, run) / _per_gpu(predicted_row(command(eager)), eager)
        notes.append(f"{COMPILE_NOTE}; torch.compile's gain: published x{run.tokens_per_s_per_gpu / eager.tokens_per_s_per_gpu:.3f} "
                     f"({run.tokens_per_s_per_gpu:,.0f} / {eager.tokens_per_s_per_gpu:,.0f}), tpsim x{gain:.3f} (fused / eager)")
    if attention(run) != run.attention:
        notes.append(f"the run's attention kernel was attn_impl: {run.attention}, which has no published figure on "
                     f"this GPU: timed as --attention {attention(run)} (FlashAttention-2, faster)")
    if fp32_reduction(run):
        notes.append("gradients reduced in float32, as the run (--accumulate-allreduce-grads-in-fp32)")
    elif run.gradient_reduction != "bfloat16":
        notes.append(f"gradients reduced in {run.gradient_reduction} by the run (not printed): in bfloat16 by tpsim")
    capped = None
    if vary_folder is not None:
        capped = _per_gpu(predicted_row(command(run, capped_file(topology(run), GEMM_CAP, vary_folder))), run)
        notes.append(f"every GEMM capped at {GEMM_CAP:.0%} of peak: {capped:,.0f} "
                     f"({capped / run.tokens_per_s_per_gpu - 1:+.1%})")
    ratio = _per_gpu(row, run) / run.tokens_per_s_per_gpu
    if abs(ratio - 1) > 0.05:
        notes.insert(0, _suspected(run, ratio, share, None if capped is None else capped / run.tokens_per_s_per_gpu,
                                   row["terms_s"].get("dp_overlap_sms", 0.0), memory_pressure(run, row)))
    config = (f"{run.gpus} {run.device}, seq {run.seq}, micro-batch {run.micro_batch} x {run.grad_accum}, "
              f"batch {run.global_batch}, {run.sharding}, checkpointing {run.checkpointing}")
    claim = f"{run.model} seq {run.seq}{' torch.compile' if run.compiled else ''} tokens/s/GPU"
    comparison = Comparison(paper=run.framework, claim=claim,
                            configuration=config, published=run.tokens_per_s_per_gpu, predicted=_per_gpu(row, run),
                            unit="tokens/s/GPU", source=run.source, explanation="; ".join(notes),
                            commands=("tpsim " + " ".join(argv),))
    return Result(run, comparison, share, None if capped is None else capped / run.tokens_per_s_per_gpu)


def quick_runs() -> list[FsdpRun]:
    """The ``--quick`` rows (``QUICK``), in that order."""
    runs = MOSAICML + TORCHTITAN
    return [next(r for r in runs if (r.device, r.model, r.seq, r.gpus) == key) for key in QUICK]


def results(quick: bool = False) -> list[Result]:
    """Every row (``quick``: ``quick_runs()``), each varied with the GEMM cap unless ``quick``."""
    if quick:
        return [_result(run, None) for run in quick_runs()]
    with tempfile.TemporaryDirectory(prefix="tpsim-repro-fsdp-") as folder:
        return [_result(run, folder) for run in MOSAICML + TORCHTITAN]


def comparisons(quick: bool = False) -> list[Comparison]:
    """The comparisons of ``results(quick)``."""
    return [r.comparison for r in results(quick)]


def summary(rows: list[Result]) -> str:
    """Geomean |error| and the largest, over all rows and per (framework, GPU, checkpointing), each with the
    geomean under the GEMM cap where the rows were varied."""
    comparisons_ = [r.comparison for r in rows]
    varied = all(r.capped_ratio is not None for r in rows)
    lines = [error_summary(comparisons_).replace(", largest", f" over {len(rows)} rows, largest", 1)]
    if varied:
        cap = geomean_error([r.capped_ratio for r in rows])
        lines[0] += f"; every GEMM capped at {GEMM_CAP:.0%} of peak: geomean error {cap:.1%}"
    groups: dict[str, list[Result]] = {}
    for r in rows:
        label = f"{r.run.framework}, {r.run.device}, checkpointing {r.run.checkpointing}"
        groups.setdefault(label + (", torch.compile" if r.run.compiled else ""), []).append(r)
    for label, group in groups.items():
        ratios = [r.comparison.ratio for r in group]
        line = (f"  {label}: {len(group)} rows, tpsim / published {min(ratios):.2f}-{max(ratios):.2f}, geomean "
                f"error {geomean_error(ratios):.1%}")
        if varied:
            line += f"; GEMM cap {geomean_error([r.capped_ratio for r in group]):.1%}"
        lines.append(line)
    return "\n".join(lines)


SHARE_BINS = (0.0, 0.1, 0.2, 0.4, math.inf)


def by_comm_share(rows: list[Result]) -> str:
    """tpsim / published per GPU and ``comm_share`` bin (``SHARE_BINS``): the error against the communication
    each micro-batch's compute has beside it, on one kind of GPU at a time."""
    lines = ["by GPU and FSDP's collectives over each micro-batch's compute (tpsim / published, geomean):"]
    for device in dict.fromkeys(r.run.device for r in rows):
        cells = []
        for low, high in zip(SHARE_BINS, SHARE_BINS[1:]):
            ratios = [r.comparison.ratio for r in rows if r.run.device == device and low <= r.comm_share < high]
            if ratios:
                label = f"{low:.0%}-{high:.0%}" if high != math.inf else f">= {low:.0%}"
                mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
                cells.append(f"{label}: {mean:.2f} ({len(ratios)})")
        lines.append(f"  {device}: " + ", ".join(cells))
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = script_arguments(__doc__.splitlines()[0], NAME, argv)
    rows = results(args.quick)
    report([r.comparison for r in rows], args,
           "FSDP training, llm-foundry and torchtitan: published vs tpsim tokens/s per GPU")
    share_png = f"{os.path.splitext(args.png)[0]}_share.png"
    write_share_png([(r.run.device, r.run.checkpointing != "none", r.comm_share, r.comparison.ratio) for r in rows],
                    share_png, "FSDP rows: tpsim / published against FSDP's communication share")
    print(f"wrote {share_png}")
    print(summary(rows))
    print(by_comm_share(rows))
    print("\nleft out:")
    for what, why in NOT_EXPRESSED:
        print(f"  {what}: {why}")


if __name__ == "__main__":
    cli()
