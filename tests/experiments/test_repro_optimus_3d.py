"""experiments.repro_optimus and repro_3d: the --quick forms CI runs, and the sensitivity notes."""

import csv

import pytest

from experiments import repro_3d, repro_optimus
from experiments.speedup import speedup


@pytest.mark.parametrize("script, published, topology", [
    (repro_optimus, [1.48, 1.78], "--topology rtx5000-4gpu:16"),
    (repro_3d, [2.32, 1.57], "--topology v100-4gpu:16"),
])
def test_quick_run_writes_both_claims_with_their_commands(script, published, topology, tmp_path):
    out_csv, out_png = tmp_path / "r.csv", tmp_path / "r.png"
    script.cli(["--quick", "--csv", str(out_csv), "--png", str(out_png)])
    rows = list(csv.DictReader(out_csv.open()))
    assert [float(r["published"]) for r in rows] == published
    assert all(r["commands"].count("tpsim simulate") == 2 and topology in r["commands"] for r in rows)
    assert all("Other sizes" not in r["explanation"] for r in rows)  # --quick skips them
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_predicted_is_the_time_ratio_and_the_full_form_names_other_sizes():
    row = repro_3d.comparisons()[1]
    assert row.predicted == speedup(repro_3d.CONFIG, repro_3d.CUBE, repro_3d.OPTIMUS)
    assert row.explanation.count("b=") == 3 and "b=128, h=4096" in row.explanation
