"""The elementwise layer y = f(x), f an entry of ``simulator.workloads.functions`` with a backward.

Backward: dx = f_backward(dy, x). Lowered as ``local`` ops on every block of its input, wherever the
algorithm left it; its output keeps the input's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.layers.common import Sum

__all__ = ["Elementwise"]


@dataclass(frozen=True)
class Elementwise:
    """y = fn(x) elementwise on [M, cols]."""

    fn: str
    x: str
    y: str
    cols: int
    part: str = ""
    """The layer part its ops are labelled with; empty: the function's name."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        """What the backward reads of the forward: the input (f'(x))."""
        return (self.x,)

    def __post_init__(self) -> None:
        entry = FUNCTIONS.get(self.fn)
        if entry is None or entry.arity != 1 or entry.backward is None:
            usable = [name for name, f in FUNCTIONS.items() if f.arity == 1 and f.backward]
            raise ValueError(f"elementwise layer {self.fn!r}: needs a one-input function with a backward; "
                             f"valid: {', '.join(usable)}")

    @property
    def backward_fn(self) -> str:
        """The ``local`` function that takes (dy, x) to dx."""
        return FUNCTIONS[self.fn].backward

    # -- sizes -------------------------------------------------------------------------------------
    @property
    def in_cols(self) -> int:
        return self.cols

    @property
    def out_cols(self) -> int:
        return self.cols

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    # -- values ------------------------------------------------------------------------------------
    def output_block(self, ev, rows, cols):
        return ev.function(self.fn, rows, cols, ev.activation(self.x, rows, cols))

    def input_grad_block(self, ev, rows, cols):
        dy = ev.gradient(self.y, rows, cols)
        return ev.function(self.backward_fn, rows, cols, dy, ev.activation(self.x, rows, cols))

    def sums(self, m: int) -> dict[str, Sum]:
        return {}  # no product: a block goes by chunks of its rows

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        return {self.y: ctx.call(self.fn, values[self.x])}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        return {self.x: ctx.call(self.backward_fn, grads[self.y], values[self.x])}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None  # wherever the layer before leaves it

    def output_layouts(self, low, input_layouts):
        return {self.y: input_layouts[0]}

    def weight_layout(self, low, name: str):
        raise KeyError(name)  # no weights

    def lower_forward(self, low) -> None:
        low.local(self.fn, self.y, (self.x,), low.layout[self.x])

    def lower_backward(self, low) -> None:
        low.local(self.backward_fn, low.grad_target(self.x), (low.grad_of(self.y), self.x), low.layout[self.x])
        low.grad_written(self.x)
