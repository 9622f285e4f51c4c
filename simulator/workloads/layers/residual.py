"""The residual connection y = a + b: a local add; in the backward both inputs get y's gradient as it is.

Both inputs must be where the algorithm keeps the block's [M, h] activations (the same layout). The
backward emits nothing: each input's gradient contribution *is* dy's buffer, and where a tensor gets a
second contribution (the block input x feeds both the residual and LayerNorm) compose adds the two, as
autograd accumulates them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Residual"]


@dataclass(frozen=True)
class Residual:
    """y = a + b on [M, cols]."""

    a: str
    b: str
    y: str
    cols: int
    part: str = "residual"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.a, self.b)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        return ()

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        return {self.y: ctx.call("add", values[self.a], values[self.b])}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        return {self.a: grads[self.y], self.b: grads[self.y]}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None

    def output_layouts(self, low, input_layouts):
        first, second = input_layouts
        if sorted(first) != sorted(second):
            raise AssertionError(f"{low.alg.name}: residual {self.y} = {self.a} + {self.b} adds blocks of two "
                                 f"layouts")
        return {self.y: first}

    def weight_layout(self, low, name: str):
        raise KeyError(name)

    def lower_forward(self, low) -> None:
        low.local("add", self.y, (self.a, self.b), low.layout[self.a])

    def lower_backward(self, low) -> None:
        dy = low.grad_of(self.y)
        low.grad_alias(self.a, dy)
        low.grad_alias(self.b, dy)
