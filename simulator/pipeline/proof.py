"""Prove a lowered pipeline on numbers: the numpy interpreter against the dense float64 reference.

The interpreter (``simulator.ir.interpret``) runs every rank of the pipelined schedule from the seeded
inputs (``simulator.pipeline.reference.pipeline_inputs``); every output block it leaves, each
micro-batch's output and input gradient and every layer's weight gradient summed over micro-batches, is
held to ``pipeline_reference``. A missing, reordered or misdirected send, receive or accumulation either
stops the walk (``ScheduleError``: a deadlock or a mismatched message) or shows in the numbers (NaN or a
wrong sum).
"""

from __future__ import annotations

from simulator.errors import ScheduleError
from simulator.ir.interpret import InterpretResult, compare_outputs, run_schedule
from simulator.ir.schedule import Schedule
from simulator.pipeline.lower import pipeline_options
from simulator.pipeline.reference import pipeline_inputs, pipeline_reference
from simulator.workloads.workload import Workload

__all__ = ["float64_bytes", "prove_pipeline"]


def prove_pipeline(schedule: Schedule, seed: int = 0) -> InterpretResult:
    """Run the pipelined ``schedule`` in the interpreter and compare every output with float64."""
    options = pipeline_options(schedule)
    if options is None:
        raise ScheduleError("not a pipelined schedule: its options name no pipeline")
    workload = Workload.from_dict(schedule.workload)
    vocab = options.get("vocab")
    inputs = pipeline_inputs(workload, options["layers"], options["micro_batches"], seed, vocab)
    memory = run_schedule(schedule, inputs, seed)
    reference = pipeline_reference(workload, options["layers"], options["micro_batches"], seed, inputs, vocab)
    return compare_outputs(schedule, memory, reference)


def float64_bytes(schedule: Schedule) -> int:
    """A lower bound on what ``prove_pipeline`` holds at once: every rank's buffers and every global tensor
    (inputs and reference), in float64."""
    elements = sum(spec.numel for declared in schedule.buffers for spec in declared.values())
    return 8 * (elements + 2 * sum(rows * cols for rows, cols in schedule.tensors.values()))
