"""What one transformer block's forward keeps for its backward, per rank, read off the schedule's buffers.

The tensors a layer's backward reads (``Layer.saved``: LayerNorm keeps its input X and moments S, a
linear its input, GELU its input, attention its QKV) are buffers named as the tensor on each rank, at
the block shape the algorithm left them in: 1-D Megatron keeps the whole [M, h] LayerNorm outputs A1,
A2 on every rank, 1-D with sequence parallelism keeps the row shards (and re-gathers them in the
backward), SUMMA2.5 keeps [M/(d q), h/q] blocks, so replication shows by itself. Only buffers the
rank reads count (Cannon's depth layers declare QKV and H as the unused outputs of a reduce, and keep
nothing). The backward-only schedule's inputs are exactly these blocks (the tests hold the two to each
other for every algorithm).

tpsim's IR regenerates two things Megatron-LM stores, which are added here (Korthikanti et al. 2022,
arXiv 2205.05198, section 4.1, per layer with 2-byte activations):

- each dropout's mask, 1 byte per element of the dropout's output block (``Dropout`` and the fused
  ``BiasDropoutAdd``, which Megatron-LM's fused kernel saves as a bool tensor, redraw it from the seed);
  none where the dropout probability is 0 (PyTorch's dropout with p = 0 returns its input);
- the attention core, by the kernel the schedule's attention op names (``simulator.workloads.
  attention_cost``): the unfused kernel (``--attention unfused``) keeps, with ``recompute="none"``, the
  softmax output (2 B), its dropout mask (1 B) and the dropout output (2 B) per element of [b, a, s, s]
  for the sequences and heads of the rank's QKV block (Korthikanti's 5as^2b), without attention dropout
  only the softmax output, and ``selective`` drops them (the time model then adds the attention core's
  forward to the backward). FlashAttention-2 (``flash``, the default; ``triton``, the same algorithm
  in Triton, and ``cudnn``, cuDNN's fused attention, keep the same) keeps none of that, only the
  softmax's log-sum-exp per row, 4 B x [b, a, s] (linear in s), under ``none`` and ``selective``
  alike: its backward recomputes the probabilities (the time model charges that recomputation in every
  mode), so selective recomputation changes nothing for it. ``full`` keeps only the layer's input X.
  ``selective-op`` (torchtitan's per-op policy, ``simulator.workloads.op_checkpoint``) keeps the input X,
  the outputs of the matrix products it saves (their columns' share of each buffer: Llama's Q and V of
  QKV, the gate half of H) and the attention core's (CTX and, under FlashAttention, its log-sum-exp).

Under ``--dtype fp8`` (``fp8_recipe``) Transformer Engine keeps each linear's input for the weight
gradient as one FP8 copy, not in bf16 (``fp8``): TE v1.8 ``module/layernorm_linear.py`` saves ``ln_out``
(line 316), FP8 since the norm wrote it in FP8 (line 126), and ``module/linear.py`` saves the FP8 input
or its FP8 transpose (lines 293-297); v2.9 keeps only the copy the backward needs (``layernorm_linear.py``
lines 404-414, ``linear.py`` lines 371-390: the row-wise data where sequence parallelism re-gathers it,
else the column-wise data, which on Hopper is the transpose), so 1 byte per element under per-tensor
scaling, 1 + 1/32 under MXFP8. Where another kernel's backward reads the same tensor in bf16, the FP8
copy comes on top: the attention output, proj's input, which FlashAttention-2 and cuDNN keep for their
backward (``Attention.saved`` leaves it to the linear); QKV's and FC1's inputs come from the norm, whose
backward reads its own input, and FC2's from the activation function, whose backward reads its input:
those are kept in FP8 alone.

The LayerNorm moments S [rows, 2], which the paper neglects, are their own item (``moments``): the
comparison with the paper's closed forms leaves them out (``PAPER_KINDS``). They are counted at the
schedule's element type, as tpsim's IR stores them (apex's fused LayerNorm keeps mean and 1/std in
fp32, 8 B a row: the difference is 4 B per row, under 0.1% of the layer at h >= 1024).

An eager RMSNorm (``--norm-kernel eager``, ``kernels.norm_variants``) keeps what autograd saves of its ops
instead of its input and statistic (``eager``): x.float() in fp32, the normalised tensor in the schedule's
dtype, and the fp32 1/rms per row. Under ``selective-op`` and ``full`` the norms are recomputed (torchtitan's
policy saves none of their ops), so nothing of them is kept and their eager forward is timed again.
Eager rotary and SwiGLU (``--pointwise-kernel eager``, ``kernels.pointwise_variants``) keep more the same way
(``pointwise``): SwiGLU's ``silu(gate)``, and SDPA's keys and values expanded by ``repeat_kv`` to every query
head (the rotated block holds one per group); nothing of them under ``selective-op`` (the policy saves SDPA's
output, not its inputs, nor silu's) or ``full``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.fp8_cost import fp8_copy_bytes
from simulator.ir.ops import Local
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.workloads.attention_cost import FUSED_FUNCTIONS
from simulator.workloads.kernels.pointwise_variants import kept_extra
from simulator.workloads.layers import Attention, BiasDropoutAdd, Dropout, LayerNorm, Linear, RMSNorm, Rotary, SwiGLU
from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload

__all__ = ["MASK_BYTES", "PAPER_KINDS", "Kept", "layer_activations"]

MASK_BYTES = 1
"""A dropout mask element: PyTorch's bool mask, 1 byte (Korthikanti et al., section 4.1)."""
LSE_BYTES = 4
"""FlashAttention-2 keeps the softmax's log-sum-exp per row in fp32 (Dao 2023, Algorithm 1, L_i)."""

