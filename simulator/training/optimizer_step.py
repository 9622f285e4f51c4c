"""The optimizer step of Megatron-LM's mixed-precision optimizer: each memory-bound pass it makes per step.

Every pass does a few FLOPs per element and streams its tensors through the GPU's memory once, so it
takes bytes / memory bandwidth (the device's achievable bandwidth x ``memory_efficiency``, as every
elementwise op in ``simulator.compute``). The passes, in the order ``train_step`` runs them (Megatron-LM
``megatron/training.py`` ``train_step``, ``megatron/optimizer/optimizer.py``
``MixedPrecisionOptimizer.step``, ``megatron/model/distributed.py``, commit 7fccd6a of June 2022; the
same passes in megatron/core's ``DistributedDataParallel`` and ``MixedPrecisionOptimizer`` today), with
g the bytes of a main gradient (4: fp32, Megatron-LM's default under bf16; 2: fp16, or
``--grad-reduce-in-bf16``) and p the bytes of a model parameter (2 under bf16 / fp16):

=================  ==========================================================  ==============  =========
pass               what Megatron-LM runs                                       bytes / param   over
=================  ==========================================================  ==============  =========
``zero_grad``      ``zero_grad_buffer``: the main-gradient buffer set to 0     g (write)       buffer
``grad_scale``     ``allreduce_gradients``: ``buffer /= data-parallel size``   2 g             buffer
``main_grad_copy`` ``_copy_model_grads_to_main_grads``: ``.float()`` of a      g + 4           shard
                   main gradient not already fp32 (none when g = 4)
``unscale``        fp16 only (a grad scaler): ``_amp_foreach_non_finite_       8               shard
                   check_and_unscale_`` reads and writes the fp32 gradients
``grad_norm``      ``clip_grad_norm_fp32``: apex ``multi_tensor_l2norm`` of     4               shard
                   the fp32 gradients (``--clip-grad`` 1.0 is the default)
``adam``           apex ``FusedAdam``: read grad, master, m, v; write master,  28              shard
                   m, v (4 B each; ``sgd``: grad, master, momentum; 20)
``param_copy``     ``_copy_main_params_to_model_params``: ``multi_tensor_      4 + p           shard
                   scale`` fp32 master -> bf16 / fp16 parameter
=================  ==========================================================  ==============  =========

These are Megatron-LM's passes at ZeRO 0 and 1. At ZeRO 2 and 3 there is no main-gradient buffer: PyTorch
FSDP's step (no ``zero_grad`` kernel, the norm and an unconditional clip, an unfused AdamW of 80 bytes a
parameter) and its per-micro-batch divides and casts are ``simulator.training.fsdp_passes``.

``grad_scale`` is counted whatever D: the 2022 code divides by 1 too; megatron-core today skips a factor of
1 (``param_and_grad_buffer.py``), so a plan without data parallelism is 8 bytes per parameter pessimistic.
"buffer" is every gradient the rank holds, "shard" its 1/D under ZeRO (Megatron-LM's distributed
optimizer scales and zeroes the whole buffer, steps only its shard). Under bf16 with fp32 main gradients
that is 4 + 8 + 4 + 28 + 6 = 50 bytes per parameter (Adam, no ZeRO); fp32 parameters (``--dtype
float32``) have no master copy: no ``main_grad_copy`` and no ``param_copy``. Not counted: the clip's
``multi_tensor_scale`` (8 B, run only on steps whose norm exceeds ``--clip-grad``), ``--log-num-zeros-in-
grad`` (off by default), and the per-micro-batch ``main_grad.add_`` of runs without gradient accumulation
fusion (Megatron-LM fuses it into the weight-gradient GEMM whenever main gradients are fp32).

Example: 1.6e9 parameters per GPU, Adam, bf16 with fp32 main gradients, on an A100 (1,555 GB/s)::

    >>> round(optimizer_step_s(1.6e9, "adam", {"mem_bandwidth_GBps": 1555.0}), 4)
    0.0514
    >>> optimizer_passes(1.0, "adam")
    {'zero_grad': 4.0, 'grad_scale': 8.0, 'grad_norm': 4.0, 'adam': 28.0, 'param_copy': 6.0}
"""

