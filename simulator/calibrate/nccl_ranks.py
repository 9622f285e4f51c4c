"""The rank count of an nccl-tests log that lists no ranks, read off its busbw / algbw.

A log copied from a web page or a notebook often keeps the table and drops the ``# Rank ... on HOST``
lines (and a multi-process run's ``nGpus 1`` counts one process's GPUs, not the job's). nccl-tests
computes busbw from algbw with a factor that names the rank count n (``src/*.cu``, ``getBw``):
2 (n - 1) / n for all_reduce, (n - 1) / n for all_gather and reduce_scatter, 1 for broadcast and reduce
(which say nothing). Both columns are printed to 0.01 GB/s, so each row with a sizeable algbw pins n:
the n read off the row with the largest algbw is kept if it reproduces every row's busbw within the
printing's rounding and n - 1 and n + 1 do not (for busbw around 100 GB/s that tells n apart up to
about 100 ranks); otherwise the log does not say.

    >>> ranks_from_bandwidths("all_reduce", [(371.23, 696.06), (361.26, 677.35)])
    16
"""

from __future__ import annotations

from simulator.collectives.closed_form import busbw_factor

__all__ = ["ranks_from_bandwidths"]

_NAMING_OPS = ("all_reduce", "all_gather", "reduce_scatter")
"""The tests whose busbw / algbw depends on n (``busbw_factor``); broadcast's and reduce's is 1."""
_ROUNDING_GBPS = 0.015
"""Largest |factor x algbw - busbw| two values printed to 0.01 GB/s allow (each off by up to 0.005)."""
_LEAST_ALGBW_GBPS = 1.0
"""Rows below this algbw carry too few digits to say anything."""


def ranks_from_bandwidths(op: str | None, pairs) -> int | None:
    """The rank count the (algbw, busbw) ``pairs`` of an ``op`` log pin down (module doc), or None."""
    usable = [(a, b) for a, b in pairs if a is not None and b is not None and a >= _LEAST_ALGBW_GBPS]
    if op not in _NAMING_OPS or not usable:
        return None
    algbw, busbw = max(usable)
    ratio = busbw / algbw
    limit = 2.0 if op == "all_reduce" else 1.0  # the factor tends to it as n grows
    if not 0 < ratio < limit:
        return None
    n = round(1 / (1 - ratio / limit))
    if n < 2:
        return None

    def fits(m: int) -> bool:
        return m >= 2 and all(abs(busbw_factor(op, m) * a - b) <= _ROUNDING_GBPS for a, b in usable)

    return n if fits(n) and not fits(n - 1) and not fits(n + 1) else None
