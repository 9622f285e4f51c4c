"""Server shapes: the inside of one machine (GPUs, NVSwitch or NVLink mesh or PCIe tree, NICs).

Each spec is a frozen dataclass with ``add_to(G, server, first_gpu) -> list[str]``, which adds one
server's nodes and links to ``G`` and returns its NIC node names in rail order (NIC i is rail i), and
``build()``, which returns that server alone as a graph. ``cluster.fat_tree_cluster`` joins many.

Node names: GPUs ``gpu<global index>``; the rest ``n<server>/<part>``, e.g. ``n0/nvswitch``,
``n1/nic3``, ``n0/pcie2``, ``n0/host``. Every node gets ``server``; NICs also get ``rail``.

Example::

    >>> from topologies.devices import A100_SXM4_40GB
    >>> from topologies.rates import NVSWITCH_A100
    >>> G = NvSwitchServer(8, A100_SXM4_40GB, NVSWITCH_A100).build()
    >>> G.number_of_nodes(), G.number_of_edges()
    (9, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from topologies.devices import DeviceSpec
from topologies.kinds import gpu_name
from topologies.links import LinkSpec, add_duplex
from topologies.rates import NIC_ATTACH_GEN4, PCIE_GEN4_X16

__all__ = ["NvSwitchServer", "MeshServer", "PcieServer", "add_gpu"]


def add_gpu(G: nx.DiGraph, index: int, server: int, device: DeviceSpec) -> str:
    """Add GPU ``index`` (node ``gpu<index>``) of ``server`` with its device dict; return its name."""
    name = gpu_name(index)
    G.add_node(name, kind="gpu", gpu_index=index, server=server, device=device.as_dict())
    return name


def _check_counts(label: str, n_gpus: int, nics: int) -> None:
    if not (isinstance(n_gpus, int) and n_gpus >= 1):
        raise ValueError(f"{label}: n_gpus must be an integer >= 1, got {n_gpus!r}")
    if not (isinstance(nics, int) and nics >= 0):
        raise ValueError(f"{label}: nics must be an integer >= 0, got {nics!r}")


def _add_nics(G, server: int, attach_points: list[str], nics: int, link: LinkSpec) -> list[str]:
    """Add ``nics`` NICs, NIC i on attach point i * len(points) // nics; return their names."""
    names = []
    for rail in range(nics):
        nic = f"n{server}/nic{rail}"
        G.add_node(nic, kind="nic", server=server, rail=rail)
        add_duplex(G, attach_points[rail * len(attach_points) // nics], nic, link)
        names.append(nic)
    return names


class _Buildable:
    """Shared ``build()``: one server, index 0, its GPUs gpu0..gpu<n-1>."""

    def build(self, name: str | None = None) -> nx.DiGraph:
        G = nx.DiGraph(name=name or self.describe(), notes=self.describe(), sim={})
        self.add_to(G, server=0, first_gpu=0)
        return G


@dataclass(frozen=True)
class NvSwitchServer(_Buildable):
    """A DGX/HGX-style server: every GPU joins one logical NVSwitch; NIC i sits next to GPU i.

    The server's several NVSwitch chips (6 on DGX A100, 4 on DGX H100) are modelled as one
    non-blocking switch node ``n<s>/nvswitch``; each GPU has one duplex edge to it carrying all of its
    NVLinks. The GPU -> NIC edge stands for the PCIe switch the two share (GPUDirect RDMA).
    """

    n_gpus: int
    """GPUs in the server."""
    device: DeviceSpec
    """Device of every GPU."""
    gpu_link: LinkSpec
    """GPU <-> NVSwitch edge, per direction (all the GPU's NVLinks)."""
    nics: int = 0
    """NICs in the server (0, or a divisor of n_gpus); NIC i is rail i."""
    nic_link: LinkSpec = NIC_ATTACH_GEN4
    """GPU <-> NIC edge."""

    def __post_init__(self) -> None:
        _check_counts("NvSwitchServer", self.n_gpus, self.nics)
        if self.nics and self.n_gpus % self.nics:
            raise ValueError(f"NvSwitchServer: nics ({self.nics}) must divide n_gpus ({self.n_gpus})")

    def describe(self) -> str:
        """One line: what this server is."""
        return f"{self.n_gpus}x {self.device.name} on NVSwitch, {self.nics} NICs"

    def add_to(self, G: nx.DiGraph, server: int, first_gpu: int) -> list[str]:
        """Add this server's nodes and links to ``G``; return its NIC names in rail order."""
        switch = f"n{server}/nvswitch"
        G.add_node(switch, kind="nvswitch", server=server)
        gpus = [add_gpu(G, first_gpu + i, server, self.device) for i in range(self.n_gpus)]
        for gpu in gpus:
            add_duplex(G, gpu, switch, self.gpu_link)
        return _add_nics(G, server, gpus, self.nics, self.nic_link)


@dataclass(frozen=True)
class MeshServer(_Buildable):
    """GPUs joined all-to-all by direct NVLink bundles (HGX A100 4-GPU: 4 NVLink3 links per pair)."""

    n_gpus: int
    """GPUs in the server."""
    device: DeviceSpec
    """Device of every GPU."""
    link: LinkSpec
    """One NVLink, per direction; each pair gets a bundle of links_per_pair of them."""
    links_per_pair: int = 1
    """NVLinks between every pair of GPUs."""
    nics: int = 0
    """NICs in the server (0, or a divisor of n_gpus)."""
    nic_link: LinkSpec = NIC_ATTACH_GEN4
    """GPU <-> NIC edge."""

    def __post_init__(self) -> None:
        _check_counts("MeshServer", self.n_gpus, self.nics)
        if not (isinstance(self.links_per_pair, int) and self.links_per_pair >= 1):
            raise ValueError(f"MeshServer: links_per_pair must be an integer >= 1, got {self.links_per_pair!r}")
        if self.nics and self.n_gpus % self.nics:
            raise ValueError(f"MeshServer: nics ({self.nics}) must divide n_gpus ({self.n_gpus})")

    def describe(self) -> str:
        """One line: what this server is."""
        return f"{self.n_gpus}x {self.device.name}, NVLink mesh with {self.links_per_pair} links per pair"

    def add_to(self, G: nx.DiGraph, server: int, first_gpu: int) -> list[str]:
        """Add this server's nodes and links to ``G``; return its NIC names in rail order."""
        gpus = [add_gpu(G, first_gpu + i, server, self.device) for i in range(self.n_gpus)]
        bundle = self.link.times(self.links_per_pair)
        for i, a in enumerate(gpus):
            for b in gpus[i + 1 :]:
                add_duplex(G, a, b, bundle)
        return _add_nics(G, server, gpus, self.nics, self.nic_link)


@dataclass(frozen=True)
class PcieServer(_Buildable):
    """GPUs behind PCIe switches under one host bridge; NICs on the PCIe switches.

    Dual-socket boards are simplified to one ``host`` node (the root complex); the inter-socket link
    is not modelled. GPU traffic between switches goes GPU -> switch -> host -> switch -> GPU.
    """

    n_gpus: int
    """GPUs in the server."""
    device: DeviceSpec
    """Device of every GPU."""
    gpus_per_switch: int = 2
    """GPUs behind each PCIe switch (must divide n_gpus)."""
    gpu_link: LinkSpec = PCIE_GEN4_X16
    """GPU <-> PCIe switch edge."""
    uplink: LinkSpec = PCIE_GEN4_X16
    """PCIe switch <-> host bridge edge."""
    nics: int = 0
    """NICs in the server (0, or a divisor of the number of switches); NIC i is rail i."""
    nic_link: LinkSpec = PCIE_GEN4_X16
    """PCIe switch <-> NIC edge."""

    def __post_init__(self) -> None:
        _check_counts("PcieServer", self.n_gpus, self.nics)
        if not (isinstance(self.gpus_per_switch, int) and self.gpus_per_switch >= 1):
            raise ValueError(f"PcieServer: gpus_per_switch must be an integer >= 1, got {self.gpus_per_switch!r}")
        if self.n_gpus % self.gpus_per_switch:
            raise ValueError(
                f"PcieServer: gpus_per_switch ({self.gpus_per_switch}) must divide n_gpus ({self.n_gpus})"
            )
        switches = self.n_gpus // self.gpus_per_switch
        if self.nics and self.nics % switches and switches % self.nics:
            raise ValueError(f"PcieServer: nics ({self.nics}) and PCIe switches ({switches}) must divide evenly")

    def describe(self) -> str:
        """One line: what this server is."""
        return f"{self.n_gpus}x {self.device.name} on PCIe, {self.gpus_per_switch} per switch"

    def add_to(self, G: nx.DiGraph, server: int, first_gpu: int) -> list[str]:
        """Add this server's nodes and links to ``G``; return its NIC names in rail order."""
        host = f"n{server}/host"
        G.add_node(host, kind="host", server=server)
        switches = []
        for s in range(self.n_gpus // self.gpus_per_switch):
            switch = f"n{server}/pcie{s}"
            G.add_node(switch, kind="pcie_switch", server=server)
            add_duplex(G, switch, host, self.uplink)
            for i in range(self.gpus_per_switch):
                gpu = add_gpu(G, first_gpu + s * self.gpus_per_switch + i, server, self.device)
                add_duplex(G, gpu, switch, self.gpu_link)
            switches.append(switch)
        return _add_nics(G, server, switches, self.nics, self.nic_link)
