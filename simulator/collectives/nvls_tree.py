"""NCCL's NVLS tree all_reduce: NVLink SHARP inside each server, a double binary tree of NIC heads across.

How NCCL runs it (NVIDIA/nccl): ``src/device/all_reduce.h``, ``RunWorkColl<ncclFuncAllReduce, ...,
NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE>``, splits each channel's threads four ways, all pipelined at once:
*scatter* (every GPU writes its whole buffer into the switch's multicast memory, one part per head),
*reduce* (each head reads its part reduced by the switch, adds what its children servers send over the
network and sends the sum to its parent server), *broadcast* (each head takes the result from its parent
and sends it on to its children and back into the switch's multicast memory) and *gather* (every GPU
reads the whole result). ``src/graph/connect.cc`` (``connectNvls``) makes every GPU with a NIC a head
(one head per NIC rail) and joins the heads of one rail across servers by NCCL's two complementary
binary trees (``trees.dbtree_parents``), half of the channels on each. NCCL enables it for all_reduce
on two servers or more whose GPUs share an NVLink SHARP switch (tuning.cc disables it on one server;
NVLS itself needs two GPUs or more per server), Simple protocol only. Its latency in NCCL's tuning model
is the NVLS latency (25 us) plus 2 log2(servers) network latencies (tuning.cc, ``NCCL_ALGO_NVLS_TREE``).

What is modelled (``nvls_tree``): k ranks on each of several servers (the same k >= 2 on each). Inside a
server each GPU's NVLink carries what NVLS moves on one switch (``patterns``' nvls: S (1 + 1/k) each
way, at NCCL's NVLS efficiency), as one flow to the next GPU of its server; between servers, rail c's
heads (local rank c of every server) exchange their part S/k up and down both trees, S/(2k) per tree
and direction, so a NIC carries S/k each way on two servers (half a ring's 2 (n-1)/n S/k: NCCL's
tuning model doubles the NVLS tree's network bandwidth on two servers for this reason), the flows taking
no less than NCCL's per-channel NVLS tree cap allows (``channel_caps``). The pipeline fills along the
deepest head's path up to the root server and back down (rail 0), one chunk per hop; on top of that
NCCL's loops of chunks cost a fill of their own (``nvls_tree_fill``), and each network step NCCL's
20.9 us (``CollectiveParams.inter_step_latency_for_s``).

Example, servers [0, 0, 1, 1] (k = 2): NVLS flows 0->1, 1->0, 2->3, 3->2 of S (1 + 1/2) / e each;
rail 0 joins heads 0 and 2, rail 1 heads 1 and 3, each pair both ways with S/4 per tree.
"""

from __future__ import annotations

from functools import lru_cache

from simulator.collectives.nccl_tree import TreeShape
from simulator.collectives.trees import dbtree_parents
from simulator.errors import InputError

__all__ = ["nvls_tree", "nvls_tree_fits"]


def _servers_of(servers: tuple[int, ...]) -> list[list[int]]:
    """Each server's ranks in rank order, servers numbered by first appearance."""
    groups: dict[int, list[int]] = {}
    for rank, server in enumerate(servers):
        groups.setdefault(server, []).append(rank)
    return list(groups.values())


def nvls_tree_fits(servers) -> bool:
    """Whether NCCL would run its NVLS tree over ranks on ``servers``: two servers or more, the same
    number (two or more) of ranks on each."""
    groups = _servers_of(tuple(servers))
    return len(groups) >= 2 and len(groups[0]) >= 2 and all(len(g) == len(groups[0]) for g in groups)


@lru_cache(maxsize=256)
def nvls_tree(servers: tuple[int, ...], efficiency: float) -> TreeShape:
    """The NVLS tree's flows over ranks whose servers are ``servers[rank]`` (module docstring); flow sizes
    are fractions of S, NVLink flows already divided by the NVLS ``efficiency``."""
    if not nvls_tree_fits(servers):
        raise InputError("nvls_tree needs two servers or more with the same number (two or more) of the "
                         f"group's ranks on each; this group has {[len(g) for g in _servers_of(servers)]} "
                         "ranks per server (use ring or double_binary_tree)")
    groups = _servers_of(servers)
    k, n_nodes = len(groups[0]), len(groups)
    flows: dict[tuple[int, int], float] = {}
    for ranks in groups:  # NVLS on each server's switch: S (1 + 1/k) each way per GPU
        for i, rank in enumerate(ranks):
            flows[(rank, ranks[(i + 1) % k])] = (1 + 1 / k) / efficiency
    trees = dbtree_parents(n_nodes)
    for c in range(k):  # rail c: the heads of local rank c, both trees, S/(2k) each way per tree
        for parents in trees:
            for child, parent in enumerate(parents):
                if parent >= 0:
                    for a, b in ((groups[child][c], groups[parent][c]), (groups[parent][c], groups[child][c])):
                        flows[(a, b)] = flows.get((a, b), 0.0) + 1 / (2 * k)
    path = _deepest_round_trip(trees, [g[0] for g in groups])
    return TreeShape(tuple((a, b, f) for (a, b), f in flows.items()), path, 0, len(path))


def _deepest_round_trip(trees, heads: list[int]) -> tuple[tuple[int, int], ...]:
    """Rail 0's heads from the deepest server of either tree up to its root, and back down."""
    best: list[int] = []
    for parents in trees:
        for server in range(len(parents)):
            up = [server]
            while parents[up[-1]] >= 0:
                up.append(parents[up[-1]])
            if len(up) > len(best):
                best = up
    hops = [(heads[a], heads[b]) for a, b in zip(best, best[1:])]
    return tuple(hops + [(b, a) for a, b in reversed(hops)])
