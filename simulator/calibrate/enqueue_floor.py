"""The host's floor under an nccl-tests time: one thread enqueues every op on each GPU it drives.

nccl-tests times ``iters`` collectives back to back by the wall clock (``BenchTime`` in its
``src/common.cu``): each iteration's ``startColl`` launches the collective on every GPU of the
thread (``nGpus`` of them, in one ``ncclGroupStart``/``ncclGroupEnd`` when there are several), and
only after the loop does ``completeColl`` wait for the streams. Launches are asynchronous, so the
time per op is the larger of the GPUs' time and the host's time to enqueue one op on its ``nGpus``
devices. tpsim simulates the GPUs; ``measured_time_s`` adds the host's side.

It matters for logs run with one process driving a whole server (``-g 8``, ``nThread 1 nGpus 8``):
there the small sizes sit on a floor of about 8 x 4.3 us, whatever the collective. A job with one
process per GPU (``nGpus 1``, as training runs) has a floor of one enqueue, below any GPU time.

``ENQUEUE_S_PER_GPU`` is measured: in the eight single-process A100 logs of ``tests/data/nccl-tests``
(Azure NDv4 with 2, 4 and 8 GPUs; SuperBench's five tests on 8) the smallest size's time divided by
``nGpus`` is 3.9 to 4.5 us, median 4.3 us (Azure 4.33, 4.11, 3.93; SuperBench 4.38, 4.34, 4.25,
4.42, 4.38), flat over the sizes up to 16-64 KiB, as a floor is. It is host CPU and driver time,
so other hosts differ somewhat.

Example::

    >>> round(measured_time_s(14.6e-6, gpus_per_thread=8) * 1e6, 1)   # the GPUs' 14.6 us is hidden
    34.4
    >>> measured_time_s(14.6e-6, gpus_per_thread=1)
    1.46e-05
"""

from __future__ import annotations

__all__ = ["ENQUEUE_S_PER_GPU", "enqueue_floor_s", "measured_time_s"]

ENQUEUE_S_PER_GPU = 4.3e-6
"""Host time to enqueue one NCCL collective on one more GPU of the thread (see the module docstring)."""


def enqueue_floor_s(gpus_per_thread: int) -> float:
    """Seconds per op below which nccl-tests cannot time: the host's enqueue on ``gpus_per_thread`` GPUs."""
    return gpus_per_thread * ENQUEUE_S_PER_GPU


def measured_time_s(gpu_time_s: float, gpus_per_thread: int = 1) -> float:
    """What nccl-tests reports for a collective whose GPUs take ``gpu_time_s``: the larger of it and the floor."""
    return max(gpu_time_s, enqueue_floor_s(gpus_per_thread))
