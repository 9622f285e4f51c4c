"""SUMMA2.5 / Tesseract (Wang et al., arXiv 2105.14500): q-step SUMMA on each of d layers of [q, q, d].

Activations are split into d*q x q blocks (layer k owns row blocks kq .. kq+q-1); weights are split
q x q and replicated on every layer; dW is all-reduced over each depth group when d > 1. The steps live
in ``simulator.algorithms.summa_steps``. A widely used open-source implementation omits the depth
all-reduce of dW; this one does not, and ``tests/simulator/test_generators.py`` fails if it goes missing.

The transformer block (Optimus / Tesseract): each rank holds b/(dq) whole sequences and a/q whole
heads, so the attention core is local; LayerNorm's moments are all-reduced over the row group; biases
and LayerNorm parameters live on row 0 and are broadcast and reduced over the column group, with the
depth all-reduce of their gradients when d > 1 (``GridAlgorithm``).
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
