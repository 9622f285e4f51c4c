"""NCCL's NVLS tree moves data in loops of chunks, and its pipeline fills for a few loops: why it is slow below 1 GiB.

How NCCL cuts an NVLS tree all_reduce (NVIDIA/nccl 5067397, ``src/enqueue.cc``, ``NCCL_ALGO_NVLS_TREE``,
the same rule since 2.18): every channel walks its part of the buffer in *loops* of nHeads chunks, one
chunk per head (``src/device/all_reduce.h``: ``loopCount = nvls->nHeads * chunkCount``), so one loop over
all channels moves ``concurrentOps x chunk`` bytes, concurrentOps = nChannels x nHeads. The chunk starts
at ``NCCL_NVLS_CHUNKSIZE`` (128 KiB; 64 KiB on 4 servers or more, ``nvlsTreeMaxChunkSize``) and shrinks
for smaller messages: 64 KiB below 4 x concurrentOps x chunk, 32 KiB below 1 x. NVLS runs 16 channels on
Hopper and 32 on Blackwell across servers (``src/transport/nvls.cc``, ``NVLS_NCHANNELS_SM90``,
``NVLS_NCHANNELS_SM100``) with one head per NIC rail, 8 on a DGX. So on two H100 servers a loop is
128 x 32 KiB = 4 MiB below 8 MiB, 8 MiB from 8 MiB (64 KiB chunks), 16 MiB from 64 MiB (128 KiB); on two
B200 servers 8, 16 and 32 MiB, from 16 and 128 MiB. (NCCL 2.29 and later tune Blackwell's multi-server
chunk per NIC speed and PCIe path, ``ncclNvlsTreeSm100Tuning``; the rule here is that of 2.18-2.28.)

Why that costs time: within a loop the four thread groups of a channel (scatter into the switch,
reduce and send up, receive and broadcast, gather from the switch) hand each other whole chunks. A
head cannot reduce its chunk before every GPU's scatter has written the loop, nor a GPU gather before
every head has broadcast its chunk back, so a message pays a few loops' time before the pipeline
streams. The model charges ``fill_loops`` loops at the rate NCCL's per-channel cap lets the tree move
(``channel_caps.tree_floor_s`` of one loop's bytes), added once before the flows; a message smaller
than one loop pays for itself instead of a loop.

``fill_loops`` (sim key ``collective_nvls_tree_fill_loops``, 1.5 in the Hopper and Blackwell presets)
is read off the published two-server logs (``tests/data/nccl-tests``: Nebius, 2 x 8 H100; Lambda, 2 x 8
B200, NCCL 2.26.2; Google Cloud's A4, 2 x 8 B200, was not fitted on). All three show the same thing:
the measured time less S over the large-size rate grows from about 90 us at 4 MiB to about 220 us from
256 MiB, in steps where the chunk doubles, while the model without the fill held it at about 70 us.
With 1.5 loops (and NCCL's 20.9 us per network step of the NVLS tree, ``CollectiveParams``) they are
within 3.4%, 7.1% and 4.4% geomean from 1 MiB (1, 1.5, 2 loops: 4.2/3.4/6.5% on H100, 10.2/7.1/9.3% on
Lambda's B200, 9.1/4.4/3.2% on A4's). The model before (no fill, 10 us network steps, and the tree run
where it simulated faster than the NVLS tree, ``choose.settle``) was 24.5%, 39.7% and 28.8% off, every
size from 1 to 128 MiB too fast.
"""

from __future__ import annotations

from simulator.collectives.channel_caps import tree_floor_s

__all__ = ["NVLS_TREE_CHANNELS", "nvls_tree_chunk_bytes", "nvls_tree_loop_bytes", "nvls_tree_fill_s"]

NVLS_TREE_CHANNELS = {"hopper": 16, "blackwell": 32}
"""NVLS channels across servers by GPU generation (``NVLS_NCHANNELS_SM90``, ``NVLS_NCHANNELS_SM100``)."""


def nvls_tree_chunk_bytes(nbytes: float, channels: int, heads: int, servers: int) -> int:
    """The chunk NCCL's NVLS tree all_reduce of ``nbytes`` moves at a time (module docstring)."""
    concurrent = channels * heads
    chunk = 128 * 1024 if servers < 4 else 64 * 1024
    if nbytes < 4 * concurrent * chunk and chunk > 65536:
        chunk = 65536
    if nbytes < 1 * concurrent * chunk and chunk > 32768:
        chunk = 32768
    return chunk


def nvls_tree_loop_bytes(nbytes: float, arch: str, heads: int, servers: int) -> int:
    """Bytes of the message one loop of every channel moves: channels x heads x chunk."""
    channels = NVLS_TREE_CHANNELS.get(arch, 16)
    return channels * heads * nvls_tree_chunk_bytes(nbytes, channels, heads, servers)


def nvls_tree_fill_s(kind: str, algorithm: str, protocol: str, nbytes: float, pattern, wire: float, params) -> float:
    """Pipeline fill of an NVLS tree all_reduce: ``params.nvls_tree_fill_loops`` loops (or the whole message,
    if smaller) at NCCL's per-channel cap, seconds; 0 for any other algorithm or without a cap."""
    loops = params.nvls_tree_fill_loops
    if algorithm != "nvls_tree" or not loops or not params.nccl_arch:
        return 0.0
    servers = len(set(pattern))
    loop = nvls_tree_loop_bytes(nbytes, params.nccl_arch, len(pattern) // servers, servers)
    return loops * tree_floor_s(kind, algorithm, protocol, min(float(nbytes), loop), pattern, wire, params.nccl_arch)
