"""Megatron-LM's main gradients: the dtype they are kept and reduced in, and whether the reduction overlaps.

Megatron-LM accumulates every gradient into a contiguous main-gradient buffer and reduces that buffer over
the data-parallel group. Its dtype (``megatron/training/arguments.py``): under bf16 the buffer is fp32
(``--accumulate-allreduce-grads-in-fp32`` is forced on for bf16 since 2021, and megatron-core's
``DistributedDataParallelConfig.grad_reduce_in_fp32`` follows it) unless ``--grad-reduce-in-bf16``;
under fp16 it is fp16 unless ``--accumulate-allreduce-grads-in-fp32`` is given; fp32 training reduces fp32.
So a bf16 run moves 4 bytes per parameter in its data-parallel reduction, not 2.

Overlap: with ``--overlap-grad-reduce`` (off by default in Megatron-LM; tpsim's plans turn it on and say so
in the launch line) the buffer is reduced in buckets as the last micro-batch's backward produces them
(``simulator.training.gradients``); without it Megatron-LM reduces the whole buffer in one collective after
the backward (``allreduce_gradients``, one ``all_reduce`` per buffer), which is what the published 2021-22
runs did: one bucket of everything, ready at the backward's end.

Accumulation: each micro-batch's backward adds its weight gradients into the main gradients. With
gradient accumulation fusion (Megatron-LM's default since February 2022, ``--no-gradient-accumulation-
fusion`` turns it off; ``fused_weight_gradient_mlp_cuda``) the weight-gradient GEMM accumulates into the
fp32 buffer itself: no extra pass. Without it (Megatron-LM before 2022, the code of Narayanan et al. 2021)
the GEMM writes a p-byte gradient and the DDP hook runs ``main_grad.add_(grad)``
(``megatron/model/distributed.py`` ``_make_param_hook``): p + 2 g bytes per weight per micro-batch, read
and written at memory bandwidth (``accumulation_bytes``; with fp16 gradients kept in ``param.grad``,
autograd's own ``+=`` moves the same 3 x 2 bytes).

DeepSpeed's BF16_Optimizer (its ``"bf16": {"enabled": true}`` at ZeRO stage 0, as BigScience's BLOOM 176B ran
it with the pipeline engine; tpsim's ``--deepspeed-bf16-optimizer``) accumulates after every micro-batch's
backward in ``update_hp_grads`` (``deepspeed/runtime/bf16_optimizer.py``, github:microsoft/DeepSpeed 5ea1c60f8,
the commit BLOOM's tr11 chronicles name, and v0.6.2-v0.7.x): ``hp_grad.add_(lp.grad.to(fp32))``. The cast
writes an fp32 copy of the bf16 gradient before the add reads it: p + g bytes for the cast, 3 g for the add,
p + 4 g in all (18 a weight under bf16, against the hook's 10), with or without Megatron-LM's fusion, which the
DeepSpeed engine does not use.

These defaults concern Megatron-LM's ZeRO-0 and ZeRO-1 (its distributed optimizer). ZeRO-2 and 3 (DeepSpeed,
FSDP) reduce-scatter after every micro-batch, overlapped, in the parameters' dtype by default (``None``, and
``False``); an explicit fp32 reduction (``True``: ``--accumulate-allreduce-grads-in-fp32``) is PyTorch FSDP's
``MixedPrecision(reduce_dtype=torch.float32)`` / FSDP2's ``MixedPrecisionPolicy(reduce_dtype=...)``, which
torchtitan always sets (``--training.mixed_precision_reduce``, default and only choice ``float32``:
``torchtitan/config_manager.py`` and ``parallelisms/parallelize_llama.py`` ``apply_fsdp`` at github:pytorch/
torchtitan 9dec370ad, the commit of its Llama 3.1 8B tables). What FSDP2 then does per unit and micro-batch
(``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py`` ``foreach_reduce``, torch 2.13.0): allocates the
reduce-scatter input in ``reduce_dtype`` and copies the bf16 unsharded gradients into it
(``foreach_reduce_scatter_copy_in``, ``chunk_cat``: p read + 4 written per element, ``copy_in_bytes``; the
bf16 gradients are freed only after it), reduce-scatters 4-byte elements, and keeps the fp32 output as the
shard's gradient (the sharded parameters are fp32, ``orig_dtype``: no cast back), which the optimizer reads.
The same copy-in runs at ``reduce_dtype == param_dtype`` (2 p bytes): FSDP2's, charged per micro-batch with
FSDP's other passes (``simulator.training.fsdp_passes``, ``fsdp_grad_copy_in``); the cast's is charged here,
where the dtypes differ, for FSDP1's ``flat_param.grad.to(reduce_dtype)`` and FSDP2's alike.

Example::

    >>> grad_bytes("bfloat16", 0, None), grad_bytes("bfloat16", 0, False), grad_bytes("float16", 1, None)
    (4, 2, 2)
    >>> megatron_flags("bfloat16", 0, 32, True, False)
    ('--overlap-grad-reduce', '--grad-reduce-in-bf16')
    >>> accumulation_bytes(1e6, 2, 4, fusion=False), accumulation_bytes(1e6, 2, 4, fusion=True)
    (10000000.0, 0.0)
    >>> accumulation_bytes(1e6, 2, 4, fusion=True, cast_copy=True)
    18000000.0
    >>> grad_bytes("bfloat16", 3, None), grad_bytes("bfloat16", 3, True), copy_in_bytes(1e6, 2, 4, zero=3)
    (2, 4, 6000000.0)
"""

