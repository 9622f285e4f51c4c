"""The NCCL-like default algorithm for a collective, by kind, group size and message size.

NCCL implements broadcast, reduce, all_gather and reduce_scatter with rings only (a pipelined chain
from the root for broadcast/reduce), so those defaults are fixed: chain, chain, ring, ring; a send is
one point-to-point flow. For all_reduce NCCL chooses between its ring and its double binary tree by
its tuning model (src/graph/tuning.cc): the tree's latency grows with log2 of the number of nodes,
the ring's with the number of ranks, and the ring has more bandwidth. We make the same comparison
with NCCL's published constants (``protocols.nccl_model_time_us``, each family with its best
protocol). On one 8-GPU NVSwitch server the ring wins except near 1-2 MiB (tree/LL128 there);
across servers the tree wins for small and medium messages (16 DGX A100s: up to 8 MiB), as in NCCL.
NCCL's ``treeCorrectionFactor`` (a medium-size fudge of its tree bandwidth) is left out, so the tree
is chosen in a somewhat wider window than NCCL's own table would choose it.
"""

from __future__ import annotations

from simulator.collectives.patterns import ALGORITHMS
from simulator.collectives.protocols import nccl_model_time_us

__all__ = ["choose_algorithm", "DEFAULT_BANDWIDTH_GBPS"]

DEFAULT_BANDWIDTH_GBPS = 230.0
"""Group bandwidth assumed when the caller gives none (A100 NVSwitch, topologies.rates)."""


def choose_algorithm(kind: str, n: int, nbytes: float, params=None, *, n_nodes: int = 1,
                     bandwidth_GBps: float | None = None) -> str:
    """NCCL-like default algorithm for ``kind`` on ``n`` ranks (``n_nodes`` servers) and ``nbytes``.

    ``params`` (a ``CollectiveParams``) is accepted for symmetry with ``run_collective``; the rule uses
    NCCL's own constants only. ``bandwidth_GBps`` is the group's bottleneck bandwidth.
    """
    if kind not in ALGORITHMS:
        raise ValueError(f"unknown collective kind {kind!r}; valid: {', '.join(ALGORITHMS)}")
    if kind != "all_reduce" or n <= 2:
        return ALGORITHMS[kind][0]
    bw = DEFAULT_BANDWIDTH_GBPS if bandwidth_GBps is None else bandwidth_GBps

    def best(family: str) -> float:
        return min(nccl_model_time_us(kind, family, p, n, nbytes, bw, n_nodes) for p in ("ll", "ll128", "simple"))

    return "double_binary_tree" if best("tree") < best("ring") else "ring"
