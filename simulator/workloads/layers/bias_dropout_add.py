"""Megatron-LM's fused bias-dropout-add layer y = r + dropout(x + b): the row-parallel linear skips its bias add.

Megatron-LM's attention projection and FC2 return their output without the bias (``skip_bias_add=True``)
and the block adds bias, dropout and residual in one kernel (``--bias-dropout-fusion``, on by default:
``bias_dropout_add_fused_train`` in ``megatron/model/transformer.py``, NVIDIA/Megatron-LM 51a2e6b0ff6f;
later ``megatron/core/fusions/fused_bias_dropout.py``), even with dropout 0. The mask is the one
``Dropout`` draws (``kernels.dropout``: seed, stream, global index), so the values equal the unfused
bias add, dropout and residual add; the fused kernel keeps that mask, 1 byte per element, for its
backward (``simulator.memory.activations`` counts it, as for ``Dropout``).

Backward: dx = dropout(dy) with the same mask (``dropout_backward``, which reads the kept mask; nothing
with dropout 0, where dx is dy), the residual's gradient is dy as it is, and the bias gradient is dx
summed over the rows (``reduce_vector_grad``), as ``Linear`` sums it.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.layers.common import grad

__all__ = ["BiasDropoutAdd"]


@dataclass(frozen=True)
class BiasDropoutAdd:
    """y = r + dropout(x + b, p) on [M, cols]; ``stream`` tells its mask from other sites' (as ``Dropout``)."""

    x: str
    bias: str
    residual: str
    y: str
    cols: int
    p: float
    stream: int
    part: str = "bias_dropout_add"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x, self.residual)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        return ()  # the mask only (``simulator.memory.activations``); tpsim redraws it from the seed

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.bias: (1, self.cols)}

    def params(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict:
        return {"p": self.p, "stream": self.stream, "row0": rows[0], "col0": cols[0], "width": self.cols}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        params = self.params((ctx.row0, 0), (0, 0))
        return {self.y: ctx.call("bias_dropout_add", values[self.x], values[self.bias], values[self.residual],
                                 **params)}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        dy = grads[self.y]
        dx = ctx.call("dropout_backward", dy, **self.params((ctx.row0, 0), (0, 0))) if self.p > 0 else dy
        return {self.x: dx, self.residual: dy, self.bias: ctx.call("col_sum", dx)}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None

    def output_layouts(self, low, input_layouts):
        first, second = input_layouts
        if sorted(first) != sorted(second):
            raise AssertionError(f"{low.alg.name}: bias-dropout-add {self.y} = {self.residual} + dropout({self.x} + "
                                 f"{self.bias}) adds blocks of two layouts")
        return {self.y: first}

    def weight_layout(self, low, name: str):
        if name != self.bias:
            raise KeyError(name)
        return low.alg.vector_blocks(low.layout[self.x])

    def lower_forward(self, low) -> None:
        layout = low.layout[self.x]
        held = low.vector(self.bias, layout)
        for rank, rows, cols in layout:
            low.b.buffer(rank, self.y, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, "bias_dropout_add", self.y, (self.x, held[rank], self.residual), self.params(rows, cols))

    def lower_backward(self, low) -> None:
        layout, dy = low.layout[self.x], low.grad_of(self.y)
        low.grad_alias(self.residual, dy)
        if self.p > 0:
            dx = low.grad_target(self.x)
            for rank, rows, cols in layout:
                low.b.buffer(rank, dx, (rows[1] - rows[0], cols[1] - cols[0]))
                low.emit(rank, "dropout_backward", dx, (dy,), self.params(rows, cols))
            low.grad_written(self.x)
        else:
            dx = dy
            low.grad_alias(self.x, dy)
        low.alg.reduce_vector_grad(low.b, layout, grad(self.bias),
                                   lambda rank, out: low.emit(rank, "col_sum", out, (dx,)))
