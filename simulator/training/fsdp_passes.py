"""ZeRO-2/3 as PyTorch FSDP runs them: the memory-bound passes of each micro-batch and of the optimizer step.

At ZeRO 2 and 3 there is no whole main-gradient buffer to zero, scale, copy from and into (Megatron-LM's
passes, ``simulator.training.optimizer_step``): FSDP keeps the sharded fp32 parameters and their sharded fp32
gradients, casts a bf16 copy of the shard before every all-gather, divides and casts the gradients around
every micro-batch's reduce-scatter, and the optimizer steps the fp32 shard in place. What runs differs
between FSDP1 (``FullyShardedDataParallel``, ``--fsdp-version 1``: MosaicML Composer on torch 1.13.1 and
2.1.0, llm-foundry's benchmark rows) and FSDP2 (``fully_shard``, ``--fsdp-version 2``, the default: what
PyTorch develops today and torchtitan runs). With W the unsharded weights a rank holds, S = W / D its shard,
p the bytes of a parameter in the compute dtype (2 under bf16 / fp16) and g those of the reduced gradient,
per micro-batch (``microbatch_bytes``; FULL_SHARD, ``--zero 3``, unshards twice, forward and backward;
SHARD_GRAD_OP, ``--zero 2``, once):

========================  ===============================================================  =============
pass                      what runs (torch 2.13.0 ``torch/distributed/fsdp/``)             bytes
========================  ===============================================================  =============
``fsdp_param_cast``       both: the fp32 shard cast to p before each all-gather: FSDP1     S (4 + p) per
                          ``_flat_param.py`` ``_use_low_precision_shard`` (``_mp_shard.    all-gather
                          copy_``); FSDP2 ``_fsdp_collectives.py`` ``_get_param_all_
                          gather_inputs`` (``torch._foreach_copy_`` into a ``param_dtype``
                          buffer); none for fp32 parameters (no mixed precision)
``fsdp_gather_copy_in``   FSDP2: ``all_gather_copy_in`` copies the inputs into the          2 S p per
                          all-gather output's rank slice (``torch._foreach_copy_``)        all-gather
``fsdp_gather_copy_out``  FSDP2: ``foreach_all_gather_copy_out`` copies the all-gather      2 W p per
                          output into each parameter's own tensor (``split_with_sizes_     all-gather
                          copy``); FSDP1 gathers into the flat parameter itself: none
``fsdp_grad_copy_in``     FSDP2 at g = p: ``foreach_reduce_scatter_copy_in`` (``chunk_     2 W p
                          cat`` of the unit's gradients into the reduce-scatter input;
                          the g > p cast, both versions, is ``main_grads.copy_in_bytes``)
``fsdp_grad_predivide``   FSDP1: ``_reduce_grad``'s ``_div_if_needed`` of the unsharded    2 W g
                          gradient by ``_gradient_predivide_factor`` (the largest power of
                          2 with factor^2 < D, ``default_hooks.DefaultState._get_gradient_
                          predivide_factor``: > 1 whenever D > 1); FSDP2: only a fp16
                          reduction (``_get_gradient_divide_factors``: bf16 / fp32 reduce
                          with NCCL's ``ReduceOp.AVG``, no divide kernel)
``fsdp_grad_postdivide``  the same with ``_gradient_postdivide_factor`` = D / predivide,   2 S g
                          on the reduce-scatter's output, where it is > 1 (D >= 4)
``fsdp_grad_cast``        both: the reduced shard cast back to the fp32 parameters' dtype  S (g + 4)
                          (FSDP1 ``_cast_grad_to_param_dtype``, FSDP2 ``_to_dtype_if_
                          needed(reduce_output, orig_dtype)``) where g < 4
``fsdp_grad_accumulate``  both, every micro-batch but the first: the shard's gradient      12 S
                          added to the kept one (FSDP1 ``_accumulate_sharded_grad``
                          ``_saved_grad_shard +=``, FSDP2 ``grad._local_tensor +=``)
========================  ===============================================================  =============

Per step (``step_bytes``), both versions alike: ``optimizer.zero_grad()`` sets the gradients to None, no
kernel (Composer v0.16.4 ``composer/trainer/trainer.py``: ``optimizer.zero_grad(set_to_none=True)``;
torchtitan ``train.py`` at github:pytorch/torchtitan 9dec370ad: ``optimizers.zero_grad()``, torch's default
``set_to_none=True`` since 2.0). ``grad_norm`` 4 S: the fp32 shard gradients' norm (FSDP1
``FullyShardedDataParallel.clip_grad_norm_`` / ``_get_grad_norm``, ``vector_norm(..., dtype=float32)`` per
gradient, which Composer's ``gradient_clipping`` algorithm calls for FSDP, composer v0.16.4
``composer/algorithms/gradient_clipping/gradient_clipping.py``; torchtitan ``utils.clip_grad_norm_`` ->
``torch.nn.utils.get_total_norm``, ``_foreach_norm``). ``grad_clip`` 8 S: both then multiply every gradient by
the clamped coefficient whether it is below 1 or not (``grad.mul_(clip_coef_clamped)``, "avoids the
host-device sync"; ``clip_grads_with_norm_``'s ``_foreach_mul_``); every llm-foundry yaml clips at norm 1.0
(``algorithms: gradient_clipping``), torchtitan at ``max_norm = 1.0``. ``adam`` 80 S: not a fused kernel
but a chain of elementwise passes over fp32 state, read and written 4 bytes at a time: Composer's
``DecoupledAdamW.adamw`` (composer v0.13.3, v0.16.4, v0.17.2 alike; llm-foundry's ``optimizer: name:
decoupled_adamw`` with ``weight_decay: 0.0`` in every benchmark model yaml at 9fa3ceb9a, b2a43a14 and
5e85bd62): ``exp_avg.mul_`` 8, ``.add_(grad)`` 12, ``exp_avg_sq.mul_`` 8, ``.addcmul_(grad, grad)`` 12,
``sqrt()`` 8, ``/ sqrt(bias_correction2)`` 8, ``.add_(eps)`` 8, ``param.addcdiv_`` 16; torch's foreach AdamW
(torchtitan 9dec370ad ``torchtitan/optimizer.py``: ``foreach = not fused``, ``--optimizer.fused`` off,
``weight_decay: 0.1``; ``torch/optim/adam.py`` ``_multi_tensor_adam``): ``_foreach_mul_(params)`` 8,
``_foreach_lerp_`` 12, ``_foreach_mul_`` 8, ``_foreach_addcmul_`` 12, ``_foreach_sqrt`` 8, ``_foreach_div_``
8, ``_foreach_add_`` 8, ``_foreach_addcdiv_`` 16: 80 too. ``sgd`` 32 S: torch's foreach SGD with momentum
(``_multi_tensor_sgd``: ``_foreach_mul_(bufs)`` 8, ``_foreach_add_(bufs, grads)`` 12, ``_foreach_add_(params,
bufs)`` 12). ``unscale`` 8 S under fp16 (the sharded grad scaler), as Megatron-LM's. No ``grad_scale``,
``main_grad_copy`` or ``param_copy``: the divides and casts ran per micro-batch above.

Not counted: FSDP2 leaving torchtitan's last block gathered after its forward (``reshard_after_forward``
False for it; one of 32 units' backward gathers); the copies where a flat parameter needs padding (the flat
parameters are padded to D at construction).

Example: 1e9 weights over D = 8, bf16 parameters reduced in bf16, the second micro-batch of ZeRO-3::

    >>> microbatch_bytes(1e9, 8, 2, 2, zero=3, version=1, first=False)["fsdp_grad_predivide"]
    4000000000.0
    >>> sorted(microbatch_bytes(1e9, 8, 2, 2, zero=3, version=2))
    ['fsdp_gather_copy_in', 'fsdp_gather_copy_out', 'fsdp_grad_cast', 'fsdp_grad_copy_in', 'fsdp_param_cast']
    >>> step_bytes(1.0, "adam", 2)
    {'grad_norm': 4.0, 'grad_clip': 8.0, 'adam': 80.0}
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.ir.schedule import DTYPE_BYTES

__all__ = ["FSDP_VERSIONS", "STEP_BYTES_PER_PARAM", "check_fsdp_version", "fsdp_terms", "microbatch_bytes",
           "predivide_factor", "step_bytes"]

FSDP_VERSIONS = (1, 2)
STEP_BYTES_PER_PARAM = {"adam": 80, "sgd": 32}
"""Bytes the optimizer's elementwise passes read and write per fp32 shard parameter (module docstring)."""


