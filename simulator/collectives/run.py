"""Plan and run one collective on a ``FlowNetwork``: route geometry, delays, then the flows.

``plan_collective`` turns (kind, members, nbytes, root, algorithm) into a ``CollectivePlan``: the
algorithm and protocol used, the group's step latency and bandwidth read from the routes, and the
phases as flows between GPU nodes with the delay in front of each. ``run_collective`` runs that plan
as a simpy process. Time of a collective, contention-free, is exactly ``simulator.cost``'s closed form:
base latency + protocol start-up + per phase (steps x step latency + fill chunks x chunk / bandwidth
+ the flows' drain time).

Step latency of the group = the largest route latency among the pairs the algorithm uses, plus the
``step_latency_us`` parameter; bandwidth = the smallest route bottleneck among those pairs. Both are
exact for a homogeneous group (every used pair alike, e.g. GPUs on one NVSwitch); otherwise the
delays use the slowest pair, as a lock-step algorithm waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from simulator.collectives.choose import choose_algorithm
from simulator.collectives.params import CollectiveParams
from simulator.collectives.patterns import ALGORITHMS, KINDS, decompose, ring_orders
from simulator.collectives.protocols import choose_protocol, startup_s, wire_factor
from simulator.errors import InputError
from simulator.fairness import same_flows

__all__ = ["CollectivePlan", "plan_collective", "run_collective"]


@dataclass(frozen=True)
class CollectivePlan:
    """A collective ready to run: what was chosen and the timed flows (nodes, wire bytes)."""

    kind: str
    algorithm: str
    protocol: str
    members: tuple
    nbytes: float
    """nccl-tests S (see ``run_collective``)."""
    alpha_s: float
    """Step latency: slowest used route plus the per-step software latency, seconds."""
    bandwidth_Bps: float
    """Smallest route bottleneck among the used pairs, bytes/s."""
    wire_factor: float
    """Wire bytes per payload byte of the protocol."""
    rings: int
    """Concurrent rings of a ring or chain algorithm (NCCL channels across servers), else 1."""
    front_s: float
    """Base latency plus protocol start-up, charged once before the first phase."""
    phases: tuple[tuple[float, tuple[tuple[object, object, float, object], ...]], ...]
    """(delay in front, ((src node, dst node, wire bytes, via node or None), ...)) per phase."""
    groups: tuple[tuple[tuple[int, ...], ...], ...] = ()
    """Per phase, ``fairness.same_flows`` of its flows: the indices that run as one weighted flow."""


def _validate(kind, members, nbytes, root, algorithm) -> int:
    if kind not in KINDS:
        raise InputError(f"unknown collective kind {kind!r}; valid: {', '.join(KINDS)}")
    members = tuple(members)
    if not members:
        raise InputError(f"{kind}: members is empty; give the GPU nodes of the group in rank order")
    if len(set(members)) != len(members):
        raise InputError(f"{kind}: members repeat a node: {list(members)}")
    if kind == "send" and len(members) != 2:
        raise InputError(f"send: members must be [source, destination], got {len(members)} nodes")
    if not (isinstance(nbytes, (int, float)) and nbytes >= 0):
        raise InputError(f"{kind}: nbytes must be a number >= 0, got {nbytes!r}")
    if algorithm is not None and algorithm not in ALGORITHMS[kind]:
        raise InputError(f"{kind}: algorithm {algorithm!r} is not available; valid: {', '.join(ALGORITHMS[kind])}")
    n = len(members)
    if root is not None and not (isinstance(root, int) and 0 <= root < n):
        raise InputError(f"{kind}: root must be a group-local rank in 0..{n - 1}, got {root!r}")
    return n


def _servers(graph, members) -> list:
    nodes = graph.nodes
    return [nodes[m].get("server", 0) if m in nodes else 0 for m in members]


def plan_collective(net, kind: str, members, nbytes: float, root: int | None = None,
                    algorithm: str | None = None, params: CollectiveParams | None = None) -> CollectivePlan:
    """Validate, choose algorithm and protocol, and build the timed flows (see module docstring)."""
    n = _validate(kind, members, nbytes, root, algorithm)
    members = tuple(members)
    params = params or CollectiveParams.from_graph(net.graph)
    key = (kind, members, nbytes, root, algorithm, params)
    cached = net.cache.get(key)
    if cached is not None:
        return cached
    root = root or 0
    pairs_probe = decompose(kind, algorithm or ALGORITHMS[kind][0], n, 1.0, root)
    bandwidth = _bottleneck(net, members, pairs_probe)
    servers = _servers(net.graph, members)
    n_nodes = len(set(servers))
    if algorithm is None:
        algorithm = choose_algorithm(kind, n, nbytes, params, n_nodes=n_nodes, bandwidth_GBps=bandwidth / 1e9)
    family = "tree" if algorithm == "double_binary_tree" else "ring"
    protocol = params.protocol
    if protocol == "auto" and n == 1:
        protocol = "simple"  # nothing moves; any protocol costs the base latency alone
    elif protocol == "auto":
        protocol = choose_protocol(kind, family, n, nbytes, bandwidth / 1e9, n_nodes)
    orders = ring_orders(servers) if algorithm in ("ring", "chain") else None
    phases = decompose(kind, algorithm, n, nbytes, root, params.chunk_bytes, orders)
    wire = wire_factor(protocol, kind)
    via = _rail_vias(servers, orders)
    routes = {(a, b): net.route(members[a], members[b], _node(members, via.get((a, b))))
              for ph in phases for a, b, _ in ph.flows}
    hop = max((r.latency_s for r in routes.values()), default=0.0)
    bandwidth = min((r.bandwidth_Bps for r in routes.values()), default=bandwidth)
    step = params.step_latency_s
    timed = tuple(
        (
            (ph.steps - 1) * (hop + step) + step + ph.fill_chunks * wire * ph.chunk_bytes / bandwidth,
            tuple((members[a], members[b], wire * size, _node(members, via.get((a, b)))) for a, b, size in ph.flows),
        )
        for ph in phases
    )
    front = params.base_latency_s + (startup_s(protocol, nbytes, params) if n > 1 else 0.0)
    plan = CollectivePlan(kind, algorithm, protocol, members, nbytes, hop + step, bandwidth, wire,
                          len(orders) if orders else 1, front, timed, tuple(same_flows(f) for _, f in timed))
    net.cache[key] = plan
    return plan


def _node(members, rank):
    return None if rank is None else members[rank]


def _rail_vias(servers, orders) -> dict:
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


def _bottleneck(net, members, phases) -> float:
    """Smallest route bandwidth among the pairs of ``phases`` (inf for a 1-rank group)."""
    best = float("inf")
    for ph in phases:
        for a, b, _ in ph.flows:
            best = min(best, net.route(members[a], members[b]).bandwidth_Bps)
    return best


def _execute(env: simpy.Environment, net, plan: CollectivePlan):
    delay = plan.front_s
    for (phase_delay, flows), groups in zip(plan.phases, plan.groups):
        delay += phase_delay
        if delay:
            yield env.timeout(delay)
        delay = 0.0
        yield env.all_of(net.transfer_all(flows, groups))
    if delay:
        yield env.timeout(delay)
    return plan


def run_collective(env: simpy.Environment, net, kind: str, members, nbytes: float, root: int | None = None,
                   algorithm: str | None = None, params: CollectiveParams | None = None) -> simpy.Process:
    """Run one collective on ``net``; the process ends (value: the ``CollectivePlan``) when it completes.

    ``members``: the group's GPU node names in group-local rank order. ``nbytes`` follows nccl-tests'
    S: the buffer size for broadcast, reduce and all_reduce, the output size for all_gather, the input
    size for reduce_scatter, the message for send (members = [source, destination]). ``root`` is a
    group-local rank (broadcast, reduce; default 0). ``algorithm`` overrides the NCCL-like default
    (``choose_algorithm``); ``params`` defaults to ``CollectiveParams.from_graph(net.graph)``.
    The time includes the fixed per-collective software latency.
    """
    plan = plan_collective(net, kind, members, nbytes, root, algorithm, params)
    return env.process(_execute(env, net, plan))
