"""How to launch a planned arrangement with the framework that implements its algorithm.

- 1-D (``megatron``), 1-D with sequence parallelism (``megatron-sp``) and pure data parallelism: the
  Megatron-LM arguments (``megatron/training/arguments.py``): ``--tensor-model-parallel-size T``,
  ``--sequence-parallel``, ``--pipeline-model-parallel-size P``, ``--num-layers-per-virtual-pipeline-stage
  L / (P v)`` (interleaved 1F1B; Megatron-LM runs 1F1B otherwise), ``--micro-batch-size B``,
  ``--global-batch-size G``, the precision the plan was timed in (``precision_flags``: ``--bf16``, ``--fp16``,
  FP8's ``--fp8-format`` / ``--fp8-recipe``), ``--no-bias-gelu-fusion`` / ``--no-bias-dropout-fusion`` for a plan
  timed without Megatron-LM's fused elementwise kernels (``fusion_flags``; on by default in Megatron-LM) and
  ``--transformer-impl transformer_engine`` for one timed with TE's norms (``--norm-kernel te``; an eager norm,
  torchtitan's, gets a note: ``norm_note``); Megatron-LM derives the data-parallel size as world size / (T x P). It has no
  GPipe schedule: PyTorch's ``torch.distributed.pipelining.ScheduleGPipe`` runs one, as the line says. Recomputation:
  ``--recompute-granularity selective`` (Korthikanti et al.; ``--recompute-activations`` is its older alias) or
  ``--recompute-granularity full --recompute-method uniform --recompute-num-layers 1``; Megatron-LM has no
  per-op selective checkpointing, so a ``selective-op`` plan says so on a line of its own and names
  torchtitan's flags for it (``--activation_checkpoint.mode selective
  --activation_checkpoint.selective_ac_option op``), as a GPipe plan names the schedule that runs it.
  A plan timed without Megatron-LM's asynchronous dX communication says so with
  ``--no-async-tensor-model-parallel-allreduce``
  (Megatron-LM's own flag; the overlap is its default, so nothing is added otherwise; with sequence
  parallelism Megatron-LM always overlaps the re-gather and the reduce-scatter, which no flag turns off, so
  the line says the plan was timed without it); ZeRO-3 timed with a
  ``--backward-prefetch`` other than FSDP's default names it on a line of its own; and one timed with
  Transformer Engine's userbuffers overlap with ``--tp-comm-overlap`` (sequence parallelism only). ZeRO-1 is Megatron-LM's
  distributed optimizer (``--use-distributed-optimizer``); ZeRO-2 and 3 are DeepSpeed's (Megatron-DeepSpeed
  ``--zero-stage``). Pure data parallelism with ZeRO-3 is what FSDP runs: a second line gives torchtitan's
  FSDP2 settings (``--parallelism.data_parallel_shard_degree``, ``--activation_checkpoint.mode``, and
  ``--training.mixed_precision_reduce float32`` for a plan timed reducing in fp32), and a line says the dtype
  the gradients were reduce-scattered in (FSDP2's ``MixedPrecisionPolicy(reduce_dtype=...)``; torchtitan has
  no other choice than float32); other ZeRO-2/3 plans get that line where they reduce in float32.
- 2-D (Optimus), 2.5-D (Tesseract) and 3-D: Colossal-AI's tensor-parallel configuration (its config
  file's ``parallel = dict(tensor=dict(mode=..., size=..., depth=...))``): mode ``2d`` with size q^2,
  ``2.5d`` with size q^2 d and depth d, ``3d`` with size q^3; Colossal-AI also derives the data-parallel
  size as world size / (pipeline x tensor). Pipelines: ``parallel = dict(pipeline=P, tensor=...)``, its
  ``NUM_MICRO_BATCHES`` m, and ``num_chunks=v`` for the interleaved schedule (Colossal-AI's
  ``InterleavedPipelineSchedule``). A ZeRO stage or recompute mode other than none is named on a line of
  its own (Colossal-AI sets them outside ``parallel``: its ZeRO optimizer and activation checkpointing).
- Cannon 2.5-D: no published training framework implements it; the line says so.

Example::

    >>> from simulator.algorithms.arrangement import Arrangement
    >>> from simulator.training.arrangement import TrainingArrangement
    >>> from simulator.training.options import StepOptions
    >>> launch_lines(TrainingArrangement(Arrangement("1d-sp", (8,)), 8), 1, StepOptions(global_batch=256))[0]
    'Megatron-LM: --tensor-model-parallel-size 8 --sequence-parallel --micro-batch-size 1 --global-batch-size 256'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.algorithms.ub_configs import TE_DEFAULT
from simulator.ir.schedule import DTYPE_BYTES
from simulator.training.arrangement import TrainingArrangement
from simulator.training.main_grads import grad_bytes

if TYPE_CHECKING:
    from simulator.training.options import StepOptions

__all__ = ["fusion_flags", "launch_lines", "norm_note", "precision_flags"]

_FP8_FLAGS = {"delayed": "--fp8-format hybrid", "current": "--fp8-format hybrid --fp8-recipe tensorwise",
              "mxfp8": "--fp8-format e4m3 --fp8-recipe mxfp8"}
"""tpsim's FP8 recipe -> Megatron-LM's flags (``--fp8-format``, and ``--fp8-recipe`` where not its default
``delayed``; ``megatron/training/arguments.py``), with the formats Megatron-Bridge's mixed-precision recipes
pair them with (``bf16_with_fp8_delayed_scaling_mixed``, ``..._current_scaling_mixed``: hybrid;
``bf16_with_mxfp8_mixed``: e4m3; ``src/megatron/bridge/training/mixed_precision.py``)."""


def precision_flags(dtype: str, fp8_recipe: str | None = None) -> tuple[str, ...]:
    """Megatron-LM's precision arguments for a plan in ``dtype`` (``--bf16``, ``--fp16``; fp32 is its
    default), and Transformer Engine FP8 on top of bf16 under ``fp8_recipe`` (``--dtype fp8``)."""
    flags = {"bfloat16": ("--bf16",), "float16": ("--fp16",)}.get(dtype, ())
    return flags + ((_FP8_FLAGS[fp8_recipe],) if fp8_recipe else ())


_PER_OP = "selective --activation_checkpoint.selective_ac_option op"
"""torchtitan's ``--activation_checkpoint.mode`` (and option) for ``selective-op`` (its ``JobConfig`` at 9dec370ad)."""


