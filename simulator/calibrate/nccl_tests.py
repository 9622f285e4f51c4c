"""Parse nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf).

nccl-tests (github.com/NVIDIA/nccl-tests) prints a header naming its columns, then one row per size::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
         1048576        262144     float     sum      -1    72.53   14.46   25.30      0    70.07 ...

The columns before ``time`` differ by test and version (older versions print no ``root`` for
all_reduce, no ``redop`` for all_gather/broadcast), so they are read from the header line; after them
come out-of-place and (where printed) in-place ``time algbw busbw``, each with or without a check column
(``error`` in older versions, ``#wrong`` in newer ones; absent where the build prints none). In-place
values printed as ``N/A`` become None, and so do they where the header has no in-place group.

**Logs as jobs print them** (``nccl_lines``): launcher tags in front of every line (mpirun's
``[1,0]<stdout>:``, srun's ``0:``, SkyPilot's ``(head, rank=0, pid=N)``) are taken off; lines tagged
``<stderr>``, NCCL's own lines (``NCCL INFO``, ``NCCL WARN``, ``NCCL version 2.x.y+cuda``) and blank lines
are skipped anywhere; before the first table header anything goes (the job's command line, ssh warnings),
and so it does after a table's ``# Avg bus bandwidth`` trailer until the next header. nccl-tests' own
``#`` lines are also read where the ``#`` is missing (``nccl_lines.unmarked_comment``): logs copied from
web pages often lose it. Within a table,
lines from another process (other launcher tags) are skipped: nccl-tests prints from one rank. Any other
line there that is not a row raises InputError naming file and line, as does a log with no table.

**The test** is read from the log first: the ``# Collective test starting: all_gather_perf`` line of newer
versions, or the job's command line (``mpirun ... ./build/all_reduce_perf -b 8 -e 8G``); then from the file
name (``all_reduce_perf_8gpu.log``, also ``nccl_allgather.log``); else from the table's own columns
(``nccl_columns``: redop, root and what the count column counts). A log naming two tests is refused.
``NcclTestsLog.hosts`` and ``device`` come from the ``# Rank ... on HOST device ... NAME`` lines,
``gpus_per_thread`` from the ``# nThread 1 nGpus 8 ...`` header (the largest where runs differ). The
rank count is the ``# Rank`` lines'; where a log lists none, the one its count column gives (all_gather
and reduce_scatter print one rank's share) or its busbw / algbw pins down (``nccl_ranks``), else the
header's nGpus.

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
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from simulator.calibrate.nccl_consistency import check_gpus_per_process, check_rows
from simulator.calibrate.nccl_columns import op_from_columns
from simulator.calibrate.nccl_lines import (is_noise, is_stderr, op_in_file_name, op_named, rank_line, split_prefix,
                                            unmarked_comment)
from simulator.calibrate.nccl_ranks import ranks_from_bandwidths
from simulator.errors import InputError
from simulator.files import read_text

__all__ = ["NcclTestsRow", "NcclTestsLog", "parse_nccl_tests", "merge_repeats", "OPS", "REPEAT_TOLERANCE"]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
_ROW_START = re.compile(r"[-+]?\d")  # a row starts with its size, a number (checked later)
_CHECKS = ("error", "#wrong", "wrong")  # the check column's name across nccl-tests versions
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
    op_source: str = ""
    """Where ``op`` was read: "line N" (the log's command or "Collective test starting" line), "file name", or
    "columns: ..." (the table's own layout, ``nccl_columns``)."""
    hosts: tuple[str, ...] = ()
    """The host of each rank, from the first run's "# Rank ... on HOST" lines (empty where it lists none)."""
    device: str | None = None
    """The first rank's device name as printed ("A100-SXM4-40GB", "NVIDIA H200"), None where not listed."""
    gpus_per_thread: int = 1
    """GPUs each nccl-tests thread drove (the header's ``nGpus``; 1 where it has none): the host's enqueue
    floor under the times (``enqueue_floor``)."""

    @property
    def n_servers(self) -> int | None:
        """How many hosts the ranks ran on, None where the log lists no hosts."""
        return len(set(self.hosts)) or None


@dataclass(frozen=True)
class _Table:
    """A table's layout from its header: the columns before ``time``, then one or two groups (out-of-place,
    in-place) of ``time algbw busbw`` with or without a check column."""

    prefix: tuple[str, ...]
    groups: tuple[int, ...]
    """Offset of each group's ``time`` among the values after ``prefix``."""
    width: int
    columns: str
    tags: str
    """The launcher tags of the header line: the rows come from the same process."""

    @classmethod
    def from_header(cls, words: list[str], where: str, tags: str) -> "_Table":
        prefix = words[: words.index("time")]
        if prefix[:3] != ["size", "count", "type"]:
            raise InputError(f"{where}: an nccl-tests header starts size count type, got {' '.join(prefix)}")
        rest = words[len(prefix):]
        starts = [i for i, word in enumerate(rest) if word == "time"]
        ends = starts[1:] + [len(rest)]
        for start, end in zip(starts, ends):
            group = rest[start:end]
            if group[:3] != ["time", "algbw", "busbw"] or len(group) > 4 or (len(group) == 4 and group[3] not in
                                                                            _CHECKS):
                raise InputError(f"{where}: expected time algbw busbw [error|#wrong] after {' '.join(prefix)}, "
                                 f"got {' '.join(rest)}")
        if len(starts) > 2:
            raise InputError(f"{where}: expected out-of-place and at most one in-place group of time algbw busbw, "
                             f"got {len(starts)}")
        return cls(tuple(prefix), tuple(starts), len(words), " ".join(words), tags)

    def row(self, tokens: list[str], where: str) -> NcclTestsRow:
        """One data row in this layout, every value checked (module doc)."""
        if len(tokens) != self.width:
            raise InputError(f"{where}: expected {self.width} columns ({self.columns}), got {len(tokens)}")
        fields = dict(zip(self.prefix, tokens))
        values = tokens[len(self.prefix):]
        out = self.groups[0]
        inplace = self.groups[1] if len(self.groups) > 1 else None

        return NcclTestsRow(
            size_bytes=_count(fields["size"], where, "size"),
            count=_count(fields["count"], where, "count"),
            type=fields["type"],
            redop=fields.get("redop"),
            root=_number(fields["root"], int, where, "root") if "root" in fields else None,
            time_us=_time(values[out], where, "time"),
            algbw_GBps=_bandwidth(values[out + 1], where, "algbw"),
            busbw_GBps=_bandwidth(values[out + 2], where, "busbw"),
            inplace_time_us=None if inplace is None else _time(values[inplace], where, "in-place time", required=False),
            inplace_algbw_GBps=None if inplace is None else _bandwidth(values[inplace + 1], where, "in-place algbw"),
            inplace_busbw_GBps=None if inplace is None else _bandwidth(values[inplace + 2], where, "in-place busbw"),
            where=where,
        )


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
    """Parse the log at path ``source`` (or ``text``, with ``source`` naming it in errors); see the module doc."""
    if text is None:  # within simulator.limits' file size, one InputError line naming the log
        text = read_text(source, "nccl-tests log", errors="replace")
    name = str(source)
    runs: list[dict] = []  # one per "# nThread ... nGpus" header: its line, nGpus and "# Rank" lines
    named: dict[str, int] = {}  # test -> first line naming it
    table: _Table | None = None
    first_other = None  # the first line that is none of nccl-tests' own, for the "no table" message
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name} line {number}"
        tags, stripped = split_prefix(line)
        stripped = stripped.strip()
        if not stripped or is_stderr(tags) or is_noise(stripped):
            continue
        op = op_named(stripped)
        if op and not _ROW_START.match(stripped):
            named.setdefault(op, number)
        stripped = unmarked_comment(stripped) or stripped
        if stripped.startswith("#"):
            table = _comment(stripped, where, number, runs, table, tags)
            continue
        if table is None or tags != table.tags:
            # Before the table (the job's command line, ssh warnings) or another process's line.
            first_other = first_other or (number, stripped)
            continue
        if not _ROW_START.match(stripped):
            raise InputError(f"{where}: expected an nccl-tests row ({' '.join(table.prefix)} time algbw busbw ...), "
                             f"a '#' line or an NCCL message, got {stripped[:60]!r}")
        rows.append(table.row(stripped.split(), where))
    if not rows:
        if first_other is not None:
            raise InputError(f"{name} line {first_other[0]}: expected an nccl-tests header (# size count type ... "
                             f"time algbw busbw) and rows, found none; this line is {first_other[1][:60]!r}")
        raise InputError(f"{name}: no nccl-tests rows found (expected a '# size count type ...' header and rows)")
    ranks = _ranks(name, runs)  # first: runs on other rank counts also disagree row by row
    op, op_source = _operation(name, named)
    columns = op_from_columns((row.size_bytes, row.count, row.type, row.redop, row.root) for row in rows)
    if op is None and columns:
        op, op_source = columns[0], columns[2]
    if not any(run["listed"] for run in runs):  # no "# Rank" lines: the count column or busbw / algbw says
        share = columns[1] if columns and columns[0] == op else None
        ranks = share or ranks_from_bandwidths(op, ((row.algbw_GBps, row.busbw_GBps) for row in rows)) or ranks
    merged = merge_repeats(((row.size_bytes, row.type, row.redop, row.root), row) for row in rows)
    check_rows([row for _, row in merged], op, ranks)  # size, count, time and bandwidths agree (nccl_consistency)
    check_gpus_per_process(name, runs, ranks)
    listed = runs[0]["hosts"] if runs else []
    per_thread = max((run["n_gpus"] for run in runs if run["n_gpus"]), default=1)
    return NcclTestsLog(name, op, ranks, tuple(row for _, row in merged), op_source,
                        tuple(host for host, _ in listed), listed[0][1] if listed else None, per_thread)


def _comment(stripped: str, where: str, number: int, runs: list[dict], table, tags: str):
    """Read a ``#`` line: a table header (returns the new table), a run header, a device line, the trailer."""
    words = stripped.lstrip("#").split()
    if "size" in words and "count" in words and "time" in words:
        return _Table.from_header(words, where, tags)
    if words[:1] == ["nThread"] and "nGpus" in words:
        after = words[words.index("nGpus") + 1:]
        runs.append({"line": number, "n_gpus": _count(after[0] if after else "(none)", where, "nGpus", least=1),
                     "listed": 0, "hosts": []})
    elif words[:1] == ["Rank"]:
        if not runs:
            runs.append({"line": number, "n_gpus": None, "listed": 0, "hosts": []})
        runs[-1]["listed"] += 1
        device = rank_line(stripped)
        if device:
            runs[-1]["hosts"].append(device[1:])
    elif words[:3] == ["Avg", "bus", "bandwidth"]:
        return None  # the table's trailer: what follows is not its rows until the next header
    return table


def _operation(name: str, named: dict[str, int]) -> tuple[str | None, str]:
    """The test the log names (its invocation or "Collective test starting" line), else the file name's."""
    if len(named) > 1:
        (a, line_a), (b, line_b) = sorted(named.items(), key=lambda item: item[1])[:2]
        raise InputError(f"{name} line {line_b}: names {b}_perf but line {line_a} names {a}_perf; a log holds one "
                         f"test (split it in one log per test)")
    if named:
        op, line = next(iter(named.items()))
        return op, f"line {line}"
    op = op_in_file_name(name)
    return op, ("file name" if op else "")


def _ranks(name: str, runs: list[dict]) -> int | None:
    """The rank count of a log's runs (its "# Rank" lines, else nGpus), None if it names none; InputError
    when runs appended to one log ran on different rank counts."""
    counts = [(run["listed"] or run["n_gpus"], run["line"]) for run in runs if run["listed"] or run["n_gpus"]]
    for count, line in counts[1:]:
        if count != counts[0][0]:
            raise InputError(f"{name} line {line}: this run is on {count} ranks but the one at line {counts[0][1]} "
                             f"is on {counts[0][0]}; a log holds runs on one rank count (split it in one per count)")
    return counts[0][0] if counts else None
