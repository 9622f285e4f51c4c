"""Where a training arrangement's GPUs are: tensor-parallel groups inside servers first, then data parallelism.

GPUs are taken in the topology's order (``topologies.gpu_nodes``: by ``gpu_index``, servers one after
the other). Tensor-parallel group g (one model replica) gets GPUs g*tp .. g*tp + tp - 1, and inside it
the arrangement's own grid placement (``topologies.placement_indices``: linear, depth-major, ...) puts
rank r on the group's GPU number ``placement[r]``; so a group of 8 or fewer GPUs never leaves an 8-GPU
server, as Megatron-LM orders its groups (tensor-model-parallel ranks adjacent, data-parallel ranks
strided by tp). The data-parallel group of tensor-parallel rank r is the D GPUs that hold rank r in each
replica, in replica order.

With pipeline stages (pp > 1) the order is Megatron-LM's, tensor parallel fastest, then data parallel,
then pipeline: GPU number = stage x (D x tp) + replica x tp + slot, so a stage's D x tp GPUs are
consecutive and consecutive stages sit on different servers once D x tp fills one. Worked example,
P = 16, ``megatron tp=2 x pp=2 x dp=4``: stage 0 holds GPUs 0-7 (replica g on 2g, 2g + 1), stage 1 GPUs
8-15; TP rank 1 of replica 2 sends its activations from GPU 5 to GPU 13.

Worked example, P = 16 on two 8-GPU servers, ``megatron tp=4 x dp=4``: TP groups {0-3}, {4-7}, {8-11},
{12-15}; the DP group of TP rank 1 is GPUs {1, 5, 9, 13}, two in each server, so each DP all-reduce
crosses the network between the servers, and the four DP groups share the servers' NICs.

Example::

    >>> from topologies import load_topology
    >>> from simulator.algorithms.arrangement import Arrangement
    >>> a = TrainingArrangement(Arrangement("1d", (4,)), 4)
    >>> dp_groups(load_topology("dgx-a100:2"), a)[1]
    ['gpu1', 'gpu5', 'gpu9', 'gpu13']
"""

from __future__ import annotations

import weakref

import networkx as nx

from simulator.errors import InputError
from simulator.training.arrangement import TrainingArrangement
from topologies import gpu_nodes
from topologies.placement import placement_indices

__all__ = ["tp_group_gpus", "dp_groups"]


def _rank_slots(a: TrainingArrangement) -> list[int]:
    """Tensor-parallel rank -> GPU number inside its group, by the arrangement's grid placement."""
    grid = a.tensor.grid if len(a.tensor.grid) == 3 else None
    return placement_indices(a.tensor.placement, a.tp, a.tp, grid)


_GPUS: "weakref.WeakKeyDictionary[nx.DiGraph, tuple[int, list[str]]]" = weakref.WeakKeyDictionary()
"""``gpu_nodes`` per graph (with its node count, to notice a graph grown since): a search asks thousands of times."""


def _gpus(G: nx.DiGraph, a: TrainingArrangement) -> list[str]:
    known = _GPUS.get(G)
    if known is None or known[0] != G.number_of_nodes():
        known = _GPUS[G] = (G.number_of_nodes(), gpu_nodes(G))
    gpus = known[1]
    if a.gpus > len(gpus):
        raise InputError(f"{a.label} needs {a.gpus} GPUs; the topology {G.graph.get('name', '?')} has {len(gpus)}")
    return gpus


def tp_group_gpus(G: nx.DiGraph, a: TrainingArrangement, group: int = 0, stage: int = 0) -> list[str]:
    """The GPU node of each tensor-parallel rank of replica ``group``'s pipeline stage ``stage`` (a placement
    list for ``simulate``)."""
    gpus = _gpus(G, a)
    if not 0 <= group < a.dp:
        raise ValueError(f"replica {group} is out of range 0..{a.dp - 1}")
    if not 0 <= stage < a.pp:
        raise ValueError(f"pipeline stage {stage} is out of range 0..{a.pp - 1}")
    base = stage * a.dp * a.tp + group * a.tp
    return [gpus[base + slot] for slot in _rank_slots(a)]


def dp_groups(G: nx.DiGraph, a: TrainingArrangement, stage: int = 0) -> list[list[str]]:
    """Per tensor-parallel rank r, its data-parallel group on pipeline stage ``stage``: the GPU holding rank r
    of that stage in each replica."""
    gpus = _gpus(G, a)
    base = stage * a.dp * a.tp
    return [[gpus[base + g * a.tp + slot] for g in range(a.dp)] for slot in _rank_slots(a)]
