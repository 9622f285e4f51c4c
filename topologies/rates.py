"""Published link rates and the effective rates the model uses, each with its source.

Every ``LinkSpec`` here has ``bandwidth_GBps`` = the effective per-direction rate the model uses and
``peak_bandwidth_GBps`` = the published per-direction peak. The effective rates are figures taken from
published measurements (NVIDIA/nccl-tests results and NCCL's documentation), not fitted to this
project's data:

=================  ===========  ==========  =========================================================
link               model GB/s   peak GB/s   source of the model rate
=================  ===========  ==========  =========================================================
NVLink3, per GPU   230          300         NCCL all_reduce busbw on 8x A100 (NVSwitch), 1 GiB
  (A100, 12 links)                          (~230 GB/s; NVIDIA/nccl-tests results)
NVLink3, one link  19.17        25          230/12: the same NCCL efficiency, shared by 12 links
NVLink4, per GPU   370          450         NCCL ring all_reduce busbw on 8x H100 (~370 GB/s; ~480
  (H100/H200, 18)                           with NVLink SHARP, not modelled)
PCIe Gen4 x16      25           31.5        assumption: ~80% of the raw rate after TLP/DLLP overhead,
                                            typical of CUDA bandwidthTest on Gen4 x16
PCIe Gen5 x16      50           63          the same 80% assumption
IB HDR, per port   24           25          NCCL inter-node busbw per HDR NIC (~24 GB/s)
IB NDR, per port   47           50          NCCL inter-node busbw per NDR NIC (46-48 GB/s; midpoint)
loopback           5            none        placeholder; calibration overwrites it
=================  ===========  ==========  =========================================================

Per-hop latencies are stated assumptions, chosen to be of the published order of magnitude:
an NVLink or NVSwitch hop 0.3 us (P2P load latencies of a few hundred ns in interconnect
microbenchmark studies, e.g. Li et al., "Evaluating Modern GPU Interconnect", IEEE TPDS 2020);
a PCIe hop 0.3 us (switch port-to-port ~0.1-0.15 us in Broadcom PEX datasheets, plus the link);
GPU -> NIC 0.5 us (PCIe traversal plus the NIC pipeline); an InfiniBand cable plus switch hop 0.15 us
(port-to-port ~0.13 us in NVIDIA Quantum HDR/NDR switch datasheets, plus a few ns per metre).
NCCL's per-collective software latency (~8 us) is not a link property; presets put it in
``G.graph["sim"]["collective_base_latency_us"]``.

Example::

    >>> NVSWITCH_A100.bandwidth_GBps, NVSWITCH_A100.peak_bandwidth_GBps
    (230.0, 300.0)
"""

from topologies.links import LinkSpec

__all__ = [
    "NCCL_A100_NVLINK_EFFICIENCY",
    "NVLINK3_LINK",
    "NVSWITCH_A100",
    "NVSWITCH_H100",
    "PCIE_GEN4_X16",
    "PCIE_GEN5_X16",
    "NIC_ATTACH_GEN4",
    "NIC_ATTACH_GEN5",
    "IB_HDR",
    "IB_NDR",
    "LOOPBACK",
    "NVLINK_HOP_US",
    "PCIE_HOP_US",
    "NIC_HOP_US",
    "IB_HOP_US",
]

NVLINK_HOP_US = 0.3
PCIE_HOP_US = 0.3
NIC_HOP_US = 0.5
IB_HOP_US = 0.15

# 230 GB/s NCCL busbw out of 300 GB/s NVLink3 peak: the fraction applied to single NVLink3 links too.
NCCL_A100_NVLINK_EFFICIENCY = 230.0 / 300.0

NVLINK3_LINK = LinkSpec("nvlink", 25.0 * NCCL_A100_NVLINK_EFFICIENCY, NVLINK_HOP_US, peak_bandwidth_GBps=25.0)
NVSWITCH_A100 = LinkSpec("nvswitch", 230.0, NVLINK_HOP_US, peak_bandwidth_GBps=300.0, n_links=12)
NVSWITCH_H100 = LinkSpec("nvswitch", 370.0, NVLINK_HOP_US, peak_bandwidth_GBps=450.0, n_links=18)

PCIE_GEN4_X16 = LinkSpec("pcie", 25.0, PCIE_HOP_US, peak_bandwidth_GBps=31.5)
PCIE_GEN5_X16 = LinkSpec("pcie", 50.0, PCIE_HOP_US, peak_bandwidth_GBps=63.0)
# The GPU -> NIC path (GPUDirect RDMA through the PCIe switch the two share).
NIC_ATTACH_GEN4 = LinkSpec("nic", 25.0, NIC_HOP_US, peak_bandwidth_GBps=31.5)
NIC_ATTACH_GEN5 = LinkSpec("nic", 50.0, NIC_HOP_US, peak_bandwidth_GBps=63.0)

IB_HDR = LinkSpec("ib", 24.0, IB_HOP_US, peak_bandwidth_GBps=25.0)
IB_NDR = LinkSpec("ib", 47.0, IB_HOP_US, peak_bandwidth_GBps=50.0)

# gloo over shared memory / TCP loopback on one host: placeholders until calibration measures them.
LOOPBACK = LinkSpec("loopback", 5.0, 20.0)
