"""Memory per GPU of a training arrangement: ``simulator.memory`` for the search.

``memory_of(a, block, options)`` builds the fwd+bwd schedule of one block on the arrangement's
tensor-parallel grid and sizes it with ``simulator.memory.training_memory`` under the step's training
setup (optimizer, ZeRO stage over the arrangement's D, recomputation, the model's layers and
vocabulary). The device's usable memory is ``simulator.memory.usable_device_bytes``.
"""

from __future__ import annotations

from simulator.memory import MemoryBreakdown, TrainingSetup, training_memory
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, build_block
from simulator.workloads.workload import Workload

__all__ = ["memory_of"]


def memory_of(a: TrainingArrangement, block: Workload, options: StepOptions) -> MemoryBreakdown:
    """The memory breakdown of the rank with the largest peak, training ``block`` x layers on ``a``."""
    setup = TrainingSetup(optimizer=options.optimizer, zero=options.zero, recompute=options.recompute, dp=a.dp,
                          layers=options.layers, vocab=options.vocab, tied=options.tied)
    return training_memory(build_block(a, block, "both", options.dtype), setup)

