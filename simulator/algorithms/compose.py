"""Turn a block-distributed linear-layer algorithm into full workload schedules (gemm, mlp; fwd, bwd).

An algorithm (2-D SUMMA, SUMMA2.5, Cannon 2.5-D) supplies where activation-shaped and weight-shaped
tensors live and how to emit one linear's three products; this module strings them together:

- ``gemm``: C = A B; backward dA = dC B^T, dB = A^T dC.
- ``mlp``: H = X W1, Z = gelu(H), Y = Z W2; backward dZ = dY W2^T, dW2 = Z^T dY, dH = dZ * gelu'(H),
  dX = dH W1^T, dW1 = X^T dH. Elementwise ops run on the ranks that hold the activation blocks.
"""

from __future__ import annotations

from typing import Protocol

from simulator.algorithms.grid import ProcessGrid
from simulator.algorithms.summa_steps import LinearNames
from simulator.gcpause import paused_gc
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Local
from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload

Blocks = list[tuple[int, tuple[int, int], tuple[int, int]]]
"""(rank, rows, cols) for every block of a tensor, replicas included."""


class BlockAlgorithm(Protocol):
    """What a block-distributed algorithm provides to ``compose``."""

    name: str
    grid: ProcessGrid

    def groups(self) -> dict[str, tuple[int, ...]]: ...
    def check(self, workload: Workload) -> None: ...
    def activation_blocks(self, rows: int, cols: int) -> Blocks: ...
    def weight_blocks(self, rows: int, cols: int, role: str) -> Blocks: ...
    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None: ...
    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None: ...
    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None: ...


def compose(alg: BlockAlgorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    """The schedule of ``workload``'s ``passes`` under ``alg``."""
    with paused_gc():  # a million ops at 4,096 ranks, and no cycles among them
        return _compose(alg, workload, passes, dtype)


def _compose(alg: BlockAlgorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    alg.check(workload)
    grid = alg.grid
    b = ScheduleBuilder(alg.name, (grid.q, grid.q, grid.d), workload, passes, dtype, grid.world_size, alg.groups())
    shapes = workload.shapes()

    def place(role: str, tensor: str, kind: str) -> None:
        rows, cols = shapes[tensor]
        blocks = alg.activation_blocks(rows, cols) if kind == "act" else alg.weight_blocks(rows, cols, role)
        for rank, r, c in blocks:
            b.block(role, rank, tensor, tensor, r, c)

    def elementwise(fn: str, out: str, inputs: tuple[str, ...]) -> None:
        rows, cols = shapes[out]
        for rank, r, c in alg.activation_blocks(rows, cols):
            b.buffer(rank, out, (r[1] - r[0], c[1] - c[0]))
            b.emit(rank, Local(fn=fn, out=out, inputs=inputs))

    if workload.name == "gemm":
        lin = LinearNames("A", "B", "C", workload.m, workload.k, workload.n)
        place("input", "A", "act")
        place("input", "B", "weight")
        if passes in ("fwd", "both"):
            alg.forward(b, lin)
            place("output", "C", "act")
        if passes in ("bwd", "both"):
            place("input", "dC", "act")
            alg.backward_input(b, lin, "dC", "dA")
            alg.backward_weight(b, lin, "dC", "dB")
            place("output", "dA", "act")
            place("output", "dB", "weight")
        return b.build()

    h, f = workload.hidden, 4 * workload.hidden
    fc1 = LinearNames("X", "W1", "H", workload.m, h, f)
    fc2 = LinearNames("Z", "W2", "Y", workload.m, f, h)
    for tensor, kind in (("X", "act"), ("W1", "weight"), ("W2", "weight")):
        place("input", tensor, kind)
    if passes in ("fwd", "both"):
        alg.forward(b, fc1)
        elementwise("gelu", "Z", ("H",))
        alg.forward(b, fc2)
        place("output", "Y", "act")
    if passes == "bwd":
        place("input", "H", "act")
        place("input", "Z", "act")
    if passes in ("bwd", "both"):
        place("input", "dY", "act")
        alg.backward_input(b, fc2, "dY", "dZ")
        alg.backward_weight(b, fc2, "dY", "dW2")
        elementwise("gelu_backward", "dH", ("dZ", "H"))
        alg.backward_input(b, fc1, "dH", "dX")
        alg.backward_weight(b, fc1, "dH", "dW1")
        place("output", "dX", "act")
        place("output", "dW1", "weight")
        place("output", "dW2", "weight")
    return b.build()
