"""Published link rates and the effective rates the model uses, each with its source.

Every ``LinkSpec`` here has ``bandwidth_GBps`` = the effective per-direction rate the model uses and
``peak_bandwidth_GBps`` = the published per-direction peak. The effective rates are figures taken from
published measurements (nccl-tests results, NCCL maintainers' statements of what NCCL reaches, NCCL's
own per-link figures in src/graph/topo.h), not fitted to this project's data:

=================  ===========  ==========  =========================================================
link               model GB/s   peak GB/s   source of the model rate
=================  ===========  ==========  =========================================================
NVLink3, per GPU   230          300         nccl-tests all_reduce on 8 A100 SXM4 (Azure ND A100 v4,
  (A100, 12 links)                          tests/data/nccl-tests/azure-ndv4-a100): busbw 230.9 GB/s
                                            at 1 GiB; NCCL's own figure 12 x 20 = 240 (topo.h
                                            SM80_NVLINK_BW 20.0 per link)
NVLink3, one link  19.17        25          230/12: the same NCCL efficiency, shared by 12 links
NVLink2, one link  19.17        25          the A100 fraction 230/300 (an assumption); NCCL's own V100
  (V100)                                    figure is 20 per link (topo.h SM70_NVLINK_BW 20.0), 4%
                                            above it. No published nccl-tests log of a DGX-2 was found
NVLink2, per GPU   115          150         6 x 19.17: DGX-2H, 6 NVLink2 links per GPU to 12 NVSwitch
  (DGX-2H, 6)                               chips; NCCL's figure 6 x 20 = 120
NVLink4, per GPU   370          450         NCCL maintainer (S. Jeaugey, NVIDIA/nccl-tests#212): "NCCL
  (H100/H200, 18)                           can get an effective NVLink bandwidth of 370GB/s", as ring
                                            busbw; nccl-tests all_reduce on 8 H20 (NVLink4, NCCL 2.30,
                                            kvcache-ai/Mooncake PR #3484): ring busbw 358 GB/s at 1 GiB;
                                            NCCL's figure 18 x 20.6 = 371 (SM90_NVLINK_BW). NVLink
                                            SHARP reaches busbw ~480 on 8 GPUs (same source; 476 in
                                            NVIDIA/nccl-tests#290), modelled by NVLS (collectives)
NVLink5, per GPU   679          900         Together AI's 8 x B200 server (NCCL 2.29.7, their
  (B200, 18)                                together-nccl-tests scaling report): forced-ring all_reduce
                                            busbw 679.0 GB/s at 16 GiB (all_gather 673.6); NCCL's own
                                            figure 18 x 40.1 = 722 (topo.h SM100_NVLINK_BW) is 6% above
                                            it (for A100 and H100 it is within 4% of the measured rates)
PCIe Gen4 x16      25           31.5        assumption: ~80% of the raw rate after TLP/DLLP overhead,
                                            typical of CUDA bandwidthTest on Gen4 x16
PCIe Gen5 x16      50           63          the same 80% assumption
PCIe Gen3 x16      12           15.75       NCCL's own figure (topo.h PCI_BW 12.0, "PCI Gen3 x16"),
                                            76% of the raw rate
POWER9 X-bus       32           64          NCCL's own figure for the POWER9 inter-socket bus (topo.h
                                            P9_BW 32.0); the peak is IBM's "64 GB/s" (AC922 Redpaper
                                            REDP-5494), taken as per direction (an assumption)
IB EDR, per port   12           12.5        NCCL's own figure for a 100 Gb/s NIC (topo.h NET_BW 12.0,
                                            "100Gbit"), 96% of peak as the HDR measurement below
IB FDR, per port   6.5          6.8         56 Gb/s signalling, 54.5 Gb/s of data (64b/66b); 96% of
                                            peak as HDR (an assumption: no FDR measurement used)
IB HDR, per port   24           25          NVIDIA (A. Ladd, NVIDIA/nccl#812): "On an Nvidia DGX-A100
                                            system we have 8x200Gbit/s IB cards and we measure 192GB/s
                                            AllReduce BusBW" = 24 per NIC
IB NDR, per port   47           50          NVIDIA (A. Ladd, NVIDIA/nccl-tests#290): "For NDR @ 400Gbps
                                            you should see 46-48GB/s per NIC"; the midpoint
loopback           5            none        placeholder; calibration overwrites it
=================  ===========  ==========  =========================================================

Spread across published clusters (inter-server busbw per NIC as a fraction of its peak): NVIDIA's
reference systems reach 96% (DGX A100, 192 of 200 GB/s, above; NDR 92-96%, above); a user cluster of
A100 servers with 4 HDR NICs each reached 85% on average and 96% at best (84.8 and 96 of 100 GB/s,
NVIDIA/nccl-tests#119); RoCE clusters of 8x 100 Gb/s NICs reported 75% (600 of 800 Gb/s,
NVIDIA/nccl#495, "a bit low" per the maintainers) and 60% (60 of 100 GB/s ring busbw, NVIDIA/nccl#812).
Further published clusters (gathered 2026-12-07): healthy HDR-class fabrics reach 23-24 GB/s per NIC
(NVIDIA's DGX A100 24; Oracle BM.GPU4.8 "above 185 GB/s" over 8 x 2 x 100 Gb/s, >23.1; GCP A3 Mega's
8 x 200 Gb/s GPUDirect-TCPXO all_gather on 2 servers 188.5 GB/s busbw, 23.6); on 8 x NDR, Together AI's
B200 cluster's forced-ring all_reduce at 16 GiB gives 43.1 GB/s per NIC on 2 servers, falling to 40.3 on
8, 38.3 on 16 and 36.4 on 46 (86% down to 73% of peak; their together-nccl-tests scaling report); an H100
user's reduce_scatter busbw 360 on 4 servers falling to 320 on 16 and 260 on 128 (NVIDIA/nccl#1229, size
and NICs not stated; the model's ring gives 374, 367 and 318 at 8 GiB, its decline only the per-step
latencies); an H100 cluster with 4 x 400 Gb/s RoCE 47.5 (NVIDIA/nccl#1368). Clusters their own threads call slow or
misconfigured sit at 7-15 GB/s per 100-200 Gb/s NIC (AWS p4dn EFA, NVIDIA/nccl#527; NVIDIA/nccl#812;
NVIDIA/nccl-tests#319), and the Azure ND A100 v4 logs in tests/data/nccl-tests at 16 (64%).
So the defaults are a well-tuned InfiniBand cluster of a few servers; a real one may be 5-15% slower
across servers, up to 25% at 16-128 servers, and a RoCE or misconfigured one 25-40% slower (``tpsim
calibrate`` measures yours).

Per-hop latencies are stated assumptions, chosen to be of the published order of magnitude:
an NVLink or NVSwitch hop 0.3 us (P2P load latencies of a few hundred ns in interconnect
microbenchmark studies, e.g. Li et al., "Evaluating Modern GPU Interconnect", IEEE TPDS 2020);
a PCIe hop 0.3 us (switch port-to-port ~0.1-0.15 us in Broadcom PEX datasheets, plus the link),
and a CPU socket-to-socket (X-bus) hop the same 0.3 us;
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
    "NVSWITCH_B200",
    "NVLINK2_LINK",
    "NVSWITCH_DGX2H",
    "PCIE_GEN3_X16",
    "NIC_ATTACH_GEN3",
    "POWER9_XBUS",
    "IB_EDR",
    "IB_FDR",
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
NVSWITCH_B200 = LinkSpec("nvswitch", 679.0, NVLINK_HOP_US, peak_bandwidth_GBps=900.0, n_links=18)
# NVLink2 (V100): 25 GB/s per link per direction, at the A100's NCCL fraction.
NVLINK2_LINK = LinkSpec("nvlink", 25.0 * NCCL_A100_NVLINK_EFFICIENCY, NVLINK_HOP_US, peak_bandwidth_GBps=25.0)
# 6 NVLink2 links per GPU at the A100 fraction: 150 x 230/300 = 115.
NVSWITCH_DGX2H = LinkSpec("nvswitch", 115.0, NVLINK_HOP_US, peak_bandwidth_GBps=150.0, n_links=6)

PCIE_GEN4_X16 = LinkSpec("pcie", 25.0, PCIE_HOP_US, peak_bandwidth_GBps=31.5)
PCIE_GEN5_X16 = LinkSpec("pcie", 50.0, PCIE_HOP_US, peak_bandwidth_GBps=63.0)
PCIE_GEN3_X16 = LinkSpec("pcie", 12.0, PCIE_HOP_US, peak_bandwidth_GBps=15.75)
# The GPU -> NIC path (GPUDirect RDMA through the PCIe switch the two share).
NIC_ATTACH_GEN4 = LinkSpec("nic", 25.0, NIC_HOP_US, peak_bandwidth_GBps=31.5)
NIC_ATTACH_GEN5 = LinkSpec("nic", 50.0, NIC_HOP_US, peak_bandwidth_GBps=63.0)
NIC_ATTACH_GEN3 = LinkSpec("nic", 12.0, NIC_HOP_US, peak_bandwidth_GBps=15.75)
# The POWER9 SMP X-bus between the two sockets of an AC922.
POWER9_XBUS = LinkSpec("smp", 32.0, PCIE_HOP_US, peak_bandwidth_GBps=64.0)

IB_HDR = LinkSpec("ib", 24.0, IB_HOP_US, peak_bandwidth_GBps=25.0)
IB_NDR = LinkSpec("ib", 47.0, IB_HOP_US, peak_bandwidth_GBps=50.0)
IB_EDR = LinkSpec("ib", 12.0, IB_HOP_US, peak_bandwidth_GBps=12.5)
IB_FDR = LinkSpec("ib", 6.5, IB_HOP_US, peak_bandwidth_GBps=6.8)

# gloo over shared memory / TCP loopback on one host: placeholders until calibration measures them.
LOOPBACK = LinkSpec("loopback", 5.0, 20.0)
