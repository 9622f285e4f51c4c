"""What a run of a pipelined step (``simulator.pipeline.lower``) starts from and is checked against.

A pipelined schedule names its tensors per micro-batch and layer (``X.m0``, ``Wqkv.l3``, ``dW1.l3``), so
its input blocks come from ``simulator.pipeline.reference.pipeline_input_block`` (the seed alone, this
rank's blocks only) and its outputs are checked against ``pipeline_reference``: the whole step in numpy
float64, computed once per rank process (cached) and cut to each output block. That holds every
tensor of the step whole on every rank, which is fine at the sizes a pipeline runs on one host
(``reference_bytes`` counts it for ``executor.memory``); the block schedules' chunked reference
(``executor.reference``) is not needed for them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from simulator.ir.schedule import Schedule
from simulator.pipeline.reference import pipeline_input_block, pipeline_reference
from simulator.pipeline.tensors import pipeline_tensors
from simulator.workloads.workload import Workload

__all__ = ["clear", "expected_outputs", "input_block", "is_pipelined", "reference_block", "reference_bytes"]


def is_pipelined(schedule: Schedule) -> bool:
    """Whether ``schedule`` is a lowered pipelined step."""
    return "pipeline" in schedule.options


def input_block(schedule: Schedule, seed: int, tensor: str, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
    """Block [rows, cols] of the step's input ``tensor``, float64."""
    vocab = schedule.options["pipeline"].get("vocab")
    return pipeline_input_block(Workload.from_dict(schedule.workload), seed, tensor, rows, cols, vocab)


@lru_cache(maxsize=2)
def _reference(workload: Workload, layers: int, micro_batches: int, seed: int,
               vocab: int | None) -> dict[str, np.ndarray]:
    return pipeline_reference(workload, layers, micro_batches, seed, vocab=vocab)


def reference_block(schedule: Schedule, seed: int, tensor: str, rows: tuple[int, int],
                    cols: tuple[int, int]) -> np.ndarray:
    """Block [rows, cols] of the step's output ``tensor`` in float64."""
    options = schedule.options["pipeline"]
    whole = _reference(Workload.from_dict(schedule.workload), options["layers"], options["micro_batches"], seed,
                       options.get("vocab"))
    return whole[tensor][rows[0]:rows[1], cols[0]:cols[1]]


def expected_outputs(schedule: Schedule) -> tuple[str, ...]:
    """Every output tensor of the step."""
    options = schedule.options["pipeline"]
    _, outputs = pipeline_tensors(Workload.from_dict(schedule.workload), options["layers"], options["micro_batches"],
                                  options.get("vocab"))
    return tuple(outputs)


def reference_bytes(schedule: Schedule) -> int:
    """What the reference holds on each rank: every input and output tensor of the step, whole, float64."""
    return 8 * sum(rows * cols for rows, cols in schedule.tensors.values())


def clear() -> None:
    """Drop the cached reference (a job's next schedule should not keep it alive)."""
    _reference.cache_clear()
