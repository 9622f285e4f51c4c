"""SUMMA2.5 / Tesseract (Wang et al., arXiv 2105.14500): q-step SUMMA on each of d layers of [q, q, d].

Activations are split into d*q x q blocks (layer k owns row blocks kq .. kq+q-1); weights are split
q x q and replicated on every layer; dW is all-reduced over each depth group when d > 1. The steps live
in ``simulator.algorithms.summa_steps``. A widely used open-source implementation omits the depth all-reduce of dW;
this one does not, and ``tests/simulator/test_generators.py`` fails if it goes missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.algorithms import summa_steps as summa
from simulator.algorithms.compose import Blocks
from simulator.algorithms.grid import ProcessGrid
from simulator.algorithms.summa_steps import LinearNames
from simulator.errors import NotApplicable
from simulator.ir.builder import ScheduleBuilder
from simulator.workloads.workload import Workload


@dataclass(frozen=True)
class Summa25D:
    """SUMMA on a [q, q, d] grid; ``name`` is what the Schedule records ("summa25d", or "2d" for d = 1)."""

    grid: ProcessGrid
    name: str = "summa25d"
    overlap: bool = False
    """Prefetch step t+1's broadcasts during step t's gemm (see ``simulator.algorithms.summa_steps``)."""

    def groups(self) -> dict[str, tuple[int, ...]]:
        return self.grid.groups()

    def check(self, workload: Workload) -> None:
        """ValueError unless M divides by d*q and every weight extent by q."""
        q, d = self.grid.q, self.grid.d
        where = f"{self.name} on [{q},{q},{d}]"
        if workload.m % (d * q):
            raise NotApplicable(f"{where}: M={workload.m} must be divisible by d*q = {d * q}")
        extents = {"K": workload.k, "N": workload.n} if workload.name == "gemm" else {
            "hidden": workload.hidden, "4*hidden": 4 * workload.hidden}
        for label, value in extents.items():
            if value % q:
                raise NotApplicable(f"{where}: {label}={value} must be divisible by q = {q}")

    def activation_blocks(self, rows: int, cols: int) -> Blocks:
        return [(r, *summa.activation_block(self.grid, r, rows, cols)) for r in range(self.grid.world_size)]

    def weight_blocks(self, rows: int, cols: int, role: str) -> Blocks:
        return [(r, *summa.weight_block(self.grid, r, rows, cols)) for r in range(self.grid.world_size)]

    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        summa.forward(b, self.grid, lin, self.overlap)

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        summa.backward_input(b, self.grid, lin, dy, dx, self.overlap)

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        summa.backward_weight(b, self.grid, lin, dy, dw, self.overlap)