def check_fsdp_version(version: int) -> None:
    """Raise ``InputError`` unless ``version`` is 1 (FSDP1) or 2 (FSDP2)."""
    if version not in FSDP_VERSIONS:
        raise InputError(f"--fsdp-version {version!r}: valid: 1 (FullyShardedDataParallel), 2 (fully_shard)")


def predivide_factor(dp: int) -> int:
    """FSDP1's gradient predivide factor for ``dp`` ranks: doubled while it divides ``dp`` and its square
    stays below ``dp`` (torch ``default_hooks.DefaultState._get_gradient_predivide_factor``)."""
    factor = 1
    while dp % factor == 0 and dp / factor > factor:
        factor *= 2
    return factor


def microbatch_bytes(weights: float, dp: int, param_bytes: int, grad_bytes: int, zero: int, version: int,
                     first: bool = True, fp16: bool = False) -> dict[str, float]:
    """Bytes of each FSDP pass of one micro-batch (module docstring) on a rank holding ``weights`` unsharded
    weights sharded ``dp`` ways; ``first``: the step's first micro-batch (nothing to accumulate into);
    ``fp16``: the gradients are reduced in fp16 (FSDP2 then divides as FSDP1 does)."""
    check_fsdp_version(version)
    shard, p, g = weights / dp, param_bytes, grad_bytes
    gathers = 2 if zero >= 3 else 1  # FULL_SHARD reshards after the forward; SHARD_GRAD_OP keeps it
    # FSDP2 leaves the division to NCCL's AVG unless an fp16 reduction risks overflow.
    divides = version == 1 or (fp16 and g == 2)
    pre = predivide_factor(dp) if divides else 1
    passes = {"fsdp_param_cast": gathers * shard * (4 + p) if p < 4 else 0.0}
    if version == 2:
        passes["fsdp_gather_copy_in"] = gathers * shard * 2 * p
        passes["fsdp_gather_copy_out"] = gathers * weights * 2 * p
        passes["fsdp_grad_copy_in"] = weights * 2 * p if g == p else 0.0
    passes["fsdp_grad_predivide"] = weights * 2 * g if pre > 1 else 0.0
    passes["fsdp_grad_postdivide"] = shard * 2 * g if divides and dp / pre > 1 else 0.0
    passes["fsdp_grad_cast"] = shard * (g + 4) if g < 4 else 0.0
    passes["fsdp_grad_accumulate"] = 0.0 if first else shard * 12
    return {name: float(nbytes) for name, nbytes in passes.items() if nbytes}


