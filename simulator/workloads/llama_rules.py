"""The shape and cost rules of the Llama block's ``local`` functions (``simulator.workloads.functions``).

RMSNorm's pieces (a [rows, 1] sum of squares, scale, backward row sum and gamma gradient), SwiGLU on
interleaved gate/up columns, rotary embeddings on whole sequences and key/value groups, and
grouped-query attention's QKV layout: each rule takes the input shapes and the op's parameters and
returns the output shape (ValueError saying what does not fit) or the ``Work`` it costs.
"""

from __future__ import annotations

import math
from typing import Callable

from simulator.workloads.work import Work

__all__ = ["gqa_backward_shape", "gqa_shape", "rmsnorm_backward_sum_shape", "rmsnorm_gamma_grad_shape",
           "rmsnorm_shape", "rotary_shape", "rotary_work", "sumsq_shape", "swiglu_backward_shape", "swiglu_shape",
           "swiglu_work"]

Shape = tuple[int, ...]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _numel(shape: Shape) -> int:
    return math.prod(shape)


def sumsq_shape(shapes: list[Shape], params: dict) -> Shape:
    return (shapes[0][0], 1)


def rmsnorm_shape(shapes: list[Shape], params: dict) -> Shape:
    x, *rest = shapes
    rows, cols = x
    fits = all(shape in ((rows, 1), (1, cols), x) for shape in rest)
    _require(fits, f"operand shapes do not fit an RMSNorm block: {', '.join(map(str, shapes))}")
    return x


def rmsnorm_backward_sum_shape(shapes: list[Shape], params: dict) -> Shape:
    rmsnorm_shape(shapes, params)
    return (shapes[0][0], 1)


def rmsnorm_gamma_grad_shape(shapes: list[Shape], params: dict) -> Shape:
    rmsnorm_shape(shapes, params)
    return (1, shapes[0][1])


def swiglu_shape(shapes: list[Shape], params: dict) -> Shape:
    (rows, cols), = shapes
    _require(cols % 2 == 0, f"gate/up block has {cols} columns, not an even number (gate and up interleaved)")
    return (rows, cols // 2)


def swiglu_backward_shape(shapes: list[Shape], params: dict) -> Shape:
    dz, h = shapes
    _require(swiglu_shape([h], params) == dz, f"SwiGLU output gradient {list(dz)} does not fit gate/up {list(h)}")
    return h


def swiglu_work(backward: bool) -> Callable[[list[Shape], Shape, dict], Work]:
    """SwiGLU's one pass: forward 5 operations per output (sigmoid's exp, add and divide, two products),
    backward 10 per output pair (the sigmoid again, silu', two gradients)."""
    def work(shapes: list[Shape], out: Shape, params: dict) -> Work:
        pairs = _numel(shapes[-1]) // 2
        return Work(elements=sum(map(_numel, shapes)) + _numel(out), flops=(10 if backward else 5) * pairs)
    return work


def rotary_shape(shapes: list[Shape], params: dict) -> Shape:
    (rows, cols), = shapes
    width = (params["group"] + 2) * params["head_dim"]
    _require(cols % width == 0, f"QKV block has {cols} columns, not whole groups of {width}")
    _require(rows % params["seq"] == 0, f"QKV block has {rows} rows, not whole sequences of {params['seq']}")
    _require(params["head_dim"] % 2 == 0, f"rotary needs an even head width, got {params['head_dim']}")
    return (rows, cols)


def rotary_work(shapes: list[Shape], out: Shape, params: dict) -> Work:
    """One pass over the block; 3 operations (two products, one sum) per rotated element (queries and keys,
    (r + 1) / (r + 2) of the columns); the angles' sines and cosines are a table of s x d/2, not counted."""
    rotated = _numel(out) * (params["group"] + 1) // (params["group"] + 2)
    return Work(elements=sum(map(_numel, shapes)) + _numel(out), flops=3 * rotated)


def _query_width(params: dict) -> int:
    return params["heads"] * params["head_dim"]


def gqa_shape(shapes: list[Shape], params: dict) -> Shape:
    (rows, cols), = shapes
    heads, group, d = params["heads"], params["group"], params["head_dim"]
    _require(heads % group == 0, f"{heads} query heads are not whole groups of {group}")
    _require(cols == (heads + 2 * heads // group) * d,
             f"QKV block has {cols} columns, not (heads + 2 heads / group) * head_dim = {(heads + 2 * heads // group) * d}")
    _require(rows % params["seq"] == 0, f"QKV block has {rows} rows, not whole sequences of {params['seq']}")
    return (rows, _query_width(params))


def gqa_backward_shape(shapes: list[Shape], params: dict) -> Shape:
    dctx, qkv = shapes
    _require(gqa_shape([qkv], params) == dctx, f"context gradient {list(dctx)} does not fit QKV {list(qkv)}")
    return qkv
