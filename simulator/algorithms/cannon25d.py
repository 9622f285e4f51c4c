"""Cannon 2.5-D (Solomonik and Demmel, Euro-Par 2011) on a [q, q, c] grid with c | q, for a linear layer.

Layout: every tensor starts and ends on layer 0, split q x q. Rank (j, i, 0) holds block (j, i) of X
[M/q, K/q], of W [K/q, N/q], and of Y, dY, dX [M/q, ...] and dW [K/q, N/q]; layers 1..c-1 hold only
replicas and partial sums while a product runs. So every block layout names
layer-0 ranks, and compose's elementwise GELU runs on layer 0, where the activations are.

Each of the three products of a linear is one 2.5-D Cannon multiply (``simulator.algorithms.cannon_steps``): depth
broadcast of both factors, skew on each layer (layer k starts k*q/c further along), q/c
multiply-and-shift steps, and a depth reduce of the partial products onto layer 0:

- forward      Y  = X W:      L = X (as stored), R = W (as stored);
- dX = dY W^T:                L = dY, R = W^T: W is *stored transposed*; its skew is the transpose
  re-layout too (block W(a, b) = W^T(b, a)^T goes by one message from (a, b) to the rank that needs
  W^T(b, a) first), and the gemm reads it with ``trans_b``;
- dW = X^T dY:                L = X^T, stored transposed likewise (``trans_a``), R = dY.

All three leave their output in the natural q x q layout, so no re-layout follows them. A factor
broadcast over depth by an earlier product (W in the forward, then again in dX) is not broadcast again.

Per rank (s = q/c; payloads in ``simulator.algorithms.cannon_steps``): every product costs 4(s-1) shift messages
plus skew messages (2 per factor not already at home), and, when c > 1, one depth reduce. Depth
broadcasts: one per distinct factor tensor of the schedule (c > 1): gemm fwd 2 (A, B), bwd 3 (dC, B, A),
both 3; mlp fwd 4 (X, W1, Z, W2), bwd and both 6 (adding dY, dH). Depth reduces: one per product: gemm
1 / 2 / 3, mlp 2 / 4 / 6 for fwd / bwd / both. Per-rank skew + shift traffic is at most s blocks of each
factor, q/c where 2-D Cannon (c = 1) moves q: the 1/c of the paper, paid for by the broadcast and reduce.
With c = 1 there are no depth ops and this is plain 2-D Cannon (Cannon 1969).

The transformer block: every activation on layer 0, q x q, so each rank of layer 0 holds b/q whole
sequences and a/q whole heads and the attention core is local; LayerNorm's moments are all-reduced
over layer 0's row groups and the vectors kept on its row 0 as in Tesseract (``GridAlgorithm``). The
other layers take part in the products only; every gradient is already whole on layer 0 after a
product's depth reduce, so no vector needs a depth all-reduce.

Per layer, per rank (j, i, k) of [q, q, c], s = q/c, M = b s, FFN width f; with the block's linears
QKV [h, 3h], proj [h, h], FC1 [h, f], FC2 [f, h], the q x q blocks of each linear's input, output and
weight, summed over the four, are A = M(3h + f)/q^2, Y = M(5h + f)/q^2 and W = (4h^2 + 2hf)/q^2.
Payload and received as in ``summa25d``'s docstring (a recv: its buffer).

Linear traffic, every rank (products in program order: forward QKV, proj, FC1, FC2; backward FC2,
FC1, proj, QKV, each dX = dY W^T then dW = X^T dY):

    depth (c > 1), broadcasts over c from layer 0, one per distinct factor tensor:
        forward 8 (X, W of each linear), payload A + W; backward alone 12 (dY, W, X), payload A + Y + W;
        both 12 (the forward's 8 + the 4 dY), payload A + Y + W. Received: the payload on layers k > 0.
    depth (c > 1), reduces over c onto layer 0, one per product:
        forward 4, payload Y; backward 8, payload A + W; both 12, payload A + Y + W.
        Received: (c-1) times the payload on layer 0.
    point to point, per product and factor: 2(s-1) shift messages (s-1 sent, s-1 received) and 2 skew
        messages unless the block is already at home (``cannon_steps``), each one block of the factor.
        Shift traffic received: (s-1)(A + W) forward, (s-1)(A + W + 2Y) backward; the skew adds one
        block per factor not at home.

LayerNorm and bias traffic: that of ``summa25d`` at d = 1, on layer 0's ranks only (k = 0; the other
layers take part in the products alone): V = (9h + f)/q, moments [M/q, 2],

    forward    8 broadcasts over layer 0's column group from row 0 (V); 2 all-reduces over its row
               group of S1, S2                                          payload V + 4M/q
    backward   8 reduces over the column group onto row 0 (V); 2 all-reduces of dS1, dS2; backward
               alone, 2 broadcasts of ln1_g, ln2_g (2h/q)                 payload V + 4M/q (+ 2h/q)
    received   forward [j > 0] V + 8(q-1) M/q^2; backward [j = 0] (q-1) V + 8(q-1) M/q^2
               + [j > 0, backward alone] 2h/q

and no depth all-reduce. ``tests/simulator/test_transformer_accounting.py`` holds the IR to all of this
per rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms.base import Blocks, GridAlgorithm, LinearNames, linear_extents
from simulator.algorithms.cannon_steps import Factor, multiply
from simulator.algorithms.grid import ProcessGrid
from simulator.errors import NotApplicable
from simulator.ir.builder import ScheduleBuilder
from simulator.workloads.workload import Workload


@dataclass(frozen=True)
class Cannon25D(GridAlgorithm):
    """2.5-D Cannon on a [q, q, c] grid (``grid.d`` is c); every tensor lives on layer 0, split q x q."""

    grid: ProcessGrid
    name: ClassVar[str] = "cannon25d"
    aliases: ClassVar[tuple[str, ...]] = ("cannon",)
    summary: ClassVar[str] = ("Cannon 2.5-D (Solomonik & Demmel 2011): depth broadcast, skew, q/c shifts, depth "
                              "reduce, [q,q,c] with c | q")
    grid_rule: ClassVar[str] = "P = q*q*c GPUs with the depth c dividing q (a [q,q,c] grid)"

    @classmethod
    def depth_error(cls, q: int, d: int) -> str | None:
        return None if q % d == 0 else f"cannon25d on [{q},{q},{d}]: the depth c={d} must divide q={q}"

    @classmethod
    def on_grid(cls, shape: tuple[int, ...], overlap: bool = False) -> "Cannon25D":
        return cls(ProcessGrid(shape[0], shape[2]))

    def groups(self) -> dict[str, tuple[int, ...]]:
        """The depth groups, the only ones a product uses (none when c = 1: shifts are point to point)."""
        if self.grid.d == 1:
            return {}
        return {name: ranks for name, ranks in self.grid.groups().items() if name.startswith("depth_")}

    def block_groups(self) -> dict[str, tuple[int, ...]]:
        """Layer 0's row and column groups: where the transformer's LayerNorm moments and vectors go."""
        return {name: ranks for name, ranks in self.grid.groups().items()
                if name.startswith(("row_", "col_")) and name.endswith("_k0")}

    def check(self, workload: Workload) -> None:
        """NotApplicable unless c divides q and q divides M and every weight extent."""
        q, c = self.grid.q, self.grid.d
        where = f"{self.name} on [{q},{q},{c}]"
        if q % c:
            raise NotApplicable(f"{where}: the depth c={c} must divide q={q}")
        self._require_block_split(where, workload, q, "q", q, "q")
        self._require_divisible(where, {"M": workload.m, **linear_extents(workload)}, q, "q")

    def _layer0(self, rows: int, cols: int) -> Blocks:
        q = self.grid.q
        rb, cb = rows // q, cols // q
        return [(self.grid.rank(j, i, 0), (j * rb, (j + 1) * rb), (i * cb, (i + 1) * cb))
                for j in range(q) for i in range(q)]

    def input_blocks(self, lin: LinearNames) -> Blocks:
        return self._layer0(lin.m, lin.k)

    def output_blocks(self, lin: LinearNames) -> Blocks:
        return self._layer0(lin.m, lin.n)

    def weight_blocks(self, lin: LinearNames) -> Blocks:
        return self._layer0(lin.k, lin.n)

    def _shapes(self, lin: LinearNames) -> tuple[int, int, int]:
        q = self.grid.q
        return lin.m // q, lin.k // q, lin.n // q

    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        """Y = X W."""
        mb, kb, nb = self._shapes(lin)
        multiply(b, self.grid, Factor(lin.x, (mb, kb)), Factor(lin.w, (kb, nb)), lin.y)

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        """dX = dY W^T, W re-laid out as W^T by the skew's point-to-point messages."""
        mb, kb, nb = self._shapes(lin)
        multiply(b, self.grid, Factor(dy, (mb, nb)), Factor(lin.w, (kb, nb), transposed=True), dx)

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        """dW = X^T dY, X re-laid out as X^T by the skew's point-to-point messages."""
        mb, kb, nb = self._shapes(lin)
        multiply(b, self.grid, Factor(lin.x, (mb, kb), transposed=True), Factor(dy, (mb, nb)), dw)
