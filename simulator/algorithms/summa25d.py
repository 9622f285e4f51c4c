"""SUMMA2.5 / Tesseract (Wang et al., arXiv 2105.14500): q-step SUMMA on each of d layers of [q, q, d].

Activations are split into d*q x q blocks (layer k owns row blocks kq .. kq+q-1); weights are split
q x q and replicated on every layer; dW is all-reduced over each depth group when d > 1. The steps live
in ``simulator.algorithms.summa_steps``. A widely used open-source implementation omits the depth
all-reduce of dW; this one does not, and ``tests/simulator/test_generators.py`` fails if it goes missing.

The transformer block (Optimus / Tesseract): each rank holds b/(dq) whole sequences and a/q whole
heads, so the attention core is local; LayerNorm's moments are all-reduced over the row group; biases
and LayerNorm parameters live on row 0 and are broadcast and reduced over the column group, with the
depth all-reduce of their gradients when d > 1 (``GridAlgorithm``).

Per layer, per rank (j, i, k) of [q, q, d]. M = b s tokens, FFN width f (GPT: f = 4h); the linears
QKV [h, 3h], proj [h, h], FC1 [h, f], FC2 [f, h] have sum K = 3h + f and sum K N = 4h^2 + 2hf, so
one activation block of each linear's input, summed, is A = M(3h + f)/(d q^2), and one weight block
of each, summed, is W = (4h^2 + 2hf)/q^2. "Payload" is the rank's own buffer in each op
(``simulator.ir.accounting``); "received" what a bandwidth-optimal implementation moves into it: a
broadcast's buffer at a non-root, (g-1) buffers at a reduce's root, 2(g-1)/g of an all-reduce's.

Linear traffic (``summa_steps``; per linear q steps in each of forward, dX, dW):

    forward    8q broadcasts over q (X along rows, W along columns)       payload  q(A + W)
    backward   8q broadcasts + 8q reduces over q                           payload 2q(A + W)
               d > 1: 4 all-reduces of dW over the depth group             payload W
    received   (q-1)(A + W) forward, 2(q-1)(A + W) backward, 3(q-1)(A + W) both, i.e.

                   3(q-1) [M(3h + f)/(d q^2) + (4h^2 + 2hf)/q^2],  at f = 4h  3(q-1) [7 b s h/(d q^2) + 12 h^2/q^2]

               (DESIGN.md's form), plus 2(d-1)/d W for the depth all-reduces, which that form leaves out.

Each rank is the root of one of the q broadcasts and one of the q reduces in every SUMMA pass, so it
receives q-1 of the q blocks whether a reduce is counted at its root or at the senders; the payload
convention counts all q (3q(A + W) for both passes, as ``tests/simulator/test_accounting.py`` has it).

LayerNorm and bias traffic (q > 1; none at q = 1 but the depth all-reduces). V = (9h + f)/q, a
rank's columns of the 8 vectors ln1_g, ln1_b, bqkv (3h), bproj, ln2_g, ln2_b, b1 (f), b2, summed:

    forward    8 broadcasts over the column group from row 0 (V); 2 all-reduces over the row group of
               the moments S1, S2 [M/(dq), 2]                              payload V + 4M/(dq)
    backward   8 reduces over the column group onto row 0 (V); 2 all-reduces over the row group of
               dS1, dS2 [M/(dq), 2]                                        payload V + 4M/(dq)
               row 0 only, d > 1: 8 all-reduces of the vector grads over depth   payload V
               backward alone: 2 broadcasts of ln1_g, ln2_g again (2h/q); "both" reuses the forward's
    received   forward  [j > 0] V + 8(q-1) M/(d q^2)
               backward [j = 0] (q-1) V + 8(q-1) M/(d q^2) + [j = 0] 2(d-1)/d V + [j > 0, backward alone] 2h/q

So the vector traffic is not the same on every rank: row 0 receives every reduce and does every depth
all-reduce, the other rows receive the broadcasts. At d = 1 this is ``2d`` op for op (the schedules
differ in the algorithm name only). ``tests/simulator/test_transformer_accounting.py`` holds the IR to
all of these per rank, for the forward, the backward alone and both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms import summa_steps
from simulator.algorithms.base import Blocks, GridAlgorithm, LinearNames, linear_extents
from simulator.algorithms.grid import ProcessGrid
from simulator.errors import NotApplicable
from simulator.ir.builder import ScheduleBuilder
from simulator.workloads.workload import Workload


@dataclass(frozen=True)
class Summa25D(GridAlgorithm):
    """SUMMA on a [q, q, d] grid: each of the d layers runs its own q-step SUMMA on 1/d of the tokens."""

    grid: ProcessGrid
    overlap: bool = False
    """Prefetch step t+1's broadcasts during step t's gemm (see ``simulator.algorithms.summa_steps``)."""
    name: ClassVar[str] = "summa25d"
    aliases: ClassVar[tuple[str, ...]] = ("tesseract",)
    summary: ClassVar[str] = "SUMMA2.5 / Tesseract (Wang et al. 2021): q-step SUMMA on each of d layers, [q,q,d]"
    supports_overlap: ClassVar[bool] = True

    @classmethod
    def on_grid(cls, shape: tuple[int, ...], overlap: bool = False) -> "Summa25D":
        return cls(ProcessGrid(shape[0], shape[2]), overlap=overlap)

    def groups(self) -> dict[str, tuple[int, ...]]:
        return self.grid.groups()

    def check(self, workload: Workload) -> None:
        """NotApplicable unless M divides by d*q and every weight extent by q."""
        q, d = self.grid.q, self.grid.d
        where = f"{self.name} on [{q},{q},{d}]"
        self._require_block_split(where, workload, d * q, "d*q", q, "q")
        if workload.m % (d * q):
            raise NotApplicable(f"{where}: M={workload.m} must be divisible by d*q = {d * q}")
        self._require_divisible(where, linear_extents(workload), q, "q")

    @property
    def depth_replicated(self) -> bool:
        return self.grid.d > 1

    def _activation_blocks(self, rows: int, cols: int) -> Blocks:
        return [(r, *summa_steps.activation_block(self.grid, r, rows, cols)) for r in range(self.grid.world_size)]

    def input_blocks(self, lin: LinearNames) -> Blocks:
        return self._activation_blocks(lin.m, lin.k)

    def output_blocks(self, lin: LinearNames) -> Blocks:
        return self._activation_blocks(lin.m, lin.n)

    def weight_blocks(self, lin: LinearNames) -> Blocks:
        return [(r, *summa_steps.weight_block(self.grid, r, lin.k, lin.n)) for r in range(self.grid.world_size)]

    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        summa_steps.forward(b, self.grid, lin, self.overlap)

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        summa_steps.backward_input(b, self.grid, lin, dy, dx, self.overlap)

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        summa_steps.backward_weight(b, self.grid, lin, dy, dw, self.overlap)
