"""Parse nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf).

nccl-tests (github.com/NVIDIA/nccl-tests) prints a header naming its columns, then one row per size::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
         1048576        262144     float     sum      -1    72.53   14.46   25.30      0    70.07 ...

The columns before ``time`` differ by test and version (older versions print no ``root`` for
all_reduce, no ``redop`` for all_gather/broadcast), so they are read from the header line; after them
come out-of-place and in-place ``time algbw busbw`` plus an error column (``error`` or ``#wrong``).
In-place values printed as ``N/A`` become None. Lines starting with ``#``, blank lines and NCCL's own
``NCCL INFO``/``NCCL WARN`` lines are skipped; anything else raises InputError naming file and line.

Example::

    >>> log = parse_nccl_tests("all_reduce_perf_8gpu.log")                       # doctest: +SKIP
    >>> log.op, log.n_ranks, log.rows[0].size_bytes, log.rows[0].time_us         # doctest: +SKIP
    ('all_reduce', 8, 8, 31.44)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from simulator.errors import InputError
from simulator.files import read_text

__all__ = ["NcclTestsRow", "NcclTestsLog", "parse_nccl_tests", "OPS"]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
_OP_IN_TEXT = re.compile(r"(all_reduce|all_gather|reduce_scatter|broadcast|reduce)_perf")
_SKIP = ("NCCL INFO", "NCCL WARN")


@dataclass(frozen=True)
class NcclTestsRow:
    """One size of an nccl-tests run; times in microseconds, bandwidths in GB/s as nccl-tests prints them."""

    size_bytes: int
    count: int
    type: str
    redop: str | None
    """Reduction op ("sum", ...), None where the test prints none."""
    root: int | None
    """Root rank, None where the test prints none (-1 where it prints "no root")."""
    time_us: float
    """Out-of-place time."""
    algbw_GBps: float
    busbw_GBps: float
    inplace_time_us: float | None
    inplace_algbw_GBps: float | None
    inplace_busbw_GBps: float | None


@dataclass(frozen=True)
class NcclTestsLog:
    """A parsed log: the test (None if the log does not say), the rank count, the rows in order."""

    path: str
    op: str | None
    n_ranks: int | None
    rows: tuple[NcclTestsRow, ...]


def _number(token: str, kind, where: str, column: str):
    if token == "N/A":
        return None
    try:
        return kind(token)
    except ValueError:
        raise InputError(f"{where}: column {column} is {token!r}, not a number") from None


def parse_nccl_tests(source: str, text: str | None = None) -> NcclTestsLog:
    """Parse the log at path ``source`` (or ``text``, with ``source`` naming it in errors)."""
    if text is None:  # within simulator.limits' file size, one InputError line naming the log
        text = read_text(source, "nccl-tests log", errors="replace")
    name = os.path.basename(str(source))
    op = None
    match = _OP_IN_TEXT.search(name)
    if match:
        op = match.group(1)
    n_gpus = ranks = None
    listed = 0
    prefix: list[str] | None = None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name} line {number}"
        stripped = line.strip()
        if not stripped or any(tag in line for tag in _SKIP):
            continue
        if stripped.startswith("#"):
            words = stripped.lstrip("#").split()
            if "size" in words and "count" in words and "time" in words:
                prefix = words[: words.index("time")]
                if prefix[:3] != ["size", "count", "type"]:
                    raise InputError(f"{where}: an nccl-tests header starts size count type, got {' '.join(prefix)}")
            elif words[:1] == ["nThread"] and "nGpus" in words:
                after = words[words.index("nGpus") + 1:]
                n_gpus = _number(after[0] if after else "(none)", int, where, "nGpus")
            elif words[:1] == ["Rank"]:
                listed += 1
            elif "Collective test starting:" in stripped:
                found = _OP_IN_TEXT.search(stripped)
                op = found.group(1) if found else op
            continue
        if prefix is None:
            raise InputError(f"{where}: expected an nccl-tests header (# size count type ... time algbw busbw) "
                             f"before data, got {stripped[:60]!r}")
        tokens = stripped.split()
        if len(tokens) != len(prefix) + 8:
            raise InputError(f"{where}: expected {len(prefix) + 8} columns ({' '.join(prefix)} then out-of-place "
                             f"and in-place time algbw busbw error), got {len(tokens)}")
        fields = dict(zip(prefix, tokens))
        values = tokens[len(prefix):]
        rows.append(NcclTestsRow(
            size_bytes=_number(fields["size"], int, where, "size"),
            count=_number(fields["count"], int, where, "count"),
            type=fields["type"],
            redop=fields.get("redop"),
            root=_number(fields["root"], int, where, "root") if "root" in fields else None,
            time_us=_number(values[0], float, where, "time"),
            algbw_GBps=_number(values[1], float, where, "algbw"),
            busbw_GBps=_number(values[2], float, where, "busbw"),
            inplace_time_us=_number(values[4], float, where, "in-place time"),
            inplace_algbw_GBps=_number(values[5], float, where, "in-place algbw"),
            inplace_busbw_GBps=_number(values[6], float, where, "in-place busbw"),
        ))
        if rows[-1].time_us is None:
            raise InputError(f"{where}: the out-of-place time is N/A")
    if not rows:
        raise InputError(f"{name}: no nccl-tests rows found (expected a '# size count type ...' header and rows)")
    if listed:
        ranks = listed
    elif n_gpus:
        ranks = n_gpus
    return NcclTestsLog(str(source), op, ranks, tuple(rows))