def fusion_flags(workload) -> tuple[str, ...]:
    """Megatron-LM's flags for the fused elementwise kernels a plan was timed without (``--no-bias-gelu-fusion``,
    ``--no-bias-dropout-fusion``; both fusions are its default, so nothing is added for a plan timed with them),
    and ``--transformer-impl transformer_engine`` for one timed with Transformer Engine's norms (``--norm-kernel te``;
    Megatron-LM's default became ``transformer_engine`` in 2024, ``local`` before: named so either way)."""
    te = ("--transformer-impl transformer_engine",) if getattr(workload, "norm_kernel", "fused") == "te" else ()
    return tuple(flag for flag, field in (("--no-bias-gelu-fusion", "bias_gelu_fusion"),
                                          ("--no-bias-dropout-fusion", "bias_dropout_fusion"))
                 if getattr(workload, field, True) is False) + te


def norm_note(workload) -> str | None:
    """A note for a plan timed with torchtitan's eager RMSNorm, rotary or SwiGLU, which no Megatron-LM flag runs."""
    eager = [what for what, field in (("RMSNorm", "norm_kernel"), ("rotary and SwiGLU", "pointwise_kernel"))
             if getattr(workload, field, "fused") == "eager"]
    if not eager:
        return None
    return (f"{' and '.join(eager)} timed as torchtitan's eager PyTorch ops (--training.compile off: fp32 "
            f"intermediates, one kernel per op); Megatron-LM has no such flag, its lines run fused ones")


_MODES = {"2d": "2d", "summa25d": "2.5d", "3d": "3d"}
"""tpsim algorithm -> Colossal-AI tensor-parallel mode."""


def _reduce_dtype(o: StepOptions) -> str:
    """The dtype ZeRO 2/3 reduce-scatter the gradients in (FSDP's ``reduce_dtype``): float32 where the reduced
    gradients are wider than the parameters (``main_grads.grad_bytes``), else the parameters' own."""
    return "float32" if grad_bytes(o.dtype, o.zero, o.grad_reduce_in_fp32) > DTYPE_BYTES[o.dtype] else o.dtype


