"""Collectives decomposed into point-to-point flows between group-local ranks, one algorithm each.

A decomposition is a list of ``Phase``s run one after another; the flows of a phase run concurrently
and each carries its route latency once. Pipelined algorithms are modelled at flow level, not chunk
by chunk: their hop flows all run at once (the pipeline's steady state) and the pipeline's fill and
the hop latencies beyond the first are a delay in front (``steps``, ``inter_steps``, ``fill_hops``: the
fill is charged hop by hop, each at its own route's rate, by ``run.plan_collective``). Sizes are
payload bytes; nccl-tests' S is the buffer for broadcast/reduce/all_reduce, the output for all_gather
and the input for reduce_scatter.

- ring (all_reduce, all_gather, reduce_scatter; Patarasuk & Yuan, JPDC 2009; NCCL's ring): n flows
  r -> r+1. all_reduce = reduce-scatter + all-gather: each flow 2(n-1)/n S, 2(n-1) steps;
  all_gather / reduce_scatter: each flow (n-1)/n S, n-1 steps.
- chain (broadcast, reduce): NCCL's pipelined ring from the root, root -> root+1 -> ... (reduce: the
  reverse, towards the root): n-1 hop flows of S, n-1 steps, the first chunk's trip over the first n-2
  hops as fill.
- Several rings (``orders``): NCCL runs one ring per channel, and across servers each channel leaves
  a server through a different NIC. Given R rank orders, ring and chain run R rings at once, each
  with S/R (``ring_orders`` builds NCCL-like orders; one order 0..n-1 inside a server).
- binomial_tree (broadcast, reduce, all_reduce = reduce + broadcast): ceil(log2 n) rounds of S-byte
  flows, not pipelined.
- double_binary_tree (all_reduce): NCCL's tree (``nccl_tree``): a chain inside each server and a
  double binary tree across servers, one tree pair per NIC channel; reduce up and broadcast down at
  once; its leaf-root-leaf path gives the steps and, less its last hop, the fill (chunks of S/(2k)).
- nvls (all_reduce on an NVLink SHARP switch; NCCL's NVLS, src/device/all_reduce.h ``runNvls``): the
  switch reduces (multimem.ld_reduce: every GPU's whole buffer is read, shard by shard) and multicasts
  (multimem.st: every GPU receives the whole result), so each GPU's link carries S (1 + 1/n) each way,
  at an NVLS efficiency (tuning.cc ``nvlsEfficiency``: Hopper 0.85, Blackwell 0.74; the Blackwell presets
  use 0.80, read off a published B200 server, ``topologies.presets``). Modelled as one
  flow per GPU to the next of S (1 + 1/n) / efficiency bytes, which loads every GPU's uplink and downlink
  by exactly that; one step.
- nvls_tree (all_reduce across servers of NVLink SHARP switches; NCCL's NVLS_TREE, ``nvls_tree``): NVLS
  inside each server as above, and the NIC heads of each rail joined across servers by a double binary
  tree carrying S/k per NIC; one NVLS step plus the tree's leaf-root-leaf path between servers, whose
  hops less the last are the fill (chunks of S/(2k)).
- direct (all_gather, reduce_scatter, all_reduce = reduce-scatter + all-gather): every rank sends
  S/n to every other rank, one step per phase.
- p2p (send): one flow of S from rank 0 to rank 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives.nccl_tree import nccl_tree
from simulator.collectives.nvls_tree import nvls_tree
from simulator.collectives.trees import binomial_rounds

__all__ = ["Phase", "ALGORITHMS", "KINDS", "decompose", "rail_vias", "ring_orders"]

KINDS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "send")

ALGORITHMS = {
    "broadcast": ("chain", "binomial_tree"),
    "reduce": ("chain", "binomial_tree"),
    "all_reduce": ("ring", "double_binary_tree", "binomial_tree", "direct", "nvls", "nvls_tree"),
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
    """Step latencies the phase costs (inside servers and between them); the flows' own route latency is one."""
    inter_steps: int = 0
    """How many of ``steps`` cross between servers (NCCL's nInterSteps): they pay the inter-server latency."""
    fill_hops: tuple[tuple[int, int], ...] = ()
    """Hops the first pipeline chunk crosses before the stream drains; each is charged chunk / its rate."""
    chunk_bytes: float = 0.0
    """Payload bytes of one pipeline chunk."""


