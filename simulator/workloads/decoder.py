"""The transformer block's layer list, GPT or Llama family, from a workload's sizes and architecture fields.

The GPT block (pre-LayerNorm, biases, GELU MLP, multi-head attention) is what the architecture fields'
defaults (``ARCHITECTURE``) give, layer for layer; the other values swap in the Llama family's pieces:
RMSNorm (``layers.rmsnorm``), grouped-query attention (``kv_heads``), rotary embeddings
(``layers.rotary``), a SwiGLU MLP (``layers.swiglu``), no biases, and the attention kernel
(``attention_cost``). ``simulator.workloads.workload`` lists the tensors.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from simulator.errors import InputError
from simulator.workloads.attention_cost import KERNELS
from simulator.workloads.layers import (Attention, Dropout, Elementwise, LayerNorm, Layer, Linear, Residual, RMSNorm,
                                        Rotary, SwiGLU)

if TYPE_CHECKING:  # the workload module imports this one
    from simulator.workloads.workload import Workload

__all__ = ["ARCHITECTURE", "CHOICES", "check_architecture", "decoder_layers"]

ARCHITECTURE = {"kv_heads": None, "norm": "layernorm", "activation": "gelu", "position": "learned", "bias": True,
                "attention": "flash"}
"""The transformer's optional architecture fields and the GPT block's values of them (``kv_heads`` None:
as many as ``heads``); ``to_dict`` stores only those that differ, so a GPT block's record is unchanged."""
CHOICES = {"norm": ("layernorm", "rmsnorm"), "activation": ("gelu", "swiglu"), "position": ("learned", "rotary"),
           "attention": KERNELS}
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
            return RMSNorm(x, f"{n}_g", stats, y, h, part=n)
        return LayerNorm(x, f"{n}_g", f"{n}_b", stats, y, h, part=n)

    def bias(name: str) -> str | None:
        return name if w.bias else None

    core = "QKR" if w.position == "rotary" else "QKV"
    return (norm("X", "ln1", "S1", "A1"),
            Linear("A1", "Wqkv", "QKV", h, qkv, "hidden", qkv_label, index=0, bias=bias("bqkv"), part="qkv"),
            *((Rotary("QKV", "QKR", qkv, group, d, w.seq),) if core == "QKR" else ()),
            Attention(core, "CTX", a, d, w.seq, p, stream=0, group=group, kernel=w.attention),
            Linear("CTX", "Wproj", "P", h, h, "hidden", "hidden", index=1, bias=bias("bproj"), part="proj"),
            Dropout("P", "PD", h, p, stream=1, part="drop1"),
            Residual("X", "PD", "X2", h, part="res1"),
            norm("X2", "ln2", "S2", "A2"),
            *((Linear("A2", "W1", "H", h, 2 * f, "hidden", "2*ffn", index=2, bias=bias("b1"), part="fc1"),
               SwiGLU("H", "Z", f, part="swiglu")) if swiglu else
              (Linear("A2", "W1", "H", h, f, "hidden", "ffn", index=2, bias=bias("b1"), part="fc1"),
               Elementwise("gelu", "H", "Z", f, part="gelu"))),
            Linear("Z", "W2", "F", f, h, "ffn", "hidden", index=3, bias=bias("b2"), part="fc2"),
            Dropout("F", "FD", h, p, stream=2, part="drop2"),
            Residual("X2", "FD", "Y", h, part="res2"))


def check_architecture(data: dict) -> None:
    """InputError for an ill-typed architecture field of a stored transformer record."""
    kv = data.get("kv_heads", 1)
    if not isinstance(kv, numbers.Integral) or isinstance(kv, bool):
        raise InputError(f"workload transformer field 'kv_heads' must be an integer, got {data['kv_heads']!r}")
    if "bias" in data and not isinstance(data["bias"], bool):
        raise InputError(f"workload transformer field 'bias' must be true or false, got {data['bias']!r}")
    for field in CHOICES:
        if field in data and not isinstance(data[field], str):
            raise InputError(f"workload transformer field {field!r} must be one of {', '.join(CHOICES[field])}, "
                             f"got {data[field]!r}")
