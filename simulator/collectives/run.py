"""Plan and run one collective on a ``FlowNetwork``: route geometry, delays, then the flows.

``plan_collective`` turns (kind, members, nbytes, root, algorithm) into a ``CollectivePlan``: it builds
every NCCL-enabled candidate (algorithm x protocol, ``choose.candidates``), times each as it will be
simulated (``plan_time_s``) and keeps the one ``choose.settle`` picks; the choice is reused for every
group whose routes are the same up to link names (``equivalence.route_signature``), which is exact.
A plan holds the algorithm and protocol, the group's step latency and bandwidth read from the routes,
the phases as flows with the delay in front of each (the flows in group-local ranks, shared by every
group of one shape, and named as GPU nodes when the phase starts), the least time of its flows (NCCL's
per-channel cap of a tree across servers, ``channel_caps``) and the time the choice gave it.
``run_collective`` runs that plan as a simpy process. Time of a collective, contention-free, is
``plan_time_s``: the front (base latency, protocol latency, start-up) + per phase (``phase_delay_s``:
its steps inside servers at the slowest intra-server route's latency, its steps between servers at the
slowest inter-server route's plus NCCL's network step latency, the pipeline fill hop by hop at each
hop's rate; NCCL's NVLS tree also its loops' fill, ``nvls_tree_fill``) + the flows' drain, the flows
taking no less than the plan's floor. For a homogeneous group
(GPUs on one NVSwitch) it is ``closed_form``'s table exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import simpy

from simulator.collectives.channel_caps import tree_floor_s
from simulator.collectives.choose import candidates, settle
from simulator.collectives.drain import phase_drain_s
from simulator.collectives.equivalence import networked_links, route_signature
from simulator.collectives.nvls_tree_fill import nvls_tree_fill_s
from simulator.collectives.params import CollectiveParams
from simulator.collectives.patterns import ALGORITHMS, KINDS, Phase, decompose, rail_vias, ring_orders
from simulator.collectives.protocols import front_s, plan_wire_factor
from simulator.errors import InputError
from simulator.network.flow_groups import same_flows

__all__ = ["CollectivePlan", "phase_delay_s", "plan_collective", "plan_time_s", "run_collective", "server_pattern"]


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
    delays: tuple[float, ...]
    """Per phase, the delay in front of its flows."""
    local_flows: tuple[tuple[tuple[int, int, float, int | None], ...], ...]
    """Per phase, its flows as (src, dst, payload bytes, via or None) in group-local ranks: shared by every
    group of the same shape, so that the thousands of plans of a large grid hold no flows of their own
    (``phase_flows`` names the nodes)."""
    groups: tuple[tuple[tuple[int, ...], ...], ...] = ()
    """Per phase, ``flow_groups.same_flows`` of its flows: the indices that run as one weighted flow."""
    floor_s: float = 0.0
    """Least time from the first phase's flows' start to the last arrival: NCCL's per-channel cap of a
    tree across servers (``channel_caps.tree_floor_s``); 0 for none."""
    contention_free_s: float | None = field(default=None, compare=False)
    """``plan_time_s`` of this plan where the choice computed it (a group of one candidate: None)."""

    def phase_flows(self, i: int) -> tuple[tuple[object, object, float, object], ...]:
        """Phase ``i``'s flows: ((src node, dst node, wire bytes, via node or None), ...)."""
        members, wire = self.members, self.wire_factor
        return tuple((members[a], members[b], wire * size, None if v is None else members[v])
                     for a, b, size, v in self.local_flows[i])

    def leader_flows(self, i: int) -> list:
        """``phase_flows(i)`` where a network reads only the first flow of each group (``groups[i]``;
        ``FlowNetwork.leaders_only``): that flow named, the other places None (a plan of a large grid runs
        millions of flows, most of them members of a group)."""
        members, wire, local = self.members, self.wire_factor, self.local_flows[i]
        flows: list = [None] * len(local)
        for group in self.groups[i]:
            a, b, size, v = local[group[0]]
            flows[group[0]] = (members[a], members[b], wire * size, None if v is None else members[v])
        return flows

    @property
    def phases(self) -> tuple[tuple[float, tuple[tuple[object, object, float, object], ...]], ...]:
        """(delay in front, ``phase_flows``) per phase."""
        return tuple((delay, self.phase_flows(i)) for i, delay in enumerate(self.delays))


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
    n_nodes, pattern = _cached(cache, ("servers", members), server_pattern, net.graph, members)
    probe = _cached(cache, ("probe", kind, algorithm, n, root), _probe_pairs, kind, algorithm, n, root)
    probe_GBps = _cached(cache, ("probe_Bps", members, probe), _probe_bandwidth, net.route, members, probe) / 1e9
    options = candidates(kind, n, nbytes, params, n_nodes=n_nodes, bandwidth_GBps=probe_GBps, algorithm=algorithm,
                         servers=pattern)
    if len(options) == 1:
        best = _build(net, kind, members, nbytes, root, *options[0], params, pattern)
    else:
        # The choice holds for every group whose routes match these up to link names (``equivalence``).
        # The signature covers the pairs every root's candidates time, so that it is computed once per
        # group, not once per root: two groups alike on all of them are alike on any root's share.
        shape_key = (kind, n, nbytes, params, pattern, tuple(options))
        # Keyed by the pairs' number, not the shape: sizes that time the same pairs share the signature
        # (the Llama 3 405B search on 16,384 GPUs computed 8,879 signatures of 971 distinct groups and pairs).
        pairs, pairs_number = _cached(cache, ("every root's pairs",) + shape_key, _numbered_pairs, cache,
                                      *shape_key)
        signature = _cached(cache, ("group signature", members, pairs_number), _signature_number, cache, net,
                            members, pairs)
        choice_key = ("choice", kind, n, nbytes, root, params, pattern, tuple(options), signature)
        chosen = cache.get(choice_key)
        if chosen is None:
            plans = {option: _build(net, kind, members, nbytes, root, *option, params, pattern) for option in options}
            times = {option: plan_time_s(net, plan) for option, plan in plans.items()}
            choice = settle(times)
            cache[choice_key] = choice, times[choice]
            best = replace(plans[choice], contention_free_s=times[choice])
        else:
            choice, time_s = chosen
            best = replace(_build(net, kind, members, nbytes, root, *choice, params, pattern), contention_free_s=time_s)
    cache[key] = best
    return best


