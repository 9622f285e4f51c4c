"""Link specs and the helpers that put them on a graph as directed edges.

A full-duplex link bundle is two directed edges, one per direction, each carrying

- ``bandwidth_GBps``: the per-direction rate the model uses (an effective rate in presets),
- ``peak_bandwidth_GBps``: the published per-direction peak, where known,
- ``latency_us``: the per-hop latency of crossing this edge,
- ``kind``: one of ``topologies.kinds.EDGE_KINDS``,
- ``n_links``: how many physical links the bundle aggregates (an NVLink pair with 4 links is one edge
  of 4 x 25 GB/s peak, ``n_links=4``).

Example::

    >>> import networkx as nx
    >>> G = nx.DiGraph(); G.add_nodes_from(["gpu0", "gpu1"], kind="gpu")
    >>> add_duplex(G, "gpu0", "gpu1", LinkSpec("nvlink", 19.0, 0.5, peak_bandwidth_GBps=25.0).times(4))
    >>> G.edges["gpu1", "gpu0"]["bandwidth_GBps"], G.edges["gpu1", "gpu0"]["n_links"]
    (76.0, 4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from topologies.kinds import EDGE_KINDS

__all__ = ["LinkSpec", "add_duplex", "add_directed"]


@dataclass(frozen=True)
class LinkSpec:
    """One physical link (or bundle): kind, per-direction model rate, published peak, per-hop latency."""

    kind: str
    """Edge kind, one of topologies.kinds.EDGE_KINDS."""
    bandwidth_GBps: float
    """Per-direction rate the model uses, GB/s (1 GB = 1e9 B); > 0."""
    latency_us: float
    """Latency of one hop over this link, microseconds; >= 0."""
    peak_bandwidth_GBps: float | None = None
    """Published per-direction peak, GB/s, or None where no peak is published (placeholders)."""
    n_links: int = 1
    """Physical links in the bundle."""

    def __post_init__(self) -> None:
        if self.kind not in EDGE_KINDS:
            raise ValueError(f"LinkSpec kind must be one of {', '.join(EDGE_KINDS)}, got {self.kind!r}")
        if not (math.isfinite(self.bandwidth_GBps) and self.bandwidth_GBps > 0):
            raise ValueError(f"LinkSpec bandwidth_GBps must be > 0, got {self.bandwidth_GBps!r}")
        if not (math.isfinite(self.latency_us) and self.latency_us >= 0):
            raise ValueError(f"LinkSpec latency_us must be >= 0, got {self.latency_us!r}")
        if self.peak_bandwidth_GBps is not None and not self.peak_bandwidth_GBps > 0:
            raise ValueError(f"LinkSpec peak_bandwidth_GBps must be > 0, got {self.peak_bandwidth_GBps!r}")
        if not (isinstance(self.n_links, int) and self.n_links >= 1):
            raise ValueError(f"LinkSpec n_links must be an integer >= 1, got {self.n_links!r}")

    def times(self, count: int) -> LinkSpec:
        """A bundle of ``count`` such links: rates multiply, latency stays (links run in parallel)."""
        if not (isinstance(count, int) and count >= 1):
            raise ValueError(f"link bundle count must be an integer >= 1, got {count!r}")
        peak = None if self.peak_bandwidth_GBps is None else self.peak_bandwidth_GBps * count
        return LinkSpec(self.kind, self.bandwidth_GBps * count, self.latency_us, peak, self.n_links * count)

    def with_bandwidth(self, bandwidth_GBps: float, peak_bandwidth_GBps: float | None) -> LinkSpec:
        """The same link kind and latency carrying a different aggregate rate (e.g. a leaf's uplinks)."""
        return LinkSpec(self.kind, bandwidth_GBps, self.latency_us, peak_bandwidth_GBps, self.n_links)

    def edge_attrs(self) -> dict:
        """The attribute dict of one directed edge (floats coerced, so GraphML keys keep one type)."""
        attrs = {
            "bandwidth_GBps": float(self.bandwidth_GBps),
            "latency_us": float(self.latency_us),
            "kind": self.kind,
            "n_links": int(self.n_links),
        }
        if self.peak_bandwidth_GBps is not None:
            attrs["peak_bandwidth_GBps"] = float(self.peak_bandwidth_GBps)
        return attrs


def add_directed(G: nx.DiGraph, a: str, b: str, spec: LinkSpec) -> None:
    """Add the one directed edge a -> b carrying ``spec``; both nodes must already exist."""
    if a not in G or b not in G:
        raise ValueError(f"add_directed: {a if a not in G else b!r} is not a node")
    G.add_edge(a, b, **spec.edge_attrs())


def add_duplex(G: nx.DiGraph, a: str, b: str, spec: LinkSpec) -> None:
    """Add a full-duplex link: the edges a -> b and b -> a, each with ``spec``'s per-direction rate."""
    add_directed(G, a, b, spec)
    add_directed(G, b, a, spec)
