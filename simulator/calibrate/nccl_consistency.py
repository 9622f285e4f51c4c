"""The columns of an nccl-tests row checked against each other: size, count and type; algbw and time; busbw.

nccl-tests computes every printed column from the others (``src/common.cu``, and each test's
``*GetCollByteCount`` and ``*GetBw`` in ``src/*.cu``):

- ``size = count x bytes per element``, times the rank count n where the count is one rank's share
  (all_gather, reduce_scatter, alltoall; ``nccl_columns``);
- ``algbw = size / time`` (GB/s from bytes and microseconds: ``size / time_us / 1e3``);
- ``busbw = algbw x factor`` (of the unrounded algbw: checked as ``size / time x factor``), the factor of
  the test on n ranks: 2(n-1)/n for all_reduce, (n-1)/n for
  all_gather, reduce_scatter and alltoall, 1 for broadcast, reduce and sendrecv.

A row where they disagree was edited or corrupted, and fitting it writes nonsense: a time of 1e-300 us
beside the algbw that the real time gave fitted NVSwitch at 230 TB/s; a size of 2^60 bytes was fitted
as such; ``nGpus 100000000`` in the header turned a real busbw into a +592858027.7% error. Every such
row is refused in one line naming the file and line, the columns and what they imply. So is a header
whose ``nGpus`` (the GPUs one process drives) is more than the run's ranks: the host's enqueue floor is
``nGpus`` x 4.3 us, and ``nGpus 100000000`` made it 430 s. The tolerance,
``RELATIVE_TOLERANCE`` plus 0.01 GB/s, is far above the rounding of the printed columns (at most
0.04% on the logs in tests/data) and far below any of those errors.
"""

from __future__ import annotations

from simulator.calibrate.nccl_columns import BYTES_PER_ELEMENT
from simulator.errors import InputError
from simulator.limits import MAX_BYTES

__all__ = ["RELATIVE_TOLERANCE", "BUS_FACTORS", "check_rows", "check_gpus_per_process"]

RELATIVE_TOLERANCE = 0.01
"""How far a printed bandwidth may be from the one its row's other columns give (plus 0.01 GB/s)."""

BUS_FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
               "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}
"""busbw / algbw of each nccl-tests test on n ranks (nccl-tests doc/PERFORMANCE.md)."""


def _far(printed: float, expected: float) -> bool:
    return abs(printed - expected) > 0.01 + RELATIVE_TOLERANCE * expected


def check_rows(rows, op: str | None, ranks: int | None) -> None:
    """InputError for the first row whose columns disagree (module doc); ``op`` and ``ranks`` as parsed
    (None where the log does not say: those checks are skipped)."""
    for row in rows:
        where = row.where
        if row.size_bytes > MAX_BYTES:
            raise InputError(f"{where}: size {row.size_bytes:,} bytes is over the largest size tpsim takes, "
                             f"{MAX_BYTES:,} (2^50)")
        width = BYTES_PER_ELEMENT.get(row.type)
        if width is not None and row.size_bytes > 0:
            whole = row.count * width
            shares = (whole,) if not ranks or ranks == 1 else (whole, whole * ranks)
            if row.size_bytes not in shares:
                share = f" (or {whole * ranks:,} for one rank's share of {ranks})" if len(shares) > 1 else ""
                raise InputError(f"{where}: size {row.size_bytes:,} is not count {row.count:,} x {width} bytes "
                                 f"({row.type}) = {whole:,}{share}; the row's columns disagree")
        for label, time_us, algbw, busbw in (("", row.time_us, row.algbw_GBps, row.busbw_GBps),
                                             ("in-place ", row.inplace_time_us, row.inplace_algbw_GBps,
                                              row.inplace_busbw_GBps)):
            if time_us is None or algbw is None or row.size_bytes == 0:
                continue
            expected = row.size_bytes / time_us / 1e3
            if _far(algbw, expected):
                raise InputError(f"{where}: {label}algbw {algbw:g} GB/s but size / time = {row.size_bytes:,} B / "
                                 f"{time_us:g} us = {expected:.4g} GB/s; algbw is the size over the time")
            factor = BUS_FACTORS.get(op or "")
            if busbw is not None and factor is not None and ranks:
                bus = expected * factor(ranks)  # from size / time: nccl-tests scales the unrounded algbw
                if _far(busbw, bus):
                    raise InputError(f"{where}: {label}busbw {busbw:g} GB/s but size / time x {factor(ranks):.4g} "
                                     f"({op} on {ranks} ranks) = {bus:.4g} GB/s; the rank count or a bandwidth is "
                                     f"wrong")


def check_gpus_per_process(name: str, runs: list[dict], ranks: int | None) -> None:
    """InputError for a run header whose ``nGpus`` is more than the log's ``ranks`` (module doc)."""
    for run in runs:
        if ranks and run.get("n_gpus") and run["n_gpus"] > ranks:
            raise InputError(f"{name} line {run['line']}: nGpus is {run['n_gpus']}, but the run is on {ranks} ranks; "
                             f"nGpus counts the GPUs one process drives, at most the ranks")
