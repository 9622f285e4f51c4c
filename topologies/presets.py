"""Named presets: real machines with the published figures they come from.

``PRESETS`` maps a name to a ``Preset``; calling it builds the graph. A suffix changes the size:
``dgx-a100:16`` is 16 DGX A100 servers (128 GPUs) on a rail-optimised, non-blocking fat tree;
``loopback:4`` is 4 CPU ranks; ``torus-3d:4x4x8`` is a 4x4x8 torus. Without a suffix a server preset is
one server, NICs included but not wired to anything.

==========  ====  ==========================  ===================  ===================================
preset      GPUs  inside a server              NICs                 cluster fabric (NAME:N)
==========  ====  ==========================  ===================  ===================================
dgx-a100    8     NVSwitch, 230 (300) GB/s     8x HDR 24 (25) GB/s  20-port leaves (DGX A100 SuperPOD SU)
dgx-h100    8     NVSwitch, 370 (450) GB/s     8x NDR 47 (50) GB/s  32-port leaves (DGX H100 SuperPOD SU)
dgx-h200    8     NVSwitch, 370 (450) GB/s     8x NDR 47 (50) GB/s  32-port leaves
dgx-a100-   8     as dgx-a100, A100 80GB       8x HDR 24 (25) GB/s  20-port leaves
  80gb
dgx-b200    8     NVSwitch (NVLink5), 679      8x NDR 47 (50) GB/s  32-port leaves
                  (900) GB/s
gb200-nvl72 72    one NVLink5 domain of 72,    72x NDR 47 (50)      32-port leaves
                  679 (900) GB/s per GPU       GB/s, one per GPU
a100-4gpu   4     NVLink3 mesh, 4 links/pair,  4x HDR 24 (25) GB/s  20-port leaves
                  76.7 (100) GB/s per pair
pcie-8gpu   8     PCIe Gen4 tree, 4 switches,  4x HDR, one per      20-port leaves
                  25 (31.5) GB/s per link      PCIe switch
dgx-2h      16    NVSwitch (NVLink2), 115      8x EDR 12 (12.5)     18-port leaves (36-port EDR
                  (150) GB/s                   GB/s, one per 2 GPUs switches at 1:1)
v100-4gpu   4     AC922: 2 sockets of 2 GPUs,  2x EDR 12 (12.5)     18-port leaves
                  NVLink2 57.5 (75) GB/s per   GB/s, one per socket
                  pair and to the socket;
                  X-bus 32 (64) GB/s
rtx5000-    4     PCIe Gen3 tree, 2 switches,  1x FDR 6.5 (6.8)     18-port leaves
  4gpu            12 (15.75) GB/s per link     GB/s
torus-3d    64    4x4x4 torus, 2 NVLink3 per   none                 (suffix is the shape)
                  neighbour, 38.3 (50) GB/s
loopback    8     CPU ranks via one host hub,  none                 (suffix is the rank count)
                  placeholder 5 GB/s, 20 us
==========  ====  ==========================  ===================  ===================================

Rates are "model (peak)" per direction; ``topologies.rates`` gives the source of each. Every preset's
``sim`` holds ``collective_base_latency_us`` = 8.0 (NCCL's per-collective base latency: tuning.cc's
Simple ring base latency is 8.4 us; steps between servers add NCCL's network step latency, see
``simulator.collectives.params``). No preset sets ``gemm_efficiency``: the compute model takes each
GPU's large-GEMM ceiling from its published large-GEMM throughput (sustained on the A100, the
maximum achievable matmul search elsewhere) and its shape
dependence from its SM count (``topologies.compute_rates``, ``simulator.compute``); GPUs without a
published figure (V100, Quadro RTX 5000) fall back to 0.7 of peak; calibration replaces either. The start-up term, NVLink
SHARP and the row of NCCL's per-channel tree caps (``collective_nccl_arch``,
``simulator.collectives.channel_caps``; Turing takes Volta's, as NCCL does) are per GPU generation
(``GENERATION_SIM``; the hypothetical torus-3d keeps ``DEFAULT_SIM``, no NCCL platform's caps):

- Volta (V100 presets: dgx-2h, v100-4gpu) as Ampere: NCCL gives SM70 the same per-channel NVLink figure (topo.h
  SM70_NVLINK_BW 20.0; tuning.cc perChMaxRingLL128Bws Volta 20.0) and has no NVLS before Hopper.
- Turing (rtx5000-4gpu) as Ampere, an assumption: its GPUs talk over PCIe, which NCCL's per-channel
  figures do not set apart by generation; no NVLS.
- Ampere (A100 presets): the first 1 MiB (NCCL's Simple slice) at 20 GB/s, NCCL's per-channel NVLink
  figure for SM80 (topo.h SM80_NVLINK_BW; tuning.cc perChMaxRingLL128Bws Ampere 20.0): 52 us, which
  the A100 logs in tests/data/nccl-tests show as the intercept of their bandwidth regime.
- Hopper (H100, H200): the first 4 MiB at 210 GB/s (20 us): read off the published nccl-tests
  all_reduce on 8 H20 (NVLink4 NVSwitch like H100's; nccl-tests 2.19.7, NCCL 2.30.4;
  kvcache-ai/Mooncake PR #3484), which runs 1 MiB in 27.8 us, 4 MiB in 53.2 us and 16 MiB in 121.3 us:
  these two values put every size from 256 KiB to 1 GiB within 10% of that log (the A100 figure
  would put 1 MiB at +167%). NVLS on (NVSwitch gen 3 has multicast), efficiency 0.85 (tuning.cc
  nvlsEfficiency, Hopper); 5 KiB per NVLS chunk (``simulator.collectives.nvls_chunks``: NCCL's NVLS
  chunks are 16-64 KiB below 1 GiB on a server, and Azure's published ND H100 v5 table follows them);
  across servers NCCL's NVLS tree pays a pipeline fill of 1.5 of its loops
  (``simulator.collectives.nvls_tree_fill``, read off Nebius' two-server H100 log and Lambda's B200 one).
- Blackwell (B200, GB200): Hopper's start-up (an assumption: no published small-size B200 log was
  found); NVLS on, efficiency 0.80, read off Together AI's 8 x B200 server, whose forced NVLS all_reduce
  reached 840.8 GB/s busbw at 16 GiB (NCCL 2.29.7) over the 679 NVLink5 rate its ring sets
  (``topologies.rates``; NCCL's tuning constant, 0.74, would give 781 there); the NVLS tree's fill as
  Hopper's; no NVLS chunk cost (no published single-server B200 NVLS table by size was found to read
  one from).

Example::

    >>> G = PRESETS["dgx-a100"](16)
    >>> G.graph["name"], sum(1 for _, k in G.nodes(data="kind") if k == "gpu")
    ('dgx-a100:16', 128)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Callable

import networkx as nx

from simulator.limits import check_topology_gpus
from topologies import builders
from topologies.cluster import FabricSpec, fat_tree_cluster
from topologies.devices import (A100_PCIE_40GB, A100_SXM4_40GB, A100_SXM4_80GB, B200_180GB, GB200_186GB,
                                H100_SXM5_80GB, H200_SXM_141GB, QUADRO_RTX5000_16GB, V100_SXM2_16GB, V100_SXM3_32GB)
from topologies.errors import TopologyError
from topologies.rates import (IB_EDR, IB_FDR, IB_HDR, IB_NDR, NIC_ATTACH_GEN3, NIC_ATTACH_GEN4, NIC_ATTACH_GEN5,
                              NVLINK2_LINK, NVLINK3_LINK, NVSWITCH_A100, NVSWITCH_B200, NVSWITCH_DGX2H, NVSWITCH_H100,
                              PCIE_GEN3_X16, PCIE_GEN4_X16, POWER9_XBUS)
from topologies.servers import MeshServer, NvSwitchServer, PcieServer, SocketServer

__all__ = ["Preset", "PRESETS", "build_preset", "DEFAULT_SIM", "GENERATION_SIM",
           "DGX_A100_SERVER", "DGX_H100_SERVER", "DGX_H200_SERVER", "A100_4GPU_SERVER", "PCIE_8GPU_SERVER",
           "DGX_A100_80GB_SERVER", "DGX_B200_SERVER", "GB200_NVL72_RACK", "DGX_2H_SERVER", "V100_4GPU_SERVER",
           "RTX5000_4GPU_SERVER"]

DEFAULT_SIM = {"collective_base_latency_us": 8.0}
_HOPPER_STARTUP = {"collective_startup_bytes": 4 << 20, "collective_channel_bandwidth_GBps": 210.0}
_NVLS_TREE_FILL = {"collective_nvls_tree_fill_loops": 1.5}
GENERATION_SIM = {
    "volta": {**DEFAULT_SIM, "collective_nccl_arch": "volta"},
    "turing": {**DEFAULT_SIM, "collective_nccl_arch": "volta"},  # NCCL's tables give compute capability 7.5 Volta's row
    "ampere": {**DEFAULT_SIM, "collective_nccl_arch": "ampere"},
    "hopper": {**DEFAULT_SIM, **_HOPPER_STARTUP, **_NVLS_TREE_FILL, "collective_nvls": True,
               "collective_nvls_efficiency": 0.85, "collective_nvls_chunk_overhead_bytes": 5 << 10,
               "collective_nccl_arch": "hopper"},
    "blackwell": {**DEFAULT_SIM, **_HOPPER_STARTUP, **_NVLS_TREE_FILL, "collective_nvls": True,
                  "collective_nvls_efficiency": 0.80, "collective_nccl_arch": "blackwell"},
}
"""The ``sim`` of a preset by GPU generation (module doc)."""
# Loopback placeholders: gloo on a small CPU host; calibration (a later issue) measures the real values.
LOOPBACK_SIM = {"collective_base_latency_us": 100.0, "gemm_efficiency": 0.5}

DGX_A100_SERVER = NvSwitchServer(8, A100_SXM4_40GB, NVSWITCH_A100, nics=8, nic_link=NIC_ATTACH_GEN4)
DGX_H100_SERVER = NvSwitchServer(8, H100_SXM5_80GB, NVSWITCH_H100, nics=8, nic_link=NIC_ATTACH_GEN5)
DGX_H200_SERVER = NvSwitchServer(8, H200_SXM_141GB, NVSWITCH_H100, nics=8, nic_link=NIC_ATTACH_GEN5)
DGX_A100_80GB_SERVER = NvSwitchServer(8, A100_SXM4_80GB, NVSWITCH_A100, nics=8, nic_link=NIC_ATTACH_GEN4)
DGX_B200_SERVER = NvSwitchServer(8, B200_180GB, NVSWITCH_B200, nics=8, nic_link=NIC_ATTACH_GEN5)
GB200_NVL72_RACK = NvSwitchServer(72, GB200_186GB, NVSWITCH_B200, nics=72, nic_link=NIC_ATTACH_GEN5)
A100_4GPU_SERVER = MeshServer(4, A100_SXM4_40GB, NVLINK3_LINK, links_per_pair=4, nics=4, nic_link=NIC_ATTACH_GEN4)
PCIE_8GPU_SERVER = PcieServer(8, A100_PCIE_40GB, 2, PCIE_GEN4_X16, PCIE_GEN4_X16, nics=4, nic_link=NIC_ATTACH_GEN4)
DGX_2H_SERVER = NvSwitchServer(16, V100_SXM3_32GB, NVSWITCH_DGX2H, nics=8, nic_link=NIC_ATTACH_GEN3)
V100_4GPU_SERVER = SocketServer(2, V100_SXM2_16GB, NVLINK2_LINK, gpus_per_socket=2, links_per_pair=3, cpu_links=3,
                                socket_link=POWER9_XBUS, nics=2, nic_link=NIC_ATTACH_GEN4)
RTX5000_4GPU_SERVER = PcieServer(4, QUADRO_RTX5000_16GB, 2, PCIE_GEN3_X16, PCIE_GEN3_X16, nics=1,
                                 nic_link=NIC_ATTACH_GEN3)

HDR_FABRIC = FabricSpec(IB_HDR, leaf_down_ports=20)
NDR_FABRIC = FabricSpec(IB_NDR, leaf_down_ports=32)
# 36-port EDR and FDR switches (Mellanox SB7800, SX6036) at 1:1: 18 ports down, 18 up.
EDR_FABRIC = FabricSpec(IB_EDR, leaf_down_ports=18)
FDR_FABRIC = FabricSpec(IB_FDR, leaf_down_ports=18)

_SOURCES = {
    "dgx-a100": "DGX A100 (NVIDIA DGX A100 user guide / system architecture whitepaper): 8x A100-SXM4-40GB, "
    "6 NVSwitch chips (one switch node here), 12 NVLink3 links per GPU = 300 GB/s peak per direction, modelled "
    "at 230 GB/s (NCCL all_reduce busbw on 8 A100s at 1 GiB); 8x ConnectX-6 HDR 200 Gb/s compute NICs = 25 GB/s "
    "peak, modelled at 24 GB/s (NCCL per HDR NIC). Cluster leaves of 20 ports, as in a DGX A100 SuperPOD "
    "scalable unit (20 servers, 8 rail leaves).",
    "dgx-h100": "DGX H100 (NVIDIA DGX H100 user guide; DGX BasePOD reference architecture): 8x H100-SXM5-80GB, "
    "4 NVSwitch chips (one switch node here), 18 NVLink4 links = 450 GB/s peak per direction, modelled at "
    "370 GB/s (NCCL ring all_reduce busbw on 8 H100s; NVLink SHARP's ~480 is NVLS, modelled in the collectives); 8x ConnectX-7 NDR "
    "400 Gb/s = 50 GB/s peak, modelled at 47 GB/s (NCCL 46-48 per NDR NIC). Leaves of 32 ports, as in a DGX "
    "H100 SuperPOD scalable unit (32 servers, QM9700 64-port switches at 1:1).",
    "dgx-h200": "DGX H200 (NVIDIA DGX BasePOD reference architecture): the DGX H100 design with H200-SXM-141GB "
    "GPUs (141 GB HBM3e, 4.8 TB/s); NVLink4 370 (450 peak) GB/s, 8x NDR 47 (50 peak) GB/s.",
    "dgx-a100-80gb": "DGX A100 640GB (NVIDIA DGX A100 datasheet): the dgx-a100 design with A100-SXM4-80GB GPUs "
    "(80 GB HBM2e, 2,039 GB/s); NVLink3 230 (300 peak) GB/s, 8x ConnectX-6 HDR 24 (25 peak) GB/s.",
    "dgx-b200": "DGX B200 (NVIDIA DGX B200 datasheet and user guide): 8x B200 (180 GB HBM3e, 8 TB/s), 2 NVSwitch "
    "chips (one switch node here), 18 NVLink5 links = 1.8 TB/s per GPU both ways, 900 GB/s peak per direction, "
    "modelled at 679 GB/s (a published B200 server's ring all_reduce busbw, Together AI; NCCL's own figure is "
    "18 x 40.1 = 722); 8x "
    "ConnectX-7 400 Gb/s compute NICs (ConnectX-8 in later systems) = 50 GB/s peak, modelled at 47 GB/s.",
    "gb200-nvl72": "GB200 NVL72 (NVIDIA GB200 NVL72 datasheet): one rack of 72 Blackwell GPUs (36 Grace CPUs) in one "
    "NVLink5 domain (18 NVLink switch chips in 9 trays, one switch node here), 1.8 TB/s per GPU both ways = 900 GB/s "
    "peak per direction, modelled at 679 GB/s as dgx-b200; 186 GB HBM3e per GPU at 8 TB/s; one 400 Gb/s "
    "ConnectX-7 NIC per GPU (4 per compute tray) for the scale-out fabric, 47 (50 peak) GB/s. NAME:N is N racks.",
    "a100-4gpu": "4x A100-SXM4-40GB fully connected by NVLink3, 4 links per pair = 100 GB/s peak per direction "
    "(an HGX A100 4-GPU board), modelled at 4 x 19.17 = 76.7 GB/s (the 230/300 NCCL fraction of DGX A100 applied "
    "per link, an assumption); 4x HDR NICs, one per GPU, 24 (25 peak) GB/s. The node shape of the 2.5-D "
    "(Tesseract) paper's later experiments.",
    "pcie-8gpu": "8x A100-PCIE-40GB behind 4 PCIe Gen4 switches (2 GPUs and 1 NIC each) under one host bridge; "
    "PCIe Gen4 x16 31.5 GB/s peak per direction, modelled at 25 GB/s (an assumption: ~80% after protocol "
    "overhead); 4x HDR NICs 24 (25 peak) GB/s. Dual-socket boards are simplified to one host node.",
    "dgx-2h": "DGX-2H, the server Megatron-LM ran on (Shoeybi et al. 2019: 32 DGX-2H, 512 GPUs, NAME:32): 16x "
    "V100-SXM3-32GB at the H clock (450 W; 2.1 PFLOPS tensor per server, Tom's Hardware on NVIDIA's DGX-2H), 12 "
    "NVSwitch chips (one switch node here; NVIDIA's \"NVSwitch Accelerates NVIDIA DGX-2\", Hot Chips 2018), 6 "
    "NVLink2 links per GPU = 150 GB/s peak per direction, modelled at 115 GB/s (the A100's 230/300 NCCL fraction, "
    "an assumption: no published DGX-2 nccl-tests figure was found; NCCL's own 6 x 20 = 120 is within 5%); 8x "
    "ConnectX-5 EDR 100 Gb/s NICs, one per 2 GPUs, = 12.5 GB/s peak, modelled at 12 GB/s (NCCL's NET_BW for "
    "100 Gb/s), on PCIe Gen3 12 (15.75 peak) GB/s. Leaves of 18 ports (36-port EDR switches at 1:1, an "
    "assumption about the fabric Megatron-LM ran on).",
    "v100-4gpu": "An IBM Power System AC922 with 4x V100-SXM2-16GB, the node of TACC Longhorn, where the 3-D "
    "tensor parallelism paper (Bian et al., arXiv 2105.14450) ran on 64 V100s (NAME:16). Each POWER9 socket has 2 "
    "GPUs; each GPU's 6 NVLink2 bricks go 3 to the other GPU of its socket and 3 to the socket (IBM AC922 Redpaper "
    "REDP-5494), 75 GB/s peak per direction each, modelled at 3 x 19.17 = 57.5 (the A100 NCCL fraction, an "
    "assumption); the sockets are joined by the X-bus, 64 GB/s peak (IBM), modelled at 32 (NCCL's P9_BW). "
    "2x Mellanox EDR 100 Gb/s ports, one per socket, 12 (12.5 peak) GB/s: the port count is an assumption "
    "(Longhorn's interconnect is Mellanox EDR; AC922 systems with GPUDirect RDMA per socket, e.g. N8 CIR Bede, "
    "have one EDR port per socket). Leaves of 18 ports (an assumption).",
    "rtx5000-4gpu": "A TACC Frontera GPU node, where Optimus (Xu et al., arXiv 2104.05343) ran: 4x NVIDIA Quadro RTX "
    "5000 16 GB (Frontera user guide, GPU nodes) on PCIe Gen3 x16, no NVLink; modelled as 2 PCIe switches of 2 GPUs "
    "under one host, 12 (15.75 peak) GB/s per link (NCCL's PCI_BW): the switch layout is an assumption, and the "
    "two Xeon sockets' QPI (NCCL rates Broadwell's at 6 GB/s) is not modelled. 1x Mellanox InfiniBand FDR 56 Gb/s "
    "= 6.8 GB/s peak, modelled at 6.5 (96% of peak as HDR): FDR and one port are assumptions (the user guide "
    "excerpt found did not give the GPU nodes' interconnect). Leaves of 18 ports (an assumption).",
    "torus-3d": "A hypothetical 3-D torus of A100-SXM4-40GB: each GPU's 12 NVLink3 links wired 2 per neighbour "
    "to its 6 torus neighbours, 50 GB/s peak per direction per neighbour, modelled at 38.3 GB/s (the 230/300 "
    "NCCL fraction). Each GPU is its own server. For torus studies, not a product.",
    "loopback": "One host running N CPU ranks with gloo over shared memory / TCP loopback. Rank slots are "
    "gpu-kind nodes with a nominal cpu-core device; link rates (5 GB/s, 20 us per hop) and sim values are "
    "placeholders that calibration overwrites from measurements.",
}


@dataclass(frozen=True)
class Preset:
    """A named topology: call it (optionally with its suffix) to build the graph."""

    name: str
    """Preset name as written on the command line."""
    summary: str
    """One line for listings."""
    suffix: str
    """The form of the suffix: "N" or "XxYxZ"."""
    suffix_help: str
    """What ``NAME:<suffix>`` builds, e.g. "N servers on a fat tree"."""
    build: Callable[[str | None], nx.DiGraph] = field(repr=False)
    """Builds the graph from the suffix text (None: the default size)."""
    server: object | None = field(default=None, repr=False)
    """The server spec (topologies.servers) of a server preset, else None."""
    fabric: FabricSpec | None = field(default=None, repr=False)
    """The default cluster fabric of a server preset, else None."""
    sim: dict = field(default_factory=lambda: dict(DEFAULT_SIM), repr=False, compare=False)
    """The ``sim`` dict every graph of this preset starts with (``GENERATION_SIM``)."""

    @property
    def notes(self) -> str:
        """Where this preset's figures come from."""
        return _SOURCES[self.name]

    def __call__(self, arg: str | int | None = None) -> nx.DiGraph:
        """Build the graph; ``arg`` is the suffix (``16`` or ``"16"`` for 16 servers)."""
        G = self.build(None if arg is None else str(arg))
        G.graph["name"] = self.name if arg is None else f"{self.name}:{arg}"
        G.graph["notes"] = self.notes
        G.graph["sim"] = dict(LOOPBACK_SIM if self.name == "loopback" else self.sim)
        return G

    def cluster(self, n_servers: int, **fabric_changes) -> nx.DiGraph:
        """``n_servers`` of this preset's servers on its fabric with some fields changed.

        ``fabric_changes`` are FabricSpec fields, e.g.
        ``PRESETS["dgx-h100"].cluster(64, oversubscription=2.0, rail_optimised=False)``.
        """
        if self.server is None:
            raise TopologyError(f"preset {self.name} is not a server; it has no cluster form")
        check_topology_gpus(n_servers * self.server.n_gpus, f"{self.name}:{n_servers}", TopologyError)
        fabric = dataclasses.replace(self.fabric, **fabric_changes)
        G = fat_tree_cluster(self.server, n_servers, fabric, name=f"{self.name}:{n_servers}")
        changes = ", ".join(f"{key}={value}" for key, value in fabric_changes.items())
        G.graph["notes"] = self.notes + (f" Fabric changed: {changes}." if changes else "")
        G.graph["sim"] = dict(self.sim)
        return G


