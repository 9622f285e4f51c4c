"""The optimizer step: one memory-bound pass over the parameters, gradients and optimizer state.

An optimizer update does a handful of FLOPs per parameter and streams every byte of its state through
the GPU's memory once, so it takes bytes / memory bandwidth (the device's achievable bandwidth x
``memory_efficiency``, as every elementwise op in ``simulator.compute``). Bytes per parameter, mixed
precision (bf16 parameters and gradients, fp32 master weights; Rajbhandari et al. 2019, ZeRO, arXiv
1910.02054, section 3.1: 2 + 2 + 12 = 16 bytes per parameter for Adam):

=========  ======================================================  ==========
optimizer  read                       written                        bytes
=========  ======================================================  ==========
``adam``   grad 2, master 4, m 4, v 4  master 4, m 4, v 4, param 2   28
``sgd``    grad 2, master 4, momentum 4  master 4, momentum 4, param 2  20
=========  ======================================================  ==========

Under ZeRO (any stage) each data-parallel rank updates only its 1/D shard of the optimizer state.

Example: 1.6e9 parameters per GPU, Adam, on an A100 (1,555 GB/s)::

    >>> round(optimizer_step_s(1.6e9, "adam", {"mem_bandwidth_GBps": 1555.0}), 4)
    0.0288
"""

from __future__ import annotations

from simulator.compute import achievable_memory_bandwidth

from simulator.errors import InputError

__all__ = ["OPTIMIZERS", "STEP_BYTES_PER_PARAM", "optimizer_step_s"]

STEP_BYTES_PER_PARAM = {"adam": 28, "sgd": 20}
"""Bytes read and written per parameter by one update (module docstring)."""
OPTIMIZERS = tuple(STEP_BYTES_PER_PARAM)


def optimizer_step_s(params: float, optimizer: str, device: dict, memory_efficiency: float = 1.0) -> float:
    """Seconds for one update of ``params`` parameters on ``device`` (a GPU node's device dict)."""
    if optimizer not in STEP_BYTES_PER_PARAM:
        raise InputError(f"--optimizer {optimizer!r}: valid: {', '.join(OPTIMIZERS)}")
    return params * STEP_BYTES_PER_PARAM[optimizer] / achievable_memory_bandwidth(device, memory_efficiency)
