"""The dropout layer y = dropout(x, p) with the mask of ``kernels.dropout``; its backward is the same mask.

Lowered as one ``local`` op on every block of its input, wherever the algorithm left it, with the
block's global offsets, so a replicated block draws the same mask on every rank and a split one draws
its part of the global mask. Backward: dx = dropout(dy) with the same parameters (the same mask and
scale).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Dropout"]


@dataclass(frozen=True)
class Dropout:
    """Inverted dropout of probability ``p`` on [M, cols]; ``stream`` tells its mask from other sites'."""

    x: str
    y: str
    cols: int
    p: float
    stream: int
    part: str = "dropout"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        return ()  # the mask is redrawn from the seed

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    def params(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict:
        return {"p": self.p, "stream": self.stream, "row0": rows[0], "col0": cols[0], "width": self.cols}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        x = values[self.x]
        return {self.y: ctx.call("dropout", x, **self.params((ctx.row0, 0), (0, 0)))}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        return {self.x: ctx.call("dropout", grads[self.y], **self.params((ctx.row0, 0), (0, 0)))}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None

    def output_layouts(self, low, input_layouts):
        return {self.y: input_layouts[0]}

    def weight_layout(self, low, name: str):
        raise KeyError(name)

    def lower_forward(self, low) -> None:
        for rank, rows, cols in low.layout[self.x]:
            low.b.buffer(rank, self.y, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, "dropout", self.y, (self.x,), self.params(rows, cols))

    def lower_backward(self, low) -> None:
        dy, target = low.grad_of(self.y), low.grad_target(self.x)
        for rank, rows, cols in low.layout[self.x]:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, "dropout", target, (dy,), self.params(rows, cols))
        low.grad_written(self.x)
