"""Megatron-LM's fused bias-GeLU layer z = gelu(h + b): the linear before it skips its bias add.

Megatron-LM's column-parallel FC1 returns its output without the bias (``skip_bias_add=True``) and
``bias_gelu_impl`` adds the bias and applies GeLU in one kernel (``--bias-gelu-fusion``, on by default;
``megatron/model/fused_bias_gelu.py``, NVIDIA/Megatron-LM 51a2e6b0ff6f; later
``megatron/core/fusions/fused_bias_gelu.py``). Its autograd function saves the pre-bias input and the
bias (``ctx.save_for_backward(input, bias)``) and recomputes gelu'(h + b) in the backward, whose one
result is the gradient of both h and b (the bias's summed over the rows, as ``Linear`` sums it).

Lowered as one ``local`` op on every block of its input, wherever the algorithm left it, with the
bias's block fetched from where the algorithm keeps it (``vector_blocks``, ``fetch_vector``), as
``Linear`` does for its bias add; the bias gradient is reduced by ``reduce_vector_grad``.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.layers.common import grad

__all__ = ["BiasGelu"]


@dataclass(frozen=True)
class BiasGelu:
    """z = gelu(x + b) on [M, cols], b a [1, cols] bias."""

    x: str
    bias: str
    y: str
    cols: int
    part: str = "bias_gelu"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        """The pre-bias input (the bias is a parameter, held anyway)."""
        return (self.x,)

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.bias: (1, self.cols)}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        return {self.y: ctx.call("bias_gelu", values[self.x], values[self.bias])}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        dx = ctx.call("bias_gelu_backward", grads[self.y], values[self.x], values[self.bias])
        return {self.x: dx, self.bias: ctx.call("col_sum", dx)}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None  # wherever the linear before leaves it

    def output_layouts(self, low, input_layouts):
        return {self.y: input_layouts[0]}

    def weight_layout(self, low, name: str):
        if name != self.bias:
            raise KeyError(name)
        return low.alg.vector_blocks(low.layout[self.x])

    def lower_forward(self, low) -> None:
        layout = low.layout[self.x]
        held = low.vector(self.bias, layout)
        for rank, rows, cols in layout:
            low.b.buffer(rank, self.y, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, "bias_gelu", self.y, (self.x, held[rank]))

    def lower_backward(self, low) -> None:
        layout, dy, target = low.layout[self.x], low.grad_of(self.y), low.grad_target(self.x)
        held = low.vector(self.bias, layout)
        for rank, rows, cols in layout:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, "bias_gelu_backward", target, (dy, self.x, held[rank]))
        low.grad_written(self.x)
        low.alg.reduce_vector_grad(low.b, layout, grad(self.bias),
                                   lambda rank, out: low.emit(rank, "col_sum", out, (target,)))
