"""Tree shapes over group-local ranks 0..n-1: binomial rounds and NCCL's double binary tree.

Binomial tree (the classic MPI broadcast, e.g. Thakur, Rabenseifner & Gropp, "Optimization of
Collective Communication Operations in MPICH", IJHPCA 2005): ranks are renumbered relative to the
root, v = (rank - root) mod n; in round k = 0, 1, ..., ceil(log2 n) - 1 every v < 2^k with
v + 2^k < n sends to v + 2^k. Reduce runs the same rounds backwards with the edges reversed.
Example, n = 6, root 0: round 0: 0->1; round 1: 0->2, 1->3; round 2: 0->4, 1->5.

Double binary tree (Sanders, Speck & Traeff, "Two-tree algorithms for full bandwidth broadcast,
reduction and scan", Parallel Computing 2009; NCCL 2.4, src/graph/trees.cc): tree 0 is NCCL's binary
tree where rank r with lowest set bit b has parent (r ^ b) | 2b (or r ^ b when that is >= n) and rank
0 is the root; tree 1 is its mirror r -> n-1-r for even n, its shift r -> r+1 (mod n) for odd n, so
that a rank that is interior in one tree is a leaf in the other. Each tree carries half the data.
Example, n = 8: tree 0 parents {1:2, 2:4, 3:2, 4:0, 5:6, 6:4, 7:6} (root 0); tree 1 parents
{0:1, 1:3, 2:1, 3:7, 4:5, 5:3, 6:5} (root 7).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["binomial_rounds", "btree_parents", "dbtree_parents", "tree_depth", "dbtree_port_load"]


def binomial_rounds(n: int, root: int = 0) -> list[list[tuple[int, int]]]:
    """Broadcast rounds of a binomial tree: a list of rounds, each a list of (src, dst) ranks."""
    rounds = []
    step = 1
    while step < n:
        rounds.append([((v + root) % n, (v + step + root) % n) for v in range(step) if v + step < n])
        step *= 2
    return rounds


@lru_cache(maxsize=256)
def btree_parents(n: int) -> tuple[int, ...]:
    """NCCL's binary tree over 0..n-1: ``parents[r]`` (-1 for the root, rank 0)."""
    parents = [-1] * n
    for rank in range(1, n):
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        parents[rank] = up if up < n else rank ^ bit
    return tuple(parents)


@lru_cache(maxsize=256)
def dbtree_parents(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two trees of the double binary tree as parent tuples (see the module docstring)."""
    first = btree_parents(n)
    if n % 2 == 0:
        image = [n - 1 - r for r in range(n)]  # mirror
    else:
        image = [(r + 1) % n for r in range(n)]  # shift
    second = [-1] * n
    for rank in range(n):
        parent = first[rank]
        second[image[rank]] = -1 if parent < 0 else image[parent]
    return first, tuple(second)


def tree_depth(parents: tuple[int, ...]) -> int:
    """Edges on the longest leaf-to-root path."""
    depth = 0
    for rank in range(len(parents)):
        d, r = 0, rank
        while parents[r] >= 0:
            r = parents[r]
            d += 1
        depth = max(depth, d)
    return depth


@lru_cache(maxsize=256)
def dbtree_port_load(n: int) -> int:
    """Most flows out of (or into) one rank when both trees reduce up and broadcast down at once.

    On a switch every flow of a rank shares its one port, so the slowest flow gets 1/load of it.
    """
    out = [0] * n
    inn = [0] * n
    for parents in dbtree_parents(n):
        for child, parent in enumerate(parents):
            if parent >= 0:  # child -> parent (reduce) and parent -> child (broadcast)
                out[child] += 1
                inn[parent] += 1
                out[parent] += 1
                inn[child] += 1
    return max(max(out), max(inn))
