"""experiments.published: the comparison rows, their CSV and PNG, and running tpsim in-process."""

import csv

import pytest

from experiments.published import Comparison, tpsim_json, within, write_csv, write_png


def _row(published: float, predicted: float) -> Comparison:
    return Comparison(paper="P", claim="c", configuration="64 GPUs", published=published, predicted=predicted,
                      unit="x", source="s", explanation="e", commands=("tpsim a", "tpsim b"))


def test_ratio_and_verdict_use_the_15_percent_bar():
    assert _row(1.45, 1.45).reproduced
    assert _row(2.0, 1.71).ratio == pytest.approx(0.855)
    assert not _row(2.0, 1.69).reproduced
    assert within(1.15) and not within(1.1501)


def test_csv_has_every_field_ratio_and_commands(tmp_path):
    path = tmp_path / "out.csv"
    write_csv([_row(1.5, 1.2), _row(2.0, 2.1)], str(path))
    rows = list(csv.DictReader(path.open()))
    assert [r["ratio"] for r in rows] == ["0.800", "1.050"]
    assert [r["reproduced"] for r in rows] == ["no", "yes"]
    assert rows[0]["commands"] == "tpsim a ; tpsim b"
    assert not (tmp_path / "out.csv.tmp").exists()


def test_png_is_written(tmp_path):
    path = tmp_path / "out.png"
    write_png([_row(1.5, 1.2), _row(2.0, 2.1)], str(path), "title")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tpsim_json_returns_the_parsed_output_and_exits_on_error():
    out = tpsim_json(["collective", "--op", "all_reduce", "--ranks", "8", "--bytes", "1MiB", "--topology",
                      "dgx-a100"])
    assert out
    with pytest.raises(SystemExit):
        tpsim_json(["collective", "--op", "all_reduce", "--ranks", "64", "--bytes", "1MiB", "--topology",
                    "dgx-a100"])