PAPER_KINDS = ("kept", "mask", "attention")
"""The kinds Korthikanti et al.'s per-layer figures count (all but the LayerNorm moments)."""


@dataclass(frozen=True)
class Kept:
    """One kind of what a layer keeps on one rank: ``kind`` is kept, fp8, moments, eager, pointwise, mask, attention
    or input."""

    kind: str
    what: str
    nbytes: int


def _forward_locals(schedule: Schedule, rank: int, fn: str, outs: set[str] | None = None):
    for op in schedule.programs[rank]:
        if isinstance(op, Local) and op.fn == fn and (outs is None or op.out in outs):
            yield op


def _attention_rows(schedule: Schedule, rank: int) -> int:
    """Rows (sequence positions x heads) of the rank's flash attention ops: what FlashAttention-2 keeps."""
    rows = 0
    for fn in FUSED_FUNCTIONS.values():
        for op in _forward_locals(schedule, rank, fn):
            rows += schedule.spec(rank, op.inputs[0]).shape[0] * op.param_dict()["heads"]
    return rows


def _attention_core(schedule: Schedule, rank: int, layer: Attention) -> Kept | None:
    """Megatron's stored softmax (+ mask + dropout output) for the heads and sequences of each unfused
    attention op; FlashAttention-2's log-sum-exp per row for each flash one."""
    rows = _attention_rows(schedule, rank)
    if rows:
        return Kept("attention", f"flash attention log-sum-exp of [b, a, s]: {rows:,} x {LSE_BYTES} B (fp32)",
                    rows * LSE_BYTES)
    elements = 0
    for op in (*_forward_locals(schedule, rank, "attention"), *_forward_locals(schedule, rank, "attention_gqa")):
        params = op.param_dict()
        rows = schedule.spec(rank, op.inputs[0]).shape[0]
        elements += rows * params["heads"] * params["seq"]  # (rows / s) sequences x heads x s x s
    if not elements:
        return None
    size = DTYPE_BYTES[schedule.dtype]
    per = size + (MASK_BYTES + size if layer.dropout > 0 else 0)
    what = "softmax, mask, dropout output" if layer.dropout > 0 else "softmax output"
    return Kept("attention", f"attention core ({what}) of [b, a, s, s]: {elements:,} x {per} B", elements * per)


