"""Fast closed-form collective times for the fit's inner loop, as knob values change.

``simulator.collectives.closed_form.predict_collective_s`` plans a collective on a ``FlowNetwork`` (routes, algorithm,
protocol) and evaluates its closed form; building a network per trial costs ~15 ms for 84 samples.
Routes depend only on the graph's shape (``topologies.routing``: fewest hops, then fewest network
hops), never on rates, so this module plans each group once on the base graph and keeps, per used
route, the hop count per link class and the smallest base rate per class, and per phase which route
each flow takes, its share of the bytes and the links two or more of its flows cross. A trial then
only redoes the arithmetic ``plan_collective`` and ``predict_collective_s`` do, with the same functions:

- route latency = sum over classes of hops x latency; route bandwidth = min over classes of
  base rate x scale; a shared link's capacity = its base rate x its class's scale;
- every (algorithm, protocol) candidate of ``choose.candidates`` (in NCCL's order at the bottleneck of the
  default algorithm's pairs) is timed and ``choose.settle`` takes one, as ``plan_collective`` does;
- a candidate's time = ``front_s`` + per phase ``run.phase_delay_s`` (the slowest used route inside a server
  and between servers, the fill over the fill hops' own rates) + the phase's drain as
  ``simulator.collectives.closed_form.phase_drain_s`` measures it (slowest flow alone on its route, or a
  shared link's bytes over its capacity plus the smallest latency of its flows), the flows taking no less
  than NCCL's per-channel cap of a tree across servers allows (``channel_caps.tree_floor_s``, as
  ``run.plan_time_s`` counts it).

The tests hold ``predict`` to the flow simulation inside a server and to ``predict_collective_s``
everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from simulator.collectives.channel_caps import tree_floor_s
from simulator.collectives.choose import candidates, nccl_algorithms, settle
from simulator.collectives.nvls_tree_fill import nvls_tree_fill_s
from simulator.collectives.params import CollectiveParams
from simulator.collectives.patterns import ALGORITHMS, decompose, rail_vias, ring_orders
from simulator.collectives.protocols import front_s, plan_wire_factor
from simulator.collectives.run import phase_delay_s, plan_collective, server_pattern
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes
from topologies.kinds import NETWORK_EDGE_KINDS

__all__ = ["CollectiveEvaluator", "members_for", "ALL_REDUCE_ALGORITHMS", "algorithm_for"]

ALL_REDUCE_ALGORITHMS = ("ring", "double_binary_tree")
"""The all_reduce algorithms a fit may be told NCCL ran (NCCL_ALGO=Ring, Tree): the only kind NCCL runs
two ways across servers; every other kind has one NCCL algorithm (``choose.nccl_algorithms``)."""

_PROBE_BYTES = 1 << 20  # any size: the pairs an algorithm uses do not depend on it


def algorithm_for(kind: str, all_reduce_algorithm: str | None) -> str | None:
    """The algorithm to fix for a collective of ``kind``: ``all_reduce_algorithm`` for an all_reduce, else
    None (the NCCL-like choice); InputError for one not in ``ALL_REDUCE_ALGORITHMS``."""
    if all_reduce_algorithm is not None and all_reduce_algorithm not in ALL_REDUCE_ALGORITHMS:
        raise InputError(f"all_reduce algorithm {all_reduce_algorithm!r} cannot be fitted; valid: "
                         f"{', '.join(ALL_REDUCE_ALGORITHMS)}")
    return all_reduce_algorithm if kind == "all_reduce" else None


def members_for(G, ranks: int, what: str = "sample") -> list:
    """The first ``ranks`` GPU nodes of ``G`` (where ``tpsim collective`` puts ranks 0..ranks-1)."""
    gpus = gpu_nodes(G)
    if ranks > len(gpus):
        raise InputError(f"a {what} on {ranks} ranks does not fit topology {G.graph.get('name', '?')}, "
                         f"which has {len(gpus)} GPUs")
    return gpus[:ranks]


@dataclass(frozen=True)
class _Routes:
    """Used routes of one algorithm: hops per class (routes x classes), smallest base rate per class."""

    hops: np.ndarray
    min_rate_Bps: np.ndarray
    """inf where a route has no edge of the class."""
    rings: int
    inside: np.ndarray = None
    """Per route: True where both ends share a server."""
    timing: tuple = ()
    """Per phase: (``patterns.Phase`` at nbytes = 1 with chunk = stream, fill-hop route rows)."""


@dataclass(frozen=True)
class _Phase:
    """One phase's flows on the base graph: what ``phase_drain_s`` needs, rates left to the trial."""

    route: np.ndarray
    """Per flow: its route's row in the algorithm's ``_Routes``."""
    share: np.ndarray
    """Per flow: wire bytes per wire byte of nbytes (e.g. 2(n-1)/n / R for a ring all_reduce)."""
    crossing: np.ndarray
    """Links two or more of the flows cross (rows) x flows: 1 where the flow crosses the link."""
    link_class: np.ndarray
    """Per shared link: its class index."""
    link_rate_Bps: np.ndarray
    """Per shared link: its base capacity."""

    def drain_s(self, wire_bytes: float, latency_s: np.ndarray, bandwidth_Bps: np.ndarray,
                scale: np.ndarray) -> float:
        """``phase_drain_s`` at these rates: ``wire_bytes`` = nbytes x the protocol's wire factor."""
        size = self.share * wire_bytes
        lat = latency_s[self.route]
        end = float(np.max(lat + size / bandwidth_Bps[self.route], initial=0.0))
        if len(self.crossing):
            load = self.crossing @ size
            first = np.min(np.where(self.crossing > 0, lat, np.inf), axis=1)
            end = max(end, float(np.max(load / (self.link_rate_Bps * scale[self.link_class]) + first)))
        return end