from __future__ import annotations

from simulator.compute import achievable_memory_bandwidth
from simulator.errors import InputError
from simulator.ir.schedule import DTYPE_BYTES
from simulator.training.fsdp_passes import step_bytes

__all__ = ["OPTIMIZERS", "STEP_BYTES_PER_PARAM", "optimizer_passes", "optimizer_step_s", "optimizer_terms"]

STEP_BYTES_PER_PARAM = {"adam": 28, "sgd": 20}
"""Bytes the optimizer kernel itself reads and writes per parameter, fp32 state (module docstring)."""
OPTIMIZERS = tuple(STEP_BYTES_PER_PARAM)


def optimizer_passes(shard: float, optimizer: str, buffer: float | None = None, grad_bytes: int = 4,
                     param_bytes: int = 2, loss_scaling: bool = False) -> dict[str, float]:
    """Bytes of each pass of one step (module docstring): ``shard`` parameters stepped, ``buffer`` (default
    ``shard``) gradients zeroed and scaled, in the order Megatron-LM runs them; passes of no bytes left out."""
    if optimizer not in STEP_BYTES_PER_PARAM:
        raise InputError(f"--optimizer {optimizer!r}: valid: {', '.join(OPTIMIZERS)}")
    buffer = shard if buffer is None else buffer
    master = param_bytes < 4  # mixed precision keeps an fp32 master copy; fp32 training steps the parameters
    passes = {"zero_grad": buffer * grad_bytes, "grad_scale": buffer * 2 * grad_bytes,
              "main_grad_copy": shard * (grad_bytes + 4) if master and grad_bytes < 4 else 0.0,
              "unscale": shard * 8 if loss_scaling else 0.0,
              "grad_norm": shard * 4, optimizer: shard * STEP_BYTES_PER_PARAM[optimizer],
              "param_copy": shard * (4 + param_bytes) if master else 0.0}
    return {name: nbytes for name, nbytes in passes.items() if nbytes}


def optimizer_step_s(params: float, optimizer: str, device: dict, memory_efficiency: float = 1.0,
                     buffer: float | None = None, grad_bytes: int = 4, param_bytes: int = 2,
                     loss_scaling: bool = False) -> float:
    """Seconds for one step of ``params`` stepped parameters on ``device`` (a GPU node's device dict); the
    other arguments as ``optimizer_passes``'s."""
    passes = optimizer_passes(params, optimizer, buffer, grad_bytes, param_bytes, loss_scaling)
    return sum(passes.values()) / achievable_memory_bandwidth(device, memory_efficiency)


def optimizer_terms(params: float, shard: int, optimizer: str, dtype: str, grad_bytes: int, device: dict,
                    memory_efficiency: float = 1.0, torch_fsdp: bool = False) -> dict[str, float]:
    """Seconds of each pass (module docstring) for a rank holding ``params`` parameters of ``dtype`` whose
    optimizer state is split ``shard`` ways (ZeRO), its main gradients ``grad_bytes`` per element;
    ``torch_fsdp`` (ZeRO 2/3 under PyTorch FSDP) the step FSDP takes instead
    (``simulator.training.fsdp_passes.step_bytes``)."""
    rate = achievable_memory_bandwidth(device, memory_efficiency)
    if torch_fsdp:  # no main-gradient buffer: FSDP steps its fp32 shard (its per-micro-batch passes: fsdp_terms)
        passes = step_bytes(params / shard, optimizer, DTYPE_BYTES[dtype], dtype == "float16")
        return {name: nbytes / rate for name, nbytes in passes.items()}
    passes = optimizer_passes(params / shard, optimizer, params, grad_bytes, DTYPE_BYTES[dtype], dtype == "float16")
    return {name: nbytes / rate for name, nbytes in passes.items()}