from __future__ import annotations

import math

from simulator.ir.schedule import DTYPE_BYTES

__all__ = ["accumulation_bytes", "copy_in_bytes", "grad_bytes", "megatron_flags", "reduction_bucket_bytes"]


def grad_bytes(dtype: str, zero: int, grad_reduce_in_fp32: bool | None) -> int:
    """Bytes per element of the gradients the data-parallel group reduces (module docstring); ``None``:
    Megatron-LM's default for ``dtype`` (fp32 under bf16) at ZeRO 0 and 1, the parameters' dtype at ZeRO 2
    and 3 (fp32 only when ``True``: FSDP's ``reduce_dtype=torch.float32``)."""
    own = DTYPE_BYTES[dtype]
    if own >= 4:
        return own
    if zero >= 2:
        return 4 if grad_reduce_in_fp32 else own
    fp32 = dtype == "bfloat16" if grad_reduce_in_fp32 is None else grad_reduce_in_fp32
    return 4 if fp32 else own


def reduction_bucket_bytes(bucket_bytes: float, zero: int, overlap_grad_reduce: bool) -> float:
    """The bucket size the reduction runs in: ``bucket_bytes``, or one bucket of everything (infinite) when
    Megatron-LM's reduction does not overlap the backward (ZeRO 0 and 1 only)."""
    return math.inf if not overlap_grad_reduce and zero <= 1 else bucket_bytes


def accumulation_bytes(weights: float, param_bytes: int, grad_bytes: int, fusion: bool,
                       cast_copy: bool = False) -> float:
    """Bytes one micro-batch's backward moves adding ``weights`` weight gradients into the main gradients:
    none with gradient accumulation fusion, else the hook's read of the gradient and read and write of the
    main gradient; ``cast_copy`` (DeepSpeed's BF16_Optimizer) adds the cast's fp32 copy, written and read
    again, whatever ``fusion`` says (module docstring)."""
    if cast_copy:
        return float(weights * (param_bytes + 4 * grad_bytes))
    return 0.0 if fusion else float(weights * (param_bytes + 2 * grad_bytes))


def copy_in_bytes(weights: float, param_bytes: int, grad_bytes: int, zero: int) -> float:
    """Bytes one micro-batch's backward moves casting ``weights`` unsharded gradients into FSDP's fp32
    reduce-scatter input at ZeRO 2 and 3 (module docstring): p read + g written per element where the
    reduction's dtype is wider than the parameters', else nothing (the same-dtype copy-in is not charged)."""
    return float(weights * (param_bytes + grad_bytes)) if zero >= 2 and grad_bytes > param_bytes else 0.0


def megatron_flags(dtype: str, zero: int, dp: int, overlap_grad_reduce: bool,
                   grad_reduce_in_fp32: bool | None, gradient_accumulation_fusion: bool = True) -> tuple[str, ...]:
    """The Megatron-LM arguments that make a run reduce as planned: ``--overlap-grad-reduce`` where there is
    a data-parallel reduction to overlap, and the dtype flag where the plan differs from Megatron-LM's default."""
    flags = ["--overlap-grad-reduce"] if overlap_grad_reduce and dp > 1 and zero <= 1 else []
    if grad_reduce_in_fp32 is False and dtype == "bfloat16":
        flags.append("--grad-reduce-in-bf16")
    elif grad_reduce_in_fp32 and dtype == "float16":
        flags.append("--accumulate-allreduce-grads-in-fp32")
    if not gradient_accumulation_fusion:
        flags.append("--no-gradient-accumulation-fusion")
    return tuple(flags)
