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

Values are checked as they are read, each failure one InputError naming the file, the line and the
value as printed: sizes and counts are integers >= 0, times finite and > 0 (the out-of-place one is
required, the in-place one may be ``N/A``), bandwidths finite and >= 0 or ``N/A``, ``nGpus`` >= 1.

**Repeated rows.** nccl-tests prints one row per size and data type/op/root, but its ``-N`` option
repeats the whole size sweep (each cycle a new measurement), and logs of several runs are often
appended to one file. Rows with the same size, type, redop and root are repeats of one measurement
(``merge_repeats``): they agree when the slowest out-of-place time is at most ``REPEAT_TOLERANCE``
(25%) above the fastest, and are then merged into one, the row with the median time (the lower median
for an even count), so that algbw and busbw stay those printed with that time. Repeats further apart
are refused as conflicting: they come from different setups (another machine, NCCL version or
environment), which one fit or comparison cannot mix. The 25% is set from the real logs in
``tests/data/nccl-tests``: there the out-of-place and in-place times of one size, two back-to-back
measurements, differ by at most 7.7% (1.5% at the median), so 25% leaves three times that for
cycle-to-cycle drift while still catching a log from another setup (factors of 2 and more).

Example::

    >>> log = parse_nccl_tests("all_reduce_perf_8gpu.log")                       # doctest: +SKIP
    >>> log.op, log.n_ranks, log.rows[0].size_bytes, log.rows[0].time_us         # doctest: +SKIP
    ('all_reduce', 8, 8, 31.44)
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from simulator.errors import InputError
from simulator.files import read_text

__all__ = ["NcclTestsRow", "NcclTestsLog", "parse_nccl_tests", "merge_repeats", "OPS", "REPEAT_TOLERANCE"]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
_OP_IN_TEXT = re.compile(r"(all_reduce|all_gather|reduce_scatter|broadcast|reduce)_perf")
_SKIP = ("NCCL INFO", "NCCL WARN")
REPEAT_TOLERANCE = 0.25
"""Repeated rows of one size agree when the slowest time is at most this fraction above the fastest."""


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
    where: str = field(default="", compare=False)
    """Where the row was read, "FILE line N", for messages."""


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


def _count(token: str, where: str, column: str, least: int = 0) -> int:
    """An integer column (size, count, nGpus) that must be >= ``least``."""
    value = _number(token, int, where, column)
    if value is None or value < least:
        raise InputError(f"{where}: {column} is {token}; it must be an integer >= {least}")
    return value


def _label(column: str) -> str:
    """The column as a message names it: "out-of-place time", "in-place busbw"."""
    return column if column.startswith("in-place") else f"out-of-place {column}"


def _time(token: str, where: str, column: str, required: bool = True) -> float | None:
    """A time column in microseconds: finite and > 0, or N/A where ``required`` is False."""
    value = _number(token, float, where, column)
    if value is None and not required:
        return None
    if value is None or not (math.isfinite(value) and value > 0):
        valid = "a finite number > 0 (microseconds)" + ("" if required else " or N/A")
        raise InputError(f"{where}: {_label(column)} is {token}; a time must be {valid}")
    return value


def _bandwidth(token: str, where: str, column: str) -> float | None:
    """A bandwidth column in GB/s: finite and >= 0, or N/A."""
    value = _number(token, float, where, column)
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise InputError(f"{where}: {_label(column)} is {token}; a bandwidth must be a finite number >= 0 "
                         f"(GB/s) or N/A")
    return value


