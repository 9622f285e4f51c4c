"""NCCL's NVLS chunks and what each costs: why NVLS runs below its rate until messages reach about 1 GiB.

NCCL moves an NVLS all_reduce in chunks, one stream per channel and head at a time (``concurrentOps =
nChannels x nHeads``), and shrinks the chunk for all but the largest messages (``src/enqueue.cc``,
``NCCL_ALGO_NVLS``, NVIDIA/nccl 5067397): from ``NCCL_NVLS_CHUNKSIZE`` (128 KiB) to 64 KiB below
64 x concurrentOps x chunk, to 32 KiB below 8 x, to 16 KiB below 2 x. NVLS runs 16 channels on
Hopper (``NVLS_NCHANNELS_SM90``, ``src/transport/nvls.cc``) and one head per GPU of the server, so on an
8-GPU H100 server 128 KiB chunks start at 1 GiB, 64 KiB at 64 MiB, 32 KiB at 8 MiB.

Each chunk costs a fixed time on top of its bytes (the multimem reduce and multicast of one chunk, and
the flags the GPUs wait on), which the model counts as ``nvls_chunk_overhead_bytes`` more bytes per
chunk at the NVLS rate: an NVLS collective's wire bytes grow by (chunk + overhead) / chunk. The Hopper
presets take 5 KiB, read off Azure's published ND H100 v5 all_reduce table (8 GPUs, NVLS, NCCL 2.18.5;
Azure/AI-benchmarking-guide): it brings the model from 9.7% to 3.9% geomean error from 8 MiB (largest
-8.5%, at 16 MiB, where it was -16.9% at 32 MiB), and on the ND H200 v5 table it was not fitted on
(NCCL 2.20.5) from 7.9% to 2.4% (largest -6.2%). The deficit the tables show follows the chunk: about
17% at 32 KiB chunks, 9-14% at 64 KiB, 2-4% at 128 KiB. Only single-server NVLS (``nvls``) pays it:
the NVLS tree across servers cuts its own chunks and pays for them differently, a pipeline fill of its
loops (``nvls_tree_fill``): the published two-server logs miss time that grows with the chunk, not with
the number of chunks (docs/fidelity.md).
"""

from __future__ import annotations

__all__ = ["NVLS_CHUNK_BYTES", "nvls_channels", "nvls_chunk_bytes", "nvls_chunk_factor"]

NVLS_CHUNK_BYTES = 128 * 1024
"""NCCL's default NVLS chunk (``NCCL_NVLS_CHUNKSIZE``)."""

_CHANNELS = {"hopper": 16, "blackwell": 24}
"""NVLS channels in one NVLink domain by GPU generation (``NVLS_NCHANNELS_SM90``, ``NVLS_NCHANNELS_SM100_NVL``)."""


def nvls_channels(arch: str) -> int:
    """NCCL's NVLS channels on one server of ``arch`` (``CollectiveParams.nccl_arch``; Hopper's for others)."""
    return _CHANNELS.get(arch, 16)


def nvls_chunk_bytes(nbytes: float, channels: int, heads: int, largest: int = NVLS_CHUNK_BYTES) -> int:
    """The chunk NCCL's NVLS all_reduce of ``nbytes`` moves at a time (module docstring)."""
    concurrent = channels * heads
    chunk = largest
    if nbytes < 64 * concurrent * chunk and chunk > 65536:
        chunk = 65536
    if nbytes < 8 * concurrent * chunk and chunk > 32768:
        chunk = 32768
    if nbytes < 2 * concurrent * chunk and chunk > 16384:
        chunk = 16384
    return chunk


def nvls_chunk_factor(algorithm: str, nbytes: float, params, heads: int) -> float:
    """Wire bytes per byte for NCCL's per-chunk cost: (chunk + overhead) / chunk for ``nvls`` on ``heads``
    GPUs with ``params.nvls_chunk_overhead_bytes`` set, else 1."""
    overhead = params.nvls_chunk_overhead_bytes
    if algorithm != "nvls" or not overhead:
        return 1.0
    chunk = nvls_chunk_bytes(nbytes, nvls_channels(params.nccl_arch), heads)
    return (chunk + overhead) / chunk
