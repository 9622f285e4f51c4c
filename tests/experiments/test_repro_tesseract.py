"""experiments.repro_tesseract: the --quick form CI runs, its CSV and PNG, and the rows' content."""

import csv

from experiments import repro_tesseract


def test_quick_run_writes_csv_and_png_with_commands_that_reproduce(tmp_path, capsys):
    out_csv, out_png = tmp_path / "t.csv", tmp_path / "t.png"
    repro_tesseract.cli(["--quick", "--csv", str(out_csv), "--png", str(out_png)])
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["claim"] for r in rows] == ["strong scaling over 1-D", "strong scaling over 2-D"]
    assert [float(r["published"]) for r in rows] == [1.38, 1.53]
    for r in rows:
        assert abs(float(r["ratio"]) - float(r["predicted"]) / float(r["published"])) < 5e-4
        assert r["commands"].count("tpsim simulate") == 2 and "--topology a100-4gpu:16" in r["commands"]
        assert "without it as the paper's code ran" in r["explanation"]
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "of 2 within 15%" in capsys.readouterr().out


def test_paper_code_is_faster_and_only_touches_tesseract():
    faithful = {r.claim: r for r in repro_tesseract.comparisons(quick=True)}
    paper = {r.claim: r for r in repro_tesseract.comparisons(quick=True, paper_code=True)}
    for claim, row in faithful.items():
        assert paper[claim].predicted > row.predicted
        assert paper[claim].configuration.endswith("(paper code)")
        assert paper[claim].commands == row.commands
