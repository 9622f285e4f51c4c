"""The sweep's row-by-row CSV: cut anywhere, reopened, completed, it is the file of an uncut run."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import InputError
from simulator.sweep.journal import Journal

COLUMNS = ("plan", "topology", "status", "reason", "step_time_s", "spec")


def row(i: int) -> list:
    # Cells that need quoting (a comma, a quote) and empty ones, as real rows have.
    return [i, f"dgx-a100:{i % 3 + 1}", "refused" if i % 4 == 0 else "ok",
            f'--tp-sizes "3,{i}": no' if i % 4 == 0 else None, None if i % 4 == 0 else 0.1 * i + 1e-17, "abc123"]


def journal_of(path, order) -> bytes:
    j = Journal(str(path), COLUMNS, "abc123")
    assert j.open() == set()
    for i in order:
        j.append(row(i))
    j.finish()
    return path.read_bytes()


@settings(max_examples=20, deadline=None)
@given(order=st.permutations(range(9)), cut=st.floats(0, 1))
def test_a_file_cut_anywhere_resumes_to_the_uncut_file(tmp_path_factory, order, cut):
    folder = tmp_path_factory.mktemp("journal")
    whole = journal_of(folder / "whole.csv", range(9))
    path = folder / "cut.csv"
    j = Journal(str(path), COLUMNS, "abc123")
    j.open()
    for i in order:
        j.append(row(i))
    j.close()  # killed before finish: rows in finishing order
    data = path.read_bytes()
    path.write_bytes(data[:int(cut * len(data))])
    kept = list(csv.reader(io.StringIO(data[:int(cut * len(data))].decode())))
    complete = data[:int(cut * len(data))].count(b"\n")  # whole lines survive, the header first
    j = Journal(str(path), COLUMNS, "abc123")
    done = j.open()
    assert done == {int(r[0]) for r in kept[1:complete]}
    assert path.read_bytes().endswith(b"\n")  # a partial last line is gone
    for i in order:
        if i not in done:
            j.append(row(i))
    j.finish()
    assert path.read_bytes() == whole


def test_rows_of_another_spec_are_refused(tmp_path):
    path = tmp_path / "rows.csv"
    journal_of(path, [1, 0])
    with pytest.raises(InputError, match=r"holds another sweep's rows; .* \(spec hash abc123, this spec's ffffff\)"):
        Journal(str(path), COLUMNS, "ffffff").open()
    with pytest.raises(InputError, match=r"\(its columns differ\)"):
        Journal(str(path), COLUMNS[:-2] + ("spec",), "abc123").open()
    path.write_text(",".join(COLUMNS) + "\nx,1,2,3,4,abc123\n")
    with pytest.raises(InputError, match=r"line 2: not a row of a tpsim sweep"):
        Journal(str(path), COLUMNS, "abc123").open()
