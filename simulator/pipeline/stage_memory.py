"""Memory per GPU of a pipelined training arrangement: each pipeline stage's, and the worst one as the peak.

Pipeline rank p (of pp, v model chunks each of L / (pp v) layers, m micro-batches) holds:

- the model states (``simulator.memory.states``, ZeRO-1 sharded over its D) of its L / pp layers; the first
  rank also the word embedding shard and the position embedding, the last the LM head (Megatron-LM keeps
  a copy of the tied weight on the last stage; pp = 1 holds it once) and the final LayerNorm;
- the activations of every pass whose backward has not run yet, at the worst moment of its order
  (``simulator.pipeline.order``): a forward of a chunk keeps L / (pp v) layers' activations
  (``simulator.memory.activations``) until its backward. The walk gives the published counts: 1F1B keeps
  min(pp - p, m) micro-batches on rank p, GPipe m, interleaved on the first rank pp (1 + (pp - 1) / (pp v))
  micro-batches' worth of its layers (Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.3;
  ``closed_forms.in_flight_micro_batches``; the tests hold the two together). The first virtual stage's
  passes also keep the embedding's dropout mask, the last's the final LayerNorm and output layer inputs
  and the fp32 logits (``simulator.memory.embedding``: Korthikanti's section 4.3, where the first stage
  keeps p micro-batches' embedding mask);
- the block's largest live workspace (``simulator.memory.liveness``), and under full (or per-op) recomputation
  one layer's activations while it is recomputed, as without pipelines.

Each tensor-parallel rank is sized (ranks alike in every count are sized once); a stage's breakdown is
that of its rank with the largest peak, and the arrangement's peak is the worst stage's. With pp = 1 this
is ``simulator.memory.training_memory``'s breakdown (ZeRO 0 and 1; pipelines do not run ZeRO-2/3).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.ir.schedule import Schedule
from simulator.memory.activations import layer_activations
from simulator.memory.breakdown import Item, MemoryBreakdown
from simulator.memory.embedding import embedding_activations, embedding_parameters
from simulator.memory.liveness import peak_live
from simulator.memory.setup import TrainingSetup
from simulator.memory.states import state_items
from simulator.memory.training import _skip  # the same buffers left out of the workspace
from simulator.pipeline.order import Action
from simulator.pipeline.stage_step import cached_order
from simulator.workloads.workload import Workload

__all__ = ["PipelineMemory", "RankParts", "rank_parts", "pipeline_memory", "peak_in_flight"]


@dataclass(frozen=True)
class RankParts:
    """What one tensor-parallel rank's memory is made of, before it is cut into stages."""

    layer_el: int
    """Parameters of one block on this rank."""
    embedding: tuple
    """(what, elements) of the word embedding shard, the learned positions' (a tuple: none when rotary), and the
    final norm."""
    layer_kept: tuple
    """One block's kept activations (``Kept``) under the recomputation."""
    recompute_extra: int
    """Full (or per-op) recomputation: one layer's activations less what it kept, while it is recomputed."""
    first_kept: tuple
    """What the first virtual stage's pass keeps besides its layers (the embedding's dropout mask)."""
    last_kept: tuple
    """What the last virtual stage's pass keeps besides its layers (LayerNorm, output layer inputs, logits)."""
    workspace: Item


def rank_parts(schedule: Schedule, setup: TrainingSetup, rank: int) -> RankParts:
    """The parts of ``rank`` of ``schedule`` (one block's fwd+bwd) under ``setup`` (its vocab and recompute)."""
    workload = Workload.from_dict(schedule.workload)
    buffers = schedule.buffers[rank]
    per_layer = sum(buffers[name].numel for name in workload.weights() if name in buffers)
    embedding = ()
    if setup.vocab is not None:  # tied or not, a stage holds one word matrix: the first the embedding, the last the head
        found = embedding_parameters(schedule, setup.vocab, workload)
        embedding = (found[0], tuple(found[1:-1]), found[-1])  # word, learned positions (none: rotary), final norm
    kept = tuple(layer_activations(schedule, rank, setup.recompute, workload, setup.fp8_recipe))
    extra = 0
    if setup.recompute in ("full", "selective-op"):
        whole = layer_activations(schedule, rank, "none", workload, setup.fp8_recipe)
        extra = sum(k.nbytes for k in whole) - sum(k.nbytes for k in kept)
    head = tuple(embedding_activations(schedule, rank, setup.vocab, workload)) if setup.vocab is not None else ()
    live = peak_live(schedule, rank, _skip(workload))
    largest = ", ".join(live.buffers[:3]) + (", ..." if len(live.buffers) > 3 else "")
    workspace = Item("workspace", f"{len(live.buffers)} buffers live at step {live.step} ({largest})", live.nbytes)
    return RankParts(per_layer, embedding, kept, extra, tuple(k for k in head if k.kind == "mask"),
                     tuple(k for k in head if k.kind != "mask"), workspace)


def peak_in_flight(actions: list[Action], stages: int, weight) -> dict[str, int]:
    """Walk one pipeline rank's ``actions``: at the moment its kept bytes peak (``weight(stage)`` bytes per
    forward until its backward), how many passes are in flight ("passes"), and how many of them are of the
    first and of the last virtual stage ("first", "last"; with one stage, the same passes)."""
    live = {"passes": 0, "first": 0, "last": 0}
    best, peak, total = dict(live), -1.0, 0.0
    for a in actions:
        step = 1 if a.kind == "F" else -1
        live["passes"] += step
        live["first"] += step if a.stage == 0 else 0
        live["last"] += step if a.stage == stages - 1 else 0
        total += step * weight(a.stage)
        if total > peak:
            best, peak = dict(live), total
    return best


