"""Analytic cost model: closed-form alpha-beta times.

Section 1 (this file, issue 4): collectives. Schedule-level closed forms are added below it (their
own section), by the engine.

Collectives. ``collective_time_s`` is the time of one collective on a contention-free group with
step latency ``alpha_s`` (route latency of one step plus the per-step software latency) and
bandwidth ``bandwidth_Bps`` (the bottleneck of the routes used), in the same model the flow network
runs (see ``simulator.collectives.patterns``). With T0 the base latency, st the protocol start-up,
W the protocol's wire bytes per payload byte, c(X) the pipeline chunk of a stream of X bytes,
R = ceil(log2 n), d the double binary tree's depth and m its port load (``trees.dbtree_port_load``):

======================== ================================================================
ring all_reduce          T0 + st + 2(n-1) alpha + W 2(n-1)/n S / B
ring all_gather, r_s     T0 + st + (n-1) alpha + W (n-1)/n S / B
chain broadcast, reduce  T0 + st + (n-1) alpha + (n-2) W c(S) / B + W S / B
binomial bcast, reduce   T0 + st + R (alpha + W S / B)          (all_reduce: 2R rounds)
double_binary_tree       T0 + st + 2d alpha + (2d-1) W c(S/2) / B + m W (S/2) / B_inj
direct all_gather, r_s   T0 + st + alpha + W (n-1)/n S / B_inj  (all_reduce: twice)
send (p2p)               T0 + st + alpha + W S / B
======================== ================================================================

A group of one rank costs T0. When the closed form is exact (the tests hold the simulator to it, to
1e-9): every pair the algorithm uses has the same route latency and bottleneck, and concurrent flows
of one phase share no link except a rank's own port, whose capacity is B_inj (the smaller of the
rank's total out- and in-capacity): GPUs on one NVSwitch (``topologies`` NvSwitchServer), a
full NVLink mesh for the ring, chain, binomial and direct algorithms, a loopback star. Elsewhere it
uses the slowest pair (``group_alpha_beta``) and the simulator's fair sharing decides; for several
rings across servers it is an estimate (per-ring path or per-rank port, whichever binds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.collectives.params import CollectiveParams
from simulator.collectives.protocols import startup_s, wire_factor
from simulator.collectives.trees import dbtree_parents, dbtree_port_load, tree_depth
from simulator.errors import InputError

__all__ = [
    "AlphaBeta",
    "collective_time_s",
    "group_alpha_beta",
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
    """Smallest per-rank port capacity (min of a node's total out- and in-capacity), bytes/s."""


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
                      injection_Bps: float | None = None, rings: int = 1) -> float:
    """Closed-form time of one contention-free collective (table in the module docstring).

    ``injection_Bps`` (per-rank port capacity) defaults to ``bandwidth_Bps``, as on a switch.
    ``rings`` > 1 (ring and chain across servers, ``CollectivePlan.rings``): each ring carries S/R,
    and a rank's R flows share its port, so a term X / B becomes X max(1 / (R B), 1 / B_inj).
    """
    params = params or CollectiveParams()
    if n == 1:
        return params.base_latency_s
    S, B, a = float(nbytes), float(bandwidth_Bps), float(alpha_s)
    inj = B if injection_Bps is None else float(injection_Bps)
    W = wire_factor(protocol, kind)
    front = params.base_latency_s + startup_s(protocol, nbytes, params)

    def over_rings(x: float) -> float:  # x bytes per rank over R rings
        return x / B if rings == 1 else x * max(1.0 / (rings * B), 1.0 / inj)

    if algorithm == "ring" and kind == "all_reduce":
        return front + 2 * (n - 1) * a + W * over_rings(2 * (n - 1) / n * S)
    if algorithm == "ring" and kind in ("all_gather", "reduce_scatter"):
        return front + (n - 1) * a + W * over_rings((n - 1) / n * S)
    if algorithm == "chain" and kind in ("broadcast", "reduce"):
        return front + (n - 1) * a + (n - 2) * W * params.chunk_bytes(S / rings) / B + W * over_rings(S)
    if algorithm == "binomial_tree" and kind in ("broadcast", "reduce", "all_reduce"):
        rounds = math.ceil(math.log2(n)) * (2 if kind == "all_reduce" else 1)
        return front + rounds * (a + W * S / B)
    if algorithm == "double_binary_tree" and kind == "all_reduce":
        d = max(tree_depth(p) for p in dbtree_parents(n))
        m = dbtree_port_load(n)
        return front + 2 * d * a + (2 * d - 1) * W * params.chunk_bytes(S / 2) / B + m * W * (S / 2) / inj
    if algorithm == "direct" and kind in ("all_gather", "reduce_scatter", "all_reduce"):
        phases = 2 if kind == "all_reduce" else 1
        return front + phases * (a + W * ((n - 1) / n * S) / inj)
    if algorithm == "p2p" and kind == "send":
        return front + a + W * S / B
    raise InputError(f"no closed form for {kind} with algorithm {algorithm!r}")


def group_alpha_beta(net, plan) -> AlphaBeta:
    """Alpha and betas of a planned collective (``simulator.collectives.plan_collective``) on ``net``."""
    key = ("injection_Bps", plan.members)  # a group's port capacity is fixed: compute it once per network
    inj = net.cache.get(key)
    if inj is None:
        graph = net.graph
        inj = float("inf")
        for node in plan.members:
            out = sum(d["bandwidth_GBps"] for _, _, d in graph.out_edges(node, data=True))
            inn = sum(d["bandwidth_GBps"] for _, _, d in graph.in_edges(node, data=True))
            inj = min(inj, out * 1e9, inn * 1e9)
        net.cache[key] = inj
    return AlphaBeta(plan.alpha_s, plan.bandwidth_Bps, inj)


def predict_collective_s(net, kind: str, members, nbytes: float, root: int | None = None,
                         algorithm: str | None = None, params: CollectiveParams | None = None) -> float:
    """Closed-form time of the collective ``run_collective`` would run (same algorithm and protocol)."""
    from simulator.collectives.run import plan_collective

    params = params or CollectiveParams.from_graph(net.graph)
    plan = plan_collective(net, kind, members, nbytes, root, algorithm, params)
    ab = group_alpha_beta(net, plan)
    return collective_time_s(kind, plan.algorithm, len(plan.members), nbytes, ab.alpha_s, ab.bandwidth_Bps,
                             params, plan.protocol, ab.injection_Bps, plan.rings)
