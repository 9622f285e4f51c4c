"""One rank's buffers: allocated from the schedule's declarations, inputs filled from the seed.

Every buffer starts each iteration as NaN, as in the interpreter: a schedule that reads a block it never
received, or accumulates into a buffer it never zeroed, produces NaN and fails the check instead of
passing by luck. Input blocks are generated once per rank from the seed alone
(``Workload.input_block``: this rank's blocks only, never the full matrices; but a backward-only
transformer's saved activations are cut from the whole block's dense numpy values, computed once per
process), kept as pristine copies, and copied back before every iteration, because some schedules move
their inputs in place (Cannon's shifts leave A and B rotated).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from executor import pipeline_check
from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16,
                "float16": torch.float16}


@dataclass
class RankMemory:
    """Buffers by name, and pristine input values to restore before each iteration."""

    buffers: dict[str, torch.Tensor]
    inputs: dict[str, torch.Tensor]

    def reset(self) -> None:
        """NaN everywhere except the input buffers, which get their seeded values back."""
        for name, tensor in self.buffers.items():
            if name in self.inputs:
                tensor.copy_(self.inputs[name])
            else:
                tensor.fill_(float("nan"))


def allocate(schedule: Schedule, rank: int, device: torch.device, seed: int) -> RankMemory:
    """Allocate ``rank``'s declared buffers on ``device`` and generate its input blocks from ``seed``."""
    buffers = {name: torch.empty(spec.shape, dtype=TORCH_DTYPES[spec.dtype], device=device)
               for name, spec in schedule.buffers[rank].items()}
    workload = Workload.from_dict(schedule.workload)
    pipelined = pipeline_check.is_pipelined(schedule)
    inputs = {}
    for block in schedule.inputs:
        if block.rank != rank:
            continue
        values = (pipeline_check.input_block(schedule, seed, block.tensor, block.rows, block.cols) if pipelined
                  else workload.input_block(seed, block.tensor, block.rows, block.cols))
        target = buffers[block.buffer]
        inputs[block.buffer] = torch.from_numpy(values).to(device=device, dtype=target.dtype)
    memory = RankMemory(buffers, inputs)
    memory.reset()
    return memory
