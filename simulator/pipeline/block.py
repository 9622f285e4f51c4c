"""One transformer block's schedule, cut into the pieces a pipeline re-addresses: forward, backward, roles.

``simulator.pipeline.lower`` repeats one block's ops for every (micro-batch, layer) a stage runs. It takes
them from the algorithm's own generator (``simulator.algorithms.registry.build_schedule``, pass ``both``)
and needs to know, per tensor-parallel rank t:

- where the forward ends: compose emits every forward op before the first backward op, so the forward is
  the first ``len(fwd program)`` ops of the ``both`` program (checked, op for op);
- what each schedule input or output buffer is: the block input ``X`` and its gradient ``dX``, the output
  ``Y`` and its gradient ``dY``, a weight, or a weight's gradient.

The block's ``Y`` must lie where its ``X`` lies (rank for rank, block for block) so that one block's
output is the next block's input without moving data, and so that a stage boundary is a send from each
rank to the rank with the same tensor-parallel coordinates. Every registered algorithm leaves it so;
``BlockPieces.of`` checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.algorithms.registry import build_schedule
from simulator.ir.checks import effective_writes
from simulator.ir.ops import Op
from simulator.ir.schedule import BufferSpec, Schedule
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["BlockPieces"]


@dataclass(frozen=True)
class BlockPieces:
    """One block's schedule on T ranks, split into forward and backward, with every buffer's role."""

    schedule: Schedule
    """The block's ``both`` schedule (groups, buffers, part labels)."""
    forward: tuple[tuple[Op, ...], ...]
    """Per tensor-parallel rank, the forward ops."""
    backward: tuple[tuple[Op, ...], ...]
    """Per tensor-parallel rank, the backward ops."""
    boundary: tuple[tuple[tuple[str, str, str, str], ...], ...]
    """Per rank, (X buffer, Y buffer, dX buffer, dY buffer) of each block of the activation it holds,
    matched by block: what a stage sends and receives, and what one layer hands the next."""
    weights: tuple[tuple[tuple[str, str], ...], ...]
    """Per rank, (weight buffer, global weight tensor) of each weight block it holds."""
    weight_grads: tuple[tuple[tuple[str, str], ...], ...]
    """Per rank, (gradient buffer, global weight tensor) of each weight-gradient block it leaves."""

    @property
    def tp(self) -> int:
        """T, the tensor-parallel group's size."""
        return self.schedule.world_size

    def spec(self, t: int, buffer: str) -> BufferSpec:
        """The declaration of ``buffer`` on tensor-parallel rank ``t``."""
        return self.schedule.spec(t, buffer)

    @classmethod
    def of(cls, algorithm: str, workload: Workload, dtype: str, grid: tuple[int, ...] | None = None,
           gpus: int | None = None, overlap: bool = False, async_dgrad: bool = False) -> "BlockPieces":
        """Build the block with ``algorithm`` and cut it (module docstring); InputError from the generator."""
        both = build_schedule(algorithm, workload, "both", dtype, grid=grid, gpus=gpus, overlap=overlap,
                              async_dgrad=async_dgrad)
        fwd = build_schedule(algorithm, workload, "fwd", dtype, grid=grid, gpus=gpus, overlap=overlap)
        x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
        forward, backward, boundary, weights, weight_grads = [], [], [], [], []
        names = set(workload.weights())
        of_grad = {grad(name): name for name in names}
        for t, program in enumerate(both.programs):
            cut = len(fwd.programs[t])
            if list(program[:cut]) != list(fwd.programs[t]):
                raise AssertionError(f"{both.algorithm}: rank {t}'s forward is not the head of its pass-both program")
            forward.append(tuple(program[:cut]))
            backward.append(tuple(program[cut:]))
            found = {(b.tensor, b.rows, b.cols): b.buffer for b in (*both.inputs, *both.outputs) if b.rank == t}
            at = sorted((rows, cols) for tensor, rows, cols in found if tensor == x)
            if at != sorted((rows, cols) for tensor, rows, cols in found if tensor == y):
                raise AssertionError(f"{both.algorithm}: rank {t} holds the block output where the input is not")
            boundary.append(tuple((found[(x, *k)], found[(y, *k)], found[(grad(x), *k)], found[(grad(y), *k)])
                                  for k in at))
            weights.append(tuple((buf, tensor) for (tensor, _, _), buf in found.items() if tensor in names))
            weight_grads.append(tuple((buf, of_grad[tensor]) for (tensor, _, _), buf in found.items()
                                      if tensor in of_grad))
            check_read_only(both, t, {xb for xb, _, _, _ in boundary[-1]} | {dy for _, _, _, dy in boundary[-1]}
                             | {buf for buf, _ in weights[-1]})
        return cls(both, tuple(forward), tuple(backward), tuple(boundary), tuple(weights), tuple(weight_grads))


def check_read_only(schedule: Schedule, rank: int, buffers: set[str]) -> None:
    """The inputs a pipeline shares between layers or micro-batches (X, dY, weights) must not be written."""
    for op in schedule.programs[rank]:
        written = effective_writes(schedule, rank, op) & buffers
        if written:
            raise AssertionError(f"{schedule.algorithm}: rank {rank} writes its input {sorted(written)[0]!r}")
