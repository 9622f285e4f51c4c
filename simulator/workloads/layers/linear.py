"""The linear layer y [M, n] = x [M, k] @ w [k, n] (+ b, a [1, n] bias): its sizes, values, sums and lowering.

Backward: dx = dy w^T, dw = x^T dy, db = the sum of dy over the M rows. Lowered by the algorithm's own
forward, backward-input and backward-weight (``simulator.algorithms.base.Algorithm``), where the
algorithm says its blocks live; the bias is added to each output block after the product (after
Megatron-LM's all-reduce or reduce-scatter, where one follows), from where the algorithm keeps it
(``vector_blocks``, ``fetch_vector``), and its gradient is summed by ``reduce_vector_grad``.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.layers.common import Sum, grad

__all__ = ["Linear"]


@dataclass(frozen=True)
class Linear:
    """y = x @ w, with the labels its sizes go by in messages (``K``, ``4*hidden``)."""

    x: str
    w: str
    y: str
    k: int
    n: int
    k_label: str
    n_label: str
    index: int
    """The position of this linear among the workload's linears (0 first): 1-D alternates column and row."""
    bias: str | None = None
    """The [1, n] bias added to y, if any."""
    part: str = ""
    """The layer part its ops are labelled with (``qkv``, ``fc1``, ...); empty: the output's name."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.x,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.n}

    @property
    def saved(self) -> tuple[str, ...]:
        """What the backward reads of the forward: the input (for dw)."""
        return (self.x,)

    # -- sizes -------------------------------------------------------------------------------------
    @property
    def in_cols(self) -> int:
        return self.k

    @property
    def out_cols(self) -> int:
        return self.n

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.w: (self.k, self.n), **({self.bias: (1, self.n)} if self.bias else {})}

    # -- values ------------------------------------------------------------------------------------
    def output_block(self, ev, rows, cols):
        """y[R, C] = x[R, :] w[:, C]."""
        return ev.activation(self.x, rows, (0, self.k)) @ ev.input(self.w, (0, self.k), cols)

    def input_grad_block(self, ev, rows, cols):
        """dx[R, C] = dy[R, :] w[C, :]^T."""
        return ev.gradient(self.y, rows, (0, self.n)) @ ev.input(self.w, cols, (0, self.n)).T

    def sums(self, m: int) -> dict[str, Sum]:
        """y over k, dx over n, dw over the m tokens: y[R, C] += x[R, c] w[c, C], dx[R, C] += dy[R, c]
        w[C, c]^T, dw[R, C] += x[c, R]^T dy[c, C] (dy first: x[c, R] may be cut from what dy built)."""

        def weight_term(ev, rows, cols, chunk):
            right = ev.gradient(self.y, chunk, cols)
            return ev.activation(self.x, chunk, rows).T, right

        return {
            self.y: Sum(self.k, lambda ev, rows, cols, c: (ev.activation(self.x, rows, c), ev.input(self.w, c, cols))),
            grad(self.x): Sum(self.n, lambda ev, rows, cols, c: (ev.gradient(self.y, rows, c),
                                                                 ev.input(self.w, cols, c).T)),
            grad(self.w): Sum(m, weight_term),
        }

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        y = values[self.x] @ values[self.w]
        return {self.y: ctx.call("bias_add", y, values[self.bias]) if self.bias else y}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        dy = grads[self.y]
        out = {self.x: dy @ values[self.w].T, self.w: values[self.x].T @ dy}
        if self.bias:
            out[self.bias] = ctx.call("col_sum", dy)
        return out

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return low.alg.input_blocks(low.names(self))

    def output_layouts(self, low, input_layouts):
        return {self.y: low.alg.output_blocks(low.names(self))}

    def weight_layout(self, low, name: str):
        if name == self.bias:
            return low.alg.vector_blocks(low.layout[self.y])
        return low.alg.weight_blocks(low.names(self))

    def lower_forward(self, low) -> None:
        low.alg.forward(low.b, low.names(self))
        if self.bias:
            layout = low.layout[self.y]
            held = low.vector(self.bias, layout)
            for rank, _, _ in layout:
                low.emit(rank, "bias_add", self.y, (self.y, held[rank]))

    def lower_backward(self, low) -> None:
        names, dy = low.names(self), low.grad_of(self.y)
        low.alg.backward_input(low.b, names, dy, low.grad_target(self.x))
        low.grad_written(self.x)
        low.alg.backward_weight(low.b, names, dy, grad(self.w))
        if self.bias:
            low.alg.reduce_vector_grad(low.b, low.layout[self.y], grad(self.bias),
                                       lambda rank, out: low.emit(rank, "col_sum", out, (dy,)))
