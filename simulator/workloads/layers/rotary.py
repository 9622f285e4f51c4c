"""Rotary position embeddings on the QKV activation: every query and key head turned by its token's position.

Lowered as one ``local`` op on every block of its input, wherever the algorithm left it: the blocks are
those the attention core reads next, whole sequences and whole key/value groups (``kernels.rotary``),
so the rotation is local on every algorithm. It keeps nothing for its backward (a rotation's transpose
needs only the angles): the rotated activation is what the attention core keeps instead of the QKV.
``kernel="eager"`` emits torchtitan's eager ops instead, with its GQA key/value copies
(``kernels.pointwise_variants``: the same values, their passes); on every algorithm, as the block is local.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.kernels.pointwise_variants import names

__all__ = ["Rotary"]


@dataclass(frozen=True)
class Rotary:
    """Rotary embeddings of ``head_dim``-wide heads on [M, cols], ``group`` query heads per key/value head."""

    x: str
    y: str
    cols: int
    group: int
    head_dim: int
    seq: int
    part: str = "rope"
    kernel: str = "fused"
    """``fused`` (one pass) or ``eager`` (torchtitan's PyTorch ops and ``repeat_kv``: ``kernels.pointwise_variants``)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.cols}

    @property
    def saved(self) -> tuple[str, ...]:
        return ()

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    def params(self) -> dict:
        return {"seq": self.seq, "group": self.group, "head_dim": self.head_dim}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        return {self.y: ctx.call("rotary", values[self.x], **self.params())}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        return {self.x: ctx.call("rotary_backward", grads[self.y], **self.params())}

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
            low.emit(rank, names("rotary", self.kernel)[0], self.y, (self.x,), self.params())

    def lower_backward(self, low) -> None:
        dy, target = low.grad_of(self.y), low.grad_target(self.x)
        for rank, rows, cols in low.layout[self.x]:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, names("rotary", self.kernel)[1], target, (dy,), self.params())
        low.grad_written(self.x)
