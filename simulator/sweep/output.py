"""Where a sweep's rows go: a CSV file written row by row, or Parquet converted from it at the end.

``--out FILE.csv`` is the row-by-row file itself (``journal.Journal``). ``--out FILE.parquet`` keeps
its rows in ``FILE.parquet.partial.csv`` while the sweep runs (a half-run sweep resumes from it) and
converts them once every plan is done (``pyarrow.csv`` infers each column's type; empty cells are
nulls), then removes the partial file. Parquet needs pyarrow, checked before any work: without it
``--out FILE.parquet`` is one line saying so.
"""

from __future__ import annotations

import os

from simulator.errors import InputError
from simulator.files import replacing

__all__ = ["journal_path", "check_format", "write_parquet", "parquet_done"]

SUFFIXES = (".csv", ".parquet")


def check_format(out: str) -> str:
    """``"csv"`` or ``"parquet"`` by ``out``'s suffix; an InputError for another suffix, or Parquet without pyarrow."""
    suffix = os.path.splitext(out)[1].lower()
    if suffix not in SUFFIXES:
        raise InputError(f"--out {out}: write a .csv or a .parquet file")
    if suffix == ".parquet":
        try:
            import pyarrow.csv  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise InputError(f"--out {out}: Parquet needs pyarrow, which is not installed (pip install pyarrow); "
                             f"or write a .csv") from None
    return suffix[1:]


def journal_path(out: str) -> str:
    """The CSV a sweep appends its rows to: ``out`` itself, or ``out.partial.csv`` for Parquet."""
    return out if check_format(out) == "csv" else out + ".partial.csv"



def write_parquet(csv_path: str, out: str) -> None:
    """Convert the finished CSV at ``csv_path`` to Parquet at ``out`` (atomically), then remove the CSV."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    # The input cells are as the spec gave them (a topology "dgx-a100:2", a batch 64): typed by inference,
    # as the result columns are, except that status, reason and grid ("2x2x1", "1") stay text.
    options = pcsv.ConvertOptions(column_types={c: "string" for c in ("status", "reason", "grid", "spec")},
                                  strings_can_be_null=True)
    table = pcsv.read_csv(csv_path, convert_options=options)
    with replacing(out) as tmp:
        pq.write_table(table, tmp)
    os.remove(csv_path)


def parquet_done(out: str, digest: str, plans: int) -> bool | None:
    """Whether ``out`` is this sweep's finished Parquet file (None: there is none); an InputError if it
    is another sweep's."""
    if not os.path.exists(out):
        return None
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(out, columns=["spec"])
    except Exception as error:  # pyarrow raises its own kinds for a file that is not Parquet
        raise InputError(f"{out}: not a Parquet file of a tpsim sweep ({error}); give --out another file, or "
                         f"--overwrite") from None
    if set(table.column("spec").to_pylist()) != {digest} or table.num_rows != plans:
        raise InputError(f"{out} holds another sweep's rows; give --out another file, or --overwrite to start "
                         f"this sweep afresh there")
    return True