def _signature_number(cache: dict, net, members, pairs) -> int:
    """The group's ``route_signature`` as a number, the same for equal signatures (in order of first
    appearance): the choice is keyed by it, since a signature (every timed route of the group) is a
    tuple of hundreds of tuples, and hashing it again for every root and size cost about 25 us a plan."""
    numbers = cache.setdefault("route signature numbers", {})
    return numbers.setdefault(route_signature(net, members, pairs), len(numbers))


def _numbered_pairs(cache: dict, *shape_key) -> tuple[tuple, int]:
    """``_every_roots_pairs`` and its number, the same for equal tuples of pairs (in order of first
    appearance)."""
    pairs = _every_roots_pairs(cache, *shape_key)
    numbers = cache.setdefault("timed pairs numbers", {})
    return pairs, numbers.setdefault(pairs, len(numbers))


def _every_roots_pairs(cache, kind, n, nbytes, params, pattern, options) -> tuple[tuple[int, int, int | None], ...]:
    """``_timed_pairs`` of the candidates ``options`` for every root of a rooted kind (broadcast,
    reduce), else for root 0, in order of first use."""
    pairs: dict[tuple, None] = {}
    for root in range(n) if kind in ("broadcast", "reduce") else (0,):
        pairs.update(dict.fromkeys(_timed_pairs(
            [_shape_of(cache, kind, name, n, nbytes, root, params, pattern) for name, _ in options])))
    return tuple(pairs)


def _timed_pairs(shapes) -> tuple[tuple[int, int, int | None], ...]:
    """Every (src, dst, via) whose route the candidates' times read: their flows' and their fill hops'."""
    pairs: dict[tuple, None] = {}
    for shape in shapes:
        pairs.update(dict.fromkeys(shape.pairs))
        for phase in shape.phases:
            pairs.update(dict.fromkeys((a, b, shape.vias.get((a, b))) for a, b in phase.fill_hops))
    return tuple(pairs)


