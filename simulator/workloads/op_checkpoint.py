"""torchtitan's per-op selective activation checkpointing (``--recompute selective-op``), read off a block's layers.

torchtitan wraps each transformer block in a checkpoint whose policy decides op by op what the forward
keeps (``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370ad, 2024-12-26, the commit of
``benchmarks/llama3_h100_202412_torchtitan.md``: ``_save_list`` and ``_apply_ac_to_transformer_block`` under
``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "op"``): the outputs of the ops in its
save list (``aten.mm``, the flash and memory-efficient SDPA ops, ``reduce_scatter_tensor``, ``abs``,
``max``) are kept, except every second ``mm`` of the block, counted in forward order from one; everything
else is recomputed in the block's backward from the block's input and what was kept.

Applied to tpsim's layer list (``simulator.workloads.decoder``):

- The matrix products are the linears' as torchtitan's modules run them (``torchtitan/models/llama/model.py``
  at 9dec370ad: ``xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)``; ``self.w2(F.silu(self.w1(x)) *
  self.w3(x))``): the fused QKV linear (the one the attention, or the rotary embedding before it, reads) is
  three, Q (heads x d columns), K and V (kv_heads x d each); the SwiGLU's fused gate/up linear is two, gate
  then up; any other linear one. A linear with a bias is PyTorch's ``addmm``, which the list does not name:
  it is neither counted nor kept. So Llama 3.1 8B's block keeps wq, wv, w1 (gate) and w2's outputs and
  recomputes wk, wo and w3's.
- The attention core is kept (its output and FlashAttention's log-sum-exp) under ``--attention flash``, the
  SDPA op the list names; the other kernels are not in it (cuDNN's SDPA op, Triton kernels, the unfused
  products) and are recomputed.
- Every other layer (norms, rotary, SwiGLU / GELU, dropout, residuals) is recomputed where the backward
  needs its output: a tensor some layer's backward reads (``Layer.saved``) that is not kept is recomputed,
  and so, in turn, is what that needs. A layer whose output no backward needs (the block's last residual)
  is not: PyTorch's checkpoint stops recomputing once every saved tensor is back.

``OpCheckpoint`` says what is recomputed (each layer part and the share of its forward: a split linear's
unkept columns) and what is kept (tensor and the share of its columns), which ``simulator.training.step``
(time) and ``simulator.memory.activations`` (memory) use. Example, Llama 3.1 8B's block::

    >>> from simulator.workloads.workload import Workload
    >>> w = Workload.transformer(1, 8192, 4096, 32, 14336, kv_heads=8, norm="rmsnorm", activation="swiglu",
    ...                          position="rotary", bias=False)
    >>> [name for name, _ in op_checkpoint(w).kept]
    ['QKV', 'CTX', 'H', 'F']
    >>> [(part, round(share, 3)) for part, share in op_checkpoint(w).recomputed if share < 1]
    [('qkv', 0.167), ('fc1', 0.5)]
    >>> [part for part, share in op_checkpoint(w).recomputed if share == 1]
    ['ln1', 'rope', 'proj', 'drop1', 'res1', 'ln2', 'swiglu']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from simulator.workloads.layers import Attention, Linear, Rotary, SwiGLU
from simulator.workloads.workload import Workload

__all__ = ["Product", "OpCheckpoint", "op_checkpoint", "SAVED_ATTENTION"]

SAVED_ATTENTION = ("flash",)
"""The attention kernels whose op torchtitan's save list names (``_scaled_dot_product_flash_attention``)."""


@dataclass(frozen=True)
class Product:
    """One matrix product of a linear layer as torchtitan's module runs it."""

    layer: int
    """Index of the linear in the layer list."""
    name: str
    """``Q``, ``K``, ``V``, ``gate``, ``up``, or the linear's output name."""
    cols: int
    """Its output columns."""
    mm: bool
    """Whether it is an ``aten.mm`` (no bias), the op the policy counts."""
    kept: bool
    """Whether the policy keeps its output (an odd-numbered mm)."""


@dataclass(frozen=True)
class OpCheckpoint:
    """What the per-op policy keeps and recomputes of one block (module docstring)."""

    products: tuple[Product, ...]
    """Every linear's matrix products, in forward order."""
    kept: tuple[tuple[str, float], ...]
    """(tensor, share of its columns) the forward keeps besides the block's input, in layer order."""
    attention_kept: bool
    """Whether the attention core's op is kept (its output and, FlashAttention, the log-sum-exp)."""
    recomputed: tuple[tuple[str, float], ...]
    """(layer part, share of its forward) the backward runs again, in layer order."""
    recomputed_flops: float
    """Matrix FLOPs the backward runs again (2 M k n per recomputed product; the attention core's 4 b s^2 h
    when it is recomputed), the convention of ``simulator.training.flops``."""


def _split(layers, i: int, linear: Linear) -> list[tuple[str, int]]:
    """The products of ``linear`` (module docstring): Q, K, V; gate, up; or one."""
    reader = next((layer for layer in layers[i + 1:] if linear.y in layer.inputs), None)
    if isinstance(reader, (Rotary, Attention)):
        core = next(layer for layer in layers if isinstance(layer, Attention))
        kv = core.heads // core.group * core.head_dim
        return [("Q", core.heads * core.head_dim), ("K", kv), ("V", kv)]
    if isinstance(reader, SwiGLU):
        return [("gate", reader.cols), ("up", reader.cols)]
    return [(linear.y, linear.n)]


@lru_cache(maxsize=256)
def op_checkpoint(workload: Workload) -> OpCheckpoint:
    """torchtitan's per-op policy on ``workload``'s block (module docstring)."""
    layers = workload.layers()
    products, count = [], 0
    for i, layer in enumerate(layers):
        if isinstance(layer, Linear):
            for name, cols in _split(layers, i, layer):
                mm = layer.bias is None  # a biased linear is aten.addmm, not in the save list
                count += mm
                products.append(Product(i, name, cols, mm, mm and count % 2 == 1))
    producer = {name: i for i, layer in enumerate(layers) for name in layer.outputs}
    kept_cols: dict[int, int] = {}
    for p in products:
        kept_cols[p.layer] = kept_cols.get(p.layer, 0) + (p.cols if p.kept else 0)
    core = [i for i, layer in enumerate(layers) if isinstance(layer, Attention)]
    attention_kept = bool(core) and layers[core[0]].kernel in SAVED_ATTENTION
    kept = {i: kept_cols[i] / layers[i].n for i in kept_cols if kept_cols[i]}
    if attention_kept:
        kept[core[0]] = 1.0
    recomputed: dict[int, float] = {}

    def need(name: str) -> None:
        i = producer.get(name)
        if i is None or i in recomputed or kept.get(i) == 1.0:
            return  # the block's input, or already back
        layer = layers[i]
        # a split linear runs its unkept columns again; any other layer runs whole
        recomputed[i] = (layer.n - kept_cols[i]) / layer.n if i in kept_cols else 1.0
        for x in layer.inputs:
            need(x)

    for layer in layers:
        for name in layer.saved:
            need(name)
    flops = 0.0
    for i, share in recomputed.items():
        layer = layers[i]
        if isinstance(layer, Linear):
            flops += 2.0 * workload.m * layer.k * layer.n * share
        elif isinstance(layer, Attention):
            flops += 4.0 * workload.batch * workload.seq ** 2 * layer.heads * layer.head_dim
    return OpCheckpoint(tuple(products), tuple((layers[i].y, s) for i, s in sorted(kept.items())), attention_kept,
                        tuple((layers[i].part, recomputed[i]) for i in sorted(recomputed)), flops)
