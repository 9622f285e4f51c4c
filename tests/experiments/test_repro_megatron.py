"""experiments.repro_megatron: the --quick form CI runs, the efficiency's definition, the paper baseline."""

import csv

import pytest

from experiments import repro_megatron


def test_quick_run_writes_the_baseline_and_the_two_gpu_point(tmp_path, capsys):
    out_csv, out_png = tmp_path / "m.csv", tmp_path / "m.png"
    repro_megatron.cli(["--quick", "--csv", str(out_csv), "--png", str(out_png)])
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["claim"] for r in rows] == ["1.2B on one GPU, TFLOP/s", "model-parallel weak scaling, 2 GPUs"]
    assert [float(r["published"]) for r in rows] == [39.0, 0.95]
    assert "--topology dgx-2h " in rows[1]["commands"] and "--tp-sizes 2 --algos 1d" in rows[1]["commands"]
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert "of 2 within 15%" in capsys.readouterr().out


def test_efficiency_is_flops_per_gpu_against_one_gpu():
    assert repro_megatron.efficiency(1, 1) == 1.0
    one, two = repro_megatron._step(1, 1), repro_megatron._step(2, 1)
    expected = repro_megatron.tflops_per_gpu(two) / repro_megatron.tflops_per_gpu(one)
    assert repro_megatron.efficiency(2, 1) == expected and 0.5 < expected < 1.0


def test_paper_baseline_sustains_the_published_rate_and_lifts_efficiency():
    slow = repro_megatron._step(1, 1, slow=True)
    assert repro_megatron.tflops_per_gpu(slow) == pytest.approx(39.0, rel=2e-3)
    assert 0.3 < repro_megatron.paper_gemm_efficiency() < 0.7
    assert repro_megatron.efficiency(2, 1, slow=True) > repro_megatron.efficiency(2, 1)