def ring_orders(servers: list) -> list[tuple[int, ...]]:
    """NCCL-like ring orders for ranks whose servers are ``servers[rank]``.

    One order, 0..n-1, unless the group spans several servers with the same number k >= 2 of ranks on
    each: then k orders (NCCL's channels), each leaving and entering servers on its own NIC rail.
    Ring r walks the ranks of the 1st, 3rd, ... server (in rank order) from local index r to r-1, and
    those of the 2nd, 4th, ... backwards from r-1 to r, so every hop between servers joins GPUs of the
    same local index (the same rail): a route NIC to NIC, never through a spine or another GPU's NIC.
    Example, servers [0, 0, 1, 1]: orders (0, 1, 3, 2) and (1, 0, 2, 3).
    """
    by_server: dict = {}
    for rank, server in enumerate(servers):
        by_server.setdefault(server, []).append(rank)
    groups = list(by_server.values())
    k = len(groups[0]) if groups else 0
    if len(groups) < 2 or k < 2 or any(len(g) != k for g in groups):
        return [tuple(range(len(servers)))]
    orders = []
    for r in range(k):
        forward = [(r + i) % k for i in range(k)]
        backward = forward[::-1]
        orders.append(tuple(g[i] for j, g in enumerate(groups) for i in (forward if j % 2 == 0 else backward)))
    return orders


def rail_vias(servers, orders) -> dict:
    """For multi-ring orders: (src, dst) -> the rank in src's server with dst's local index, for hops
    between servers whose local indices differ, so the flow uses dst's NIC rail (NCCL's PXN)."""
    if not orders or len(orders) == 1:
        return {}
    by_server: dict = {}
    local = {}
    for rank, server in enumerate(servers):
        group = by_server.setdefault(server, [])
        local[rank] = len(group)
        group.append(rank)
    vias = {}
    for order in orders:
        for a, b in zip(order, order[1:] + order[:1]):
            for x, y in ((a, b), (b, a)):  # reduce chains run the hops backwards
                if servers[x] != servers[y] and local[x] != local[y]:
                    vias[(x, y)] = by_server[servers[x]][local[y]]
    return vias


def _ring(kind: str, n: int, nbytes: float, orders, servers) -> list[Phase]:
    twice = 2 if kind == "all_reduce" else 1
    per_flow = twice * (n - 1) / n * nbytes / len(orders)
    flows = tuple((order[i], order[(i + 1) % n], per_flow) for order in orders for i in range(n))
    # NCCL's nInterSteps (tuning.cc): a ring over N servers crosses between them N times per pass.
    n_nodes = len(set(servers))
    return [Phase(flows, twice * (n - 1), twice * (n_nodes - 1) if n_nodes > 1 else 0)]


def _chain(kind: str, n: int, nbytes: float, root: int, chunk, orders, servers) -> list[Phase]:
    share = float(nbytes) / len(orders)
    flows = []
    first = None
    for order in orders:
        start = order.index(root)
        path = [order[(start + i) % n] for i in range(n)]
        hops = list(zip(path[:-1], path[1:]))
        if kind == "reduce":
            hops = [(b, a) for a, b in reversed(hops)]
        flows.extend((a, b, share) for a, b in hops)
        first = first or hops
    inter = sum(1 for a, b in first if servers[a] != servers[b])
    return [Phase(tuple(flows), n - 1, inter, tuple(first[:-1]), chunk(share))]