def merge_repeats(entries: Iterable[tuple[tuple, NcclTestsRow]]) -> list[tuple[tuple, NcclTestsRow]]:
    """One ``(key, row)`` per key of ``entries``, in first-seen order: the row with the median out-of-place
    time among those with that key (the lower median for an even count); InputError naming both rows
    when the slowest is more than ``REPEAT_TOLERANCE`` above the fastest (module doc, "Repeated rows").

        >>> a = NcclTestsRow(8, 2, "float", "sum", None, 30.0, 0, 0, None, None, None, "a.log line 9")
        >>> b = NcclTestsRow(8, 2, "float", "sum", None, 31.0, 0, 0, None, None, None, "a.log line 40")
        >>> merge_repeats([((8,), a), ((8,), b)])[0][1].time_us
        30.0
    """
    groups: dict[tuple, list[NcclTestsRow]] = {}
    for key, row in entries:
        groups.setdefault(key, []).append(row)
    merged = []
    for key, rows in groups.items():
        ordered = sorted(rows, key=lambda row: row.time_us)
        fastest, slowest = ordered[0], ordered[-1]
        if slowest.time_us > fastest.time_us * (1 + REPEAT_TOLERANCE):
            what = " ".join(str(part) for part in (fastest.type, fastest.redop) if part)
            apart = slowest.time_us / fastest.time_us - 1
            raise InputError(
                f"{slowest.where}: size {slowest.size_bytes} ({what}) has time {slowest.time_us:g} us but "
                f"{fastest.where} has {fastest.time_us:g} us, {apart:.0%} slower; repeated rows of one size "
                f"must agree within {REPEAT_TOLERANCE:.0%} (keep runs of different setups in separate logs)")
        merged.append((key, ordered[(len(ordered) - 1) // 2]))
    return merged


def parse_nccl_tests(source: str, text: str | None = None) -> NcclTestsLog:
    """Parse the log at path ``source`` (or ``text``, with ``source`` naming it in errors)."""
    if text is None:  # within simulator.limits' file size, one InputError line naming the log
        text = read_text(source, "nccl-tests log", errors="replace")
    name = str(source)
    op = None
    match = _OP_IN_TEXT.search(os.path.basename(name))
    if match:
        op = match.group(1)
    runs: list[dict] = []  # one per "# nThread ... nGpus" header: its line, nGpus and "# Rank" lines
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
                runs.append({"line": number, "n_gpus": _count(after[0] if after else "(none)", where, "nGpus",
                                                               least=1), "listed": 0})
            elif words[:1] == ["Rank"]:
                if not runs:
                    runs.append({"line": number, "n_gpus": None, "listed": 0})
                runs[-1]["listed"] += 1
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
            size_bytes=_count(fields["size"], where, "size"),
            count=_count(fields["count"], where, "count"),
            type=fields["type"],
            redop=fields.get("redop"),
            root=_number(fields["root"], int, where, "root") if "root" in fields else None,
            time_us=_time(values[0], where, "time"),
            algbw_GBps=_bandwidth(values[1], where, "algbw"),
            busbw_GBps=_bandwidth(values[2], where, "busbw"),
            inplace_time_us=_time(values[4], where, "in-place time", required=False),
            inplace_algbw_GBps=_bandwidth(values[5], where, "in-place algbw"),
            inplace_busbw_GBps=_bandwidth(values[6], where, "in-place busbw"),
            where=where,
        ))
    if not rows:
        raise InputError(f"{name}: no nccl-tests rows found (expected a '# size count type ...' header and rows)")
    ranks = _ranks(name, runs)  # first: runs on other rank counts also disagree row by row
    merged = merge_repeats(((row.size_bytes, row.type, row.redop, row.root), row) for row in rows)
    return NcclTestsLog(name, op, ranks, tuple(row for _, row in merged))


def _ranks(name: str, runs: list[dict]) -> int | None:
    """The rank count of a log's runs (its "# Rank" lines, else nGpus), None if it names none; InputError
    when runs appended to one log ran on different rank counts."""
    counts = [(run["listed"] or run["n_gpus"], run["line"]) for run in runs if run["listed"] or run["n_gpus"]]
    for count, line in counts[1:]:
        if count != counts[0][0]:
            raise InputError(f"{name} line {line}: this run is on {count} ranks but the one at line {counts[0][1]} "
                             f"is on {counts[0][0]}; a log holds runs on one rank count (split it in one per count)")
    return counts[0][0] if counts else None