def _count(preset: str, arg: str, what: str, gpus_each: int = 1) -> int:
    """The suffix as a count of ``what``, each of ``gpus_each`` GPUs; checked against
    ``simulator.limits.MAX_TOPOLOGY_GPUS`` before anything is built."""
    if re.fullmatch(r"[0-9]{31,}", arg):  # int() of thousands of digits fails, and any such count is too many
        raise TopologyError(f"{preset}:{arg[:12]}...: a {len(arg)}-digit {what}; too many GPUs for a tpsim topology")
    if not re.fullmatch(r"[0-9]+", arg) or int(arg) < 1:
        raise TopologyError(f"{preset}:{arg}: the suffix must be a positive integer ({what}), got {arg!r}")
    check_topology_gpus(int(arg) * gpus_each, f"{preset}:{arg}", TopologyError)
    return int(arg)


def _server_preset(name: str, server, fabric: FabricSpec, summary: str, generation: str = "ampere") -> Preset:
    def build(arg: str | None) -> nx.DiGraph:
        if arg is None:
            return server.build()
        return fat_tree_cluster(server, _count(name, arg, "number of servers", server.n_gpus), fabric)

    return Preset(name, summary, "N", "N servers on a fat tree", build, server, fabric,
                  dict(GENERATION_SIM[generation]))