def plan_time_s(net, plan: CollectivePlan) -> float:
    """The plan's time with nothing else on ``net``: its delays plus each phase's ``phase_drain_s``.

    Exactly the flow network's time where no phase has contention, a lower bound elsewhere; the
    choice of algorithm and protocol in ``plan_collective`` compares candidates by it.
    """
    phases = plan.phases
    groups = plan.groups or (None,) * len(phases)
    if not plan.floor_s:
        return plan.front_s + sum(delay + phase_drain_s(net, flows, same)
                                  for (delay, flows), same in zip(phases, groups))
    span = None  # from the first phase's flows' start, where the floor starts
    for (delay, flows), same in zip(phases, groups):
        drain = phase_drain_s(net, flows, same)
        span = drain if span is None else span + delay + drain
    return plan.front_s + plan.delays[0] + max(span, plan.floor_s)


def phase_delay_s(phase: Phase, hop_in_s: float, hop_out_s: float, params: CollectiveParams,
                  fill_s_per_byte: float, networked: bool = True, step_floor_s: float = 0.0,
                  algorithm: str = "") -> float:
    """The delay in front of a phase's flows: its steps' latencies less the one route latency its drain
    carries, plus the pipeline fill.

    A step inside a server costs ``hop_in_s`` (the largest route latency of the used pairs inside a
    server) plus the step latency, one between servers ``hop_out_s`` plus the step latency and, where
    the route crosses the network (``networked``), the inter-server step latency of ``algorithm``
    (``CollectiveParams.inter_step_latency_for_s``; NCCL: intra and inter latency per step, tuning.cc);
    the fill is the wire bytes of one chunk times ``fill_s_per_byte``, the sum of 1 / rate over the fill
    hops (each hop at its own rate). A step inside a server costs at least
    ``step_floor_s`` (``CollectiveParams.ring_step_floor_s``: NCCL's net overhead of rings across servers).
    """
    step = params.step_latency_s
    extra = params.inter_step_latency_for_s(algorithm) if networked else 0.0
    inside = phase.steps - phase.inter_steps
    own = hop_out_s if phase.inter_steps else hop_in_s  # the drain carries one route latency itself
    return (inside * max(hop_in_s + step, step_floor_s) + phase.inter_steps * (hop_out_s + step + extra)
            - own + phase.chunk_bytes * fill_s_per_byte)


