"""Analytic cost model: closed-form alpha-beta times.

Section 1 (this file, issue 4): collectives. Schedule-level closed forms are added below it (their
own section), by the engine.

Collectives. ``collective_time_s`` is the time of one collective on a group with step latency
``alpha_s`` (route latency of one step plus the per-step software latency) and bandwidth
``bandwidth_Bps`` (the bottleneck of the routes used), in the same model the flow network runs (see
``simulator.collectives.patterns``). With T0 + st the front (``protocols.front_s``: the base latency,
the protocol's own latency and the pipeline start-up), W the
protocol's wire bytes per payload byte, c(X) the pipeline chunk of a stream of X bytes,
R = ceil(log2 n) (the tree, ``double_binary_tree``, is NCCL's: on one server a chain up and down,
``nccl_tree``):

======================== ================================================================
ring all_reduce          T0 + st + 2(n-1) alpha + W 2(n-1)/n S / B
ring all_gather, r_s     T0 + st + (n-1) alpha + W (n-1)/n S / B
chain broadcast, reduce  T0 + st + (n-1) alpha + (n-2) W c(S) / B + W S / B
binomial bcast, reduce   T0 + st + R (alpha + W S / B)          (all_reduce: 2R rounds)
tree, one server         T0 + st + 2(n-1) alpha + (2n-3) W c(S) / B + m W S / B_inj   (m = 2; 1 if n = 2)
direct all_gather, r_s   T0 + st + alpha + W (n-1)/n S / B_inj  (all_reduce: twice)
nvls (one switch)        T0 + st + alpha + W (1 + 1/n) S / e / B_inj   (e: NCCL's NVLS efficiency)
send (p2p)               T0 + st + alpha + W S / B
======================== ================================================================

Every row is T0 + st plus, per phase of the algorithm (binomial: one per round; direct all_reduce:
two), the phase's step latencies and pipeline fill and then the *drain* of its flows: the route
latency of one step and the bytes over the bandwidth (the last term of the row). The table is exact
for a homogeneous group: every pair the algorithm uses has the same route latency and bottleneck,
and concurrent flows of one phase share no link except a rank's own port, whose capacity is B_inj
(the capacity of the edges the group's routes leave and enter the rank by): GPUs on one NVSwitch
(``topologies`` NvSwitchServer), a full NVLink mesh for the ring, chain, binomial and direct
algorithms, a loopback star. For several rings across servers the table is an estimate (per-ring path
or per-rank port, whichever binds).

A group that is not homogeneous (GPUs in several servers, a torus, a PCIe tree) has no such
alpha and beta: the slowest pair's latency and the slowest pair's bandwidth charged to every phase
overstate a binomial round whose pairs are all fast, by up to 3x across two DGX servers. So
``predict_collective_s`` keeps the table's latency and fill terms and measures each phase's drain on
its own routes (``phase_drain_s``): a phase ends when its slowest flow ends, no flow is faster than
alone on its route, and no link carries its flows' bytes faster than its capacity. That is exactly
the flow network's time where the phase's flows share no link, or are alike in bytes and route
latency (max-min fairness then gives each flow on the busiest link capacity / count), and below it
elsewhere: the closed form never exceeds the simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.collectives.drain import phase_drain_s
from simulator.collectives.params import CollectiveParams
from simulator.collectives.protocols import front_s, plan_wire_factor
from simulator.collectives.run import plan_collective, plan_time_s
from simulator.errors import InputError

__all__ = [
    "AlphaBeta",
    "collective_time_s",
    "group_alpha_beta",
    "phase_drain_s",
    "predict_collective_s",
    "busbw_factor",
    "algbw_GBps",
    "busbw_GBps",
]

# ============================== Section 1: collectives ==============================


@dataclass(frozen=True)
class AlphaBeta:
    """Step latency and bandwidths of one collective's group, read from its routes."""

    alpha_s: float
    """Largest route latency among the pairs used, plus the per-step software latency, seconds."""
    bandwidth_Bps: float
    """Smallest route bottleneck among the pairs used, bytes/s."""
    injection_Bps: float
    """Smallest per-rank port capacity: the edges the group's routes leave or enter a rank by, bytes/s."""


