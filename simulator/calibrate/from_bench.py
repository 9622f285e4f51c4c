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

Which rows: those of one measurement form (``executor.bench_cases``). ``"lock-step"`` rows time each
op back to back (nccl-tests); ``"interleaved"`` rows time each collective after a gemm on every rank
and that gemm on its own, as a schedule meets them. On a CPU host whose ranks share cores the two
differ by up to 2x (collectives slower, gemms faster when interleaved), and a fit to one form
predicts schedules in that form's condition. ``form="auto"`` takes the interleaved rows when the
record has any (they are the schedule-like ones), else the lock-step rows; rows without a ``form``
key (older records) are lock-step. Lock-step gemm rows are taken under either form: they time
back-to-back gemms (``gemm_efficiency``), the interleaved ones a gemm right after a collective
(``gemm_efficiency_after_comm``, ``GemmSample.after_comm``).

Example::

    >>> collectives, gemms = samples_from_bench("bench.json")          # doctest: +SKIP
    >>> collectives[0].kind, gemms[0].concurrent                       # doctest: +SKIP
    ('broadcast', 1)
"""

from __future__ import annotations

from simulator.calibrate.samples import CollectiveSample, GemmSample
from simulator.errors import InputError
from simulator.files import load_record

__all__ = ["BENCH_FORMAT", "BENCH_VERSION", "BENCH_FORMS", "samples_from_bench", "load_bench", "bench_form"]

BENCH_FORMAT = "tpsim-bench"
BENCH_VERSION = 1
BENCH_FORMS = ("auto", "lock-step", "interleaved")


def load_bench(path: str) -> dict:
    """The bench record at ``path``; InputError for a missing file, bad JSON, another format or version."""
    record = load_record(path, BENCH_FORMAT, BENCH_VERSION, name="bench record", writer="tpsim bench --out",
                         file_name="bench file")
    if not isinstance(record.get("rows"), list):
        raise InputError(f"{path}: bench record has no rows list")
    return record


def _field(row: dict, key: str, where: str):
    if key not in row:
        raise InputError(f"{where}: missing {key!r}")
    return row[key]


def bench_form(record: dict, form: str, path: str = "bench record") -> str:
    """The form whose rows a fit takes: ``form`` itself, or for "auto" interleaved if any row is."""
    if form not in BENCH_FORMS:
        raise InputError(f"bench form {form!r}: valid forms are {', '.join(BENCH_FORMS)}")
    rows = [row for row in record["rows"] if isinstance(row, dict) and row.get("op") != "gemm"]
    present = {row.get("form", "lock-step") for row in rows}
    if form == "auto":
        return "interleaved" if "interleaved" in present else "lock-step"
    if rows and form not in present:  # (a gemm-only record has no form to choose)
        raise InputError(f"{path}: no {form} collective rows (it has {', '.join(sorted(present)) or 'none'}; "
                         f"measure them with tpsim bench --form {form})")
    return form


def samples_from_bench(path: str, form: str = "auto") -> tuple[list[CollectiveSample], list[GemmSample]]:
    """(collective samples, gemm samples) of the bench record at ``path`` measured in ``form`` (module
    doc), in the record's row order."""
    record = load_bench(path)
    chosen = bench_form(record, form, path)
    collectives: list[CollectiveSample] = []
    gemms: list[GemmSample] = []
    for index, row in enumerate(record["rows"]):
        where = f"{path}: rows[{index}]"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an object")
        op = _field(row, "op", where)
        row_form = row.get("form", "lock-step")
        # Lock-step gemms (back to back on every rank) fit gemm_efficiency under any form; the
        # interleaved ones, gemm_efficiency_after_comm.
        if row_form != chosen and not (op == "gemm" and row_form == "lock-step"):
            continue
        try:
            if op == "gemm":
                m, k, n = (_field(row, key, where) for key in ("m", "k", "n"))
                gemms.append(GemmSample(m, k, n, _field(row, "dtype", where), _field(row, "time_s", where),
                                        concurrent=_field(row, "concurrent", where),
                                        after_comm=row_form == "interleaved",
                                        source=f"{path}: gemm {m}x{k}x{n} x{row['concurrent']} {row_form}"))
                continue
            ranks, nbytes = _field(row, "ranks", where), _field(row, "bytes", where)
            collectives.append(CollectiveSample(op, ranks, nbytes, _field(row, "time_s", where),
                                                source=f"{path}: {op} {ranks} ranks {nbytes} B {row_form}"))
        except InputError as error:
            raise InputError(f"{where}: {error}") from None
    if not collectives and not gemms:
        raise InputError(f"{path}: the bench record has no rows")
    return collectives, gemms