def _binomial(kind: str, n: int, nbytes: float, root: int) -> list[Phase]:
    rounds = binomial_rounds(n, root)
    down = [Phase(tuple((a, b, float(nbytes)) for a, b in rnd), 1) for rnd in rounds]
    up = [Phase(tuple((b, a, float(nbytes)) for a, b in rnd), 1) for rnd in reversed(rounds)]
    return {"broadcast": down, "reduce": up, "all_reduce": up + down}[kind]


def _tree(nbytes: float, chunk, servers) -> list[Phase]:
    shape = nccl_tree(tuple(servers))
    flows = tuple((a, b, fraction * nbytes) for a, b, fraction in shape.flows)
    smallest = min(fraction for _, _, fraction in shape.flows)  # one tree's share of one channel
    return [Phase(flows, shape.intra_steps + shape.inter_steps, shape.inter_steps, shape.path[:-1],
                  chunk(smallest * nbytes))]


def _nvls_tree(nbytes: float, chunk, servers, efficiency: float) -> Phase:
    shape = nvls_tree(tuple(servers), efficiency)
    flows = tuple((a, b, fraction * nbytes) for a, b, fraction in shape.flows)
    k = len(servers) // len(set(servers))
    # One NVLS step on the switches, then the heads' round trip between servers.
    return Phase(flows, 1 + shape.inter_steps, shape.inter_steps, shape.path[:-1], chunk(nbytes / (2 * k)))


def _direct(kind: str, n: int, nbytes: float) -> list[Phase]:
    piece = nbytes / n
    exchange = Phase(tuple((a, b, piece) for a in range(n) for b in range(n) if a != b), 1)
    return [exchange, exchange] if kind == "all_reduce" else [exchange]


def decompose(kind: str, algorithm: str, n: int, nbytes: float, root: int = 0, chunk=None,
              orders=None, servers=None, nvls_efficiency: float = 0.85) -> list[Phase]:
    """The phases of ``algorithm`` for ``kind`` on ``n`` ranks; ``chunk(stream_bytes)`` sizes pipeline
    chunks (``CollectiveParams.chunk_bytes``); ``orders``: ring orders for ring and chain (default the
    one order 0..n-1); ``servers[rank]``: each rank's server (default all on one). Assumes arguments
    already validated; [] when n == 1."""
    if n == 1:
        return []
    chunk = chunk or (lambda stream: stream)
    orders = orders or [tuple(range(n))]
    servers = list(servers) if servers is not None else [0] * n
    if algorithm == "nvls":
        per_gpu = nbytes * (1 + 1 / n) / nvls_efficiency
        return [Phase(tuple((i, (i + 1) % n, per_gpu) for i in range(n)), 1)]
    if algorithm == "nvls_tree":
        return [_nvls_tree(nbytes, chunk, servers, nvls_efficiency)]
    phases = _phases(kind, algorithm, n, nbytes, root, chunk, orders, servers)
    # A one-step phase (binomial round, direct exchange, send) is an inter-server step if any flow is.
    return [Phase(ph.flows, 1, 1) if ph.steps == 1 and not ph.inter_steps
            and any(servers[a] != servers[b] for a, b, _ in ph.flows) else ph for ph in phases]


def _phases(kind, algorithm, n, nbytes, root, chunk, orders, servers) -> list[Phase]:
    if algorithm == "ring":
        return _ring(kind, n, nbytes, orders, servers)
    if algorithm == "chain":
        return _chain(kind, n, nbytes, root, chunk, orders, servers)
    if algorithm == "binomial_tree":
        return _binomial(kind, n, nbytes, root)
    if algorithm == "double_binary_tree":
        return _tree(nbytes, chunk, servers)
    if algorithm == "direct":
        return _direct(kind, n, nbytes)
    if algorithm == "p2p":
        return [Phase(((0, 1, float(nbytes)),), 1)]
    raise ValueError(f"unknown algorithm {algorithm!r}")
