"""The transformer block's layer list, GPT or Llama family, from a workload's sizes and architecture fields.

The GPT block (pre-LayerNorm, biases, GELU MLP, multi-head attention) is what the architecture fields'
defaults (``ARCHITECTURE``) give, layer for layer; the other values swap in the Llama family's pieces:
RMSNorm (``layers.rmsnorm``), grouped-query attention (``kv_heads``), rotary embeddings
(``layers.rotary``), a SwiGLU MLP (``layers.swiglu``), no biases, and the attention kernel
(``attention_cost``). ``simulator.workloads.workload`` lists the tensors.

With biases, the block runs Megatron-LM's fused elementwise kernels unless told not to, as Megatron-LM
does by default: ``bias_gelu_fusion`` makes FC1's bias add and GELU one ``BiasGelu`` pass, and
``bias_dropout_fusion`` makes each row-parallel linear's bias add, dropout and residual add one
``BiasDropoutAdd`` pass (also with dropout 0, as Megatron-LM still runs the fused add). The linears
then skip their bias add (``skip_bias_add=True``) and the fused layer holds the bias. Without biases
(the Llama family) neither applies and the block is unchanged.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from simulator.errors import InputError
from simulator.workloads.attention_cost import KERNELS
from simulator.workloads.kernels.norm_variants import KERNELS as NORM_KERNELS
from simulator.workloads.kernels.pointwise_variants import KERNELS as POINTWISE_KERNELS
from simulator.workloads.layers import (Attention, BiasDropoutAdd, BiasGelu, Dropout, Elementwise, LayerNorm, Layer,
                                        Linear, Residual, RMSNorm, Rotary, SwiGLU)

if TYPE_CHECKING:  # the workload module imports this one
    from simulator.workloads.workload import Workload

__all__ = ["ARCHITECTURE", "CHOICES", "FLAGS", "check_architecture", "decoder_layers"]

ARCHITECTURE = {"kv_heads": None, "norm": "layernorm", "activation": "gelu", "position": "learned", "bias": True,
                "attention": "flash", "bias_gelu_fusion": True, "bias_dropout_fusion": True, "norm_kernel": "fused",
                "pointwise_kernel": "fused"}
"""The transformer's optional architecture fields and the GPT block's values of them (``kv_heads`` None:
as many as ``heads``; the two fusions on, Megatron-LM's default since January 2021; the norms as apex's fused kernels,
``kernels.norm_variants``, rotary and SwiGLU one pass each, ``kernels.pointwise_variants``); ``to_dict`` stores
only those that differ, so a GPT block's record is unchanged."""
FLAGS = ("bias", "bias_gelu_fusion", "bias_dropout_fusion")
"""The architecture fields that are true or false."""
CHOICES = {"norm": ("layernorm", "rmsnorm"), "activation": ("gelu", "swiglu"), "position": ("learned", "rotary"),
           "attention": KERNELS, "norm_kernel": NORM_KERNELS,
           "pointwise_kernel": POINTWISE_KERNELS}
"""The valid values of the transformer's named architecture choices."""


def decoder_layers(w: "Workload") -> tuple[Layer, ...]:
    """The layer list of the transformer block ``w`` (the workload module's table), by its architecture."""
    h, f, p, a, kv = w.hidden, w.ffn, w.dropout, w.heads, w.kv_heads
    d, group = h // a, a // kv
    qkv = (a + 2 * kv) * d
    qkv_label = "3*hidden" if kv == a else "(heads+2*kv_heads)*head_dim"
    swiglu = w.activation == "swiglu"

    def norm(x: str, n: str, stats: str, y: str) -> Layer:
        if w.norm == "rmsnorm":
            return RMSNorm(x, f"{n}_g", stats, y, h, part=n, kernel=w.norm_kernel)
        return LayerNorm(x, f"{n}_g", f"{n}_b", stats, y, h, part=n, kernel=w.norm_kernel)

    def bias(name: str) -> str | None:
        return name if w.bias else None

    core = "QKR" if w.position == "rotary" else "QKV"
    fuse_gelu = w.bias and w.bias_gelu_fusion and not swiglu
    fuse_dropout = w.bias and w.bias_dropout_fusion

    def linear(x: str, weight: str, y: str, k: int, n: int, k_label: str, n_label: str, index: int, b: str,
               part: str, fused: bool) -> Layer:
        return Linear(x, weight, y, k, n, k_label, n_label, index=index, bias=None if fused else bias(b), part=part)

    def residual(x: str, b: str, r: str, y: str, stream: int, n: int) -> tuple[Layer, ...]:
        if fuse_dropout:
            return (BiasDropoutAdd(x, b, r, y, h, p, stream=stream, part=f"bda{n}"),)
        return (Dropout(x, f"{x}D", h, p, stream=stream, part=f"drop{n}"), Residual(r, f"{x}D", y, h, part=f"res{n}"))

    return (norm("X", "ln1", "S1", "A1"),
            Linear("A1", "Wqkv", "QKV", h, qkv, "hidden", qkv_label, index=0, bias=bias("bqkv"), part="qkv"),
            *((Rotary("QKV", "QKR", qkv, group, d, w.seq, kernel=w.pointwise_kernel),) if core == "QKR" else ()),
            Attention(core, "CTX", a, d, w.seq, p, stream=0, group=group, kernel=w.attention),
            linear("CTX", "Wproj", "P", h, h, "hidden", "hidden", 1, "bproj", "proj", fuse_dropout),
            *residual("P", "bproj", "X", "X2", 1, 1),
            norm("X2", "ln2", "S2", "A2"),
            *((Linear("A2", "W1", "H", h, 2 * f, "hidden", "2*ffn", index=2, bias=bias("b1"), part="fc1"),
               SwiGLU("H", "Z", f, part="swiglu", kernel=w.pointwise_kernel)) if swiglu else
              (linear("A2", "W1", "H", h, f, "hidden", "ffn", 2, "b1", "fc1", fuse_gelu),
               BiasGelu("H", "b1", "Z", f, part="bias_gelu") if fuse_gelu else
               Elementwise("gelu", "H", "Z", f, part="gelu"))),
            linear("Z", "W2", "F", f, h, "ffn", "hidden", 3, "b2", "fc2", fuse_dropout),
            *residual("F", "b2", "X2", "Y", 2, 2))


def check_architecture(data: dict) -> None:
    """InputError for an ill-typed architecture field of a stored transformer record."""
    kv = data.get("kv_heads", 1)
    if not isinstance(kv, numbers.Integral) or isinstance(kv, bool):
        raise InputError(f"workload transformer field 'kv_heads' must be an integer, got {data['kv_heads']!r}")
    for field in FLAGS:
        if field in data and not isinstance(data[field], bool):
            raise InputError(f"workload transformer field {field!r} must be true or false, got {data[field]!r}")
    for field in CHOICES:
        if field in data and not isinstance(data[field], str):
            raise InputError(f"workload transformer field {field!r} must be one of {', '.join(CHOICES[field])}, "
                             f"got {data[field]!r}")
