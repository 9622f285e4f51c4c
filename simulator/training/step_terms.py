"""A step's terms outside the layers' passes: optimizer, FSDP's passes, embedding/loss, FP8 cast, DP SM sharing.

``simulator.training.step.step_time`` adds them once the passes and the data-parallel reduction are timed:

- the optimizer's memory-bound passes (``simulator.training.optimizer_step``), over the ZeRO shard;
- ZeRO 2/3 under PyTorch's FSDP: its casts and divides, per micro-batch and per step
  (``simulator.training.fsdp_passes``);
- ``embedding_loss``: the embedding's and the cross entropy's share of the head passes, already in the passes'
  time and named here only for the breakdown (``simulator.training.embedding_loss``);
- under FP8, the layers' weights quantised once a step (``simulator.fp8_cost.weight_cast_s``);
- ``dp_overlap_sms``: the SMs the data-parallel collectives that ran under the compute held, which the GEMMs
  beside them lacked (``simulator.timing.sm_sharing``).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from simulator.compute import ComputeConfig, achievable_memory_bandwidth
from simulator.fp8_cost import weight_cast_s
from simulator.timing.sm_sharing import SmSharing
from simulator.training.arrangement import TrainingArrangement
from simulator.training.fsdp_passes import fsdp_terms
from simulator.training.optimizer_step import optimizer_terms
from simulator.training.options import StepOptions
from simulator.workloads.workload import Workload

__all__ = ["StepTerms", "step_terms"]


@dataclass(frozen=True)
class StepTerms:
    """Seconds per step of the work outside the layers' passes: each by name, and the sums the step adds."""

    terms: dict
    """By name, as ``StepTime.terms``: each optimizer pass, FSDP's, ``embedding_loss``, ``fp8_weight_cast``,
    ``dp_overlap_sms`` (the last two only where not zero)."""
    optimizer_s: float
    """The optimizer's passes."""
    shared_s: float
    """``dp_overlap_sms``: the data-parallel collectives' hold on SMs under the compute (0 without)."""
    cast_s: float
    """``fp8_weight_cast`` (0 without FP8 GEMMs)."""
    fsdp_s: float
    """PyTorch FSDP's passes, all micro-batches (0 unless ZeRO 2/3 run by it)."""


def step_terms(G: nx.DiGraph, gpu: str, config: ComputeConfig, a: TrainingArrangement, block: Workload,
               options: StepOptions, bt, micro_batches: int, params: float, grad_bytes: int,
               hidden: dict) -> StepTerms:
    """The terms of a step of ``a`` (module docstring) on ``gpu``, the first rank's: ``bt`` its ``BlockTimes``,
    ``params`` the parameters per tensor-parallel rank, ``grad_bytes`` per gradient element reduced, ``hidden``
    the communication per kind that ran under the compute (``StepTime.hidden``)."""
    device, dtype, m = G.nodes[gpu]["device"], options.dtype, micro_batches
    shard = a.dp if options.zero >= 1 else 1
    terms = optimizer_terms(params, shard, options.optimizer, dtype, grad_bytes, device, config.memory_efficiency,
                            options.torch_fsdp)
    opt = sum(terms.values())
    fsdp = fsdp_terms(params, a.dp, m, dtype, grad_bytes, options.zero, options.fsdp_version,
                      achievable_memory_bandwidth(device, config.memory_efficiency)) \
        if options.torch_fsdp else {}  # FSDP's casts and divides, per micro-batch
    terms.update(fsdp)
    terms["embedding_loss"] = m * bt.embedding_loss_s
    cast = weight_cast_s(block, bt.layer_el, options.layers, device, config.fp8_recipe, achievable_memory_bandwidth(
        device, config.memory_efficiency)) if config.fp8_gemms else 0.0
    if cast:  # FP8: each step quantises the layers' weights once (simulator.fp8_cost)
        terms["fp8_weight_cast"] = cast
    # The data-parallel collectives that ran under the compute held NCCL's channels on SMs the GEMMs then
    # lacked, as the tensor-parallel ones beside the dW GEMM do (``simulator.timing.sm_sharing``).
    sharing = SmSharing.on_graph(G, [gpu])
    shared = 0.0
    if sharing is not None:
        fraction = sharing.fractions[0]
        kind = "reduce_scatter" if a.dp > 1 and options.zero else "all_reduce"  # the gradients' reduction
        shared = (fraction.get(kind, 0.0) * hidden.get("dp", 0.0)
                  + fraction.get("all_gather", 0.0) * hidden.get("zero_gather", 0.0))
    if shared:
        terms["dp_overlap_sms"] = shared
    return StepTerms(terms, opt, shared, cast, sum(fsdp.values()))