class _Group:
    """One (kind, ranks) group planned once on the base graph."""

    def __init__(self, net: FlowNetwork, classes: dict, kind: str, members: list, params: CollectiveParams,
                 algorithm: str | None = None):
        graph = net.graph
        self.kind, self.n, self.fixed = kind, len(members), algorithm
        self.n_nodes, self.pattern = server_pattern(graph, members)
        self.nvls_efficiency = params.nvls_efficiency
        self.classes = classes
        self._network_classes = [i for kind, i in sorted(classes.items()) if kind in NETWORK_EDGE_KINDS]
        probe_pairs = [(members[a], members[b], None) for ph in decompose(kind, ALGORITHMS[kind][0], self.n, 1.0, 0)
                       for a, b, _ in ph.flows]
        self.probe = self._routes(net, probe_pairs, 1)
        self.algorithms, self.phases = {}, {}
        names = (algorithm,) if algorithm else nccl_algorithms(kind, self.n, params, self.n_nodes, self.pattern)
        for algorithm in names:
            plan = plan_collective(net, kind, members, _PROBE_BYTES, None, algorithm, params)
            pairs = [(src, dst, via) for _, flows in plan.phases for src, dst, _, via in flows if src != dst]
            routes = self._routes(net, pairs, plan.rings)
            row = {pair: i for i, pair in enumerate(dict.fromkeys(pairs))}
            server = {m: graph.nodes[m].get("server", 0) for m in members}
            inside = np.array([server[src] == server[dst] for src, dst, _ in dict.fromkeys(pairs)], dtype=bool)
            self.algorithms[algorithm] = _Routes(routes.hops, routes.min_rate_Bps, routes.rings, inside,
                                                 self._timing(kind, algorithm, members, row))
            per_byte = 1.0 / (plan.wire_factor * plan.nbytes)  # plan.nbytes: the base's kind factor applied
            self.phases[algorithm] = [self._phase(net, flows, row, per_byte) for _, flows in plan.phases]

    def _timing(self, kind: str, algorithm: str, members: list, row: dict) -> tuple:
        """The phases as ``plan_collective`` builds them, at nbytes = 1 (chunk = stream), with the route
        rows of their fill hops."""
        orders = ring_orders(list(self.pattern)) if algorithm in ("ring", "chain") else None
        vias = rail_vias(self.pattern, orders)
        phases = decompose(kind, algorithm, self.n, 1.0, 0, lambda stream: stream, orders, self.pattern,
                           self.nvls_efficiency)
        out = []
        for ph in phases:
            rows = []
            for a, b in ph.fill_hops:
                v = vias.get((a, b))
                rows.append(row[(members[a], members[b], None if v is None else members[v])])
            out.append((ph, np.array(rows, dtype=int)))
        return tuple(out)

    def _phase(self, net, flows, row: dict, per_byte: float) -> _Phase:
        flows = [(src, dst, size, via) for src, dst, size, via in flows if src != dst]
        crossing: dict[int, list[int]] = {}
        for f, (src, dst, _, via) in enumerate(flows):
            for link in dict.fromkeys(net.route(src, dst, via).links):
                crossing.setdefault(link, []).append(f)
        shared = [(link, fs) for link, fs in crossing.items() if len(fs) > 1]
        matrix = np.zeros((len(shared), len(flows)))
        for i, (_, fs) in enumerate(shared):
            matrix[i, fs] = 1.0
        edges = [net.links.edges[link] for link, _ in shared]
        return _Phase(np.array([row[(src, dst, via)] for src, dst, _, via in flows], dtype=int),
                      np.array([size * per_byte for _, _, size, _ in flows]), matrix,
                      np.array([self.classes[net.graph.edges[e]["kind"]] for e in edges], dtype=int),
                      np.array([net.links.cap[link] for link, _ in shared]))

    def _routes(self, net, pairs, rings: int) -> _Routes:
        graph, width = net.graph, len(self.classes)
        hops, rates = [], []
        for src, dst, via in dict.fromkeys(pairs):
            legs = [(src, dst)] if via is None or via in (src, dst) else [(src, via), (via, dst)]
            count, rate = np.zeros(width), np.full(width, np.inf)
            for a, b in legs:
                for u, v in net.router.path(a, b):
                    data = graph.edges[u, v]
                    c = self.classes[data["kind"]]
                    count[c] += 1
                    rate[c] = min(rate[c], data["bandwidth_GBps"] * 1e9)
            hops.append(count)
            rates.append(rate)
        shape = (0, width)
        return _Routes(np.array(hops).reshape(shape if not hops else (-1, width)),
                       np.array(rates).reshape(shape if not rates else (-1, width)), rings)

    def exercised(self) -> set[int]:
        """Class indices on any route this group may use."""
        used = set()
        for routes in [self.probe, *self.algorithms.values()]:
            used.update(int(c) for c in np.nonzero(routes.hops.sum(axis=0))[0])
        return used

    def time_s(self, nbytes: float, scale: np.ndarray, latency_s: np.ndarray, params: CollectiveParams) -> float:
        """Closed-form time with per-class bandwidth ``scale`` and per-hop ``latency_s``."""
        if self.n == 1:
            return params.base_latency_s
        nbytes = nbytes * params.bytes_factor(self.kind)  # as plan_collective does
        probe_bw = float(np.min(self.probe.min_rate_Bps * scale))
        options = candidates(self.kind, self.n, nbytes, params, n_nodes=self.n_nodes, bandwidth_GBps=probe_bw / 1e9,
                             algorithm=self.fixed, servers=self.pattern)
        times = {option: self._candidate_s(*option, nbytes, scale, latency_s, params) for option in options}
        return times[settle(times)]

    def _candidate_s(self, algorithm: str, protocol: str, nbytes: float, scale: np.ndarray, latency_s: np.ndarray,
                     params: CollectiveParams) -> float:
        routes = self.algorithms[algorithm]
        latency = routes.hops @ latency_s
        bandwidth_per_route = np.min(routes.min_rate_Bps * scale, axis=1)
        hop_in = float(np.max(latency[routes.inside], initial=0.0))
        hop_out = float(np.max(latency[~routes.inside], initial=0.0))
        networked = bool(np.any(routes.hops[~routes.inside][:, self._network_classes] > 0))
        wire_per_byte = plan_wire_factor(self.kind, algorithm, protocol, nbytes, params, self.n // self.n_nodes)
        floor = params.ring_step_floor_s(self.kind, algorithm, protocol, networked)
        total = front_s(self.kind, protocol, nbytes, params, self.n, algorithm)
        channel_floor = tree_floor_s(self.kind, algorithm, protocol, nbytes, self.pattern, wire_per_byte,
                                     params.nccl_arch)
        total += nvls_tree_fill_s(self.kind, algorithm, protocol, nbytes, self.pattern, wire_per_byte, params)
        span = None  # from the first phase's flows' start, as run.plan_time_s counts the channel floor
        for (phase, fill_rows), drain in zip(routes.timing, self.phases[algorithm]):
            chunk = params.chunk_bytes(phase.chunk_bytes * nbytes) if len(fill_rows) else 0.0
            fill = wire_per_byte * float(np.sum(1.0 / bandwidth_per_route[fill_rows])) if len(fill_rows) else 0.0
            scaled = phase.__class__(phase.flows, phase.steps, phase.inter_steps, phase.fill_hops, chunk)
            delay = phase_delay_s(scaled, hop_in, hop_out, params, fill, networked, floor, algorithm)
            drain_s = drain.drain_s(nbytes * wire_per_byte, latency, bandwidth_per_route, scale)
            if not channel_floor:
                total += delay
                total += drain_s
            elif span is None:
                total += delay
                span = drain_s
            else:
                span += delay + drain_s
        return total + max(span, channel_floor) if channel_floor else total


class CollectiveEvaluator:
    """Predicts (kind, ranks, nbytes) times on ``base`` with link classes rescaled; see the module doc."""

    def __init__(self, base, keys: list[tuple[str, int, int]], all_reduce_algorithm: str | None = None):
        """``keys``: (kind, ranks, nbytes) to predict, ranks on the first GPUs of ``base``; every all_reduce
        runs ``all_reduce_algorithm`` where given (``algorithm_for``), else the NCCL-like choice."""
        kinds = sorted({data["kind"] for _, _, data in base.edges(data=True)})
        self.classes = {kind: i for i, kind in enumerate(kinds)}
        self.keys = list(keys)
        params = CollectiveParams.from_graph(base)
        net = FlowNetwork(simpy.Environment(), base)
        self._groups: dict[tuple[str, int], _Group] = {}
        for kind, ranks, _ in self.keys:
            if (kind, ranks) not in self._groups:
                members = members_for(base, ranks)
                self._groups[(kind, ranks)] = _Group(net, self.classes, kind, members, params,
                                                     algorithm_for(kind, all_reduce_algorithm))
        self._base_latency = np.zeros(len(kinds))
        for _, _, data in base.edges(data=True):  # only read for classes that are not fitted
            c = self.classes[data["kind"]]
            self._base_latency[c] = max(self._base_latency[c], data.get("latency_us", 0.0) * 1e-6)
        self._uniform = self._latency_uniform(base)

    @staticmethod
    def _latency_uniform(base) -> set[str]:
        seen: dict[str, set] = {}
        for _, _, data in base.edges(data=True):
            seen.setdefault(data["kind"], set()).add(data.get("latency_us", 0.0))
        return {kind for kind, values in seen.items() if len(values) == 1}

    def exercised_kinds(self) -> list[str]:
        """Edge kinds on a route some key may use, in sorted order."""
        used = set()
        for group in self._groups.values():
            used |= group.exercised()
        names = {i: kind for kind, i in self.classes.items()}
        return [names[i] for i in sorted(used)]

    def check_latency_uniform(self, kinds: list[str]) -> None:
        """The fit sets one latency per class: InputError if a fitted class has several in the base."""
        mixed = [kind for kind in kinds if kind not in self._uniform]
        if mixed:
            raise InputError(f"link kind {mixed[0]} has different latency_us on different edges of the base topology; "
                             f"calibration fits one per-hop latency per kind")

    def predict(self, scale: dict[str, float], latency_us: dict[str, float], params: CollectiveParams) -> np.ndarray:
        """Seconds per key; classes missing from ``scale``/``latency_us`` keep their base values."""
        s = np.ones(len(self.classes))
        lat = self._base_latency.copy()
        for kind, value in scale.items():
            s[self.classes[kind]] = value
        for kind, value in latency_us.items():
            lat[self.classes[kind]] = value * 1e-6
        return np.array([self._groups[(kind, ranks)].time_s(nbytes, s, lat, params)
                         for kind, ranks, nbytes in self.keys])
