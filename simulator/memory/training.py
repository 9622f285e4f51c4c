"""``training_memory``: the memory per GPU of training one arrangement, derived from its block's schedule.

Convention: one micro-batch in flight and no pipeline parallelism, so the peak is reached in the
backward of the last layer, when every layer's activations are still kept:

    peak = parameters + gradients + optimizer state        (``simulator.memory.states``, ZeRO-sharded)
         + layers x one block's kept activations           (``simulator.memory.activations``)
         + the embedding's and the loss's activations      (``simulator.memory.embedding``, with a vocab)
         + the largest live workspace of the block         (``simulator.memory.liveness``)
         + under full (or per-op) recomputation, the one layer being recomputed (its activations less what
           it kept)

The workspace is the largest live sum over the whole fwd+bwd program of the block: every buffer that
is not a weight, a weight gradient or a kept activation (received panels, gathered blocks, partial
sums, activation gradients). Taking it over the forward as well can only overstate the peak, by at
most the forward's excess over the backward's (in practice the backward's is the larger). Under ZeRO
the workspace also holds the unit being gathered or reduced: stage 2 one layer's unsharded gradients
before their reduce-scatter, stage 3 also its gathered parameters (a unit of one layer, or the
embedding where that is larger; DeepSpeed's buckets are a size, not a layer: an approximation), twice
where the next unit is gathered before the current one's gradients are computed (``TrainingSetup.prefetch``:
PyTorch FSDP's default ``BACKWARD_PRE``, whose documentation says it holds the current and the next set of
parameters and the current gradients at the peak). A reduction wider than the parameters
(``TrainingSetup.grad_bytes`` 4 at ZeRO 2/3: FSDP's ``reduce_dtype=torch.float32``) adds the unit's fp32
reduce-scatter input, which FSDP2's ``foreach_reduce`` fills before it frees the bf16 gradients.

Every rank is sized; the breakdown reported is that of the rank with the largest peak (the lowest
such rank), so its parts add up to its peak.
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.ir.schedule import Schedule
from simulator.memory.activations import layer_activations
from simulator.memory.breakdown import Item, MemoryBreakdown
from simulator.memory.embedding import embedding_activations, embedding_parameters
from simulator.memory.liveness import peak_live
from simulator.memory.setup import TrainingSetup
from simulator.memory.states import bytes_per_parameter, state_items
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["rank_memory", "training_memory"]


def _skip(workload: Workload) -> set[str]:
    """The buffers the workspace leaves out: weights, their gradients, and what a layer keeps."""
    weights = set(workload.weights())
    return weights | {grad(name) for name in weights} | {name for layer in workload.layers() for name in layer.saved}


def _activation_items(schedule: Schedule, rank: int, workload: Workload, setup: TrainingSetup) -> list[Item]:
    layers = setup.layers
    per_layer = layer_activations(schedule, rank, setup.recompute, workload, setup.fp8_recipe)
    items = [Item("activations", f"{k.what} (x {layers} layers)", k.nbytes * layers) for k in per_layer]
    if setup.recompute in ("full", "selective-op"):
        whole = layer_activations(schedule, rank, "none", workload, setup.fp8_recipe)
        extra = sum(k.nbytes for k in whole) - sum(k.nbytes for k in per_layer)
        items.append(Item("activations", "one layer's activations while it is recomputed", extra))
    if setup.vocab is not None:
        kept = embedding_activations(schedule, rank, setup.vocab, workload)
        items += [Item("activations", k.what, k.nbytes) for k in kept]
    return items


def _zero_units(per_layer: int, embedding: int, dtype: str, setup: TrainingSetup) -> list[Item]:
    """ZeRO-2/3's transient unit: one layer's (or the embedding's) unsharded gradients and gathered weights."""
    if setup.zero < 2 or setup.dp == 1:
        return []
    param, grad_bytes, _ = bytes_per_parameter(dtype, setup.optimizer)
    unit = max(per_layer, embedding)
    items = [Item("workspace", f"ZeRO-{setup.zero}: one unit's unsharded gradients before their reduce-scatter "
                               f"({unit:,} x {grad_bytes} B)", unit * grad_bytes)]
    wide = setup.grad_bytes or grad_bytes
    if wide > grad_bytes:  # FSDP's reduce_dtype: the cast copy beside them (``simulator.training.main_grads``)
        items.append(Item("workspace", f"ZeRO-{setup.zero}: their fp32 reduce-scatter input ({unit:,} x {wide} B)",
                          unit * wide))
    if setup.zero == 3:
        units, which = (2, "two units' (the one computing and the next, prefetched)") if setup.prefetch else \
            (1, "one unit's")
        items.append(Item("workspace", f"ZeRO-3: {which} gathered parameters ({units} x {unit:,} x {param} B)",
                          units * unit * param))
    return items


def _rank_items(schedule: Schedule, rank: int, workload: Workload, setup: TrainingSetup,
                skip: set[str]) -> list[Item]:
    buffers = schedule.buffers[rank]
    per_layer = sum(buffers[name].numel for name in workload.weights() if name in buffers)
    groups = [(f"{setup.layers} layers' weights", setup.layers * per_layer)]
    if setup.vocab is not None:
        groups += embedding_parameters(schedule, setup.vocab, workload, setup.tied)
    embedding = sum(n for _, n in groups[1:])
    items = state_items(groups, schedule.dtype, setup)
    items += _activation_items(schedule, rank, workload, setup)
    live = peak_live(schedule, rank, skip)
    largest = ", ".join(live.buffers[:3]) + (", ..." if len(live.buffers) > 3 else "")
    items.append(Item("workspace", f"{len(live.buffers)} buffers live at step {live.step} ({largest})", live.nbytes))
    items += _zero_units(per_layer, embedding, schedule.dtype, setup)
    return items


def _check(schedule: Schedule, setup: TrainingSetup) -> Workload:
    if schedule.passes != "both":
        raise InputError(f"training memory needs the fwd+bwd schedule of a block (--pass both), got "
                         f"--pass {schedule.passes}")
    workload = Workload.from_dict(schedule.workload)
    if setup.vocab is not None and workload.name != "transformer":
        raise InputError(f"a vocabulary ({setup.vocab}) is a transformer's; workload {workload.name} has none")
    return workload


def rank_memory(schedule: Schedule, setup: TrainingSetup, rank: int) -> MemoryBreakdown:
    """The memory of ``rank`` alone."""
    workload = _check(schedule, setup)
    return MemoryBreakdown(tuple(_rank_items(schedule, rank, workload, setup, _skip(workload))), rank)


def training_memory(schedule: Schedule, setup: TrainingSetup) -> MemoryBreakdown:
    """The memory per GPU of training with ``schedule`` (the fwd+bwd of one block) under ``setup``: the
    breakdown of the rank with the largest peak."""
    workload = _check(schedule, setup)
    skip = _skip(workload)
    best: tuple[int, int, list[Item]] | None = None
    for rank in range(schedule.world_size):
        items = _rank_items(schedule, rank, workload, setup, skip)
        peak = sum(item.nbytes for item in items)
        if best is None or peak > best[0]:
            best = (peak, rank, items)
    return MemoryBreakdown(tuple(best[2]), best[1])
