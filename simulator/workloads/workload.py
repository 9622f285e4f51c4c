"""The workloads tpsim plans, as data: each is a chain of layer records (``simulator.workloads.layers``).

===============  ==========================  ==================================================================
workload         sizes                       layers (tensor names; rows x columns)
===============  ==========================  ==================================================================
``gemm``         ``m``, ``k``, ``n``         Linear C = A B, A [M, K], B [K, N]
``mlp``          ``m``, ``hidden``           Linear H = X W1 (W1 [h, 4h]); Elementwise Z = gelu(H); Linear
                                             Y = Z W2
``transformer``  ``batch``, ``seq``,         one pre-LayerNorm GPT block on M = b s tokens (below)
                 ``hidden``, ``heads``,
                 ``ffn``, ``dropout``
===============  ==========================  ==================================================================

The transformer block (``decoder.decoder_layers``), rows token-major (row = sequence * s + position)::

    A1 = LN1(X)                     ln1_g, ln1_b [1, h]; moments S1 [M, 2]
    QKV = A1 Wqkv + bqkv            Wqkv [h, 3h], each head's Q, K, V side by side
    CTX = attention(QKV)            causal, a heads of h/a, scores / sqrt(h/a), attention dropout
    P = CTX Wproj + bproj           Wproj [h, h]
    X2 = X + dropout(P)             (PD = dropout(P))
    A2 = LN2(X2)                    ln2_g, ln2_b; S2
    H = A2 W1 + b1; Z = gelu(H)     W1 [h, f]
    F = Z W2 + b2                   W2 [f, h]
    Y = X2 + dropout(F)             (FD = dropout(F))

The architecture fields (``ARCHITECTURE``) turn it into a Llama-family block or anything between:
``norm="rmsnorm"`` makes LN1 and LN2 RMSNorms (gamma only; S1, S2 [M, 1]); ``kv_heads`` < heads
makes QKV [M, (a + 2 kv) d], each key/value group's query heads, key and value side by side, and the
attention grouped; ``position="rotary"`` rotates the query and key heads, QKR = rope(QKV), and the
attention reads QKR; ``activation="swiglu"`` makes W1 [h, 2f] with gate and up columns interleaved and
Z = silu(gate) * up [M, f]; ``bias=False`` drops every bias; ``attention`` picks the kernel
(``flash``, ``triton``, ``cudnn`` or ``unfused``, ``attention_cost``). At their GPT values the layer list is the
one above.

Everything else is derived from the layer list: tensor shapes, the inputs and outputs of each pass,
the backward (``gemm``: dA = dC B^T, dB = A^T dC; ``mlp``: dZ = dY W2^T, dW2 = Z^T dY,
dH = dZ * gelu'(H), dX = dH W1^T, dW1 = X^T dH; the block: every layer's rule, the contributions to X
and X2 summed), and the values of any input block.

A backward-only schedule takes the forward's saved activations (what some layer's backward reads:
H and Z for the MLP) as inputs, in the layout the forward leaves them in. To add a workload: one
entry in ``_KINDS`` (its sizes, its layer list, its label) and its CLI arguments.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from simulator.errors import InputError
from simulator.limits import check_workload_sizes
from simulator.workloads.blocks import BlockEvaluator, NumpyBackend, dense_reference
from simulator.workloads.graph import Context, numpy_call, run_chunk
from simulator.workloads.decoder import ARCHITECTURE, CHOICES, FLAGS, check_architecture, decoder_layers
from simulator.workloads.layers import Elementwise, Layer, Linear, grad
from simulator.workloads.tensors import random_block

PASSES = ("fwd", "bwd", "both")


@dataclass(frozen=True)
class _Kind:
    """One workload kind: the sizes its ``to_dict`` form stores, its layers, and its label."""

    fields: tuple[str, ...]
    layers: Callable[["Workload"], tuple[Layer, ...]]
    label: Callable[["Workload"], str]


def _gemm_layers(w: "Workload") -> tuple[Layer, ...]:
    return (Linear("A", "B", "C", w.k, w.n, "K", "N", index=0),)


def _mlp_layers(w: "Workload") -> tuple[Layer, ...]:
    h, f = w.hidden, 4 * w.hidden
    return (Linear("X", "W1", "H", h, f, "hidden", "4*hidden", index=0),
            Elementwise("gelu", "H", "Z", f),
            Linear("Z", "W2", "Y", f, h, "4*hidden", "hidden", index=1))


def _transformer_label(w: "Workload") -> str:
    dropout = f" dropout={w.dropout:g}" if w.dropout else ""
    return f"transformer B={w.batch} S={w.seq} H={w.hidden} A={w.heads} F={w.ffn}{dropout}{w.architecture_label()}"


_KINDS = {
    "gemm": _Kind(("m", "k", "n"), _gemm_layers, lambda w: f"gemm M={w.m} K={w.k} N={w.n}"),
    "mlp": _Kind(("m", "hidden"), _mlp_layers, lambda w: f"mlp M={w.m} H={w.k}"),
    "transformer": _Kind(("batch", "seq", "hidden", "heads", "ffn", "dropout"), decoder_layers,
                         _transformer_label),
}
CHAIN_KINDS = ("gemm", "mlp")
"""The workloads whose layers form a chain of bias-free linears and elementwise layers: the executor's
block-wise reference (``simulator.workloads.blocks``) walks them; the others go by token chunks."""
EXAMPLES = {"gemm": dict(m=1, k=1, n=1), "mlp": dict(m=1, hidden=1),
            "transformer": dict(batch=1, seq=1, hidden=1, heads=1, ffn=1, dropout=0.0)}
"""The smallest sizes of each workload, as ``to_dict`` fields (for messages that list a kind's tensors)."""
FIELDS = {name: kind.fields for name, kind in _KINDS.items()}
"""The sizes each workload's ``to_dict`` form stores."""
@dataclass(frozen=True)
class Workload:
    """A workload and its sizes: ``gemm`` uses m, k, n; ``mlp`` m and hidden (k = n = hidden); the
    ``transformer`` batch, seq, heads, ffn, dropout and hidden (m = batch * seq, k = n = hidden)."""

    name: str
    m: int
    k: int
    n: int
    batch: int = 0
    seq: int = 0
    heads: int = 0
    ffn: int = 0
    dropout: float = 0.0
    kv_heads: int = 0
    """Key/value heads (grouped-query attention; 1: multi-query); 0 is read as ``heads`` (multi-head)."""
    norm: str = "layernorm"
    """``layernorm`` (GPT) or ``rmsnorm`` (Llama)."""
    activation: str = "gelu"
    """``gelu`` (an MLP h -> ffn -> h) or ``swiglu`` (gate and up h -> 2 ffn, product, ffn -> h)."""
    position: str = "learned"
    """``learned`` (in the embedding, nothing in the block) or ``rotary`` (applied to Q and K in the block)."""
    bias: bool = True
    """Whether the linears have biases (GPT-2/3 and Megatron-LM's GPT do; Llama's do not)."""
    bias_gelu_fusion: bool = True
    """With biases and GELU: FC1's bias add and GELU as Megatron-LM's one fused kernel (``layers.bias_gelu``;
    Megatron-LM's default, ``--no-bias-gelu-fusion`` turns it off)."""
    bias_dropout_fusion: bool = True
    """With biases: each row-parallel linear's bias add, dropout and residual add as Megatron-LM's one fused
    kernel (``layers.bias_dropout_add``; Megatron-LM's default, ``--no-bias-dropout-fusion`` turns it off)."""
    attention: str = "flash"
    """The attention kernel: ``flash`` (FlashAttention-2), ``triton`` (FlashAttention in Triton), ``cudnn``
    (cuDNN's fused attention, Transformer Engine's choice on Hopper) or ``unfused``
    (``simulator.workloads.attention_cost``)."""
    norm_kernel: str = "fused"
    """What runs the norms on ranks holding whole rows: ``fused`` (apex's or PyTorch's native kernel), ``te``
    (Transformer Engine's, one backward kernel) or ``eager`` (torchtitan's RMSNorm from PyTorch ops,
    ``simulator.workloads.kernels.norm_variants``)."""
    pointwise_kernel: str = "fused"
    """What runs rotary and SwiGLU: ``fused`` (one pass each) or ``eager`` (torchtitan's PyTorch ops, with GQA's
    key/value copies: ``simulator.workloads.kernels.pointwise_variants``)."""

    def __post_init__(self) -> None:
        if self.name not in _KINDS:
            raise InputError(f"unknown workload {self.name!r}; valid: {', '.join(_KINDS)}")
        for label, value in (("M", self.m), ("K", self.k), ("N", self.n)):
            if value < 1:
                raise InputError(f"workload size {label} must be >= 1, got {value}")
        if self.name != "gemm" and self.k != self.n:
            raise InputError(f"{self.name} has one hidden size: k = n = hidden, got k={self.k}, n={self.n}")
        if self.name == "transformer":
            self._check_transformer()
        check_workload_sizes(self)  # extents, elements and FLOPs within simulator.limits

    def _check_transformer(self) -> None:
        for label, value in (("batch", self.batch), ("seq", self.seq), ("heads", self.heads), ("ffn", self.ffn)):
            if value < 1:
                raise InputError(f"transformer {label} must be >= 1, got {value}")
        if self.m != self.batch * self.seq:
            raise InputError(f"transformer tokens M = batch * seq = {self.batch * self.seq}, got {self.m}")
        if self.hidden % self.heads:
            raise InputError(f"transformer hidden={self.hidden} must be divisible by heads={self.heads} "
                             f"(head width h/a)")
        if not 0 <= self.dropout < 1:
            raise InputError(f"transformer dropout must be a probability in [0, 1), got {self.dropout}")
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if not isinstance(self.kv_heads, numbers.Integral) or self.kv_heads < 1 or self.heads % self.kv_heads:
            raise InputError(f"transformer kv_heads={self.kv_heads} must divide heads={self.heads} (each key/value "
                             f"head serves heads/kv_heads query heads)")
        for field, valid in CHOICES.items():
            if getattr(self, field) not in valid:
                raise InputError(f"transformer {field} {getattr(self, field)!r}: valid: {', '.join(valid)}")
        for field in FLAGS:
            if not isinstance(getattr(self, field), bool):
                raise InputError(f"transformer {field} must be true or false, got {getattr(self, field)!r}")
        if self.attention == "triton" and self.dropout > 0:
            # Neither Triton FlashAttention (Tri Dao's flash_attn_triton.py, OpenAI's triton.ops) drops
            # probabilities: llm-foundry refuses attn_pdrop > 0 with attn_impl: triton.
            raise InputError(f"--attention triton with dropout {self.dropout:g}: the Triton FlashAttention kernel has "
                             f"no attention dropout; use --dropout 0, or --attention flash or unfused")
        if self.norm_kernel == "eager" and self.norm != "rmsnorm":
            raise InputError("--norm-kernel eager is torchtitan's RMSNorm built from PyTorch ops; PyTorch runs "
                             "LayerNorm as one native kernel: use --norm-kernel fused (or te) with layernorm")
        if self.pointwise_kernel == "eager" and self.position != "rotary" and self.activation != "swiglu":
            raise InputError("--pointwise-kernel eager is torchtitan's eager rotary and SwiGLU; this block has neither")
        if self.position == "rotary" and (self.hidden // self.heads) % 2:
            raise InputError(f"rotary position embeddings need an even head width, got hidden/heads = "
                             f"{self.hidden // self.heads}")

    @classmethod
    def gemm(cls, m: int, k: int, n: int) -> "Workload":
        return cls("gemm", m, k, n)

    @classmethod
    def mlp(cls, m: int, hidden: int) -> "Workload":
        return cls("mlp", m, hidden, hidden)

    @classmethod
    def transformer(cls, batch: int, seq: int, hidden: int, heads: int, ffn: int | None = None,
                    dropout: float = 0.0, **architecture) -> "Workload":
        """One block on ``batch`` sequences of ``seq`` tokens; ``ffn`` defaults to 4 * hidden; GPT's
        architecture unless ``architecture`` says otherwise (``ARCHITECTURE``'s fields: kv_heads, norm,
        activation, position, bias)."""
        unknown = sorted(set(architecture) - set(ARCHITECTURE))
        if unknown:
            raise InputError(f"transformer has no field {unknown[0]!r}; architecture fields: {', '.join(ARCHITECTURE)}")
        fields = {**ARCHITECTURE, **{k: v for k, v in architecture.items() if v is not None}}
        fields["kv_heads"] = fields["kv_heads"] or 0
        return cls("transformer", batch * seq, hidden, hidden, batch=batch, seq=seq, heads=heads,
                   ffn=4 * hidden if ffn is None else ffn, dropout=float(dropout), **fields)

    def with_batch(self, batch: int) -> "Workload":
        """The same transformer block on ``batch`` sequences."""
        return dataclasses.replace(self, batch=batch, m=batch * self.seq)

    def architecture(self) -> dict:
        """The architecture fields that differ from the GPT block's (``ARCHITECTURE``)."""
        if self.name != "transformer":
            return {}
        gpt = {**ARCHITECTURE, "kv_heads": self.heads}
        return {k: getattr(self, k) for k in ARCHITECTURE if getattr(self, k) != gpt[k]}

    def architecture_label(self) -> str:
        """`` KV=8 rmsnorm swiglu rotary no-bias``: what differs from a GPT block, as a label's tail (a fusion
        turned off as Megatron-LM's flag, `` no-bias-gelu-fusion``)."""
        parts = []
        for key, value in self.architecture().items():
            flag = "no-" + key.replace("_", "-")
            parts.append(f"KV={value}" if key == "kv_heads" else flag if key in FLAGS else
                         f"{value}-norm" if key == "norm_kernel" else
                         f"{value}-pointwise" if key == "pointwise_kernel" else str(value))
        return "".join(f" {part}" for part in parts)

    @classmethod
    def from_dict(cls, data: dict) -> "Workload":
        """Inverse of ``to_dict``; InputError naming a missing, unknown or ill-typed field."""
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or name not in FIELDS:
            valid = "; ".join(f"{n} ({', '.join(fields)})" for n, fields in FIELDS.items())
            raise InputError(f"workload {data!r}: expected a name and sizes, one of {valid}")
        fields = FIELDS[name]
        missing = [f for f in fields if f not in data]
        if missing:
            raise InputError(f"workload {name} needs {', '.join(fields)}; missing: {', '.join(missing)}")
        optional = tuple(ARCHITECTURE) if name == "transformer" else ()
        unknown = sorted(set(data) - set(fields) - set(optional) - {"name"})
        if unknown:
            raise InputError(f"workload {name} has no field {unknown[0]!r}; fields: {', '.join(fields + optional)}")
        for f in fields:
            value = data[f]
            if f == "dropout":
                if not isinstance(value, numbers.Real) or isinstance(value, bool):
                    raise InputError(f"workload {name} field 'dropout' must be a number, got {value!r}")
            elif not isinstance(value, numbers.Integral) or isinstance(value, bool):  # numpy ints are sizes too
                raise InputError(f"workload {name} field {f!r} must be an integer, got {value!r}")
        if name == "transformer":
            check_architecture(data)
        return cls.from_fields(name, **{f: data[f] for f in fields + optional if f in data})

    @classmethod
    def from_fields(cls, name: str, **fields) -> "Workload":
        """The workload of ``name`` from its ``to_dict`` fields."""
        if name == "mlp":
            return cls.mlp(int(fields["m"]), int(fields["hidden"]))
        if name == "transformer":
            return cls.transformer(int(fields["batch"]), int(fields["seq"]), int(fields["hidden"]),
                                   int(fields["heads"]), int(fields["ffn"]), float(fields["dropout"]),
                                   **{k: fields[k] for k in ARCHITECTURE if k in fields})
        return cls(name, int(fields["m"]), int(fields["k"]), int(fields["n"]))

    def to_dict(self) -> dict:
        """The form stored in a Schedule's ``workload`` field."""
        if self.name == "mlp":
            return {"name": "mlp", "m": self.m, "hidden": self.k}
        if self.name == "transformer":
            return {"name": "transformer", "batch": self.batch, "seq": self.seq, "hidden": self.k,
                    "heads": self.heads, "ffn": self.ffn, "dropout": self.dropout, **self.architecture()}
        return {"name": "gemm", "m": self.m, "k": self.k, "n": self.n}

    @property
    def hidden(self) -> int:
        return self.k

    @property
    def is_chain(self) -> bool:
        """Whether the layers are a chain of bias-free linears and elementwise layers (``CHAIN_KINDS``)."""
        return self.name in CHAIN_KINDS

    def label(self) -> str:
        """``gemm M=16 K=8 N=4`` or ``mlp M=16 H=8``: the workload as its command-line sizes."""
        return _KINDS[self.name].label(self)

    def layers(self) -> tuple[Layer, ...]:
        """The chain of layer records, first to last."""
        return _KINDS[self.name].layers(self)

    def linears(self) -> tuple[Linear, ...]:
        """The linear layers, in order."""
        return tuple(layer for layer in self.layers() if isinstance(layer, Linear))

    def weights(self) -> dict[str, tuple[int, int]]:
        """Every weight tensor of the layers, in order, with its shape."""
        return {name: shape for layer in self.layers() for name, shape in layer.weights.items()}

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Global shape of every tensor the workload names: inputs, weights, activations, then gradients."""
        layers, m = self.layers(), self.m
        weights = self.weights()
        first = layers[0].inputs[0]
        acts = {first: (m, layers[0].in_cols)}
        for layer in layers:
            acts.update({name: (m, cols) for name, cols in layer.outputs.items()})
        shapes = {first: acts[first], **weights, **acts}
        last = self._last()
        shapes[grad(last)] = acts[last]
        for layer in reversed(layers):
            for name in layer.inputs:
                shapes.setdefault(grad(name), acts[name])
        shapes.update({grad(name): shape for name, shape in weights.items()})
        return shapes

    def _last(self) -> str:
        """The block's output: the last layer's (differentiable) output."""
        last = self.layers()[-1]
        return getattr(last, "differentiable", tuple(last.outputs))[-1]

    def saved_activations(self) -> tuple[str, ...]:
        """What the backward reads of the forward: each layer's ``saved`` tensors that a layer made."""
        made = [name for layer in self.layers() for name in layer.outputs]
        wanted = {name for layer in self.layers() for name in layer.saved}
        return tuple(name for name in made if name in wanted)

    def input_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` starts from."""
        _check_pass(passes)
        layers = self.layers()
        start = (layers[0].inputs[0], *self.weights())
        d_out = grad(self._last())
        return {"fwd": start, "bwd": (*start, *self.saved_activations(), d_out), "both": (*start, d_out)}[passes]

    def output_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` produces."""
        _check_pass(passes)
        layers = self.layers()
        fwd = (self._last(),)
        bwd = (grad(layers[0].inputs[0]), *(grad(name) for name in self.weights()))
        return {"fwd": fwd, "bwd": bwd, "both": fwd + bwd}[passes]

    def input_block(self, seed: int, name: str, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        """Block of an input tensor from the seed alone; a saved activation from row and column panels."""
        if name in self.saved_activations():
            if self.name not in CHAIN_KINDS:
                return dense_graph_values(self, seed)[name][rows[0]:rows[1], cols[0]:cols[1]]
            return BlockEvaluator(self, NumpyBackend(self, seed)).activation(name, tuple(rows), tuple(cols))
        return self.input_scale(name) * random_block(seed, name, self.shapes()[name], rows, cols)

    def input_scale(self, name: str) -> float:
        """The factor a seeded input is scaled by: 1, but 1/sqrt(fan-in) for a transformer's linear weights.

        Uniform [-1, 1) weights make a block's activations grow by sqrt(h) per linear, the softmax
        saturate and LayerNorm's backward cancel, which no trained model does and which costs a
        bfloat16 run most of its digits (0.2 relative at h = 128). Scaled by 1/sqrt(fan-in), as
        Megatron-LM's initialisation roughly is (normal, std 0.02, at h of a few thousand), activations
        stay O(1). The chain workloads keep their unscaled values (their figures are published)."""
        if self.is_chain:
            return 1.0
        fan_in = {linear.w: linear.k for linear in self.linears()}.get(name)
        return 1.0 if fan_in is None else 1.0 / math.sqrt(fan_in)

    def reference(self, seed: int, passes: str) -> dict[str, np.ndarray]:
        """Every output of ``passes`` computed densely in float64 (cached per seed)."""
        dense = dense_reference(self, seed) if self.name in CHAIN_KINDS else dense_graph_values(self, seed)
        return {name: dense[name] for name in self.output_names(passes)}


@lru_cache(maxsize=4)
def dense_graph_values(workload: Workload, seed: int) -> dict[str, np.ndarray]:
    """Every activation and gradient of ``workload`` under ``seed``, whole, in numpy float64 (one chunk)."""
    def block(name, rows, cols):
        return workload.input_block(seed, name, rows, cols)

    ctx = Context(numpy_call(seed), 0)
    shapes = workload.shapes()
    x, dy = workload.input_names("fwd")[0], grad(workload.output_names("fwd")[0])
    inputs = {name: block(name, (0, shapes[name][0]), (0, shapes[name][1])) for name in (x, dy, *workload.weights())}
    return run_chunk(workload, ctx, inputs, backward=True)


def _check_pass(passes: str) -> None:
    if passes not in PASSES:
        raise InputError(f"unknown pass {passes!r}; valid: {', '.join(PASSES)}")
