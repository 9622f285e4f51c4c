"""Multi-server clusters: servers joined by a two-level (leaf/spine) fat tree through their NICs.

Wiring. *Rail-optimised* (the default, as in NVIDIA DGX SuperPOD): NIC i of every server is rail i and
goes to a leaf of rail i; each leaf takes ``leaf_down_ports`` servers, so a rail has
ceil(servers / leaf_down_ports) leaves. *Server-grouped* (``rail_optimised=False``): all NICs of a
server go to the same leaf, ``leaf_down_ports // nics`` servers per leaf.

Oversubscription. A leaf with ``a`` NIC ports attached has ``a * nic_rate / oversubscription`` GB/s of
uplink per direction, split evenly over the spines (every leaf links to every spine). With one leaf
there are no spines. Spine count defaults to min(8, max(1, floor(a_max / oversubscription))), so a
bundle never carries less than one port's rate.

Leaf names: ``leaf<group * rails + rail>`` (rail-optimised) or ``leaf<group>``; spines ``spine<k>``.
Leaves carry ``group`` (and ``rail`` when rail-optimised).

Example, two DGX A100 servers, 8 rails, one leaf per rail::

    >>> from topologies.presets import DGX_A100_SERVER
    >>> from topologies.rates import IB_HDR
    >>> G = fat_tree_cluster(DGX_A100_SERVER, 2, FabricSpec(IB_HDR, leaf_down_ports=20))
    >>> sum(1 for _, k in G.nodes(data="kind") if k == "leaf"), sum(1 for _, k in G.nodes(data="kind") if k == "spine")
    (8, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from topologies.links import LinkSpec, add_duplex

__all__ = ["FabricSpec", "fat_tree_cluster"]


@dataclass(frozen=True)
class FabricSpec:
    """The network between servers: a two-level fat tree of NIC-rate links."""

    link: LinkSpec
    """NIC <-> leaf cable, per direction (kind ib or ethernet); leaf <-> spine bundles use its kind and latency."""
    leaf_down_ports: int = 32
    """NIC ports per leaf (a 64-port NDR switch at 1:1 has 32 down, 32 up; a 40-port HDR one 20 and 20)."""
    oversubscription: float = 1.0
    """Leaf downlink over uplink capacity; 1.0 is non-blocking, 2.0 halves the uplinks."""
    rail_optimised: bool = True
    """NIC i of every server to a rail-i leaf (True) or all of a server's NICs to one leaf (False)."""
    n_spines: int | None = None
    """Spine switches; None picks min(8, max(1, floor(max ports per leaf / oversubscription)))."""

    def __post_init__(self) -> None:
        if self.link.kind not in ("ib", "ethernet"):
            raise ValueError(f"FabricSpec link kind must be ib or ethernet, got {self.link.kind!r}")
        if not (isinstance(self.leaf_down_ports, int) and self.leaf_down_ports >= 1):
            raise ValueError(f"FabricSpec leaf_down_ports must be an integer >= 1, got {self.leaf_down_ports!r}")
        if not (math.isfinite(self.oversubscription) and self.oversubscription >= 1.0):
            raise ValueError(f"FabricSpec oversubscription must be >= 1, got {self.oversubscription!r}")
        if self.n_spines is not None and not (isinstance(self.n_spines, int) and self.n_spines >= 1):
            raise ValueError(f"FabricSpec n_spines must be an integer >= 1 or None, got {self.n_spines!r}")

    def describe(self) -> str:
        """One line: rate, wiring and oversubscription."""
        wiring = "rail-optimised" if self.rail_optimised else "server-grouped"
        return (f"two-level fat tree, {self.link.kind} {self.link.bandwidth_GBps:g} GB/s per NIC, {wiring}, "
                f"{self.leaf_down_ports} ports per leaf, oversubscription {self.oversubscription:g}:1")


def _leaf_plan(fabric: FabricSpec, n_servers: int, nics: int) -> list[tuple[str, dict, list[tuple[int, int]]]]:
    """Leaves as (name, attrs, [(server, rail), ...]) in name order."""
    plan = []
    if fabric.rail_optimised:
        per_leaf = fabric.leaf_down_ports
        for group in range(math.ceil(n_servers / per_leaf)):
            servers = range(group * per_leaf, min(n_servers, (group + 1) * per_leaf))
            for rail in range(nics):
                attrs = {"kind": "leaf", "group": group, "rail": rail}
                plan.append((f"leaf{group * nics + rail}", attrs, [(s, rail) for s in servers]))
    else:
        per_leaf = fabric.leaf_down_ports // nics
        if per_leaf < 1:
            raise ValueError(
                f"fat tree: a server-grouped leaf needs {nics} ports per server, has {fabric.leaf_down_ports}"
            )
        for group in range(math.ceil(n_servers / per_leaf)):
            servers = range(group * per_leaf, min(n_servers, (group + 1) * per_leaf))
            ports = [(s, rail) for s in servers for rail in range(nics)]
            plan.append((f"leaf{group}", {"kind": "leaf", "group": group}, ports))
    return plan


def fat_tree_cluster(server, n_servers: int, fabric: FabricSpec, *, name: str | None = None) -> nx.DiGraph:
    """``n_servers`` copies of ``server`` (a ``topologies.servers`` spec) joined by ``fabric``.

    Server s holds GPUs ``s*n .. s*n+n-1`` (n GPUs per server). Example: 16 DGX A100 servers with
    20-port leaves give 128 GPUs and 8 leaves (one per rail), ``gpu8`` in server 1.
    """
    if not (isinstance(n_servers, int) and n_servers >= 1):
        raise ValueError(f"fat tree: n_servers must be an integer >= 1, got {n_servers!r}")
    if server.nics < 1:
        raise ValueError("fat tree: the server has no NICs to join the network with")
    title = name or f"cluster-{n_servers}"
    G = nx.DiGraph(name=title, notes=f"{n_servers} x ({server.describe()}); {fabric.describe()}", sim={})
    server_nics = [server.add_to(G, s, s * server.n_gpus) for s in range(n_servers)]

    plan = _leaf_plan(fabric, n_servers, server.nics)
    for leaf, attrs, ports in plan:
        G.add_node(leaf, **attrs)
        for s, rail in ports:
            add_duplex(G, server_nics[s][rail], leaf, fabric.link)
    if len(plan) < 2:
        return G

    max_ports = max(len(ports) for _, _, ports in plan)
    n_spines = fabric.n_spines or min(8, max(1, math.floor(max_ports / fabric.oversubscription)))
    spines = [f"spine{k}" for k in range(n_spines)]
    for spine in spines:
        G.add_node(spine, kind="spine")
    peak = fabric.link.peak_bandwidth_GBps
    for leaf, _, ports in plan:
        # The leaf's uplink capacity follows the ports actually attached, so the ratio holds for partial leaves.
        up_ports = len(ports) / fabric.oversubscription / n_spines
        bundle = LinkSpec(
            fabric.link.kind,
            fabric.link.bandwidth_GBps * up_ports,
            fabric.link.latency_us,
            None if peak is None else peak * up_ports,
            max(1, round(up_ports)),
        )
        for spine in spines:
            add_duplex(G, leaf, spine, bundle)
    return G
