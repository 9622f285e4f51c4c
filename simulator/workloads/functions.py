"""The functions of the IR's ``local`` op: one table with the numpy and the torch version of each.

Every consumer reads this table: ``simulator.ir.ops`` (which names a ``local`` op may use, their arity
and parameters), the validator (``shape``: the output shape from the inputs'), the numpy interpreter
and dense references (``numpy``), the executor and its float64 reference (``torch``), and the compute
model (``work``: products and memory passes). ``tests/simulator/test_functions.py`` holds the two
versions of every entry to each other, so a new function is one entry here plus its test row.

Most entries are elementwise over same-shaped blocks. The transformer's need more: a bias row added to
every row, LayerNorm in pieces (``kernels.layernorm``: row moments that an algorithm all-reduces before
normalising), the attention core on whole sequences and heads (``kernels.attention``), and dropout
whose mask comes from the seed and the global element index (``kernels.dropout``); these carry scalar
``params`` (sizes, offsets, a probability), and the seeded ones also take the run's seed.

The Llama block's kernels: RMSNorm in pieces as LayerNorm (``kernels.rmsnorm``: a row sum of squares
that an algorithm all-reduces), SwiGLU on interleaved gate and up columns (``kernels.swiglu``), rotary
position embeddings on whole sequences and key/value groups (``kernels.rotary``), and grouped-query
attention (``attention_gqa``: the attention core with ``group`` query heads per key/value head).
Where a rank holds whole rows, both norms lower to their fused versions instead (``kernels.fused_norm``:
the same values, the frameworks' fused kernels' memory passes).

GELU is the tanh approximation, as ``torch.nn.functional.gelu(x, approximate="tanh")``:
gelu(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

The torch versions write into a given ``out`` tensor (the executor's buffers are preallocated); torch is
imported inside them, so the simulator imports this module without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from simulator.workloads.attention_cost import attention_work
from simulator.workloads import llama_rules as llama
from simulator.workloads.kernels import (attention, dropout, fused_bias, fused_norm, layernorm, norm_variants,
                                         pointwise_variants, rmsnorm, rotary, swiglu)
from simulator.workloads.work import Work

__all__ = ["FUNCTIONS", "LocalFunction", "Work", "gelu", "gelu_grad"]

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_CUBIC = 0.044715


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x**3)))


def gelu_grad(x: np.ndarray) -> np.ndarray:
    """d gelu(x) / dx for the tanh approximation."""
    t = np.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3 * _CUBIC * x * x)


def _torch_gelu(out, x) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu.out(x, approximate="tanh", out=out)


def _torch_gelu_backward(out, dy, x) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu_backward.grad_input(dy, x, approximate="tanh", grad_input=out)


def _torch_add(out, a, b) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.add(a, b, out=out)


Shape = tuple[int, ...]


def _same_shape(shapes: list[Shape], params: dict) -> Shape:
    """The output shape of an elementwise function: that of its inputs, which must agree."""
    if len(set(shapes)) > 1:
        raise ValueError(f"operands differ in shape: {', '.join(map(str, shapes))}")
    return shapes[0] if shapes else None


def _numel(shape: Shape) -> int:
    return math.prod(shape)


def _streaming(shapes: list[Shape], out: Shape, params: dict) -> Work:
    """One pass: every input read once, the output written once, one operation per output element per
    input (the IR's long-standing count: ``add`` is 2 per element, ``copy`` 1, ``zero`` 0)."""
    return Work(elements=sum(map(_numel, shapes)) + _numel(out), flops=_numel(out) * len(shapes))


def _dropout_work(shapes: list[Shape], out: Shape, params: dict) -> Work:
    """One pass where p > 0; none at p = 0, where ``torch.nn.functional.dropout`` returns its input and runs
    no kernel (``_dropout_impl`` in ATen's ``native/Dropout.cpp``: ``if (p == 0 || !train ...) return input``),
    as do Megatron-Core's, torchtitan's and llm-foundry's blocks at dropout 0 (tpsim's copy is the IR's)."""
    return _streaming(shapes, out, params) if params["p"] > 0 else Work()


def _one_pass(flops_per_element: int) -> Callable[[list[Shape], Shape, dict], Work]:
    """One pass like ``_streaming``, with ``flops_per_element`` operations per element of the first input.

    For the row and column reductions and LayerNorm pieces, whose output ([rows, 2], [1, cols]) is far
    smaller than the block they read: counting per output element would say a col_sum over a [rows,
    cols] block does cols operations, not rows * cols.
    """
    def work(shapes: list[Shape], out: Shape, params: dict) -> Work:
        return Work(elements=sum(map(_numel, shapes)) + _numel(out), flops=flops_per_element * _numel(shapes[0]))
    return work


@dataclass(frozen=True)
class LocalFunction:
    """One function a ``local`` op may name: arity, parameters, shapes, cost, and numpy and torch versions."""

    arity: int
    """How many input buffers it reads."""
    meaning: str
    """What it computes, in terms of ``in0``, ``in1``, ... (shown in docs and errors)."""
    numpy: Callable[..., np.ndarray | float]
    """``numpy(*inputs, **params)``: the result (a float where it is a constant, broadcast by the caller)."""
    torch: Callable[..., None]
    """``torch(out, *inputs, **params)``: writes the result into the tensor ``out``."""
    backward: str | None = None
    """For a one-input elementwise function: the entry taking (gradient of the output, input) to the
    gradient of the input."""
    params: tuple[str, ...] = ()
    """The scalar parameters a ``local`` op of it carries (sizes, probabilities, global offsets)."""
    seeded: bool = False
    """Whether it also takes the run's ``seed`` (dropout masks); whoever runs the op passes it."""
    shape: Callable[[list[Shape], dict], Shape] = _same_shape
    """``shape(input shapes, params)``: the output shape, or ValueError saying what does not fit."""
    work: Callable[[list[Shape], Shape, dict], Work] = _streaming
    """``work(input shapes, output shape, params)``: its cost (``Work``)."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _bias_shape(shapes: list[Shape], params: dict) -> Shape:
    (rows, cols), bias = shapes
    _require(bias == (1, cols), f"bias must be [1, {cols}] for a [{rows}, {cols}] input, got {list(bias)}")
    return (rows, cols)


def _bias_gelu_backward_shape(shapes: list[Shape], params: dict) -> Shape:
    dy, x, bias = shapes
    _require(dy == x, f"gradient {list(dy)} and input {list(x)} differ in shape")
    return _bias_shape([x, bias], params)


def _bias_dropout_add_shape(shapes: list[Shape], params: dict) -> Shape:
    x, bias, residual = shapes
    _require(residual == x, f"residual {list(residual)} and input {list(x)} differ in shape")
    return _bias_shape([x, bias], params)


def _moments_shape(shapes: list[Shape], params: dict) -> Shape:
    _require(len(set(shapes)) == 1, f"operands differ in shape: {', '.join(map(str, shapes))}")
    return (shapes[0][0], 2)


def _layernorm_shape(shapes: list[Shape], params: dict) -> Shape:
    x, *rest = shapes
    rows, cols = x
    expected = {"moments": (rows, 2), "gamma": (1, cols), "beta": (1, cols), "dy": x, "x": x, "grad_moments": (rows, 2)}
    return x if all(shape in expected.values() for shape in rest) else _mismatch(shapes)


def _mismatch(shapes: list[Shape]) -> Shape:
    raise ValueError(f"operand shapes do not fit a LayerNorm block: {', '.join(map(str, shapes))}")


def _ln_backward_moments_shape(shapes: list[Shape], params: dict) -> Shape:
    _layernorm_shape(shapes, params)
    return (shapes[0][0], 2)


def _gamma_grad_shape(shapes: list[Shape], params: dict) -> Shape:
    _layernorm_shape(shapes, params)
    return (1, shapes[0][1])


def _column_sum_shape(shapes: list[Shape], params: dict) -> Shape:
    return (1, shapes[0][1])


def _attention_width(params: dict) -> int:
    return params["heads"] * params["head_dim"]


def _attention_shape(shapes: list[Shape], params: dict) -> Shape:
    (rows, cols), = shapes
    _require(cols == 3 * _attention_width(params),
             f"QKV block has {cols} columns, not 3 * heads * head_dim = {3 * _attention_width(params)}")
    _require(rows % params["seq"] == 0, f"QKV block has {rows} rows, not whole sequences of {params['seq']}")
    return (rows, _attention_width(params))


def _attention_backward_shape(shapes: list[Shape], params: dict) -> Shape:
    dctx, qkv = shapes
    _require(_attention_shape([qkv], params) == dctx, f"context gradient {list(dctx)} does not fit QKV {list(qkv)}")
    return qkv


_LN_PARAMS = ("n", "eps")
_DROPOUT_PARAMS = ("p", "stream", "row0", "col0", "width")
_ATTENTION_PARAMS = ("p", "stream", "seq", "heads", "head_dim", "batch0", "head0", "heads_total")
_GQA_PARAMS = _ATTENTION_PARAMS + ("group",)
_ROTARY_PARAMS = ("seq", "group", "head_dim")

def _fused_attention(kernel: str, label: str) -> dict[str, LocalFunction]:
    """The forward and backward functions of one fused attention ``kernel`` (``flash``, ``triton``, ``cudnn``):
    the same values and memory (nothing of [s, s] kept, the probabilities recomputed in the backward), timed at
    the kernel's own published rate (``attention_work``'s ``kernel``)."""
    return {
        f"{kernel}_attention": LocalFunction(
            1, f"out = causal softmax(Q K^T / sqrt(d)) V of the QKV block in0 (group query heads per key/value "
               f"head), {label}: nothing of [s, s] kept", numpy=attention.attention,
            torch=attention.TORCH["attention_gqa"], params=_GQA_PARAMS, seeded=True, shape=llama.gqa_shape,
            work=lambda shapes, out, params: attention_work(shapes, out, params, flash=True, kernel=kernel)),
        f"{kernel}_attention_backward": LocalFunction(
            2, f"out = dQKV from the context gradient in0 and the QKV block in1, {label}: the probabilities "
               f"recomputed", numpy=attention.attention_backward, torch=attention.TORCH["attention_gqa_backward"],
            params=_GQA_PARAMS, seeded=True, shape=llama.gqa_backward_shape,
            work=lambda shapes, out, params: attention_work(shapes, out, params, backward=True, flash=True,
                                                            kernel=kernel)),
    }


def _fused_norms() -> dict[str, LocalFunction]:
    """LayerNorm and RMSNorm as one kernel per direction on whole rows (``kernels.fused_norm``: apex's
    passes), which the layers emit where a rank holds every column of its rows."""
    rows = (  # name, arity, meaning, params, shape
        ("layernorm_fused_stats", 1, "out [rows, 2] = the row moments of in0, written by the fused forward kernel "
         "in its one read of in0", (), _moments_shape),
        ("layernorm_fused", 4, "out = (in0 - mu) rstd in2 + in3 from the moments in1: the fused kernel's y",
         _LN_PARAMS, _layernorm_shape),
        ("layernorm_fused_backward", 4, "out = LayerNorm's dx from dy in0, x in1, moments in2, gamma in3 "
         "(one kernel)", _LN_PARAMS, _layernorm_shape),
        ("layernorm_fused_gamma_grad", 3, "out [1, cols] = sum over rows of in0 * xhat (x in1, moments in2)",
         _LN_PARAMS, _gamma_grad_shape),
        ("layernorm_fused_beta_grad", 1, "out [1, cols] = sum of in0 over its rows, in the gamma kernel's read",
         (), _column_sum_shape),
        ("rmsnorm_fused_stats", 1, "out [rows, 1] = the row sum of squares of in0, written by the fused forward "
         "kernel in its one read of in0", (), llama.sumsq_shape),
        ("rmsnorm_fused", 3, "out = in0 rstd in2 from the sum of squares in1: the fused kernel's y", _LN_PARAMS,
         llama.rmsnorm_shape),
        ("rmsnorm_fused_backward", 4, "out = RMSNorm's dx from dy in0, x in1, sum of squares in2, gamma in3 "
         "(one kernel)", _LN_PARAMS, llama.rmsnorm_shape),
        ("rmsnorm_fused_gamma_grad", 3, "out [1, cols] = sum over rows of in0 * xhat (x in1, sum of squares in2)",
         _LN_PARAMS, llama.rmsnorm_gamma_grad_shape),
    )
    return {name: LocalFunction(arity, meaning, numpy=fused_norm.FUSED[name], torch=fused_norm.TORCH[name],
                                params=params, shape=shape, work=fused_norm.WORK[name])
            for name, arity, meaning, params, shape in rows}


def _variants(fused: dict[str, LocalFunction], variants: dict) -> dict[str, LocalFunction]:
    """Other implementations of a function (``kernels.norm_variants``: TE's and eager norms; ``kernels.
    pointwise_variants``: eager rotary and SwiGLU): the fused functions' values and signatures, their own work."""
    return {name: replace(fused[base], meaning=f"{fused[base].meaning}; as {name.split('_')[1]} runs it",
                          work=work) for name, (base, work) in variants.items()}


