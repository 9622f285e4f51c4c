"""NCCL's tree all_reduce: a chain inside each server, a double binary tree across servers, per NIC channel.

How NCCL builds it (NVIDIA/nccl): ``src/graph/connect.cc`` (``connectTrees``, ``ncclTopoPreset``) makes,
for every channel, an intra-server chain in the order of that channel's ring inside the server (each
GPU's tree parent is the previous GPU of the chain, the chain's head is the GPU whose NIC the channel
uses); ``src/graph/trees.cc`` (``ncclGetDtree``, ``ncclGetBtree``) joins the servers' heads by two
complementary binary trees, and ``connectTrees`` gives half of the channels the first tree and half the
second (``ncclTopoPostset`` duplicates the channels for it), so every NIC carries one channel of each
tree. An all_reduce reduces up (chain to head, head up the server tree) and broadcasts down again, both
pipelined at once (``src/device/all_reduce.h``, ``runTreeUpDown``/``runTreeSplit``). Its latency in
NCCL's tuning model (``src/graph/tuning.cc``, ``ncclTopoTuneModel``) is
2 ((ranks per server - 1) intra latency + log2(servers) inter latency), which is this shape's depth.

What is modelled (``nccl_tree``): with k ranks on each of several servers (the same k on each), k
channels, channel c on rail c: the chain of every server runs from its local rank c (the head, next to
NIC c) through c+1, ..., c-1, and the heads of rail c are joined by both binary trees
(``trees.dbtree_parents`` over the servers), each carrying half of the channel's S/k; the chain carries
the whole S/k (both trees' halves use it). So a NIC carries about 2 S/k each way, as in a ring, and no
flow between servers leaves its rail. Otherwise (one server, or uneven servers) one channel: the chain
of each server in rank order from its first rank, the servers' first ranks joined by both trees. On one
server the tree is a chain 0 -> 1 -> ... -> n-1 carrying S up and S down. Across servers the flows take no
less than NCCL's per-channel cap allows (``channel_caps``: on two servers the links alone would let the
tree run at twice the ring's network rate, which DGX-class runs do not show).

Example, servers [0, 0, 1, 1] (k = 2): channel 0 chains 0-1 and 2-3 (heads 0 and 2), channel 1 chains
1-0 and 3-2 (heads 1 and 3); the trees over 2 servers join heads 0-2 (channel 0) and 1-3 (channel 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from simulator.collectives.trees import dbtree_parents

__all__ = ["TreeShape", "nccl_tree"]


@dataclass(frozen=True)
class TreeShape:
    """Flows of a tree all_reduce and the path its pipeline fills along."""

    flows: tuple[tuple[int, int, float], ...]
    """(src, dst, fraction of S) for every directed edge used, up and down, merged where equal."""
    path: tuple[tuple[int, int], ...]
    """The longest leaf -> root -> leaf hop sequence of channel 0 (the pipeline's length)."""
    intra_steps: int
    """Hops of ``path`` inside a server."""
    inter_steps: int
    """Hops of ``path`` between servers."""


def _channels(servers: tuple[int, ...]) -> list[list[list[int]]]:
    """Per channel, per server (numbered by first appearance), that server's chain of ranks, head first."""
    groups: dict[int, list[int]] = {}
    for rank, server in enumerate(servers):
        groups.setdefault(server, []).append(rank)
    chains = [groups[s] for s in sorted(groups)]
    k = len(chains[0])
    if len(chains) < 2 or k < 2 or any(len(c) != k for c in chains):
        return [chains]
    return [[[chain[(c + i) % k] for i in range(k)] for chain in chains] for c in range(k)]


def _path_to_root(parents: tuple[int, ...], node: int) -> list[int]:
    path = [node]
    while parents[path[-1]] >= 0:
        path.append(parents[path[-1]])
    return path


@lru_cache(maxsize=256)
def nccl_tree(servers: tuple[int, ...]) -> TreeShape:
    """NCCL's tree over ranks whose servers are ``servers[rank]`` (see the module docstring)."""
    channels = _channels(servers)
    share = 1.0 / len(channels)
    n_nodes = len(channels[0])
    trees = dbtree_parents(n_nodes) if n_nodes > 1 else ((-1,), (-1,))
    load: dict[tuple[int, int], float] = {}

    def add(a: int, b: int, fraction: float) -> None:
        load[(a, b)] = load.get((a, b), 0.0) + fraction

    for chains in channels:
        for chain in chains:
            for parent, child in zip(chain, chain[1:]):  # reduce up the chain, broadcast down it
                add(child, parent, share)
                add(parent, child, share)
        for parents in trees:
            for child, parent in enumerate(parents):
                if parent >= 0:
                    add(chains[child][0], chains[parent][0], share / 2)
                    add(chains[parent][0], chains[child][0], share / 2)
    # The deepest server of either tree, its chain's tail up to the root server's head, and back down.
    chains = channels[0]
    deepest = max(((len(_path_to_root(p, s)), t, s) for t, p in enumerate(trees) for s in range(n_nodes)))
    servers_up = _path_to_root(trees[deepest[1]], deepest[2])
    up = list(reversed(chains[servers_up[0]]))[:-1] + [chains[s][0] for s in servers_up]
    hops = list(zip(up, up[1:]))
    path = tuple(hops + [(b, a) for a, b in reversed(hops)])
    inter = sum(1 for a, b in path if servers[a] != servers[b])
    return TreeShape(tuple((a, b, f) for (a, b), f in load.items()), path, len(path) - inter, inter)
