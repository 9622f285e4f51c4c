"""experiments.repro_training: the --quick form CI runs, the per-layer rows held to the 8% bar, its outputs' place."""

import csv

import pytest

from experiments import repro_training


def test_quick_run_writes_table_4_to_the_given_files(tmp_path, capsys):
    out_csv, out_png = tmp_path / "t.csv", tmp_path / "t.png"
    repro_training.cli(["--quick", "--csv", str(out_csv), "--png", str(out_png)])
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 10 and {r["source"] for r in rows} == {"arXiv 2205.05198, Table 4"}
    assert [float(r["published"]) for r in rows[:2]] == [7.7, 11.9]
    assert "tpsim simulate --algo 1d --gpus 8 --topology dgx-a100-80gb --model megatron-22b" in rows[0]["commands"]
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert "geomean error" in capsys.readouterr().out


def test_quick_run_without_paths_never_writes_over_the_committed_outputs(capsys):
    repro_training.cli(["--quick"])
    out = capsys.readouterr().out
    assert "wrote experiments/out/" not in out and "repro_training-" in out


@pytest.mark.parametrize("setup", ["no recomputation", "full recomputation", "selective recomputation"])
def test_one_d_layer_rows_are_within_the_per_layer_bar(setup):
    """The backward without Megatron-LM's overlap within the 8% bar (the forward: the next test)."""
    row = next(r for r in repro_training.LAYER_ROWS if r.setup == setup)
    _, blocking, _, blocking_comm = repro_training.layer_time(row.algorithm, row.recompute, async_dgrad=False)
    assert blocking == pytest.approx(row.backward_ms, rel=repro_training.PER_LAYER_TARGET)
    # Hiding all of the exposed communication would put the backward well below the published time.
    assert blocking - blocking_comm < row.backward_ms


@pytest.mark.xfail(strict=True, reason="since LayerNorm runs as apex's fused kernel (2 passes, not 3) the 1-D "
                   "forward is 7.07 ms against 7.7 published, -8.2%: just past the 8% bar, by the GEMM rate that "
                   "is the table's known remaining error (experiments/README.md); nothing tuned back. Strict: "
                   "should a change bring it within the bar again, this says so")
def test_the_one_d_forward_is_within_the_per_layer_bar():
    row = next(r for r in repro_training.LAYER_ROWS if r.setup == "no recomputation")
    fwd, _, _, _ = repro_training.layer_time(row.algorithm, row.recompute)
    assert fwd == pytest.approx(row.forward_ms, rel=repro_training.PER_LAYER_TARGET)


@pytest.mark.parametrize("setup", [row.setup for row in repro_training.LAYER_ROWS])
def test_with_megatrons_overlap_the_backward_rows_fall_below_the_published_time(setup):
    """With the overlap (Megatron-LM's default, and tpsim's) every backward is 4-12% faster than published: the
    finding experiments/README.md reports (the overlap hides more than the real run's). Should a change move a row
    out of that band, this test says so."""
    row = next(r for r in repro_training.LAYER_ROWS if r.setup == setup)
    _, bwd, _, _ = repro_training.layer_time(row.algorithm, row.recompute)
    _, blocking, _, _ = repro_training.layer_time(row.algorithm, row.recompute, async_dgrad=False)
    assert bwd < blocking < row.backward_ms * (1 + repro_training.PER_LAYER_TARGET)
    assert row.backward_ms * 0.87 < bwd < row.backward_ms * 0.96


def test_recomputation_adds_what_it_recomputes():
    fwd, bwd, _, _ = repro_training.layer_time("1d", "none")
    _, full, _, _ = repro_training.layer_time("1d", "full")
    _, selective, _, _ = repro_training.layer_time("1d", "selective")
    assert full == pytest.approx(bwd + fwd)
    assert bwd < selective < full
