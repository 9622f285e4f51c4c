"""Plan and run one collective on a ``FlowNetwork``: route geometry, delays, then the flows.

``plan_collective`` turns (kind, members, nbytes, root, algorithm) into a ``CollectivePlan``: the
algorithm and protocol used, the group's step latency and bandwidth read from the routes, and the
phases as flows between GPU nodes with the delay in front of each. ``run_collective`` runs that plan
as a simpy process. Time of a collective, contention-free, is exactly ``simulator.collectives.closed_form``'s closed form:
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
from simulator.collectives.patterns import ALGORITHMS, KINDS, Phase, decompose, ring_orders
from simulator.collectives.protocols import choose_protocol, startup_s, wire_factor
from simulator.errors import InputError
from simulator.network.flow_groups import same_flows

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
    """Per phase, ``flow_groups.same_flows`` of its flows: the indices that run as one weighted flow."""


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
    cache = net.cache
    cached = cache.get(key)
    if cached is not None:
        return cached
    root = root or 0
    nbytes = nbytes * params.bytes_factor(kind)  # the kind's work in bytes (params: kind factors)
    route = net.route
    probe = _cached(cache, ("probe", kind, algorithm, n, root), _probe_pairs, kind, algorithm, n, root)
    bandwidth = _cached(cache, ("probe_Bps", members, probe), _probe_bandwidth, route, members, probe)
    n_nodes, pattern = _cached(cache, ("servers", members), _server_pattern, net.graph, members)
    if algorithm is None:
        algorithm = choose_algorithm(kind, n, nbytes, params, n_nodes=n_nodes, bandwidth_GBps=bandwidth / 1e9)
    family = "tree" if algorithm == "double_binary_tree" else "ring"
    protocol = params.protocol
    if protocol == "auto" and n == 1:
        protocol = "simple"  # nothing moves; any protocol costs the base latency alone
    elif protocol == "auto":
        protocol = choose_protocol(kind, family, n, nbytes, bandwidth / 1e9, n_nodes)
    shape = _cached(cache, ("shape", kind, algorithm, n, nbytes, root, params, pattern), _shape,
                    kind, algorithm, n, nbytes, root, params, pattern)
    wire = wire_factor(protocol, kind)
    hop, used_Bps = _cached(cache, ("hops", members, shape.pairs), _hop_and_bandwidth, route, members, shape.pairs)
    bandwidth = bandwidth if used_Bps is None else used_Bps
    step = params.step_latency_s
    timed = tuple(
        (
            (ph.steps - 1) * (hop + step) + step + ph.fill_chunks * wire * ph.chunk_bytes / bandwidth,
            tuple((members[a], members[b], wire * size, None if v is None else members[v]) for a, b, size, v in flows),
        )
        for ph, flows in zip(shape.phases, shape.flows)
    )
    front = params.base_latency_s + (startup_s(protocol, nbytes, params) if n > 1 else 0.0)
    plan = CollectivePlan(kind, algorithm, protocol, members, nbytes, hop + step, bandwidth, wire,
                          shape.rings, front, timed, shape.groups)
    cache[key] = plan
    return plan


# What a plan needs from its group's shape alone (sizes, roots, which ranks share a server), computed
# once per shape: the many groups of a grid that differ only in their GPUs share it.

@dataclass(frozen=True)
class _Shape:
    phases: tuple[Phase, ...]
    flows: tuple[tuple[tuple[int, int, float, int | None], ...], ...]
    """Per phase: (src rank, dst rank, payload bytes, via rank or None)."""
    groups: tuple[tuple[tuple[int, ...], ...], ...]
    """Per phase: ``same_flows`` of its flows (ranks stand for distinct nodes, so equal here is equal there)."""
    pairs: tuple[tuple[int, int, int | None], ...]
    """Every (src, dst, via) used, once, in order of first use."""
    rings: int


def _cached(cache: dict, key, make, *args):
    value = cache.get(key)
    if value is None:
        value = cache[key] = make(*args)
    return value


def _probe_pairs(kind, algorithm, n, root) -> tuple[tuple[int, int], ...]:
    """The pairs of the algorithm as given (or the kind's default) with one ring: whose routes'
    bottleneck informs the NCCL-like choices."""
    phases = decompose(kind, algorithm or ALGORITHMS[kind][0], n, 1.0, root)
    return tuple(dict.fromkeys((a, b) for ph in phases for a, b, _ in ph.flows))


def _probe_bandwidth(route, members, probe) -> float:
    return min((route(members[a], members[b]).bandwidth_Bps for a, b in probe), default=float("inf"))


def _hop_and_bandwidth(route, members, pairs) -> tuple[float, float | None]:
    """Largest route latency and smallest bottleneck of the (src, dst, via) ``pairs`` (None: no pairs)."""
    routes = [route(members[a], members[b], None if v is None else members[v]) for a, b, v in pairs]
    return max((r.latency_s for r in routes), default=0.0), min((r.bandwidth_Bps for r in routes), default=None)


def _server_pattern(graph, members) -> tuple[int, tuple[int, ...]]:
    """Servers in the group, and each member's server numbered by first appearance (0, 0, 1, 1, ...)."""
    labels: dict = {}
    pattern = tuple(labels.setdefault(server, len(labels)) for server in _servers(graph, members))
    return len(labels), pattern


def _shape(kind, algorithm, n, nbytes, root, params, pattern) -> _Shape:
    orders = ring_orders(list(pattern)) if algorithm in ("ring", "chain") else None
    phases = tuple(decompose(kind, algorithm, n, nbytes, root, params.chunk_bytes, orders))
    via = _rail_vias(pattern, orders)
    flows = tuple(tuple((a, b, size, via.get((a, b))) for a, b, size in ph.flows) for ph in phases)
    pairs = tuple(dict.fromkeys((a, b, v) for phase in flows for a, b, _, v in phase))
    return _Shape(phases, flows, tuple(same_flows(f) for f in flows), pairs, len(orders) if orders else 1)


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


def _execute(env: simpy.Environment, net, plan: CollectivePlan):
    delay = plan.front_s
    for (phase_delay, flows), groups in zip(plan.phases, plan.groups):
        delay += phase_delay
        if delay:
            yield env.timeout(delay)
        delay = 0.0
        yield _all_arrived(env, net.transfer_all(flows, groups))
    if delay:
        yield env.timeout(delay)
    return plan


def _all_arrived(env: simpy.Environment, events: list) -> simpy.Event:
    """An event that succeeds once all ``events`` have been processed: ``env.all_of`` without its value
    (which nothing reads), for events that cannot fail; it is scheduled at the very point all_of's is."""
    done = env.event()
    left = len(events)
    if not left:
        return done.succeed()

    def arrived(_event) -> None:
        nonlocal left
        left -= 1
        if not left:
            done.succeed()

    for event in events:
        if event.processed:
            arrived(event)
        else:
            event.callbacks.append(arrived)
    return done


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
