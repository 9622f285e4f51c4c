"""The vocabulary of a topology graph: node kinds, edge kinds and GPU device dtypes.

Every node carries ``kind`` (one of ``NODE_KINDS``); every directed edge carries ``kind`` (one of
``EDGE_KINDS``). Example::

    >>> "nvswitch" in NODE_KINDS and "ib" in NETWORK_EDGE_KINDS
    True
"""

__all__ = ["NODE_KINDS", "EDGE_KINDS", "NETWORK_EDGE_KINDS", "DTYPES", "gpu_name"]

# Node kinds and what they stand for.
NODE_KINDS = {
    "gpu": "an accelerator, or for loopback a CPU rank slot; carries gpu_index, server, device",
    "nvswitch": "the NVSwitch fabric of one server, modelled as one non-blocking switch",
    "pcie_switch": "a PCIe switch (PLX/Broadcom) that GPUs and NICs hang off",
    "host": "a host bridge / CPU root complex, or the shared-memory hub of a loopback host",
    "nic": "a network adapter (one InfiniBand or Ethernet port)",
    "leaf": "a leaf (top-of-rack / rail) switch of a fat tree",
    "spine": "a spine switch of a fat tree",
    "cpu": "a CPU socket, where sockets are modelled apart (IBM AC922: GPUs NVLinked to their socket)",
    "switch": "any other switch, for custom topologies",
}

# Edge kinds. One directed edge per direction per physical link bundle.
EDGE_KINDS = {
    "nvlink": "direct GPU-GPU NVLink bundle (n_links links)",
    "nvswitch": "GPU <-> NVSwitch (all of a GPU's NVLinks, aggregated)",
    "pcie": "PCIe link (GPU/NIC <-> PCIe switch, PCIe switch <-> host)",
    "nic": "a NIC's PCIe attachment: GPU <-> NIC (the GPUDirect RDMA path) or PCIe switch <-> NIC",
    "ib": "InfiniBand cable (NIC <-> leaf, leaf <-> spine)",
    "ethernet": "Ethernet cable (RoCE or TCP)",
    "smp": "CPU socket <-> CPU socket coherent bus (IBM POWER9 X-bus, Intel UPI)",
    "loopback": "rank <-> host over shared memory / TCP loopback (gloo on one host)",
}

# Edge kinds that leave a server: routing prefers paths with fewer of them (see routing.py).
NETWORK_EDGE_KINDS = frozenset({"ib", "ethernet"})

# Every GPU device spec gives dense peak TFLOP/s for at least these dtypes.
DTYPES = ("float64", "float32", "bfloat16", "float16")


def gpu_name(index: int) -> str:
    """The node name of the GPU with global index ``index``: ``gpu_name(3) == "gpu3"``."""
    return f"gpu{index}"