def step_bytes(shard: float, optimizer: str, param_bytes: int, loss_scaling: bool = False) -> dict[str, float]:
    """Bytes of each pass of one FSDP optimizer step over ``shard`` fp32 parameters (module docstring), in
    the order the step runs them."""
    if optimizer not in STEP_BYTES_PER_PARAM:
        raise InputError(f"--optimizer {optimizer!r}: valid: {', '.join(STEP_BYTES_PER_PARAM)}")
    passes = {"unscale": shard * 8 if loss_scaling else 0.0, "grad_norm": shard * 4, "grad_clip": shard * 8,
              optimizer: shard * STEP_BYTES_PER_PARAM[optimizer]}
    return {name: float(nbytes) for name, nbytes in passes.items() if nbytes}


def fsdp_terms(weights: float, dp: int, micro_batches: int, dtype: str, grad_bytes: int, zero: int,
               version: int, rate_Bps: float) -> dict[str, float]:
    """Seconds a step of ``micro_batches`` spends in each per-micro-batch FSDP pass (module docstring) at
    ``rate_Bps`` bytes per second: the first micro-batch's passes plus the other ones'."""
    args = (weights, dp, DTYPE_BYTES[dtype], grad_bytes, zero, version)
    first = microbatch_bytes(*args, first=True, fp16=dtype == "float16")
    rest = microbatch_bytes(*args, first=False, fp16=dtype == "float16")
    names = dict.fromkeys([*first, *rest])
    return {name: (first.get(name, 0.0) + (micro_batches - 1) * rest.get(name, 0.0)) / rate_Bps for name in names}
