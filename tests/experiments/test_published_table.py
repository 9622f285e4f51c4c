"""experiments.published_table: docs/published.md's table is the committed CSVs' table, and drift is caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from experiments import published_table
from experiments.published_table import BEGIN, END, main, table

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "published.md"
CSVS = ROOT / "experiments" / "out"


def _run(args: list[str], capsys) -> tuple[int, str]:
    status = main([*args, "--csv-dir", str(CSVS)])
    captured = capsys.readouterr()
    return status, (captured.out + captured.err).strip()


def test_docs_published_md_holds_the_table_the_committed_csvs_give(capsys):
    status, message = _run(["--check", str(DOC)], capsys)
    assert status == 0, message  # stale: python -m experiments.published_table --write docs/published.md


def test_a_changed_figure_fails_the_check_naming_its_line(tmp_path, capsys):
    stale = tmp_path / "published.md"
    stale.write_text(DOC.read_text().replace("| 9 of 10 |", "| 10 of 10 |", 1))
    status, message = _run(["--check", str(stale)], capsys)
    assert status == 1 and len(message.splitlines()) == 1
    assert "Narayanan et al. 2021" in message and "| 10 of 10 |" in message and "| 9 of 10 |" in message


def test_a_missing_line_fails_the_check(tmp_path, capsys):
    short = tmp_path / "published.md"
    short.write_text("\n".join(t for t in DOC.read_text().splitlines() if not t.startswith("| torchtitan |")))
    status, message = _run(["--check", str(short)], capsys)
    assert status == 1 and "torchtitan" in message


def test_write_replaces_only_the_table_between_the_markers(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(f"before\n{BEGIN}\n| old | table |\n{END}\nafter\n")
    assert _run(["--write", str(page)], capsys)[0] == 0
    assert page.read_text() == "\n".join(["before", BEGIN, *table(str(CSVS)), END, "after"]) + "\n"
    assert _run(["--check", str(page)], capsys)[0] == 0


def test_every_row_of_each_csv_is_in_exactly_one_line_or_left_out_with_its_reason(tmp_path, capsys):
    for name in {line.csv for line in published_table.LINES} | {published_table.PAPER_CODE}:
        shutil.copy(CSVS / name, tmp_path / name)
    with open(tmp_path / "repro_3d.csv", "a") as handle:
        handle.write("3-D tensor parallelism,over 3-D,64 GPUs,1.0,1.0,x,s,e,c,1.000,yes\n")
    assert main(["--csv-dir", str(tmp_path)]) == 1
    message = capsys.readouterr().err
    assert "repro_3d.csv: row 4" in message and "over 3-D" in message and "in no line" in message


def test_companion_figures_print_in_parentheses_only_where_they_differ():
    lines = {t.split(" | ")[1]: t for t in table(str(CSVS)) if t.startswith("| Tesseract |")}
    assert "(paper code " in lines["strong scaling over 1-D"]  # the first parenthesis says what it is
    assert "(paper code" not in lines["strong scaling over 2-D"] and "(" in lines["strong scaling over 2-D"]
    assert "(" not in lines["weak-scaling inference over 2-D"]  # the same timing with and without the depth all-reduce


@pytest.mark.parametrize("text", ["no markers here\n", f"{END}\n| t |\n{BEGIN}\n"])
def test_a_file_without_the_markers_in_order_is_one_line_and_status_2(tmp_path, capsys, text):
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(SystemExit) as stop:
        main(["--check", str(page), "--csv-dir", str(CSVS)])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_doctest_of_the_range_format():
    assert published_table._range(["1.1", "94.42", "18.13"], published_table._seconds) == "1.10-94.4"
    assert published_table._range(["2.0", "2.0"], published_table._two) == "2.00"


@pytest.mark.parametrize("shape, rows, match", [("ranges", 1, "not 'ranges'"), ("joined", 5, "2-4 rows, not 5"),
                                                ("one", 2, "1 row, not 2")])
def test_a_line_of_an_unknown_shape_or_row_count_is_refused(shape, rows, match):
    with pytest.raises(ValueError, match=match):
        published_table.Line("P", "c", "x.csv", {"claim": "c"}, shape, rows)
