"""The linear layer y [M, n] = x [M, k] @ w [k, n]: its sizes, values, sums and lowering.

Backward: dx = dy w^T, dw = x^T dy. Lowered by the algorithm's own forward, backward-input and
backward-weight (``simulator.algorithms.base.Algorithm``), where the algorithm says its blocks live.
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

    # -- sizes -------------------------------------------------------------------------------------
    @property
    def in_cols(self) -> int:
        return self.k

    @property
    def out_cols(self) -> int:
        return self.n

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {self.w: (self.k, self.n)}

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

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return low.alg.input_blocks(low.names(self))

    def output_layout(self, low, input_layout):
        return low.alg.output_blocks(low.names(self))

    def weight_layout(self, low, name: str):
        return low.alg.weight_blocks(low.names(self))

    def lower_forward(self, low) -> None:
        low.alg.forward(low.b, low.names(self))

    def lower_backward(self, low) -> None:
        names = low.names(self)
        low.alg.backward_input(low.b, names, grad(self.y), grad(self.x))
        low.alg.backward_weight(low.b, names, grad(self.y), grad(self.w))
