"""NCCL's per-channel caps on its trees across servers: the least time of a tree all_reduce.

NCCL's tuning model (``src/graph/tuning.cc``, ``ncclTopoTuneModel``) caps the bus bandwidth of its tree
all_reduce at nChannels x a per-channel figure, per GPU generation and per node count (2 servers, more
than 2): ``perChMaxTreeBws`` for the plain tree (and ``perChMaxTreeLL128Bws`` with LL128),
``perChMaxNVLSTreeBws`` for the NVLS tree. A channel is one thread block; the tree's block reduces,
sends up, receives down and forwards, all pipelined, and moves no more than that figure however fast the
links are. The flows of ``nccl_tree`` and ``nvls_tree`` alone would let a tree on two servers run twice
as fast as the ring (each NIC carries S/k each way there, half a ring's bytes); NCCL's own model says it
does not, and so do published runs:

- Together AI's 2-server B200 all_reduce, 8 GiB: a forced tree 335.2 GB/s busbw against the ring's 344.7;
  8 channels x 42.8 (Blackwell, 2 servers) = 342.4.
- Nebius' 2-server H100 all_reduce (NCCL's default, the NVLS tree): 467.5 GB/s busbw; 8 x 57.7 (Hopper,
  2 servers, NVLS tree) = 461.6, where the flows alone give 522.8.

The channels are the tree's NIC rails: ``nccl_tree`` and ``nvls_tree`` run one channel (one head) per
rank of a server, k, where every server holds the same k >= 2 ranks; NCCL's tree graph on a DGX has one
channel per NIC (``graphs[a]->nChannels``, which the cap multiplies, counts the channels before
``ncclTopoPostset`` duplicates them for the second tree). Anything else runs one channel here.

So a tree all_reduce of S bytes on n ranks over N >= 2 servers takes at least
S x 2 (n - 1) / n / (channels x per-channel rate), the rate divided by the protocol's wire factor (LL128
also at most NCCL's LL128 figure). ``CollectiveParams.nccl_arch`` (sim key ``collective_nccl_arch``,
set by the presets per GPU generation) picks the row; without it (custom topologies, CPU hosts) there is
no cap. Inside one server the tree is a chain whose channel count the model does not follow, so no cap.
"""

from __future__ import annotations

from simulator.collectives.nvls_tree import nvls_tree_fits

__all__ = ["NCCL_ARCHS", "tree_floor_s"]

# (2 servers, more than 2), GB/s of bus bandwidth per channel: tuning.cc, ncclTunerConstantsDefaults
# (NVIDIA/nccl 5067397, 2026-06). Turing runs Volta's row there (compute capability < 8.0).
_TREE = {"volta": (18.5, 10.0), "ampere": (23.6, 17.8), "hopper": (41.4, 36.0), "blackwell": (42.8, 24.0)}
_TREE_LL128 = {"volta": (20.0, 20.0), "ampere": (20.0, 20.0), "hopper": (36.7, 29.0), "blackwell": (31.67, 20.0)}
_NVLS_TREE = {"hopper": (57.7, 45.5), "blackwell": (96.0, 80.0)}

NCCL_ARCHS = ("", "volta", "ampere", "hopper", "blackwell")
"""Values of ``CollectiveParams.nccl_arch``: "" for none (no cap), else the GPU generation of NCCL's table."""


def _per_channel_GBps(algorithm: str, protocol: str, arch: str, wire: float, n_nodes: int) -> float:
    column = 0 if n_nodes == 2 else 1
    if algorithm == "nvls_tree":
        row = _NVLS_TREE.get(arch)
        return row[column] / wire if row else 0.0
    rate = _TREE[arch][column] / wire
    return min(rate, _TREE_LL128[arch][column]) if protocol == "ll128" else rate


def tree_floor_s(kind: str, algorithm: str, protocol: str, nbytes: float, pattern, wire: float, arch: str) -> float:
    """Least time of a tree all_reduce's flows under NCCL's per-channel cap (module docstring), seconds;
    0 where there is none. ``nbytes``: S with the kind's bytes factor; ``pattern``: each rank's server;
    ``wire``: the protocol's wire factor; ``arch``: ``CollectiveParams.nccl_arch``."""
    if kind != "all_reduce" or algorithm not in ("double_binary_tree", "nvls_tree") or not arch:
        return 0.0
    n_nodes = len(set(pattern))
    if n_nodes < 2:
        return 0.0
    per_channel = _per_channel_GBps(algorithm, protocol, arch, wire, n_nodes)
    if per_channel <= 0.0:
        return 0.0
    n = len(pattern)
    # The trees' channels: one per rank of a server where every server holds the same k >= 2 ranks
    # (the shape in which nccl_tree and nvls_tree run a channel per NIC rail), else one.
    channels = n // n_nodes if nvls_tree_fits(pattern) else 1
    return nbytes * 2 * (n - 1) / n / (channels * per_channel * 1e9)