def _per_op(schedule: Schedule, rank: int, workload: Workload, buffers: dict, first: str) -> list[Kept]:
    """What torchtitan's per-op policy keeps on ``rank`` (module docstring)."""
    policy = op_checkpoint(workload)
    out = [Kept("input", f"layer input {first}", buffers[first].nbytes)] if first in buffers else []
    kept = [(name, share) for name, share in policy.kept if name in buffers]
    if kept:
        layers = workload.layers()
        pieces = {name: [p.name for p in policy.products if p.kept and layers[p.layer].y == name] for name, _ in kept}
        what = ", ".join(name if share == 1 else f"{' and '.join(pieces[name])} of {name}" for name, share in kept)
        out.append(Kept("kept", f"saved by the per-op policy: {what}",
                        round(sum(buffers[name].nbytes * share for name, share in kept))))
    core = [layer for layer in workload.layers() if isinstance(layer, Attention)]
    if policy.attention_kept and core:
        lse = _attention_core(schedule, rank, core[0])
        if lse is not None:
            out.append(lse)
    return out


def _fp8_inputs(layers, tensors: list[str], buffers, recipe: str) -> tuple[list[str], Kept | None]:
    """``tensors`` less the linears' inputs TE keeps in FP8 alone, and the Kept of their FP8 copies."""
    inputs = [n for n in dict.fromkeys(layer.x for layer in layers if isinstance(layer, Linear)) if n in tensors]
    if not inputs:
        return tensors, None
    # Tensors another layer's backward reads in bf16 stay: the fused attention kernels keep their output.
    bf16 = {n for layer in layers if not isinstance(layer, Linear) for n in layer.saved}
    bf16 |= {n for layer in layers if isinstance(layer, Attention) and layer.kernel in FUSED_FUNCTIONS
             for n in layer.outputs}
    per = fp8_copy_bytes(recipe)
    nbytes = sum(math.ceil(buffers[n].numel * per) for n in inputs)
    what = (f"FP8 copies of the linears' inputs {', '.join(inputs)} ({per:g} B per element"
            f"{'; ' + ', '.join(n for n in inputs if n in bf16) + ' also kept in bf16' if bf16 & set(inputs) else ''})")
    return [n for n in tensors if n not in inputs or n in bf16], Kept("fp8", what, nbytes)


def _eager_norms(eager, buffers, dtype: str) -> Kept | None:
    """What autograd keeps of torchtitan's eager RMSNorm (``kernels.norm_variants``), in place of its input x and
    statistic: x.float() (4 B), the ``type_as`` output (the dtype's size) per element, rsqrt's fp32 [rows, 1]."""
    blocks = [buffers[layer.x].shape for layer in eager if layer.x in buffers]
    if not blocks:
        return None
    per = 4 + DTYPE_BYTES[dtype]
    nbytes = sum(r * c * per + r * 4 for r, c in blocks)
    return Kept("eager", f"eager RMSNorm autograd tensors of {', '.join(layer.x for layer in eager)}: x.float() (4 B), "
                         f"the normalised {dtype} ({DTYPE_BYTES[dtype]} B) per element, 1/rms fp32 per row", nbytes)


def _eager_pointwise(layers, buffers, dtype: str) -> Kept | None:
    """What autograd keeps of torchtitan's eager rotary and SwiGLU beyond the layers' saved tensors
    (``kernels.pointwise_variants.kept_extra``): silu(gate), and the keys and values expanded for SDPA."""
    items = [(f"silu({layer.x})" if isinstance(layer, SwiGLU) else f"expanded K, V of {layer.y}",
              kept_extra("swiglu", buffers[layer.y].shape) if isinstance(layer, SwiGLU) else
              kept_extra("rotary", buffers[layer.y].shape, layer.group))
             for layer in layers
             if isinstance(layer, (Rotary, SwiGLU)) and layer.kernel == "eager" and layer.y in buffers]
    items = [(what, n) for what, n in items if n]
    if not items:
        return None
    return Kept("pointwise", f"eager autograd tensors {', '.join(what for what, _ in items)} ({dtype})",
                sum(n for _, n in items) * DTYPE_BYTES[dtype])


