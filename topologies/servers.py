"""Server shapes: the inside of one machine (GPUs, NVSwitch or NVLink mesh or PCIe tree, NICs).

Each spec is a frozen dataclass with ``add_to(G, server, first_gpu) -> list[str]``, which adds one
server's nodes and links to ``G`` and returns its NIC node names in rail order (NIC i is rail i), and
``build()``, which returns that server alone as a graph. ``cluster.fat_tree_cluster`` joins many.

Node names: GPUs ``gpu<global index>``; the rest ``n<server>/<part>``, e.g. ``n0/nvswitch``,
``n1/nic3``, ``n0/pcie2``, ``n0/host``, ``n0/cpu1``. Every node gets ``server``; NICs also get ``rail``.

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
from topologies.rates import NIC_ATTACH_GEN4, PCIE_GEN4_X16, POWER9_XBUS

__all__ = ["NvSwitchServer", "MeshServer", "PcieServer", "SocketServer", "add_gpu"]


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


@dataclass(frozen=True)
class SocketServer(_Buildable):
    """GPUs NVLinked in groups to their CPU socket and to each other; sockets joined by an SMP bus.

    The IBM Power System AC922 shape: socket k (node ``n<s>/cpu<k>``, kind cpu) has ``gpus_per_socket``
    GPUs, each joined to every other GPU of its socket by ``links_per_pair`` NVLinks and to the socket by
    ``cpu_links`` NVLinks; every pair of sockets is joined by ``socket_link`` (the POWER9 X-bus). GPUs of
    different sockets talk through both sockets: GPU -> CPU -> CPU -> GPU. NICs hang off the sockets.
    Example: ``SocketServer(2, V100_SXM2_16GB, NVLINK2_LINK, gpus_per_socket=2, links_per_pair=3,
    cpu_links=3)`` is the 4-GPU AC922: 6 nodes, 2 GPU pairs of 3 links, 4 GPU-CPU bundles of 3.
    """

    sockets: int
    """CPU sockets in the server."""
    device: DeviceSpec
    """Device of every GPU."""
    link: LinkSpec
    """One NVLink, per direction; GPU pairs and GPU-CPU edges are bundles of them."""
    gpus_per_socket: int = 2
    """GPUs on each socket."""
    links_per_pair: int = 3
    """NVLinks between two GPUs of the same socket."""
    cpu_links: int = 3
    """NVLinks between a GPU and its socket."""
    socket_link: LinkSpec = POWER9_XBUS
    """Socket <-> socket edge, per direction."""
    nics: int = 0
    """NICs in the server (0, or a divisor or multiple of sockets); NIC i is rail i."""
    nic_link: LinkSpec = NIC_ATTACH_GEN4
    """Socket <-> NIC edge."""

    def __post_init__(self) -> None:
        _check_counts("SocketServer", 1, self.nics)
        for label in ("sockets", "gpus_per_socket", "links_per_pair", "cpu_links"):
            value = getattr(self, label)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"SocketServer: {label} must be an integer >= 1, got {value!r}")
        if self.nics and self.nics % self.sockets and self.sockets % self.nics:
            raise ValueError(f"SocketServer: nics ({self.nics}) and sockets ({self.sockets}) must divide evenly")

    @property
    def n_gpus(self) -> int:
        """GPUs in the server: sockets x gpus_per_socket."""
        return self.sockets * self.gpus_per_socket

    def describe(self) -> str:
        """One line: what this server is."""
        return (f"{self.n_gpus}x {self.device.name} on {self.sockets} sockets, {self.gpus_per_socket} per socket "
                f"NVLinked to it, {self.nics} NICs")

    def add_to(self, G: nx.DiGraph, server: int, first_gpu: int) -> list[str]:
        """Add this server's nodes and links to ``G``; return its NIC names in rail order."""
        cpus = [f"n{server}/cpu{k}" for k in range(self.sockets)]
        for k, cpu in enumerate(cpus):
            G.add_node(cpu, kind="cpu", server=server)
            for other in cpus[:k]:
                add_duplex(G, other, cpu, self.socket_link)
        pair, to_cpu = self.link.times(self.links_per_pair), self.link.times(self.cpu_links)
        for k, cpu in enumerate(cpus):
            first = first_gpu + k * self.gpus_per_socket
            gpus = [add_gpu(G, first + i, server, self.device) for i in range(self.gpus_per_socket)]
            for i, a in enumerate(gpus):
                add_duplex(G, a, cpu, to_cpu)
                for b in gpus[i + 1 :]:
                    add_duplex(G, a, b, pair)
        return _add_nics(G, server, cpus, self.nics, self.nic_link)
