"""Memory per GPU of a training arrangement: ``simulator.memory`` for the search.

``memory_of(a, block, options)`` builds the fwd+bwd schedule of one block on the arrangement's
tensor-parallel grid and sizes it with ``simulator.memory.training_memory`` under the step's training
setup (optimizer, ZeRO stage over the arrangement's D, recomputation, the model's layers and
vocabulary). The device's usable memory is ``simulator.memory.usable_device_bytes``. A pipelined
arrangement (pp > 1) gets each stage's breakdown (``simulator.pipeline.stage_memory``), from per-rank parts
kept in ``cache`` across arrangements that differ only in pp, schedule and D.
"""

from __future__ import annotations

from simulator.memory import TrainingSetup, training_memory
from simulator.training.arrangement import TrainingArrangement
from simulator.training.batching import micro_batches
from simulator.training.main_grads import grad_bytes
from simulator.training.step import StepOptions, build_block
from simulator.workloads.workload import Workload

__all__ = ["memory_of"]


def memory_of(a: TrainingArrangement, block: Workload, options: StepOptions, cache: dict | None = None):
    """The memory breakdown of the rank with the largest peak, training ``block`` x layers on ``a``
    (pp > 1: a ``PipelineMemory``, the worst stage's figures)."""
    setup = TrainingSetup(optimizer=options.optimizer, zero=options.zero, recompute=options.recompute, dp=a.dp,
                          layers=options.layers, vocab=options.vocab, tied=options.tied,
                          grad_bytes=grad_bytes(options.dtype, options.zero, options.grad_reduce_in_fp32),
                          prefetch=options.backward_prefetch == "BACKWARD_PRE", fp8_recipe=options.fp8_recipe)
    if a.pp == 1:  # the schedule depends on the tensor arrangement and the block only: built once per search
        key = ("both schedule", a.tensor, block, options.dtype)
        schedule = cache.get(key) if cache is not None else None
        if schedule is None:
            schedule = build_block(a, block, "both", options.dtype)
            if cache is not None:
                cache[key] = schedule
        return training_memory(schedule, setup)
    from simulator.pipeline.stage_memory import pipeline_memory, rank_parts  # the pipeline package builds on this
    from simulator.pipeline.stage_step import check_pipeline_plan
    m = micro_batches(options.global_batch, block.batch, a.dp)
    check_pipeline_plan(a, m, options)  # NotApplicable: the row is skipped with the reason
    key = ("memory parts", a.tensor, block, options.recompute, options.vocab, options.dtype, options.fp8_recipe)
    parts = cache.get(key) if cache is not None else None
    if parts is None:
        schedule = build_block(a, block, "both", options.dtype)
        parts = [rank_parts(schedule, setup, r) for r in range(schedule.world_size)]
        if cache is not None:
            cache[key] = parts
    return pipeline_memory(parts, setup, options.dtype, a.pp, a.schedule, m, a.virtual_stages)