_UNIFORM: dict[tuple, dict[str, int]] = {}
"""Walks of ranks whose passes all weigh the same, by (schedule, pp, micro-batches, v, rank): their counts do
not depend on the weights."""


def _in_flight(order, key: tuple, stages: int, layers_bytes: int, first_bytes: int, last_bytes: int) -> dict[str, int]:
    """``peak_in_flight`` of rank ``key[-1]`` of ``order`` (``key``: its schedule, pp, m, v, rank): walked with
    its weights where its passes differ (the first stage's embedding, the last's LM head), else counted once."""
    rank = key[-1]
    weights = {s: layers_bytes + (first_bytes if s == 0 else 0) + (last_bytes if s == stages - 1 else 0)
               for s in range(rank, stages, len(order))}
    if len(set(weights.values())) > 1:
        return peak_in_flight(order[rank], stages, weights.__getitem__)
    if key not in _UNIFORM:
        _UNIFORM[key] = peak_in_flight(order[rank], stages, lambda s: 1)
    return _UNIFORM[key]


@dataclass(frozen=True)
class PipelineMemory:
    """Every pipeline stage's memory breakdown; the arrangement's figures are the worst stage's."""

    stages: tuple[MemoryBreakdown, ...]

    @property
    def worst(self) -> int:
        """The stage with the largest peak (the first such)."""
        return max(range(len(self.stages)), key=lambda s: (self.stages[s].peak_bytes, -s))

    @property
    def breakdown(self) -> MemoryBreakdown:
        return self.stages[self.worst]

    peak_bytes = property(lambda self: self.breakdown.peak_bytes)
    params_bytes = property(lambda self: self.breakdown.params_bytes)
    grads_bytes = property(lambda self: self.breakdown.grads_bytes)
    optimizer_bytes = property(lambda self: self.breakdown.optimizer_bytes)
    activations_bytes = property(lambda self: self.breakdown.activations_bytes)
    workspace_bytes = property(lambda self: self.breakdown.workspace_bytes)

    def to_dict(self) -> dict:
        """The worst stage's ``MemoryBreakdown.to_dict``, its ``stage``, and ``stages``: each stage's part totals."""
        out = self.breakdown.to_dict()
        out["stage"] = self.worst
        out["stages"] = [{"stage": s, **{k: v for k, v in m.to_dict().items() if k != "items"}}
                         for s, m in enumerate(self.stages)]
        return out


def _stage_items(parts: RankParts, setup: TrainingSetup, dtype: str, pp: int, v: int, order, key: tuple) -> list[Item]:
    rank = key[-1]
    L, S = setup.layers, pp * v
    per = L // S
    first, last = rank == 0, rank == pp - 1
    groups = [(f"{L // pp} layers' weights", L // pp * parts.layer_el)]
    if parts.embedding:
        word, positions, norm = parts.embedding
        groups += ([word] if first or last else []) + (list(positions) if first else []) + ([norm] if last else [])
    items = state_items(groups, dtype, setup)
    layer = sum(k.nbytes for k in parts.layer_kept)
    head_first = sum(k.nbytes for k in parts.first_kept)
    head_last = sum(k.nbytes for k in parts.last_kept)
    n = _in_flight(order, key, S, per * layer, head_first, head_last)
    passes = n["passes"]
    items += [Item("activations", f"{k.what} (x {per * passes} layers: {passes} passes of {per} in flight)",
                   k.nbytes * per * passes) for k in parts.layer_kept]
    if parts.recompute_extra:
        items.append(Item("activations", "one layer's activations while it is recomputed", parts.recompute_extra))
    if n["first"]:
        items += [Item("activations", f"{k.what} (x {n['first']} in flight)", k.nbytes * n["first"])
                  for k in parts.first_kept]
    if n["last"]:
        items += [Item("activations", f"{k.what} (x {n['last']} in flight)" if n["last"] > 1 else k.what,
                       k.nbytes * n["last"]) for k in parts.last_kept]
    return items + [parts.workspace]


def pipeline_memory(parts: list[RankParts], setup: TrainingSetup, dtype: str, pp: int, schedule: str,
                    micro_batches: int, virtual_stages: int = 1) -> PipelineMemory:
    """Each stage's breakdown for tensor-parallel ranks ``parts`` (module docstring); ``setup.layers`` is the
    whole model's L and ``setup.dp`` the data-parallel degree."""
    order = cached_order(schedule, pp, micro_batches, virtual_stages)
    distinct = list(dict.fromkeys(parts))  # ranks alike in every count are sized once
    stages = []
    for rank in range(pp):
        best = None
        for p in distinct:
            items = _stage_items(p, setup, dtype, pp, virtual_stages, order,
                                 (schedule, pp, micro_batches, virtual_stages, rank))
            peak = sum(i.nbytes for i in items)
            if best is None or peak > best[0]:
                best = (peak, parts.index(p), items)
        stages.append(MemoryBreakdown(tuple(best[2]), best[1]))
    return PipelineMemory(tuple(stages))

