"""The data-parallel gradient buckets of one tensor-parallel rank: their bytes and when each is ready.

A rank's gradients are the elements of its weight buffers: for one transformer block, the buffers of
the schedule named in ``workload.weights()`` (Wqkv, Wproj, W1, W2, their biases and the LayerNorm
parameters, each in the algorithm's own layout, replicas included), times the layers; plus the
embedding "layer": the LM head's weight shard (tied to the input embedding, as in every GPT preset),
the position embeddings (s x h) and the final LayerNorm (2h), both replicated on every tensor-parallel
rank as Megatron-LM keeps them.

Buckets follow PyTorch DDP (``torch.nn.parallel.DistributedDataParallel``, ``bucket_cap_mb``, default 25
MB; ``torch/nn/parallel/distributed.py`` and ``_compute_bucket_assignment_by_size``): parameters in
reverse model order (the order their gradients are produced), whole parameters only, a bucket closed
once it holds ``bucket_bytes`` or more. A bucket is ready when its last gradient is: gradients are ready
layer by layer, as each layer's backward ends (within a layer all at once: an approximation, the hooks
fire per parameter). The last micro-batch's backward runs the LM head first, then layers L-1 .. 0;
the tied embedding's gradient (LM head plus input embedding) is complete only when the whole backward
is, so it is the last bucket. DDP's smaller first bucket (1 MiB, ``dist._DEFAULT_FIRST_BUCKET_BYTES``)
is not modelled.

Example: 2 layers of one 30 MB weight and a 1 MB bias each, 4 MB of embedding, 25 MB buckets, a 1 ms
LM head backward and 10 ms per layer::

    >>> [(b.nbytes, b.ready_s) for b in gradient_buckets([30e6, 1e6], 4e6, 2, 25e6, 0.001, 0.010)]
    [(31000000.0, 0.011), (31000000.0, 0.021), (4000000.0, 0.021)]
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload

__all__ = ["Bucket", "DDP_BUCKET_BYTES", "aligned_buckets", "aligned_stream_buckets", "gradient_buckets",
           "weight_elements"]

DDP_BUCKET_BYTES = 25 * 10**6
"""PyTorch DDP's default ``bucket_cap_mb`` = 25 (MB of 10^6 bytes: ``int(bucket_cap_mb * 1024 * 1024)`` in
torch 2.x is 26,214,400; the docs state 25 MB; we take the nominal 25e6 and let ``--bucket-mb`` change it)."""


@dataclass(frozen=True)
class Bucket:
    """One gradient bucket: its bytes, and when it is ready, seconds after the last backward starts."""

    nbytes: float
    ready_s: float


def weight_elements(schedule: Schedule, workload: Workload, rank: int) -> list[int]:
    """Elements of each of ``workload``'s weights that ``rank`` holds, in ``workload.weights()`` order."""
    buffers = schedule.buffers[rank]
    return [buffers[name].numel if name in buffers else 0 for name in workload.weights()]


def _stream(layer_bytes, embedding_bytes, layers, head_bwd_s, layer_bwd_s,
            embed_bwd_s: float = 0.0) -> list[tuple[float, float]]:
    """(bytes, ready) of every parameter's gradient, in the order they are produced."""
    stream = []
    for done in range(1, layers + 1):  # layer L - done finishes its backward at head + done x layer
        ready = head_bwd_s + done * layer_bwd_s
        stream.extend((nbytes, ready) for nbytes in reversed(layer_bytes))
    stream.append((embedding_bytes, head_bwd_s + layers * layer_bwd_s + embed_bwd_s))  # after the lookup's backward
    return stream


def _cuts(stream, bucket_bytes: float) -> list[int]:
    """Indices after which a bucket closes: once it holds ``bucket_bytes`` or more, and at the end."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket size must be > 0 bytes, got {bucket_bytes!r}")
    cuts, size = [], 0.0
    for i, (nbytes, _) in enumerate(stream):
        size += nbytes
        if size >= bucket_bytes:
            cuts.append(i)
            size = 0.0
    if size or not cuts:
        cuts.append(len(stream) - 1)
    return cuts


def _buckets(stream, cuts, keep_empty: bool = False) -> list[Bucket]:
    """The buckets ``cuts`` make of ``stream``; ``keep_empty`` keeps those of no bytes (aligned streams)."""
    out, first = [], 0
    for last in cuts:
        out.append(Bucket(sum(nbytes for nbytes, _ in stream[first:last + 1]), stream[last][1]))
        first = last + 1
    return out if keep_empty else [b for b in out if b.nbytes]


def gradient_buckets(layer_bytes: list[float], embedding_bytes: float, layers: int, bucket_bytes: float,
                     head_bwd_s: float, layer_bwd_s: float) -> list[Bucket]:
    """The buckets of one rank (module docstring): ``layer_bytes`` per weight of one block in model order."""
    stream = _stream(layer_bytes, embedding_bytes, layers, head_bwd_s, layer_bwd_s)
    return _buckets(stream, _cuts(stream, bucket_bytes))


def aligned_buckets(layer_bytes: list[list[float]], embedding_bytes: list[float], layers: int, bucket_bytes: float,
                    head_bwd_s: float, layer_bwd_s: float, embed_bwd_s: float = 0.0) -> list[list[Bucket]]:
    """Every rank's buckets cut at the same parameters, those of the rank with the most gradient bytes.

    Ranks whose shards are alike (every algorithm here but Cannon, which keeps the weights on its first
    depth layer) get exactly their own ``gradient_buckets``; the others get the same number of buckets
    with the same ready times, sized by their own shards. That is an approximation (DDP cuts each rank's
    buckets by its own sizes) which lets ``dp_reduce.simulate_waves`` run every group's k-th bucket
    together."""
    streams = [_stream(lb, eb, layers, head_bwd_s, layer_bwd_s, embed_bwd_s)
               for lb, eb in zip(layer_bytes, embedding_bytes)]
    return aligned_stream_buckets(streams, bucket_bytes)


def aligned_stream_buckets(streams: list[list[tuple[float, float]]], bucket_bytes: float) -> list[list[Bucket]]:
    """``aligned_buckets`` of ready-made streams: per rank, (bytes, ready) of each parameter's gradient in the
    order they are produced, every rank's list alike in length (a pipeline stage's, ``simulator.pipeline``)."""
    heaviest = max(range(len(streams)), key=lambda r: (sum(b for b, _ in streams[r]), -r))
    cuts = _cuts(streams[heaviest], bucket_bytes)
    return [_buckets(s, cuts, keep_empty=True) for s in streams]

