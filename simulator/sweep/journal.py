"""The sweep's CSV file, written a row at a time so that a killed sweep resumes where it stopped.

The file starts with the header line. Each finished plan is appended as one complete line in a
single ``write`` on a descriptor opened with ``O_APPEND``, then ``fsync``-ed: after a kill, power cut
or crash the file holds whole rows and at most one partial last line. Opening an existing file
(``Journal.open``) drops such a partial line, checks the header and that every row carries this
sweep's spec hash (the ``spec`` column), and returns the plan numbers already done; a file of another
sweep is refused rather than mixed. Rows are appended in the order plans finish; ``finish`` rewrites
the file sorted by plan number (atomically), so a complete sweep's file is the same bytes however it
was run, interrupted or not, on whichever executor. Cells never hold a line break (reasons are one
line), so one line is one row.
"""

from __future__ import annotations

import csv
import io
import os

from simulator.errors import InputError
from simulator.files import read_text, replacing

__all__ = ["Journal"]


def _line(cells: list) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["" if c is None else c for c in cells])
    return buffer.getvalue()


class Journal:
    """The append-only CSV of one sweep at ``path`` with ``columns`` (``plan`` first, ``spec`` last)."""

    def __init__(self, path: str, columns: tuple[str, ...], digest: str):
        self.path, self.columns, self.digest = path, tuple(columns), digest
        self._fd: int | None = None

    def open(self, fresh: bool = False) -> set[int]:
        """Create the file (or, with ``fresh``, replace it) or resume it; the plan numbers already in it."""
        done = None if fresh or not os.path.exists(self.path) else self._resume()
        if done is None:  # nothing to keep: a new file with its header
            with replacing(self.path) as tmp, open(tmp, "w") as handle:
                handle.write(_line(list(self.columns)))
                handle.flush()
                os.fsync(handle.fileno())
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return done or set()

    def _resume(self) -> set[int] | None:
        """The plans done in the existing file, after dropping a partial last line; None when it holds not
        even the header (a sweep killed as it created the file: start afresh)."""
        text = read_text(self.path, "sweep output", limit=1 << 40)
        whole = text[:text.rfind("\n") + 1]
        other = (f"{self.path} holds another sweep's rows; give --out another file, or --overwrite to start "
                 f"this sweep afresh there")
        if not whole:
            if _line(list(self.columns)).startswith(text):
                return None
            raise InputError(f"{other} (it is not a tpsim sweep's CSV)")
        if whole != text:  # a row cut short by a kill: it is run again
            with open(self.path, "r+b") as handle:
                handle.truncate(len(whole.encode()))
                os.fsync(handle.fileno())
        rows = list(csv.reader(io.StringIO(whole)))
        if tuple(rows[0]) != self.columns:
            raise InputError(f"{other} (its columns differ)")
        done = set()
        for number, row in enumerate(rows[1:], 2):
            if len(row) != len(self.columns) or not row[0].isdigit():
                raise InputError(f"{self.path} line {number}: not a row of a tpsim sweep; give --out another "
                                 f"file, or --overwrite")
            if row[-1] != self.digest:
                raise InputError(f"{other} (spec hash {row[-1]}, this spec's {self.digest})")
            done.add(int(row[0]))
        return done

    def append(self, cells: list) -> None:
        """Append one row, whole, and make it durable before returning."""
        data = _line(cells).encode()
        written = os.write(self._fd, data)
        while written < len(data):  # a short write (a signal, a full pipe): finish the same line
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (rows already appended stay)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self) -> list[list[str]]:
        """Close, rewrite the file sorted by plan number, and return its rows (without the header)."""
        self.close()
        with open(self.path, newline="") as handle:
            rows = list(csv.reader(handle))[1:]
        rows.sort(key=lambda row: int(row[0]))
        with replacing(self.path) as tmp, open(tmp, "w") as handle:
            handle.write(_line(list(self.columns)) + "".join(_line(row) for row in rows))
            handle.flush()
            os.fsync(handle.fileno())
        return rows