def busbw_factor(kind: str, n: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n all_reduce, (n-1)/n all_gather/reduce_scatter, else 1."""
    if kind == "all_reduce":
        return 2 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def algbw_GBps(nbytes: float, time_s: float) -> float:
    """nccl-tests' algbw = S / t, GB/s (1 GB = 1e9 B)."""
    return nbytes / time_s / 1e9 if time_s > 0 else float("inf")


def busbw_GBps(kind: str, n: int, nbytes: float, time_s: float) -> float:
    """nccl-tests' busbw = algbw x busbw_factor, GB/s."""
    return algbw_GBps(nbytes, time_s) * busbw_factor(kind, n)


def collective_time_s(kind: str, algorithm: str, n: int, nbytes: float, alpha_s: float, bandwidth_Bps: float,
                      params: CollectiveParams | None = None, protocol: str = "simple",
                      injection_Bps: float | None = None, rings: int = 1, drains_s=None) -> float:
    """Closed-form time of one collective (table in the module docstring).

    ``injection_Bps`` (per-rank port capacity) defaults to ``bandwidth_Bps``, as on a switch.
    ``rings`` > 1 (ring and chain across servers, ``CollectivePlan.rings``): each ring carries S/R,
    and a rank's R flows share its port, so a term X / B becomes X max(1 / (R B), 1 / B_inj).
    ``drains_s``, one per phase (``phase_drain_s``), replaces the table's drain terms (the route
    latency of one step plus the last term of its row) by the phases' measured drains.
    """
    params = params or CollectiveParams()
    if n == 1:
        return params.base_latency_s
    S, B, a = float(nbytes), float(bandwidth_Bps), float(alpha_s)
    inj = B if injection_Bps is None else float(injection_Bps)
    W = plan_wire_factor(kind, algorithm, protocol, S, params, n)  # a homogeneous group: one server

    def over_rings(x: float) -> float:  # x bytes per rank over R rings
        return x / B if rings == 1 else x * max(1.0 / (rings * B), 1.0 / inj)

    # Per phase: (steps, pipeline fill in seconds, bytes-over-bandwidth term of its drain).
    if algorithm == "ring" and kind == "all_reduce":
        phases = [(2 * (n - 1), 0.0, W * over_rings(2 * (n - 1) / n * S))]
    elif algorithm == "ring" and kind in ("all_gather", "reduce_scatter"):
        phases = [(n - 1, 0.0, W * over_rings((n - 1) / n * S))]
    elif algorithm == "chain" and kind in ("broadcast", "reduce"):
        phases = [(n - 1, (n - 2) * W * params.chunk_bytes(S / rings) / B, W * over_rings(S))]
    elif algorithm == "binomial_tree" and kind in ("broadcast", "reduce", "all_reduce"):
        phases = [(1, 0.0, W * S / B)] * (math.ceil(math.log2(n)) * (2 if kind == "all_reduce" else 1))
    elif algorithm == "double_binary_tree" and kind == "all_reduce":
        # One server: NCCL's tree is a chain carrying S up and S down; a middle rank's port carries two flows.
        load = 1 if n == 2 else 2
        phases = [(2 * (n - 1), (2 * n - 3) * W * params.chunk_bytes(S) / B, load * W * S / inj)]
    elif algorithm == "direct" and kind in ("all_gather", "reduce_scatter", "all_reduce"):
        phases = [(1, 0.0, W * ((n - 1) / n * S) / inj)] * (2 if kind == "all_reduce" else 1)
    elif algorithm == "nvls" and kind == "all_reduce":
        phases = [(1, 0.0, W * (1 + 1 / n) * S / params.nvls_efficiency / inj)]
    elif algorithm == "p2p" and kind == "send":
        phases = [(1, 0.0, W * S / B)]
    else:
        raise InputError(f"no closed form for {kind} with algorithm {algorithm!r}")
    if drains_s is not None and len(drains_s) != len(phases):
        raise ValueError(f"{kind}/{algorithm} on {n} ranks has {len(phases)} phases, got {len(drains_s)} drains")
    step = params.step_latency_s
    hop = a - step  # the flows' own route latency: alpha less the software step
    total = front_s(kind, protocol, nbytes, params, n, algorithm)
    for k, (steps, fill_s, stream_s) in enumerate(phases):
        drain = hop + stream_s if drains_s is None else drains_s[k]
        total += (steps - 1) * a + step + fill_s + drain
    return total


def group_alpha_beta(net, plan) -> AlphaBeta:
    """Alpha and betas of a planned collective (``simulator.collectives.plan_collective``) on ``net``.

    A rank's port capacity counts the edges its flows' routes leave it by (out) and reach it by
    (in), not every edge it has: on a DGX A100 the NIC edge carries nothing inside the server.
    """
    pairs = tuple(dict.fromkeys((src, dst, via) for _, flows in plan.phases for src, dst, _, via in flows))
    key = ("injection_Bps", pairs)  # fixed by the routes: compute it once per network
    inj = net.cache.get(key)
    if inj is None:
        cap = net.links.cap
        out: dict = {}
        inn: dict = {}
        for src, dst, via in pairs:
            if src == dst:
                continue
            links = net.route(src, dst, via).links
            out.setdefault(src, set()).add(links[0])
            inn.setdefault(dst, set()).add(links[-1])
        inj = min((sum(cap[link] for link in edges) for ports in (out, inn) for edges in ports.values()),
                  default=float("inf"))
        net.cache[key] = inj
    return AlphaBeta(plan.alpha_s, plan.bandwidth_Bps, inj if inj < float("inf") else plan.bandwidth_Bps)


def predict_collective_s(net, kind: str, members, nbytes: float, root: int | None = None,
                         algorithm: str | None = None, params: CollectiveParams | None = None) -> float:
    """Closed-form time of the collective ``run_collective`` would run (same algorithm and protocol):
    the plan's delays (steps inside and between servers, pipeline fill hop by hop) and each phase's
    drain measured on its own routes (``phase_drain_s``): a lower bound on the flow network's time,
    equal to it where no phase has contention (see the module docstring)."""
    params = params or CollectiveParams.from_graph(net.graph)
    plan = plan_collective(net, kind, members, nbytes, root, algorithm, params)
    # The choice timed the plan already (bit for bit what plan_time_s gives) unless it had one candidate.
    return plan_time_s(net, plan) if plan.contention_free_s is None else plan.contention_free_s
