"""What calibration fits (the knobs), their bounds, and how fitted values land on a topology graph.

Collective knobs, each fitted in log space (every one is a positive rate, time or size), with bounds:

- ``<kind>.bandwidth_scale``: every edge of that kind gets bandwidth_GBps x s (1e-3 .. 1e3);
- ``<kind>.latency_us``: every edge of that kind gets this latency_us, per hop (1e-4 .. 1e4 us);
- ``collective_base_latency_us``: the per-collective software latency (1e-2 .. 1e5 us);
- ``collective_startup_bytes``: the end of the start-up regime (256 B .. 16 MiB, ``STARTUP_MAX_BYTES``:
  a pipeline fill, not a per-byte cost);
- ``collective_channel_bandwidth_GBps``: the rate during start-up (0.1 GB/s, ``CHANNEL_MIN_GBPS``, up
  to the base topology's fastest link).

- ``kind_factor.<collective>``: that collective kind's bytes of work per byte of S
  (``collective_kind_bytes_factors``, 1e-2 .. 1e2), one per kind the samples hold but the reference
  kind (the one with the most fitted buckets), whose factor stays 1 so the link rates keep their
  meaning; only where the samples hold two kinds or more.

``<kind>`` is an edge ``kind`` (nvswitch, nvlink, pcie, ib, loopback, ...) that lies on a route the
samples use; other kinds keep their base values. Bandwidth is a factor, not a value, so a class whose
edges differ (a fat tree's leaf-spine bundles under oversubscription) keeps its ratios; latency is one
value per hop for the class. ``collective_step_latency_us`` is not fitted: on a route it only adds to
the hop latencies, so the two cannot be told apart. The start-up knobs are fitted whatever the
protocol: ``protocols.front_s`` charges the start-up to LL, LL128 and Simple alike, all but a send with
LL (at most 16 KiB, one LL buffer: no pipeline to fill); samples that are all such sends leave them
where they started, and ``carry`` names them undetermined. Compute knobs (``gemm_efficiency``,
``half_efficiency_dim``) are in ``gemm_fit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

__all__ = ["Knob", "collective_knobs", "apply_values", "set_kind_factor", "STARTUP_KEYS", "KIND_FACTORS_KEY",
           "STARTUP_MAX_BYTES", "CHANNEL_MIN_GBPS"]

STARTUP_KEYS = ("collective_startup_bytes", "collective_channel_bandwidth_GBps")
KIND_FACTORS_KEY = "collective_kind_bytes_factors"

_SIM_DEFAULTS = {"collective_base_latency_us": 8.0, "collective_startup_bytes": float(1 << 20),
                 "collective_channel_bandwidth_GBps": 20.0}  # CollectiveParams' defaults
STARTUP_MAX_BYTES = 16 << 20
"""Largest ``collective_startup_bytes`` a fit may reach: 4 x NCCL_BUFFSIZE (4 MiB), every slot of a
Simple channel's FIFO (NCCL_STEPS = 8 slots of 512 KiB) filled four times over."""
# Why a cap: the term is a pipeline fill, the first slices a channel carries before the ring streams (1 MiB on
# A100, 4 MiB read off an H20 log for Hopper). Left free up to the largest sample, the fit turned it into a
# per-byte cost of every size (16 GB at 101 GB/s on the 2-server Azure log) that absorbed the link rates and
# did not carry to 16 servers (+15% to +36% from 64 MiB).
CHANNEL_MIN_GBPS = 0.1
"""Slowest rate the start-up may run at: a decade below a gloo socket on a loaded CPU host (about 1 GB/s
fitted here). The fastest is the base topology's fastest link (``collective_knobs``): one channel's
first slices cross one link, so they cannot move faster than it."""
_SIM_BOUNDS = {"collective_base_latency_us": (1e-2, 1e5), "collective_startup_bytes": (256.0, float(STARTUP_MAX_BYTES)),
               "collective_channel_bandwidth_GBps": (CHANNEL_MIN_GBPS, None)}


