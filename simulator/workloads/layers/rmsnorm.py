"""The RMSNorm layer y = x / rms(x) * gamma over the hidden columns, with the row sum of squares as a tensor.

Llama's normalisation (Zhang and Sennrich 2019): LayerNorm without the mean and the shift. Lowered as
LayerNorm is (``layers.layernorm``): each rank computes its columns' part of the row statistic (here
one column, the sum of squares, ``kernels.rmsnorm``), the algorithm sums it over the ranks sharing the
rows (``all_reduce_rows``), and each rank scales its columns; backward likewise with the one row sum of
g xhat, and dgamma reduced by ``reduce_vector_grad``. gamma lives where the algorithm keeps vectors.
Where every rank holds whole rows, it lowers as the fused kernel instead (``rmsnorm_fused_stats`` and
``rmsnorm_fused``, one read of x; ``rmsnorm_fused_backward`` and ``rmsnorm_fused_gamma_grad``, two reads
of dy and x: ``kernels.fused_norm``), as LayerNorm does; or, by ``kernel``, as Transformer Engine's or
torchtitan's eager PyTorch ops run it (``kernels.norm_variants``; NotApplicable on split columns).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.kernels.rmsnorm import EPS
from simulator.workloads.layers.common import grad, norm_functions

__all__ = ["RMSNorm"]


@dataclass(frozen=True)
class RMSNorm:
    """y = x rstd gamma per row of [M, cols], rstd = 1/sqrt(mean(x^2) + eps); ``stats`` names the sum of squares."""

    x: str
    gamma: str
    stats: str
    y: str
    cols: int
    part: str = "norm"
    kernel: str = "fused"
    """What runs it on whole rows: ``fused`` (apex), ``te`` (Transformer Engine) or ``eager`` (torchtitan's
    PyTorch ops; ``kernels.norm_variants``)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def in_cols(self) -> int:
        return self.cols

    @property
    def outputs(self) -> dict[str, int]:
        return {self.stats: 1, self.y: self.cols}

    @property
    def differentiable(self) -> tuple[str, ...]:
        """The outputs that carry a gradient (not the statistic)."""
        return (self.y,)

    @property
    def saved(self) -> tuple[str, ...]:
        return (self.x, self.stats)

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.gamma: (1, self.cols)}

    def _params(self) -> dict:
        return {"n": self.cols, "eps": EPS}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        x = values[self.x]
        stats = ctx.call("row_sumsq", x)
        return {self.stats: stats, self.y: ctx.call("rmsnorm", x, stats, values[self.gamma], **self._params())}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        dy, x, stats, gamma = grads[self.y], values[self.x], values[self.stats], values[self.gamma]
        total = ctx.call("rmsnorm_backward_sum", dy, x, stats, gamma, **self._params())
        return {self.x: ctx.call("rmsnorm_backward", dy, x, stats, gamma, total, **self._params()),
                self.gamma: ctx.call("rmsnorm_gamma_grad", dy, x, stats, **self._params())}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None  # wherever the layer before leaves it

    def output_layouts(self, low, input_layouts):
        layout = input_layouts[0]
        return {self.stats: [(rank, rows, (0, 1)) for rank, rows, _ in layout], self.y: layout}

    def weight_layout(self, low, name: str):
        return low.alg.vector_blocks(low.layout[self.x])

    def lower_forward(self, low) -> None:
        layout = low.layout[self.x]
        fused = norm_functions(low, layout, self.cols, "rmsnorm", self.kernel)  # whole rows: one kernel
        low.local(fused["stats"] if fused else "row_sumsq", self.stats, (self.x,), low.layout[self.stats])
        low.alg.all_reduce_rows(low.b, self.stats, layout)
        gamma = low.vector(self.gamma, layout)
        for rank, rows, cols in layout:
            low.b.buffer(rank, self.y, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, fused["forward"] if fused else "rmsnorm", self.y, (self.x, self.stats, gamma[rank]),
                     self._params())

    def lower_backward(self, low) -> None:
        layout, dy = low.layout[self.x], low.grad_of(self.y)
        gamma = low.vector(self.gamma, layout)
        fused = norm_functions(low, layout, self.cols, "rmsnorm", self.kernel)
        if not fused:  # the row sum spans every column: each rank's part, all-reduced over the row's ranks
            total = grad(self.stats)
            for rank, rows, _ in layout:
                low.b.buffer(rank, total, (rows[1] - rows[0], 1))
                low.emit(rank, "rmsnorm_backward_sum", total, (dy, self.x, self.stats, gamma[rank]), self._params())
            low.alg.all_reduce_rows(low.b, total, layout)
        target = low.grad_target(self.x)
        for rank, rows, cols in layout:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            if fused:
                low.emit(rank, fused["backward"], target, (dy, self.x, self.stats, gamma[rank]),
                         self._params())
            else:
                low.emit(rank, "rmsnorm_backward", target, (dy, self.x, self.stats, gamma[rank], total),
                         self._params())
        low.grad_written(self.x)
        gamma_fn = fused["gamma_grad"] if fused else "rmsnorm_gamma_grad"
        low.alg.reduce_vector_grad(low.b, layout, grad(self.gamma), lambda rank, out: low.emit(
            rank, gamma_fn, out, (dy, self.x, self.stats), self._params()))