def layer_activations(schedule: Schedule, rank: int, recompute: str, workload: Workload | None = None,
                      fp8_recipe: str | None = None) -> list[Kept]:
    """What one block keeps on ``rank`` between its forward and its backward, under ``recompute``
    (``workload``: the schedule's, given by a caller that sizes every rank, to build it once; ``fp8_recipe``:
    the linears run Transformer Engine's FP8 under that recipe, which keeps their inputs in FP8)."""
    workload = Workload.from_dict(schedule.workload) if workload is None else workload
    layers = workload.layers()
    read = {name for op in schedule.programs[rank] for name in op.reads()}
    # Only what the rank reads: a Cannon depth layer declares QKV as a reduce's unused output, and holds none.
    buffers = {name: spec for name, spec in schedule.buffers[rank].items() if name in read}
    first = layers[0].inputs[0]
    if recompute == "full":
        return [Kept("input", f"layer input {first}", buffers[first].nbytes)] if first in buffers else []
    if recompute == "selective-op":
        return _per_op(schedule, rank, workload, buffers, first)
    moments = {layer.stats for layer in layers if isinstance(layer, (LayerNorm, RMSNorm))}
    eager = [layer for layer in layers if isinstance(layer, RMSNorm) and layer.kernel == "eager"]
    others = {name for layer in layers if layer not in eager for name in layer.saved}
    names = [name for name in dict.fromkeys(name for layer in layers for name in layer.saved)
             if name in others or not any(name in layer.saved for layer in eager)]
    out = []
    tensors = [n for n in names if n not in moments and n in buffers]
    copies = None
    if fp8_recipe is not None:
        tensors, copies = _fp8_inputs(layers, tensors, buffers, fp8_recipe)
    if tensors:
        out.append(Kept("kept", f"saved {', '.join(tensors)}", sum(buffers[n].nbytes for n in tensors)))
    if copies is not None:
        out.append(copies)
    stats = [n for n in names if n in moments and n in buffers]
    if stats:
        what = "LayerNorm moments" if any(isinstance(layer, LayerNorm) for layer in layers) else "RMSNorm sums of squares"
        out.append(Kept("moments", f"{what} {', '.join(stats)}", sum(buffers[n].nbytes for n in stats)))
    for kept in (_eager_norms(eager, buffers, schedule.dtype), _eager_pointwise(layers, buffers, schedule.dtype)):
        if kept is not None:
            out.append(kept)
    drops = {layer.y for layer in layers if isinstance(layer, (Dropout, BiasDropoutAdd)) and layer.p > 0}
    masked = [op for fn in ("dropout", "bias_dropout_add") for op in _forward_locals(schedule, rank, fn, drops)]
    if masked:
        elements = sum(schedule.spec(rank, op.out).numel for op in masked)
        sites = ", ".join(dict.fromkeys(op.out for op in masked))
        out.append(Kept("mask", f"dropout masks of {sites}: {elements:,} x {MASK_BYTES} B", elements * MASK_BYTES))
    core = [layer for layer in layers if isinstance(layer, Attention)]
    # Selective recomputation frees the unfused kernel's probabilities; FlashAttention-2 keeps only its
    # row statistics, which its own backward needs whatever the recompute mode: nothing to free.
    if core and (recompute == "none" or core[0].kernel in FUSED_FUNCTIONS):
        kept = _attention_core(schedule, rank, core[0])
        if kept is not None:
            out.append(kept)
    return out