@dataclass(frozen=True)
class Knob:
    """One fitted parameter: its name, where it lands, its base (starting) value and bounds."""

    name: str
    """``<kind>.bandwidth_scale``, ``<kind>.latency_us`` or a sim key."""
    target: str
    """"bandwidth" (edges of ``key``), "latency" (edges of ``key``) or "sim" (the sim key ``key``)."""
    key: str
    """The edge kind or the sim key."""
    base: float
    """Value in the base topology (1.0 for a bandwidth scale); the fit starts here."""
    lower: float
    """Smallest value allowed (> 0: knobs are fitted in log space)."""
    upper: float
    """Largest value allowed."""

    def __post_init__(self) -> None:
        if self.target not in ("bandwidth", "latency", "sim", "kind"):
            raise ValueError(f"Knob.target must be bandwidth, latency, sim or kind, got {self.target!r}")
        if not 0 < self.lower < self.upper:
            raise ValueError(f"Knob {self.name}: bounds must satisfy 0 < lower < upper, got {self.lower}, {self.upper}")

    @property
    def start(self) -> float:
        """The base value clipped into the bounds (a base latency of 0 starts at the lower bound)."""
        return min(max(self.base, self.lower), self.upper)

    @property
    def log_bounds(self) -> tuple[float, float]:
        """(log lower, log upper)."""
        return math.log(self.lower), math.log(self.upper)


def _uniform_latency(G: nx.DiGraph, kind: str) -> float:
    values = [d.get("latency_us", 0.0) for _, _, d in G.edges(data=True) if d.get("kind") == kind]
    return max(values) if values else 0.0


def collective_knobs(G: nx.DiGraph, link_kinds: list[str], collective_kinds: list[str] = ()) -> list[Knob]:
    """The collective knobs for the exercised ``link_kinds`` of ``G`` (see module doc); a kind factor for
    each of ``collective_kinds`` but the first (the reference)."""
    knobs = []
    for kind in link_kinds:
        knobs.append(Knob(f"{kind}.bandwidth_scale", "bandwidth", kind, 1.0, 1e-3, 1e3))
        knobs.append(Knob(f"{kind}.latency_us", "latency", kind, _uniform_latency(G, kind), 1e-4, 1e4))
    sim = G.graph.get("sim") or {}
    fastest = max((d.get("bandwidth_GBps", 0.0) for _, _, d in G.edges(data=True)), default=0.0)
    for key in ("collective_base_latency_us", *STARTUP_KEYS):
        lower, upper = _SIM_BOUNDS[key]
        if upper is None:  # the channel rate: up to the fastest link, never below a decade over the floor
            upper = max(fastest, 10 * lower)
        knobs.append(Knob(key, "sim", key, float(sim.get(key, _SIM_DEFAULTS[key])), lower, upper))
    factors = sim.get(KIND_FACTORS_KEY) or {}
    for kind in list(collective_kinds)[1:]:
        knobs.append(Knob(f"kind_factor.{kind}", "kind", kind, float(factors.get(kind, 1.0)), 1e-2, 1e2))
    return knobs


def set_kind_factor(sim: dict, kind: str, value: float) -> None:
    """Set ``kind``'s bytes factor in ``sim`` (a copy of the factors dict: ``sim`` may share it)."""
    sim[KIND_FACTORS_KEY] = {**(sim.get(KIND_FACTORS_KEY) or {}), kind: value}


def apply_values(G: nx.DiGraph, knobs: list[Knob], values) -> nx.DiGraph:
    """A copy of ``G`` (its ``sim`` dict copied too) with each knob's value set; startup bytes rounded."""
    H = G.copy()
    H.graph["sim"] = dict(G.graph.get("sim") or {})
    for knob, value in zip(knobs, values):
        value = float(value)
        if knob.target == "sim":
            H.graph["sim"][knob.key] = int(round(value)) if knob.key == "collective_startup_bytes" else value
            continue
        if knob.target == "kind":
            set_kind_factor(H.graph["sim"], knob.key, value)
            continue
        for u, v, data in H.edges(data=True):
            if data.get("kind") != knob.key:
                continue
            if knob.target == "bandwidth":
                data["bandwidth_GBps"] = G.edges[u, v]["bandwidth_GBps"] * value
            else:
                data["latency_us"] = value
    return H
