"""Pure builder functions: each returns a fresh ``networkx.DiGraph`` for one interconnect shape.

Every graph follows the conventions in ``topologies.kinds`` and ``topologies.links``: GPU nodes
``gpu0..gpu<n-1>`` with ``gpu_index``, ``server`` and ``device``; one directed edge per direction per
link bundle with ``bandwidth_GBps`` (per direction), ``latency_us`` and ``kind``; graph attributes
``name``, ``notes`` and ``sim``. Arguments are validated first (``ValueError`` naming the bad value).

Example::

    >>> G = torus_3d(4, 4, 4)
    >>> G.number_of_nodes(), G.number_of_edges(), G.out_degree("gpu0")
    (64, 384, 6)
"""

from __future__ import annotations

import itertools
import math

import networkx as nx

from topologies.devices import A100_PCIE_40GB, A100_SXM4_40GB, CPU_CORE, DeviceSpec
from topologies.kinds import gpu_name
from topologies.links import LinkSpec, add_duplex
from topologies.rates import LOOPBACK, NIC_ATTACH_GEN4, NVLINK3_LINK, NVSWITCH_A100, PCIE_GEN4_X16
from topologies.servers import MeshServer, NvSwitchServer, PcieServer, add_gpu

__all__ = ["nvlink_mesh", "nvswitch_node", "pcie_tree", "ring", "torus_2d", "torus_3d", "torus", "loopback"]


def nvlink_mesh(
    n_gpus: int = 4,
    links_per_pair: int = 4,
    *,
    link: LinkSpec = NVLINK3_LINK,
    device: DeviceSpec = A100_SXM4_40GB,
    nics: int = 0,
    nic_link: LinkSpec = NIC_ATTACH_GEN4,
) -> nx.DiGraph:
    """An all-to-all NVLink mesh: every GPU pair joined by one bundle of ``links_per_pair`` links.

    Example: ``nvlink_mesh(4, 4)`` is an HGX A100 4-GPU board, each pair 4 x 25 GB/s peak per direction.
    """
    server = MeshServer(n_gpus, device, link, links_per_pair, nics, nic_link)
    return server.build(name=f"nvlink-mesh-{n_gpus}")


def nvswitch_node(
    n_gpus: int = 8,
    *,
    gpu_link: LinkSpec = NVSWITCH_A100,
    device: DeviceSpec = A100_SXM4_40GB,
    nics: int = 0,
    nic_link: LinkSpec = NIC_ATTACH_GEN4,
) -> nx.DiGraph:
    """One NVSwitch server: ``n_gpus`` GPUs, each with one duplex edge to the switch node.

    Example: ``nvswitch_node(8)`` is a DGX A100's NVLink fabric (230 GB/s model, 300 peak, per GPU).
    """
    server = NvSwitchServer(n_gpus, device, gpu_link, nics, nic_link)
    return server.build(name=f"nvswitch-{n_gpus}")


def pcie_tree(
    n_gpus: int = 8,
    gpus_per_switch: int = 2,
    *,
    gpu_link: LinkSpec = PCIE_GEN4_X16,
    uplink: LinkSpec = PCIE_GEN4_X16,
    device: DeviceSpec = A100_PCIE_40GB,
    nics: int = 0,
    nic_link: LinkSpec = PCIE_GEN4_X16,
) -> nx.DiGraph:
    """GPUs behind PCIe switches (``gpus_per_switch`` each) under one host bridge.

    Example: ``pcie_tree(8, 2)`` has 4 switches; GPUs 0 and 1 share the first one.
    """
    server = PcieServer(n_gpus, device, gpus_per_switch, gpu_link, uplink, nics, nic_link)
    return server.build(name=f"pcie-tree-{n_gpus}")


