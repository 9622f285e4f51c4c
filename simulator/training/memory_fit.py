"""Memory per GPU of a training arrangement, and the device's usable memory: ``simulator.memory`` for the search.

``memory_of(a, block, options)`` builds the fwd+bwd schedule of one block on the arrangement's
tensor-parallel grid and sizes it with ``simulator.memory.training_memory`` under the step's training
setup (optimizer, ZeRO stage over the arrangement's D, recomputation, the model's layers and
vocabulary); ``device_memory(device)`` is ``simulator.memory.usable_device_bytes`` (the datasheet size
less a documented reserve).
"""

from __future__ import annotations

from simulator.memory import MemoryBreakdown, TrainingSetup, training_memory, usable_device_bytes
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, build_block
from simulator.workloads.workload import Workload

__all__ = ["memory_of", "device_memory"]


def memory_of(a: TrainingArrangement, block: Workload, options: StepOptions) -> MemoryBreakdown:
    """The memory breakdown of the rank with the largest peak, training ``block`` x layers on ``a``."""
    setup = TrainingSetup(optimizer=options.optimizer, zero=options.zero, recompute=options.recompute, dp=a.dp,
                          layers=options.layers, vocab=options.vocab)
    return training_memory(build_block(a, block, "both", options.dtype), setup)


def device_memory(device: dict) -> int:
    """Bytes a training job can use on ``device`` (a GPU node's device dict)."""
    return usable_device_bytes(device)
