"""Gradient accumulation: how many micro-batches one training step runs on each data-parallel replica.

A step trains on ``global_batch`` sequences (G). Each of the D replicas takes G / D of them and runs
them as micro-batches of B sequences (the transformer workload's ``--batch``), accumulating the
gradients, so it runs G / (B x D) micro-batches before the one data-parallel gradient reduction and
the optimizer step (Megatron-LM's ``--global-batch-size`` / ``--micro-batch-size``, the number of
micro-batches being ``global / (micro x data_parallel_size)``, Shoeybi et al. 2019 and the
Megatron-LM README). A D or B that does not divide G is not applicable: the step would not hold the
same number of sequences on every replica.

Example::

    >>> micro_batches(256, 4, 8)
    8
"""

from __future__ import annotations

from simulator.errors import InputError, NotApplicable

__all__ = ["micro_batches"]


def micro_batches(global_batch: int, micro_batch: int, dp: int) -> int:
    """G / (B x D); NotApplicable naming the factor that does not divide, InputError for sizes < 1."""
    for label, value in (("--global-batch", global_batch), ("--batch (micro-batch)", micro_batch),
                         ("data-parallel degree", dp)):
        if not (isinstance(value, int) and value >= 1):
            raise InputError(f"{label} must be an integer >= 1, got {value!r}")
    if global_batch % dp:
        raise NotApplicable(f"global batch {global_batch} is not divisible by dp={dp}")
    if (global_batch // dp) % micro_batch:
        raise NotApplicable(f"global batch {global_batch} / dp={dp} = {global_batch // dp} sequences per replica "
                            f"is not divisible by the micro-batch {micro_batch}")
    return global_batch // (dp * micro_batch)