def torus(
    dims: tuple[int, ...],
    *,
    link: LinkSpec = NVLINK3_LINK.times(2),
    device: DeviceSpec = A100_SXM4_40GB,
    gpus_per_server: int = 1,
    name: str | None = None,
) -> nx.DiGraph:
    """A k-dimensional torus of GPUs with wrap-around links; GPU index is row-major (first dim slowest).

    Along a dimension of size 1 there is no link, of size 2 one link (the wrap-around would duplicate
    it), of size >= 3 a ring. ``server`` of a GPU is ``gpu_index // gpus_per_server``. The graph
    attribute ``torus_dims`` keeps the shape, so ``bisection`` can cut across each dimension.

    Example: ``torus((3, 4))`` is 12 GPUs, gpu5 at (1, 1) linked to gpu1, gpu9, gpu4 and gpu6.
    """
    dims = tuple(dims)
    if not dims or not all(isinstance(n, int) and n >= 1 for n in dims):
        raise ValueError(f"torus dims must be positive integers, got {dims!r}")
    if not (isinstance(gpus_per_server, int) and gpus_per_server >= 1):
        raise ValueError(f"torus gpus_per_server must be an integer >= 1, got {gpus_per_server!r}")
    label = "x".join(str(n) for n in dims)
    G = nx.DiGraph(name=name or f"torus-{label}", notes=f"{label} torus of {device.name}", sim={},
                   torus_dims=list(dims))
    strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
    for index in range(math.prod(dims)):
        add_gpu(G, index, index // gpus_per_server, device)
    for coord in itertools.product(*(range(n) for n in dims)):
        here = sum(c * s for c, s in zip(coord, strides))
        for k, n in enumerate(dims):
            # Each ring link is added once, from its lower end; size 2 has only the one link.
            if n == 1 or (n == 2 and coord[k] == 1):
                continue
            there = here + (((coord[k] + 1) % n) - coord[k]) * strides[k]
            add_duplex(G, gpu_name(here), gpu_name(there), link)
    return G


def ring(n_gpus: int, *, link: LinkSpec = NVLINK3_LINK.times(2), device: DeviceSpec = A100_SXM4_40GB,
         gpus_per_server: int = 1) -> nx.DiGraph:
    """A ring of ``n_gpus`` GPUs, gpu i linked to gpu i+1 mod n: ``ring(8)`` has 8 duplex links."""
    return torus((n_gpus,), link=link, device=device, gpus_per_server=gpus_per_server, name=f"ring-{n_gpus}")


def torus_2d(x: int, y: int, *, link: LinkSpec = NVLINK3_LINK.times(2), device: DeviceSpec = A100_SXM4_40GB,
             gpus_per_server: int = 1) -> nx.DiGraph:
    """An x-by-y torus, gpu index ``i*y + j`` at (i, j): ``torus_2d(4, 4)`` has 32 duplex links."""
    return torus((x, y), link=link, device=device, gpus_per_server=gpus_per_server)


def torus_3d(x: int, y: int, z: int, *, link: LinkSpec = NVLINK3_LINK.times(2),
             device: DeviceSpec = A100_SXM4_40GB, gpus_per_server: int = 1) -> nx.DiGraph:
    """An x-by-y-by-z torus, gpu index ``(i*y + j)*z + k``: ``torus_3d(4, 4, 4)`` has 192 duplex links."""
    return torus((x, y, z), link=link, device=device, gpus_per_server=gpus_per_server)


def loopback(n_ranks: int = 8, *, link: LinkSpec = LOOPBACK, device: DeviceSpec = CPU_CORE) -> nx.DiGraph:
    """One host running ``n_ranks`` CPU ranks (gloo over shared memory / TCP loopback).

    The rank slots are GPU-kind nodes ``gpu0..gpu<n-1>`` (so placement and routing work unchanged)
    with a CPU-core device; each has one ``loopback`` duplex edge to the hub ``n0/host``. The rates are
    placeholders that calibration overwrites from measurements.

    Example: ``loopback(4)`` routes gpu0 -> gpu3 as gpu0 -> n0/host -> gpu3.
    """
    if not (isinstance(n_ranks, int) and n_ranks >= 1):
        raise ValueError(f"loopback n_ranks must be an integer >= 1, got {n_ranks!r}")
    notes = f"{n_ranks} CPU ranks on one host; placeholder rates until calibrated"
    G = nx.DiGraph(name=f"loopback:{n_ranks}", notes=notes, sim={})
    G.add_node("n0/host", kind="host", server=0)
    for index in range(n_ranks):
        add_duplex(G, add_gpu(G, index, 0, device), "n0/host", link)
    return G