def _megatron(a: TrainingArrangement, micro_batch: int, o: StepOptions, reduction: tuple[str, ...],
              precision: tuple[str, ...]) -> list[str]:
    """``launch_lines`` for Megatron-LM's 1-D arrangements and pure data parallelism."""
    zero, recompute, global_batch, megatron_fsdp = o.zero, o.recompute, o.global_batch, o.megatron_fsdp
    reduce_dtype = _reduce_dtype(o)
    fsdp_version = o.fsdp_version  # read only where ZeRO 2/3 was timed with PyTorch FSDP's passes (o.torch_fsdp)
    args = [f"--tensor-model-parallel-size {a.tp}"]
    if a.algorithm == "1d-sp" and a.tp > 1:
        args.append("--sequence-parallel")
    if not o.async_dgrad and a.tp > 1 and a.algorithm != "1d-sp":
        args.append("--no-async-tensor-model-parallel-allreduce")
    if o.tp_comm_overlap and a.algorithm == "1d-sp" and a.tp > 1:
        args.append("--tp-comm-overlap")
        if o.tp_comm_overlap_cfg != TE_DEFAULT:  # Megatron-LM's flag takes the config's YAML file
            args.append(f"--tp-comm-overlap-cfg {o.tp_comm_overlap_cfg}.yaml")
    if a.pp > 1:
        args.append(f"--pipeline-model-parallel-size {a.pp}")
        if a.schedule == "interleaved" and o.layers:
            args.append(f"--num-layers-per-virtual-pipeline-stage {o.layers // (a.pp * a.virtual_stages)}")
    args += [f"--micro-batch-size {micro_batch}", f"--global-batch-size {global_batch}", *precision]
    if recompute == "selective":
        args.append("--recompute-granularity selective")
    elif recompute == "full":
        args.append("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
    if zero == 1:
        args.append("--use-distributed-optimizer")
    elif megatron_fsdp:  # Megatron-Core's own FSDP: its sharding strategy names the stage
        args.append("--use-megatron-fsdp --data-parallel-sharding-strategy "
                    + ("optim_grads_params" if zero == 3 else "optim_grads"))
    elif zero >= 2:
        args.append(f"--deepspeed --zero-stage {zero} (Megatron-DeepSpeed)")
    args += reduction
    named = "None" if o.backward_prefetch == "NONE" else f"BackwardPrefetch.{o.backward_prefetch}"
    prefetch = [f"  timed with PyTorch FSDP's backward_prefetch={named}"] \
        if zero == 3 and o.backward_prefetch != "BACKWARD_PRE" else []
    titan = a.pp == 1 and a.tp == 1 and zero == 3 and o.torch_fsdp  # PyTorch's own FSDP runs it
    if recompute == "selective-op":  # the torchtitan line below names it where there is one
        prefetch.append("  Megatron-LM has no per-op selective checkpointing: " + (
            "the torchtitan line runs it" if titan else f"timed as torchtitan's --activation_checkpoint.mode {_PER_OP}"))
    if not o.async_dgrad and a.tp > 1 and a.algorithm == "1d-sp":  # Megatron-LM has no flag for it
        prefetch.append("  timed without sequence parallelism's backward overlap, which Megatron-LM always runs")
    if o.torch_fsdp and (reduce_dtype == "float32" or titan):
        prefetch.append(f"  gradients reduce-scattered in {reduce_dtype}: PyTorch FSDP's "
                        f"MixedPrecisionPolicy(reduce_dtype=torch.{reduce_dtype})" + (
                            "; torchtitan reduces in float32 only (--accumulate-allreduce-grads-in-fp32 times that)"
                            if titan and reduce_dtype != "float32" else ""))
    if o.torch_fsdp:  # the step was timed with PyTorch FSDP's passes (fsdp_passes)
        how = ("FullyShardedDataParallel" + (", ShardingStrategy.SHARD_GRAD_OP" if zero == 2 else "")
               if fsdp_version == 1 else "fully_shard" + (", reshard_after_forward=False" if zero == 2 else ""))
        prefetch.append(f"  timed with PyTorch FSDP{fsdp_version}'s casts, copies and optimizer step ({how}; "
                        f"--fsdp-version), not DeepSpeed's")
    if a.pp == 1:
        lines = ["Megatron-LM: " + " ".join(args),
                 f"  on {a.gpus} GPUs, each tensor-parallel group on {a.tp} consecutive GPUs; data-parallel size "
                 f"{a.dp} = {a.gpus} / {a.tp}, derived by Megatron-LM"]
        if titan:
            reduce = " --training.mixed_precision_reduce float32" if reduce_dtype == "float32" else ""
            lines.append(f"  or torchtitan (FSDP2): --parallelism.data_parallel_shard_degree {a.dp} "
                         f"--activation_checkpoint.mode {_PER_OP if recompute == 'selective-op' else recompute} "
                         f"--training.local_batch_size {micro_batch} "
                         f"--training.global_batch_size {global_batch}{reduce}")
        return lines + prefetch
    lines = ["Megatron-LM: " + " ".join(args),
             f"  on {a.gpus} GPUs, each tensor-parallel group on {a.tp} consecutive GPUs, stage s on GPUs "
             f"s x {a.dp * a.tp} onwards; data-parallel size {a.dp} = {a.gpus} / ({a.tp} x {a.pp}), derived by "
             f"Megatron-LM"]
    if a.schedule == "gpipe":
        lines.append("  Megatron-LM has no GPipe schedule (it runs 1F1B): PyTorch's "
                     "torch.distributed.pipelining.ScheduleGPipe runs this one")
    return lines


def launch_lines(a: TrainingArrangement, micro_batch: int, options: StepOptions, reduction: tuple[str, ...] = (),
                 precision: tuple[str, ...] = ()) -> list[str]:
    """The launch configuration of ``a`` trained as ``options`` say, ``micro_batch`` sequences a micro-batch, as
    lines to print (module docstring); ``reduction``: Megatron-LM's gradient-reduction arguments
    (``simulator.training.main_grads.megatron_flags``); ``precision``: Megatron-LM's precision arguments
    (``precision_flags``) and any kernel fusion turned off (``fusion_flags``). The rest comes from ``options``:
    the global batch, the layers (the interleaved schedule's layers per virtual stage), ZeRO and recompute, the
    overlaps, FSDP's prefetch and version (named only where PyTorch's FSDP runs ZeRO 2/3), Megatron-Core's
    FSDP, and the dtype ZeRO 2/3 reduce-scatter the gradients in."""
    if a.tp == 1 or a.algorithm in ("1d", "1d-sp"):
        return _megatron(a, micro_batch, options, reduction, precision)
    zero, recompute, global_batch = options.zero, options.recompute, options.global_batch
    grid = a.tensor.grid
    settings = [f"  ZeRO-{zero} over the data-parallel group, recompute {recompute}"] if zero or recompute != "none" \
        else []
    if a.algorithm in _MODES:
        depth = f", depth={grid[2]}" if a.algorithm == "summa25d" else ""
        tensor = f"tensor=dict(mode='{_MODES[a.algorithm]}', size={a.tp}{depth})"
        placed = [f"  ranks placed {a.tensor.placement} inside each tensor-parallel group"] \
            if a.tensor.placement else []
        if a.pp == 1:
            return [f"Colossal-AI: parallel = dict({tensor})",
                    f"  data-parallel size {a.dp} = {a.gpus} / {a.tp}, derived by Colossal-AI; micro-batch "
                    f"{micro_batch}, global batch {global_batch}"] + placed + settings
        m = global_batch // (micro_batch * a.dp)
        chunks = f"; model num_chunks={a.virtual_stages} (InterleavedPipelineSchedule)" \
            if a.schedule == "interleaved" else ""
        lines = [f"Colossal-AI: parallel = dict(pipeline={a.pp}, {tensor}); NUM_MICRO_BATCHES = {m}{chunks}",
                 f"  data-parallel size {a.dp} = {a.gpus} / ({a.tp} x {a.pp}), derived by Colossal-AI; micro-batch "
                 f"{micro_batch}, global batch {global_batch}"]
        if a.schedule == "gpipe":
            lines.append("  Colossal-AI's pipeline runs 1F1B; PyTorch's torch.distributed.pipelining.ScheduleGPipe "
                         "runs GPipe")
        if a.tensor.placement:
            lines.append(f"  ranks placed {a.tensor.placement} inside each tensor-parallel group")
        return lines + settings
    return [f"{a.label}: no published training framework implements Cannon 2.5-D; "
            f"tpsim's executor runs its schedule (`tpsim run --algo {a.algorithm} --grid "
            f"{','.join(map(str, grid))}`)"]