FUNCTIONS: dict[str, LocalFunction] = {
    "gelu": LocalFunction(
        1, "out = gelu(in0), tanh approximation (as torch gelu(approximate='tanh'))",
        numpy=gelu, torch=_torch_gelu, backward="gelu_backward"),
    "gelu_backward": LocalFunction(
        2, "out = in0 * gelu'(in1): the gradient through GELU, in1 the pre-activation",
        numpy=lambda dy, x: dy * gelu_grad(x), torch=_torch_gelu_backward),
    "add": LocalFunction(2, "out = in0 + in1", numpy=lambda a, b: a + b, torch=_torch_add),
    "copy": LocalFunction(1, "out = in0", numpy=lambda a: a, torch=lambda out, a: out.copy_(a)),
    "zero": LocalFunction(0, "out = 0", numpy=lambda: 0.0, torch=lambda out: out.zero_()),
    "bias_add": LocalFunction(
        2, "out = in0 + in1, in1 a [1, cols] row added to every row", numpy=lambda x, b: x + b, torch=_torch_add,
        shape=_bias_shape),
    "col_sum": LocalFunction(
        1, "out [1, cols] = sum of in0 over its rows (a bias gradient's part)",
        numpy=lambda dy: dy.sum(axis=0, keepdims=True),
        torch=lambda out, dy: out.copy_(dy.sum(dim=0, keepdim=True)), shape=_column_sum_shape,
        work=_one_pass(1)),
    "dropout": LocalFunction(
        1, "out = in0 * keep / (1 - p), keep from (seed, stream, global index row0.., col0.. of width)",
        numpy=dropout.dropout, torch=dropout.dropout_torch, params=_DROPOUT_PARAMS, seeded=True,
        work=_dropout_work),
    "row_moments": LocalFunction(
        1, "out [rows, 2] = [sum of in0 over its columns, sum of in0^2]", numpy=layernorm.row_moments,
        torch=layernorm.TORCH["row_moments"], shape=_moments_shape, work=_one_pass(3)),
    "layernorm": LocalFunction(
        4, "out = (in0 - mu) rstd in2 + in3, mu and rstd of n columns from the row moments in1",
        numpy=layernorm.layernorm, torch=layernorm.TORCH["layernorm"], params=_LN_PARAMS, shape=_layernorm_shape,
        work=_one_pass(4)),
    "layernorm_backward_moments": LocalFunction(
        4, "out [rows, 2] = this block's [sum g, sum g xhat], g = in0 * in3, xhat from in1 and its moments in2",
        numpy=layernorm.layernorm_backward_moments, torch=layernorm.TORCH["layernorm_backward_moments"],
        params=_LN_PARAMS, shape=_ln_backward_moments_shape, work=_one_pass(6)),
    "layernorm_backward": LocalFunction(
        5, "out = rstd (g - sum g / n - xhat sum(g xhat) / n), the row sums in4 (dy in0, x in1, moments in2, "
           "gamma in3)",
        numpy=layernorm.layernorm_backward, torch=layernorm.TORCH["layernorm_backward"], params=_LN_PARAMS,
        shape=_layernorm_shape, work=_one_pass(7)),
    "layernorm_gamma_grad": LocalFunction(
        3, "out [1, cols] = sum over rows of in0 * xhat (x in1, its moments in2)",
        numpy=layernorm.layernorm_gamma_grad, torch=layernorm.TORCH["layernorm_gamma_grad"], params=_LN_PARAMS,
        shape=_gamma_grad_shape, work=_one_pass(4)),
    "attention": LocalFunction(
        1, "out = causal softmax(Q K^T / sqrt(d)) V per sequence and head of the QKV block in0, with dropout p",
        numpy=attention.attention, torch=attention.TORCH["attention"], params=_ATTENTION_PARAMS, seeded=True,
        shape=_attention_shape, work=attention_work),
    "attention_backward": LocalFunction(
        2, "out = dQKV from the context gradient in0 and the QKV block in1 (the unfused kernel's backward, reading the "
           "kept probabilities)",
        numpy=attention.attention_backward, torch=attention.TORCH["attention_backward"], params=_ATTENTION_PARAMS,
        seeded=True, shape=_attention_backward_shape,
        work=lambda shapes, out, params: attention_work(shapes, out, params, backward=True)),
    "row_sumsq": LocalFunction(
        1, "out [rows, 1] = sum of in0^2 over its columns", numpy=rmsnorm.row_sumsq, torch=rmsnorm.TORCH["row_sumsq"],
        shape=llama.sumsq_shape, work=_one_pass(2)),
    "rmsnorm": LocalFunction(
        3, "out = in0 rstd in2, rstd of n columns from the row sum of squares in1", numpy=rmsnorm.rmsnorm,
        torch=rmsnorm.TORCH["rmsnorm"], params=_LN_PARAMS, shape=llama.rmsnorm_shape, work=_one_pass(3)),
    "rmsnorm_backward_sum": LocalFunction(
        4, "out [rows, 1] = this block's sum of g xhat, g = in0 * in3, xhat from in1 and its sum of squares in2",
        numpy=rmsnorm.rmsnorm_backward_sum, torch=rmsnorm.TORCH["rmsnorm_backward_sum"], params=_LN_PARAMS,
        shape=llama.rmsnorm_backward_sum_shape, work=_one_pass(4)),
    "rmsnorm_backward": LocalFunction(
        5, "out = rstd (g - xhat sum(g xhat) / n), the row sum in4 (dy in0, x in1, sum of squares in2, gamma in3)",
        numpy=rmsnorm.rmsnorm_backward, torch=rmsnorm.TORCH["rmsnorm_backward"], params=_LN_PARAMS,
        shape=llama.rmsnorm_shape, work=_one_pass(5)),
    "rmsnorm_gamma_grad": LocalFunction(
        3, "out [1, cols] = sum over rows of in0 * xhat (x in1, its sum of squares in2)",
        numpy=rmsnorm.rmsnorm_gamma_grad, torch=rmsnorm.TORCH["rmsnorm_gamma_grad"], params=_LN_PARAMS,
        shape=llama.rmsnorm_gamma_grad_shape, work=_one_pass(3)),
    "swiglu": LocalFunction(
        1, "out = silu(in0[:, 0::2]) * in0[:, 1::2], gate and up columns interleaved", numpy=swiglu.swiglu,
        torch=swiglu.TORCH["swiglu"], shape=llama.swiglu_shape, work=llama.swiglu_work(False)),
    "swiglu_backward": LocalFunction(
        2, "out = d(gate, up) interleaved, from the output gradient in0 and the gate/up block in1",
        numpy=swiglu.swiglu_backward, torch=swiglu.TORCH["swiglu_backward"], shape=llama.swiglu_backward_shape,
        work=llama.swiglu_work(True)),
    "rotary": LocalFunction(
        1, "out = in0 with every query and key head rotated by its position (rotary embeddings)",
        numpy=rotary.rotary, torch=rotary.TORCH["rotary"], params=_ROTARY_PARAMS, shape=llama.rotary_shape,
        work=llama.rotary_work),
    "rotary_backward": LocalFunction(
        1, "out = in0 (a gradient) with every query and key head rotated back", numpy=rotary.rotary_backward,
        torch=rotary.TORCH["rotary_backward"], params=_ROTARY_PARAMS, shape=llama.rotary_shape, work=llama.rotary_work),
    "attention_gqa": LocalFunction(
        1, "out = causal softmax(Q K^T / sqrt(d)) V with group query heads per key/value head of the block in0",
        numpy=attention.attention, torch=attention.TORCH["attention_gqa"], params=_GQA_PARAMS, seeded=True,
        shape=llama.gqa_shape, work=attention_work),
    "attention_gqa_backward": LocalFunction(
        2, "out = dQKV (grouped) from the context gradient in0 and the QKV block in1 (unfused: kept probabilities)",
        numpy=attention.attention_backward, torch=attention.TORCH["attention_gqa_backward"], params=_GQA_PARAMS,
        seeded=True, shape=llama.gqa_backward_shape,
        work=lambda shapes, out, params: attention_work(shapes, out, params, backward=True)),
    "bias_gelu": LocalFunction(
        2, "out = gelu(in0 + in1), in1 a [1, cols] bias row: Megatron-LM's fused bias-GeLU (one pass)",
        numpy=lambda x, b: gelu(x + b), torch=fused_bias.TORCH["bias_gelu"], shape=_bias_shape,
        work=fused_bias.bias_gelu_work),
    "bias_gelu_backward": LocalFunction(
        3, "out = in0 * gelu'(in1 + in2): the fused bias-GeLU's backward from the pre-bias input in1 and bias in2",
        numpy=lambda dy, x, b: dy * gelu_grad(x + b), torch=fused_bias.TORCH["bias_gelu_backward"],
        shape=_bias_gelu_backward_shape,
        work=fused_bias.bias_gelu_backward_work),
    "bias_dropout_add": LocalFunction(
        3, "out = in2 + dropout(in0 + in1), in1 a [1, cols] bias row, in2 the residual: Megatron-LM's fused "
           "bias-dropout-add (one pass, the 1-byte mask kept)",
        numpy=fused_bias.bias_dropout_add, torch=fused_bias.TORCH["bias_dropout_add"], params=_DROPOUT_PARAMS,
        seeded=True, shape=_bias_dropout_add_shape,
        work=fused_bias.bias_dropout_add_work),
    "dropout_backward": LocalFunction(
        1, "out = in0 * keep / (1 - p), reading the forward's saved 1-byte mask (the fused bias-dropout-add's "
           "backward)", numpy=dropout.dropout, torch=dropout.dropout_torch, params=_DROPOUT_PARAMS, seeded=True,
        work=fused_bias.dropout_backward_work),
    **_fused_attention("flash", "FlashAttention-2"),
    **_fused_attention("triton", "FlashAttention in Triton"),
    **_fused_attention("cudnn", "cuDNN's fused attention"),
    **_fused_norms(),
}
"""Every function a ``local`` op may name, by name."""
FUNCTIONS.update(_variants(FUNCTIONS, {**norm_variants.VARIANTS, **pointwise_variants.VARIANTS}))
