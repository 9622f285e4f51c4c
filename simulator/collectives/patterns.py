"""Collectives decomposed into point-to-point flows between group-local ranks, one algorithm each.

A decomposition is a list of ``Phase``s run one after another; the flows of a phase run concurrently
and each carries its route latency once. Pipelined algorithms are modelled at flow level, not chunk
by chunk: their hop flows all run at once (the pipeline's steady state) and the pipeline's fill and
the hop latencies beyond the first are a delay in front (``steps``, ``fill_chunks``). Sizes are
payload bytes; nccl-tests' S is the buffer for broadcast/reduce/all_reduce, the output for all_gather
and the input for reduce_scatter.

- ring (all_reduce, all_gather, reduce_scatter; Patarasuk & Yuan, JPDC 2009; NCCL's ring): n flows
  r -> r+1. all_reduce = reduce-scatter + all-gather: each flow 2(n-1)/n S, 2(n-1) steps;
  all_gather / reduce_scatter: each flow (n-1)/n S, n-1 steps.
- chain (broadcast, reduce): NCCL's pipelined ring from the root, root -> root+1 -> ... (reduce: the
  reverse, towards the root): n-1 hop flows of S, n-1 steps, n-2 chunk times of fill.
- binomial_tree (broadcast, reduce, all_reduce = reduce + broadcast): ceil(log2 n) rounds of S-byte
  flows, not pipelined.
- double_binary_tree (all_reduce): both trees reduce S/2 up and broadcast S/2 down at once; with
  depth d, 2d steps and 2d-1 chunk times of fill.
- direct (all_gather, reduce_scatter, all_reduce = reduce-scatter + all-gather): every rank sends
  S/n to every other rank, one step per phase.
- p2p (send): one flow of S from rank 0 to rank 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives.trees import binomial_rounds, dbtree_parents, tree_depth

__all__ = ["Phase", "ALGORITHMS", "KINDS", "decompose"]

KINDS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "send")

ALGORITHMS = {
    "broadcast": ("chain", "binomial_tree"),
    "reduce": ("chain", "binomial_tree"),
    "all_reduce": ("ring", "double_binary_tree", "binomial_tree", "direct"),
    "all_gather": ("ring", "direct"),
    "reduce_scatter": ("ring", "direct"),
    "send": ("p2p",),
}
"""Algorithms each kind supports, the NCCL-like default first."""


@dataclass(frozen=True)
class Phase:
    """Concurrent flows plus the latency and pipeline fill charged in front of them."""

    flows: tuple[tuple[int, int, float], ...]
    """(source rank, destination rank, payload bytes), group-local ranks."""
    steps: int
    """Step latencies the phase costs; the flows' own route latency is one of them."""
    fill_chunks: int = 0
    """Pipeline chunk times charged in front of the flows."""
    chunk_bytes: float = 0.0
    """Payload bytes of one pipeline chunk."""


def _ring(kind: str, n: int, nbytes: float) -> list[Phase]:
    per_flow = (2 if kind == "all_reduce" else 1) * (n - 1) / n * nbytes
    steps = (2 if kind == "all_reduce" else 1) * (n - 1)
    return [Phase(tuple((r, (r + 1) % n, per_flow) for r in range(n)), steps)]


def _chain(kind: str, n: int, nbytes: float, root: int, chunk) -> list[Phase]:
    order = [(root + i) % n for i in range(n)]
    hops = list(zip(order[:-1], order[1:]))
    if kind == "reduce":
        hops = [(b, a) for a, b in reversed(hops)]
    return [Phase(tuple((a, b, float(nbytes)) for a, b in hops), n - 1, n - 2, chunk(nbytes))]


def _binomial(kind: str, n: int, nbytes: float, root: int) -> list[Phase]:
    rounds = binomial_rounds(n, root)
    down = [Phase(tuple((a, b, float(nbytes)) for a, b in rnd), 1) for rnd in rounds]
    up = [Phase(tuple((b, a, float(nbytes)) for a, b in rnd), 1) for rnd in reversed(rounds)]
    return {"broadcast": down, "reduce": up, "all_reduce": up + down}[kind]


def _dbtree(n: int, nbytes: float, chunk) -> list[Phase]:
    half = nbytes / 2
    flows = []
    depth = 0
    for parents in dbtree_parents(n):
        depth = max(depth, tree_depth(parents))
        for child, parent in enumerate(parents):
            if parent >= 0:
                flows.append((child, parent, half))
                flows.append((parent, child, half))
    return [Phase(tuple(flows), 2 * depth, 2 * depth - 1, chunk(half))]


def _direct(kind: str, n: int, nbytes: float) -> list[Phase]:
    piece = nbytes / n
    exchange = Phase(tuple((a, b, piece) for a in range(n) for b in range(n) if a != b), 1)
    return [exchange, exchange] if kind == "all_reduce" else [exchange]


def decompose(kind: str, algorithm: str, n: int, nbytes: float, root: int = 0, chunk=None) -> list[Phase]:
    """The phases of ``algorithm`` for ``kind`` on ``n`` ranks; ``chunk(stream_bytes)`` sizes pipeline
    chunks (``CollectiveParams.chunk_bytes``). Assumes arguments already validated; [] when n == 1."""
    if n == 1:
        return []
    chunk = chunk or (lambda stream: stream)
    if algorithm == "ring":
        return _ring(kind, n, nbytes)
    if algorithm == "chain":
        return _chain(kind, n, nbytes, root, chunk)
    if algorithm == "binomial_tree":
        return _binomial(kind, n, nbytes, root)
    if algorithm == "double_binary_tree":
        return _dbtree(n, nbytes, chunk)
    if algorithm == "direct":
        return _direct(kind, n, nbytes)
    if algorithm == "p2p":
        return [Phase(((0, 1, float(nbytes)),), 1)]
    raise ValueError(f"unknown algorithm {algorithm!r}")
