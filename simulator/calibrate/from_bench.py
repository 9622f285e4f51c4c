"""Calibration samples from a `tpsim bench` record (``format: "tpsim-bench"``, ``version: 1``).

Each collective or send row becomes a ``CollectiveSample(kind, ranks, nbytes, time_s)`` (the bench
already writes nccl-tests' S and seconds per op; a send row is one pairwise exchange, each side
sending S), each gemm row a ``GemmSample(m, k, n, dtype, time_s, concurrent)``. ``source`` names the
file and the row, so a fit's error rows point back at the measurement.

What the samples carry and what they leave out: a bench row measured with several groups at once
(``groups`` > 1, the default ``--groups all``) has every rank busy, which is the condition a
schedule's row groups run in; the sample keeps its group size only, so that contention is baked into
the fitted figures, as ``concurrent`` bakes it into a gemm's. The record's format is checked here and
every problem is one InputError line naming the file.

Example::

    >>> collectives, gemms = samples_from_bench("bench.json")          # doctest: +SKIP
    >>> collectives[0].kind, gemms[0].concurrent                       # doctest: +SKIP
    ('broadcast', 1)
"""

from __future__ import annotations

import json

from simulator.calibrate.samples import CollectiveSample, GemmSample
from simulator.errors import InputError

__all__ = ["BENCH_FORMAT", "BENCH_VERSION", "samples_from_bench", "load_bench"]

BENCH_FORMAT = "tpsim-bench"
BENCH_VERSION = 1


def load_bench(path: str) -> dict:
    """The bench record at ``path``; InputError for a missing file, bad JSON, another format or version."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise InputError(f"cannot read bench file {path}: {error.strerror or error}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(record, dict) or record.get("format") != BENCH_FORMAT:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise InputError(f"{path}: not a bench record (format {found!r}, expected {BENCH_FORMAT!r}: write one "
                         f"with tpsim bench --json)")
    if record.get("version") != BENCH_VERSION:
        raise InputError(f"{path}: bench record version {record.get('version')!r}; this tpsim reads version "
                         f"{BENCH_VERSION} (rerun tpsim bench --json)")
    if not isinstance(record.get("rows"), list):
        raise InputError(f"{path}: bench record has no rows list")
    return record


def _field(row: dict, key: str, where: str):
    if key not in row:
        raise InputError(f"{where}: missing {key!r}")
    return row[key]


def samples_from_bench(path: str) -> tuple[list[CollectiveSample], list[GemmSample]]:
    """(collective samples, gemm samples) of the bench record at ``path``, in the record's row order."""
    record = load_bench(path)
    collectives: list[CollectiveSample] = []
    gemms: list[GemmSample] = []
    for index, row in enumerate(record["rows"]):
        where = f"{path}: rows[{index}]"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an object")
        op = _field(row, "op", where)
        try:
            if op == "gemm":
                m, k, n = (_field(row, key, where) for key in ("m", "k", "n"))
                gemms.append(GemmSample(m, k, n, _field(row, "dtype", where), _field(row, "time_s", where),
                                        concurrent=_field(row, "concurrent", where),
                                        source=f"{path}: gemm {m}x{k}x{n} x{row['concurrent']}"))
                continue
            ranks, nbytes = _field(row, "ranks", where), _field(row, "bytes", where)
            collectives.append(CollectiveSample(op, ranks, nbytes, _field(row, "time_s", where),
                                                source=f"{path}: {op} {ranks} ranks {nbytes} B"))
        except InputError as error:
            raise InputError(f"{where}: {error}") from None
    if not collectives and not gemms:
        raise InputError(f"{path}: the bench record has no rows")
    return collectives, gemms
