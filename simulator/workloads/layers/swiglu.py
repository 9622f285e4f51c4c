"""The SwiGLU layer z = silu(gate) * up on the MLP's [M, 2f] gate/up product, gate and up interleaved.

Lowered as one ``local`` op on every block of its input, wherever the algorithm left it: an equal split
of the 2f columns keeps each gate column next to its up column (``kernels.swiglu``), so z's block is
the input block's rows with half its columns, which is where the algorithm reads the next linear's
input (f columns split the same ways). The backward reads the saved gate/up block. ``kernel="eager"``
emits torchtitan's ``silu`` then ``mul`` instead (``kernels.pointwise_variants``: the same values, their passes),
on every algorithm, as the product is local.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.kernels.pointwise_variants import names

__all__ = ["SwiGLU"]


@dataclass(frozen=True)
class SwiGLU:
    """z [M, cols] = silu(h[:, 0::2]) * h[:, 1::2] of h [M, 2 cols]."""

    x: str
    y: str
    cols: int
    """The output's columns (the SwiGLU width f); the input has twice as many."""
    part: str = "swiglu"
    kernel: str = "fused"
    """``fused`` (one pass) or ``eager`` (torchtitan's ``silu`` and ``mul``: ``kernels.pointwise_variants``)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        return {self.y: ctx.call("swiglu", values[self.x])}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        return {self.x: ctx.call("swiglu_backward", grads[self.y], values[self.x])}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None

    def output_layouts(self, low, input_layouts):
        halves = []
        for rank, rows, cols in input_layouts[0]:
            if cols[0] % 2 or cols[1] % 2:
                raise AssertionError(f"{low.alg.name}: SwiGLU block cols {cols} splits a gate/up pair")
            halves.append((rank, rows, (cols[0] // 2, cols[1] // 2)))
        return {self.y: halves}

    def weight_layout(self, low, name: str):
        raise KeyError(name)

    def lower_forward(self, low) -> None:
        low.local(names("swiglu", self.kernel)[0], self.y, (self.x,), low.layout[self.y])

    def lower_backward(self, low) -> None:
        target = low.grad_target(self.x)
        low.local(names("swiglu", self.kernel)[1], target, (low.grad_of(self.y), self.x), low.layout[self.x])
        low.grad_written(self.x)