def _torus_build(arg: str | None) -> nx.DiGraph:
    if arg is None:
        return builders.torus_3d(4, 4, 4)
    if not re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*x[1-9][0-9]*", arg):
        raise TopologyError(f"torus-3d:{arg}: the suffix must be a shape like 4x4x8, got {arg!r}")
    if len(arg) > 40:  # int() of thousands of digits fails, and any such shape is too many GPUs
        raise TopologyError(f"torus-3d:{arg[:16]}...: a {len(arg)}-character shape; too many GPUs for a tpsim topology")
    dims = [int(n) for n in arg.split("x")]
    check_topology_gpus(dims[0] * dims[1] * dims[2], f"torus-3d:{arg}", TopologyError)
    return builders.torus_3d(*dims)


def _loopback_build(arg: str | None) -> nx.DiGraph:
    return builders.loopback(8 if arg is None else _count("loopback", arg, "number of ranks"))


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        _server_preset("dgx-a100", DGX_A100_SERVER, HDR_FABRIC, "8x A100 SXM4, NVSwitch, 8x HDR 200 Gb/s"),
        _server_preset("dgx-h100", DGX_H100_SERVER, NDR_FABRIC, "8x H100 SXM5, NVSwitch (NVLink4), 8x NDR 400 Gb/s",
                       "hopper"),
        _server_preset("dgx-h200", DGX_H200_SERVER, NDR_FABRIC, "8x H200 SXM, NVSwitch (NVLink4), 8x NDR 400 Gb/s",
                       "hopper"),
        _server_preset("dgx-a100-80gb", DGX_A100_80GB_SERVER, HDR_FABRIC,
                       "8x A100 SXM4 80GB, NVSwitch, 8x HDR 200 Gb/s"),
        _server_preset("dgx-b200", DGX_B200_SERVER, NDR_FABRIC, "8x B200, NVSwitch (NVLink5), 8x NDR 400 Gb/s",
                       "blackwell"),
        _server_preset("gb200-nvl72", GB200_NVL72_RACK, NDR_FABRIC, "72 GB200 GPUs in one NVLink5 domain, 72x NDR",
                       "blackwell"),
        _server_preset("a100-4gpu", A100_4GPU_SERVER, HDR_FABRIC, "4x A100 SXM4, NVLink3 all-to-all, 4x HDR"),
        _server_preset("pcie-8gpu", PCIE_8GPU_SERVER, HDR_FABRIC, "8x A100 PCIe, PCIe Gen4 tree, 4x HDR"),
        _server_preset("dgx-2h", DGX_2H_SERVER, EDR_FABRIC, "16x V100 SXM3, NVSwitch (NVLink2), 8x EDR 100 Gb/s",
                       "volta"),
        _server_preset("v100-4gpu", V100_4GPU_SERVER, EDR_FABRIC, "4x V100 SXM2 (AC922), NVLink2 pairs, 2x EDR",
                       "volta"),
        _server_preset("rtx5000-4gpu", RTX5000_4GPU_SERVER, FDR_FABRIC, "4x Quadro RTX 5000, PCIe Gen3, 1x FDR",
                       "turing"),
        Preset("torus-3d", "4x4x4 torus of A100s, 2 NVLink3 per neighbour", "XxYxZ", "an X x Y x Z torus",
               _torus_build),
        Preset("loopback", "8 CPU ranks on one host (gloo), placeholder rates", "N", "N CPU ranks", _loopback_build),
    )
}


def build_preset(spec: str) -> nx.DiGraph:
    """Build ``NAME`` or ``NAME:ARG``: ``build_preset("dgx-h100:128")`` is 1,024 GPUs."""
    name, _, arg = spec.partition(":")
    if name not in PRESETS:
        raise TopologyError(f'unknown preset "{name}", known: {", ".join(PRESETS)}')
    if spec.endswith(":"):
        raise TopologyError(f'{spec}: empty suffix; write {name} or {name}:{PRESETS[name].suffix}')
    return PRESETS[name](arg or None)
