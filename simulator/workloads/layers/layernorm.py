"""The LayerNorm layer y = LN(x) gamma + beta over the hidden columns, with its row moments as a tensor.

Forward: the moments S = [sum x, sum x^2] of every row (a [M, 2] tensor: the one thing the backward
needs besides x), then y from x, S, gamma and beta (``simulator.workloads.kernels.layernorm``). Where an
algorithm splits the columns, each rank computes its columns' part of S and the algorithm sums S over
the ranks sharing the rows (``all_reduce_rows``: the row group of a [q, q, d] grid; nothing where a
rank holds whole rows). Backward: the two row sums of the input gradient likewise, then dx; dgamma and
dbeta are sums over rows, reduced by the algorithm where the rows are split (``reduce_vector_grad``).
gamma and beta live where the algorithm keeps vectors (``vector_blocks``, ``fetch_vector``).

Where every rank holds whole rows (1-D, sequence parallel, [1, 1, d] grids: nothing to all-reduce), the
layer lowers as the frameworks' fused kernel instead (``kernels.fused_norm``, apex's passes): x read once
forward (``layernorm_fused_stats`` writes S, ``layernorm_fused`` y), dy and x read once for dx
(``layernorm_fused_backward``) and once more for the gamma and beta sums. Same values, fewer passes.
``kernel="te"`` runs Transformer Engine's instead, whose backward kernel writes the gamma and beta partial
sums in its one read (``kernels.norm_variants``); on split columns only the pieces apply (NotApplicable).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.kernels.layernorm import EPS
from simulator.workloads.layers.common import grad, norm_functions

__all__ = ["LayerNorm"]


@dataclass(frozen=True)
class LayerNorm:
    """y = (x - mean) / sqrt(var + eps) * gamma + beta per row of [M, cols]; ``stats`` names the moments."""

    x: str
    gamma: str
    beta: str
    stats: str
    y: str
    cols: int
    part: str = "ln"
    kernel: str = "fused"
    """What runs it on whole rows: ``fused`` (apex), ``te`` (Transformer Engine; ``kernels.norm_variants``)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def in_cols(self) -> int:
        return self.cols

    @property
    def outputs(self) -> dict[str, int]:
        return {self.stats: 2, self.y: self.cols}

    @property
    def differentiable(self) -> tuple[str, ...]:
        """The outputs that carry a gradient (not the moments)."""
        return (self.y,)

    @property
    def saved(self) -> tuple[str, ...]:
        return (self.x, self.stats)

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.gamma: (1, self.cols), self.beta: (1, self.cols)}

    def _params(self) -> dict:
        return {"n": self.cols, "eps": EPS}

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        x = values[self.x]
        stats = ctx.call("row_moments", x)
        y = ctx.call("layernorm", x, stats, values[self.gamma], values[self.beta], **self._params())
        return {self.stats: stats, self.y: y}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        dy, x, stats, gamma = grads[self.y], values[self.x], values[self.stats], values[self.gamma]
        sums = ctx.call("layernorm_backward_moments", dy, x, stats, gamma, **self._params())
        return {self.x: ctx.call("layernorm_backward", dy, x, stats, gamma, sums, **self._params()),
                self.gamma: ctx.call("layernorm_gamma_grad", dy, x, stats, **self._params()),
                self.beta: ctx.call("col_sum", dy)}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None  # wherever the layer before leaves it

    def output_layouts(self, low, input_layouts):
        layout = input_layouts[0]
        return {self.stats: [(rank, rows, (0, 2)) for rank, rows, _ in layout], self.y: layout}

    def weight_layout(self, low, name: str):
        return low.alg.vector_blocks(low.layout[self.x])

    def lower_forward(self, low) -> None:
        layout = low.layout[self.x]
        fused = norm_functions(low, layout, self.cols, "layernorm", self.kernel)  # whole rows: one kernel
        low.local(fused["stats"] if fused else "row_moments", self.stats, (self.x,), low.layout[self.stats])
        low.alg.all_reduce_rows(low.b, self.stats, layout)
        gamma, beta = low.vector(self.gamma, layout), low.vector(self.beta, layout)
        for rank, rows, cols in layout:
            low.b.buffer(rank, self.y, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, fused["forward"] if fused else "layernorm", self.y,
                     (self.x, self.stats, gamma[rank], beta[rank]), self._params())

    def lower_backward(self, low) -> None:
        layout, dy = low.layout[self.x], low.grad_of(self.y)
        gamma = low.vector(self.gamma, layout)
        fused = norm_functions(low, layout, self.cols, "layernorm", self.kernel)
        if not fused:  # the row sums span every column: each rank's part, all-reduced over the row's ranks
            sums = grad(self.stats)
            for rank, rows, _ in layout:
                low.b.buffer(rank, sums, (rows[1] - rows[0], 2))
                low.emit(rank, "layernorm_backward_moments", sums, (dy, self.x, self.stats, gamma[rank]),
                         self._params())
            low.alg.all_reduce_rows(low.b, sums, layout)
        target = low.grad_target(self.x)
        for rank, rows, cols in layout:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            if fused:
                low.emit(rank, fused["backward"], target, (dy, self.x, self.stats, gamma[rank]),
                         self._params())
            else:
                low.emit(rank, "layernorm_backward", target, (dy, self.x, self.stats, gamma[rank], sums),
                         self._params())
        low.grad_written(self.x)
        gamma_fn, beta_fn = (fused["gamma_grad"], fused["beta_grad"]) if fused else \
            ("layernorm_gamma_grad", "col_sum")
        low.alg.reduce_vector_grad(low.b, layout, grad(self.gamma), lambda rank, out: low.emit(
            rank, gamma_fn, out, (dy, self.x, self.stats), self._params()))
        low.alg.reduce_vector_grad(low.b, layout, grad(self.beta),
                                   lambda rank, out: low.emit(rank, beta_fn, out, (dy,)))
