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

from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.workloads.workload import Workload

__all__ = ["Bucket", "DDP_BUCKET_BYTES", "gradient_buckets", "rank_bytes", "weight_elements"]

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


def gradient_buckets(layer_bytes: list[float], embedding_bytes: float, layers: int, bucket_bytes: float,
                     head_bwd_s: float, layer_bwd_s: float) -> list[Bucket]:
    """The buckets of one rank (module docstring): ``layer_bytes`` per weight of one block in model order."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket size must be > 0 bytes, got {bucket_bytes!r}")
    stream = []  # (bytes, ready) in the order gradients are produced
    for done in range(1, layers + 1):  # layer L - done finishes its backward at head + done x layer
        ready = head_bwd_s + done * layer_bwd_s
        stream.extend((nbytes, ready) for nbytes in reversed(layer_bytes) if nbytes)
    stream.append((embedding_bytes, head_bwd_s + layers * layer_bwd_s))
    buckets, size, ready = [], 0.0, 0.0
    for nbytes, at in stream:
        size, ready = size + nbytes, at
        if size >= bucket_bytes:
            buckets.append(Bucket(size, ready))
            size = 0.0
    if size:
        buckets.append(Bucket(size, ready))
    return buckets


def rank_bytes(schedule: Schedule, workload: Workload, rank: int) -> list[float]:
    """Bytes of each weight's gradient on ``rank``, in the schedule's dtype (gradients reduced as kept)."""
    per = DTYPE_BYTES[schedule.dtype]
    return [float(e * per) for e in weight_elements(schedule, workload, rank)]
