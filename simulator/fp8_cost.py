"""What Transformer Engine's FP8 linears do besides the GEMMs: the quantisation passes, as memory traffic.

Under ``--dtype fp8`` (``simulator.fp8``) each linear's GEMMs run at the FP8 rate, but their bf16 operands
must first be quantised, and these are memory-bound passes that the bfloat16 plan does not have. What
NVIDIA Transformer Engine (TE) runs per ``te.Linear`` / ``te.LayerNormLinear`` (Megatron-Core's
``TERowParallelLinear`` / ``TELayerNormColumnParallelLinear``), read from its code:

- forward: the input X is quantised for two uses, row-wise for the forward GEMM and column-wise
  (its transpose) kept for the weight-gradient GEMM; the weight W likewise (row-wise for the forward,
  column-wise for the input gradient). TE 1.13 ``module/linear.py`` ``_Linear.forward``:
  ``fp8_cast_transpose_fused`` of the input (one kernel: read bf16, write the FP8 copy and its FP8
  transpose), ``get_fp8_workspace`` of the weight (the same kernel, ``module/base.py``).
- backward: the output gradient dY is quantised for both uses (row-wise for the input-gradient GEMM,
  column-wise for the weight gradient): ``grad_output_preprocess`` (TE 1.13 ``module/base.py``),
  ``fp8_cast_transpose_fused`` or, with a bias, ``fp8_cast_transpose_bgrad_fused`` (the bias gradient
  in the same pass). The weight-gradient GEMM reads the two transposes already made: no pass of its own.
  TE 2.x does the same through its quantizers (``set_usage(rowwise=True, columnwise=True)``, v2.5
  ``module/layernorm_linear.py`` and ``module/base.py``, commit f05f12c).
- scaling: delayed scaling (TE 1.x's only recipe, ``recipe.DelayedScaling``) takes the scale from the
  amax history and records the new amax inside the cast kernel: no pass of its own. Current scaling
  (TE 2.x ``recipe.Float8CurrentScaling``) needs the tensor's amax before it can cast: a separate read
  of the bf16 tensor (``nvte_compute_amax`` before ``nvte_quantize_v2`` in ``quantize_impl``, v2.5
  ``pytorch/csrc/extensions/cast.cpp``). MXFP8 (``recipe.MXFP8BlockScaling``, Blackwell) computes one
  E8M0 scale per 32 elements inside the cast kernel: no amax pass, one scale byte per 32 elements of
  each copy.
- layouts: a Hopper FP8 GEMM takes only the "TN" layout, so the column-wise copy is a real transpose.
  Blackwell's FP8 GEMMs take any layout (TE ``nvte_is_non_tn_fp8_gemm_supported``: compute capability
  10.x, ``common/transformer_engine.cpp`` at d0067d0), so a per-tensor scaled tensor is cast once and
  used both ways (``Float8Quantizer::create_tensor`` in ``pytorch/csrc/quantizer.cpp``: no transpose
  when supported); MXFP8's row-wise and column-wise copies are scaled along different blocks, so both
  are written on Blackwell too.
- weights: Megatron-Core passes ``is_first_microbatch`` (``TELinear.forward``, megatron/core/extensions/
  transformer_engine.py; set per step by ``forward_step`` in megatron/core/pipeline_parallel/
  schedules.py, Megatron-LM d98e8a6), so TE casts each weight on a step's first micro-batch and reuses
  the cached FP8 copy (``update_workspace = is_first_microbatch is None or is_first_microbatch``, TE
  1.13 ``Linear.forward``): one weight quantisation per step, ``weight_cast_s``.

So one quantisation of an n-element bf16 tensor for both uses moves

    n x (2 read  +  copies x (1 + scale bytes)  +  2 if current scaling (the amax read))

bytes: 4 B per element under delayed scaling on Hopper, 6 under current scaling, 3 and 5 on Blackwell
(one copy), 4 + 1/16 under MXFP8 (``bytes_per_element``). Each is timed at the device's achievable memory
bandwidth, as every memory-bound pass of the compute model (``ComputeModel.memory_time_s``).

Which gemm op pays what (``gemm_quantise_bytes``): tpsim's linears are ``gemm`` ops in three roles, told
apart by their transposes as every algorithm emits them: the forward Y = X W (neither operand
transposed) quantises its activation operand X; the input gradient dX = dY W^T (``trans_b``) quantises
its gradient operand dY; the weight gradient dW = X^T dY (``trans_a``) nothing. An operand computed on
the rank is quantised whole, as above. An operand that arrived by communication was quantised by its
senders: TE casts a sequence-parallel input (and a row-parallel linear's output gradient) on the
rank's 1/p shard before the all-gather, row-wise only, gathers the FP8 bytes and transposes the
gathered FP8 tensor (TE 1.13 ``_Linear.forward`` casts without the transpose under sequence
parallelism; ``grad_output_preprocess``: "cast, transpose for efficient gather"; ``fp8_transpose``
read 1 B, write 1 B); MXFP8 quantises both copies of the shard before the gather, and the backward
gathers the column-wise one (v2.5 ``layernorm_linear.py``: "wgrad GEMM requires input with column-wise
usage"). So an all-gathered
operand of n elements over p ranks costs n (2 + 1 [+ 2 amax]) / p + 2 n on Hopper, n (2 + 1 [+ 2]) / p
on Blackwell, n (4 + 1/16) / p under MXFP8 (``sources``, ``quantise_bytes``); a block received whole
(a send, a broadcast: the grid algorithms and the rings of ``--tp-comm-overlap``) only its transpose.
The backward ring's own chunk of dY (``ring_exchange_dgrad``) is cast row-wise only before it is sent
(TE's ``_Linear`` backward sets the quantizer ``columnwise=False`` under ``ub_overlap_ag``: "Userbuffers
only supports communication for one tensor usage at a time"; ``module/linear.py`` at d0067d0) and
transposed with the rest for the wgrad: n (2 + 1 [+ 2] + 2) / p for the chunk, as a gather's, where a
forward ring's own chunk is quantised whole, both copies at once.
A weight operand pays nothing per op: its owner's cast once per step (``weight_cast_s``) covers it.

QKV's and FC1's input comes from the norm (TE's ``LayerNormLinear``), whose kernel writes the FP8 copy
itself under delayed scaling and MXFP8, in place of its bf16 output: TE 1.13 ``_apply_normalization``
with FP8 output; v2.5 ``csrc/extensions/normalization.cpp`` ("Always used fused kernel for FP8 delayed
scaling"; MXFP8 fused, current scaling unfused: the norm in bf16, then the amax and the cast as above),
and on Hopper the transpose after it (v2.5 ``common/normalization/layernorm/ln_api.cpp``: "Compute FP8
transpose if required", ``nvte_transpose``; under sequence parallelism ``fp8_transpose`` of the gathered
FP8). So a norm-fed operand costs n (1 - 2) + 2 n = n bytes under delayed scaling on Hopper (the FP8 write
1 B in place of bf16's 2, then the transpose), -n on Blackwell (a smaller write than the bf16 plan's),
n (2 (1 + 1/32) - 2) under MXFP8, with the -1 (or MXFP8's) on the rank's own 1/p when gathered.
For 1-D Megatron, with or without sequence parallelism, this is TE's accounting (each X and dY once);
the grid algorithms (SUMMA, Cannon, 3-D), which TE does not run, follow the same rule, and the SUMMA
input gradient quantises its own dY block at each of its q steps (pessimistic: a port would once).

The all-gathers above move the FP8 bytes, not bf16's: ``simulator.fp8_comm``.

Not counted (makes fp8 here faster than TE):
- the amax reduction: delayed scaling all-reduces every tensor's amax once per forward (a few kB), current
  scaling the amax of a tensor it quantises before a sequence-parallel gather: latency, not bandwidth.

TE keeps each linear's input for the backward as one FP8 copy: ``simulator.memory.activations``.
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.ir.ops import AllGather, Broadcast, Gemm, Local, Recv, Send
from simulator.ir.schedule import Schedule

__all__ = ["RECIPES", "ANY_LAYOUT_FP8_DEVICES", "BF16_READ_BYTES", "FP8_COPY_BYTES", "AMAX_READ_BYTES",
           "MXFP8_SCALE_BYTES", "BF16_WRITE_BYTES", "NORM_FUNCTIONS", "default_recipe", "check_recipe", "copies",
           "fp8_copy_bytes", "bytes_per_element", "gemm_role", "sources", "quantise_bytes", "gemm_quantise_bytes",
           "linear_weight_elements", "weight_cast_s"]

RECIPES = ("delayed", "current", "mxfp8")
"""Transformer Engine's FP8 recipes tpsim times: ``DelayedScaling``, ``Float8CurrentScaling``,
``MXFP8BlockScaling``."""

ANY_LAYOUT_FP8_DEVICES = frozenset({"B200-180GB", "GB200-186GB"})
"""Presets whose FP8 GEMMs take any layout and that run MXFP8: the Blackwell GPUs (compute capability
10.0; TE ``nvte_is_non_tn_fp8_gemm_supported``). Any other FP8 device is timed as Hopper (TN only)."""

BF16_READ_BYTES = 2
"""Each quantisation reads the bf16 tensor once (TE's cast and cast-transpose kernels)."""
FP8_COPY_BYTES = 1
"""Each FP8 copy it writes (the row-wise data, the transpose or column-wise data) is 1 byte per element."""
AMAX_READ_BYTES = 2
"""Current scaling's amax pass reads the bf16 tensor once more before the cast (``nvte_compute_amax``)."""
MXFP8_SCALE_BYTES = 1 / 32
"""MXFP8 writes one E8M0 scale byte per 32-element block of each copy (OCP MX specification v1.0)."""
BF16_WRITE_BYTES = 2
"""The bf16 output a norm kernel no longer writes when it writes the FP8 copies itself."""
NORM_FUNCTIONS = frozenset({"layernorm", "rmsnorm", "layernorm_fused", "rmsnorm_fused"})
"""The norm kernels (``simulator.workloads.functions``) that feed QKV and FC1: TE's LayerNormLinear."""


def default_recipe(device: dict) -> str:
    """Transformer Engine's default recipe on ``device``: MXFP8 on Blackwell, delayed scaling before
    (``get_default_fp8_recipe``, TE v2.5 ``pytorch/fp8.py``)."""
    return "mxfp8" if device.get("name") in ANY_LAYOUT_FP8_DEVICES else "delayed"


def check_recipe(device: dict, recipe: str | None) -> str:
    """``recipe`` (None: the device's default) if ``device`` runs it; InputError naming what would."""
    if recipe is None:
        return default_recipe(device)
    if recipe not in RECIPES:
        raise InputError(f"--fp8-recipe {recipe!r}: valid: {', '.join(RECIPES)}")
    if recipe == "mxfp8" and device.get("name") not in ANY_LAYOUT_FP8_DEVICES:
        raise InputError(f"--fp8-recipe mxfp8: {device.get('name', '?')} has no MXFP8 tensor cores (MXFP8 needs "
                         f"Blackwell: B200, GB200); use delayed or current")
    return recipe


def copies(device: dict, recipe: str) -> int:
    """FP8 copies written per quantisation for both uses: 2 (data and transpose) where GEMMs are TN only or
    the recipe scales the two along different blocks (MXFP8), else 1."""
    return 2 if recipe == "mxfp8" or device.get("name") not in ANY_LAYOUT_FP8_DEVICES else 1


def fp8_copy_bytes(recipe: str) -> float:
    """Bytes per element of one FP8 copy under ``recipe``: the FP8 byte, and MXFP8's block scale."""
    return FP8_COPY_BYTES + (MXFP8_SCALE_BYTES if recipe == "mxfp8" else 0)


def bytes_per_element(device: dict, recipe: str | None = None) -> float:
    """Bytes read and written per element to quantise one bf16 tensor for both GEMM uses (module doc).

    >>> h100, b200 = {"name": "H100-SXM5-80GB"}, {"name": "B200-180GB"}
    >>> [bytes_per_element(h100, r) for r in ("delayed", "current")], bytes_per_element(b200)
    ([4, 6], 4.0625)
    """
    recipe = check_recipe(device, recipe)
    amax = AMAX_READ_BYTES if recipe == "current" else 0
    return BF16_READ_BYTES + copies(device, recipe) * fp8_copy_bytes(recipe) + amax


def gemm_role(op: Gemm) -> str:
    """``fprop`` (Y = X W), ``dgrad`` (dX = dY W^T) or ``wgrad`` (dW = X^T dY), by the op's transposes."""
    return "wgrad" if op.trans_a else "dgrad" if op.trans_b else "fprop"


def sources(schedule: Schedule, rank: int) -> dict[str, tuple[float | None, bool]]:
    """Where ``rank``'s buffers come from, for those whose quantisation costs otherwise (module doc): each
    maps to ``(share, norm)``. ``share``: the part of a buffer that arrives by communication the rank
    sent itself, 1/p for an all-gather over p ranks, 0 for a receive or a broadcast from another rank, 1
    for the backward ring's own chunk;
    None: computed here. ``norm``: written by a norm kernel (``NORM_FUNCTIONS``), or all-gathered from
    such a buffer. A buffer written in two ways is left out: quantised whole where it is used."""
    found: dict[str, tuple[float | None, bool] | None] = {}

    def note(name: str, source: tuple[float | None, bool] | None) -> None:
        found[name] = source if found.get(name, source) == source else None

    program = schedule.programs[rank]
    for op in program:
        if isinstance(op, AllGather):
            note(op.out, (1 / len(schedule.groups[op.group]), found.get(op.inp) == (None, True)))
        elif isinstance(op, Recv) or (isinstance(op, Broadcast) and schedule.groups[op.group][op.root] != rank):
            note(op.buf, (0.0, False))
        elif isinstance(op, Local) and op.fn in NORM_FUNCTIONS:
            note(op.out, (None, True))
        else:
            found.update((name, None) for name in op.writes())
    # The backward ring's own chunk of dY (sent on, read by an input-gradient GEMM): cast row-wise by this
    # rank and transposed after, as a gathered operand whose whole share the rank sent (module doc).
    dgrad = {op.a for op in program if isinstance(op, Gemm) and gemm_role(op) == "dgrad"}
    for name in dgrad.intersection(op.buf for op in program if isinstance(op, Send)):
        if found.get(name) is None:
            found[name] = (1.0, False)
    return {name: source for name, source in found.items() if source is not None}


def quantise_bytes(elements: int, device: dict, recipe: str | None = None, share: float | None = None,
                   norm: bool = False) -> float:
    """Bytes to quantise an operand of ``elements`` for both uses (module doc): computed here (``share``
    None) or arrived by communication with ``share`` of it quantised by this rank before sending; ``norm``:
    written by a norm kernel, which writes the FP8 copies itself under delayed scaling and MXFP8."""
    recipe = check_recipe(device, recipe)
    own = 1.0 if share is None else share
    tn_transpose = 2 * FP8_COPY_BYTES if recipe != "mxfp8" and copies(device, recipe) == 2 else 0
    if norm and recipe != "current":  # the norm writes FP8 in place of its bf16 output, then the transpose
        written = (1 if recipe == "delayed" else 2) * fp8_copy_bytes(recipe)
        return elements * (own * (written - BF16_WRITE_BYTES) + tn_transpose)
    if share is None:
        return elements * bytes_per_element(device, recipe)
    if recipe == "mxfp8":  # both block-scaled copies made before the gather; nothing to transpose after
        return elements * share * bytes_per_element(device, recipe)
    cast = BF16_READ_BYTES + FP8_COPY_BYTES + (AMAX_READ_BYTES if recipe == "current" else 0)
    return elements * (share * cast + tn_transpose)  # the transpose: fp8_transpose, read 1, write 1


def gemm_quantise_bytes(schedule: Schedule, rank: int, op: Gemm, device: dict, recipe: str | None = None,
                        found: dict[str, tuple[float | None, bool]] | None = None) -> float:
    """Bytes of the quantisation passes ``rank``'s FP8 ``op`` makes: its activation (forward) or output
    gradient (input gradient) operand, once for both uses; none for a weight gradient (module doc).
    ``found``: ``sources(schedule, rank)``, computed here when not given."""
    if gemm_role(op) == "wgrad":
        return 0.0
    found = sources(schedule, rank) if found is None else found
    share, norm = found.get(op.a, (None, False))
    return quantise_bytes(schedule.spec(rank, op.a).numel, device, recipe, share, norm)


def linear_weight_elements(workload, layer_el) -> int:
    """Elements of ``workload``'s linear weights (not biases or norm gains) among ``layer_el``, a rank's
    element counts of ``workload.weights()`` in order (``simulator.training.gradients.weight_elements``)."""
    linear = {lin.w for lin in workload.linears()}
    return sum(n for name, n in zip(workload.weights(), layer_el) if name in linear)


def weight_cast_s(workload, layer_el, layers: int, device: dict, recipe: str | None, bandwidth_Bps: float) -> float:
    """Seconds per step to quantise, once for both uses, the linear weights of ``layers`` blocks like
    ``workload`` on its busiest tensor-parallel rank (``layer_el``: each rank's ``weight_elements``), at
    ``bandwidth_Bps``: Megatron-Core casts them on a step's first micro-batch and reuses the FP8 copies
    (module doc)."""
    elements = layers * max((linear_weight_elements(workload, el) for el in layer_el), default=0)
    return elements * bytes_per_element(device, recipe) / bandwidth_Bps
