"""Memory per GPU of training one arrangement: model states, kept activations, workspace and the peak.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``setup``           ``TrainingSetup``: optimizer, ZeRO stage, recomputation, data-parallel degree,
                    layers and vocabulary, validated
``breakdown``       ``MemoryBreakdown``: the five parts as named items, the peak, ``to_dict``
``states``          parameters, gradients and optimizer state per parameter, ZeRO sharding
``activations``     what one block's forward keeps for its backward on a rank, by recomputation
``embedding``       the vocabulary-parallel embedding and LM head: parameters and activations
``liveness``        buffer liveness over a rank's program: the largest live workspace
``device``          ``usable_device_bytes``: a GPU's memory less a documented reserve
``training``        ``training_memory``: all of the above for one schedule and setup
==================  ===============================================================================

Example::

    from simulator.memory import TrainingSetup, training_memory, usable_device_bytes
    m = training_memory(schedule, TrainingSetup(zero=1, dp=8, layers=40, vocab=50257))
    m.peak_bytes <= usable_device_bytes(G.nodes["n0/gpu0"]["device"])
"""

from simulator.memory.breakdown import MemoryBreakdown
from simulator.memory.device import usable_device_bytes
from simulator.memory.setup import TrainingSetup
from simulator.memory.training import training_memory

__all__ = ["MemoryBreakdown", "TrainingSetup", "activations", "breakdown", "device", "embedding", "liveness",
           "setup", "states", "training", "training_memory", "usable_device_bytes"]