def _build(net, kind, members, nbytes, root, algorithm, protocol, params, pattern) -> CollectivePlan:
    """One candidate: the timed flows of ``algorithm`` with ``protocol``."""
    cache, route, n = net.cache, net.route, len(members)
    shape = _shape_of(cache, kind, algorithm, n, nbytes, root, params, pattern)
    wire = plan_wire_factor(kind, algorithm, protocol, nbytes, params, n // (max(pattern) + 1))
    geometry = _cached(cache, ("hops", members, shape.pairs, pattern), _geometry, net, members, shape.pairs, pattern)
    hop_in, hop_out, bandwidth, networked = geometry
    if bandwidth is None:
        bandwidth = float("inf")
    floor = params.ring_step_floor_s(kind, algorithm, protocol, networked)
    delays = []
    for ph in shape.phases:
        fill = 0.0
        if ph.fill_hops:
            fill = wire * _cached(cache, ("fill", members, ph.fill_hops), _fill_rates, route, members, ph.fill_hops,
                                  shape.vias)
        delays.append(phase_delay_s(ph, hop_in, hop_out, params, fill, networked, floor, algorithm))
    front = front_s(kind, protocol, nbytes, params, n, algorithm)
    floor_s = tree_floor_s(kind, algorithm, protocol, nbytes, pattern, wire, params.nccl_arch)
    if delays:
        delays[0] += nvls_tree_fill_s(kind, algorithm, protocol, nbytes, pattern, wire, params)
    return CollectivePlan(kind, algorithm, protocol, members, nbytes, max(hop_in, hop_out) + params.step_latency_s,
                          bandwidth, wire, shape.rings, front, tuple(delays), shape.flows, shape.groups, floor_s)


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
    vias: dict
    """(src, dst) -> via rank for hops that take another GPU's NIC rail."""


def _shape_of(cache: dict, kind, algorithm, n, nbytes, root, params, pattern) -> _Shape:
    return _cached(cache, ("shape", kind, algorithm, n, nbytes, root, params, pattern), _shape,
                   kind, algorithm, n, nbytes, root, params, pattern)


def _cached(cache: dict, key, make, *args):
    value = cache.get(key)
    if value is None:
        value = cache[key] = make(*args)
    return value


def _probe_pairs(kind, algorithm, n, root) -> tuple[tuple[int, int], ...]:
    """The pairs of the algorithm as given (or the kind's default; for the NVLS tree, which needs the
    servers, the ring) with one ring: whose routes' bottleneck informs NCCL's own choices."""
    if algorithm is None or algorithm == "nvls_tree":
        algorithm = ALGORITHMS[kind][0]
    phases = decompose(kind, algorithm, n, 1.0, root)
    return tuple(dict.fromkeys((a, b) for ph in phases for a, b, _ in ph.flows))


def _probe_bandwidth(route, members, probe) -> float:
    return min((route(members[a], members[b]).bandwidth_Bps for a, b in probe), default=float("inf"))


def _geometry(net, members, pairs, pattern) -> tuple[float, float, float | None, bool]:
    """Largest route latency of the used (src, dst, via) ``pairs`` inside a server and between servers,
    their smallest bottleneck (None: no pairs), and whether a route between servers crosses the network
    (an InfiniBand or Ethernet edge; GPUs of different servers joined by NVLink, as in a torus, do not)."""
    inside, between, bandwidth, networked = 0.0, 0.0, None, False
    network_link = networked_links(net)
    for a, b, v in pairs:
        r = net.route(members[a], members[b], None if v is None else members[v])
        if pattern[a] == pattern[b]:
            inside = max(inside, r.latency_s)
        else:
            between = max(between, r.latency_s)
            networked = networked or any(network_link[link] for link in r.links)
        bandwidth = r.bandwidth_Bps if bandwidth is None else min(bandwidth, r.bandwidth_Bps)
    return inside, between, bandwidth, networked


def _fill_rates(route, members, hops, vias) -> float:
    """Sum over the pipeline's fill ``hops`` of 1 / that hop's route bottleneck, s/B: each hop at its own rate."""
    total = 0.0
    for a, b in hops:
        v = vias.get((a, b))
        total += 1.0 / route(members[a], members[b], None if v is None else members[v]).bandwidth_Bps
    return total


def server_pattern(graph, members) -> tuple[int, tuple[int, ...]]:
    """Servers in the group, and each member's server numbered by first appearance (0, 0, 1, 1, ...)."""
    labels: dict = {}
    pattern = tuple(labels.setdefault(server, len(labels)) for server in _servers(graph, members))
    return len(labels), pattern


def _shape(kind, algorithm, n, nbytes, root, params, pattern) -> _Shape:
    orders = ring_orders(list(pattern)) if algorithm in ("ring", "chain") else None
    phases = tuple(decompose(kind, algorithm, n, nbytes, root, params.chunk_bytes, orders, pattern,
                             params.nvls_efficiency))
    via = rail_vias(pattern, orders)
    flows = tuple(tuple((a, b, size, via.get((a, b))) for a, b, size in ph.flows) for ph in phases)
    pairs = tuple(dict.fromkeys((a, b, v) for phase in flows for a, b, _, v in phase))
    return _Shape(phases, flows, tuple(same_flows(f) for f in flows), pairs, len(orders) if orders else 1, via)


def _execute(env: simpy.Environment, net, plan: CollectivePlan):
    delay = plan.front_s
    floor = None
    for i, (phase_delay, groups) in enumerate(zip(plan.delays, plan.groups)):
        delay += phase_delay
        if delay:
            yield env.timeout(delay)
        delay = 0.0
        if floor is None and plan.floor_s:
            floor = env.timeout(plan.floor_s)  # NCCL's channel cap: the flows end no sooner than this
        flows = plan.leader_flows(i) if net.leaders_only else plan.phase_flows(i)
        yield net.transfer_phase(flows, groups)
    if floor is not None and not floor.processed:
        yield floor
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
