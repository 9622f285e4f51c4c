"""experiments.gpu_check: its CPU smoke run (gloo, small shapes) and its one-line refusal without a GPU."""

from __future__ import annotations

import pytest

from experiments.gpu_check import QUICK_SHAPES, _cuda_device, main
from simulator.compute import ComputeModel
from topologies.devices import DEVICES


def test_the_cpu_smoke_run_writes_every_step_and_the_summary(tmp_path, capsys):
    assert main(["--backend", "gloo", "--quick", "--out", str(tmp_path)]) == 0
    for name in ("gemm_bfloat16.json", "gemm_float32.json", "calibrated_bfloat16.yaml", "calibrated_float32.yaml",
                 "run.json", "pytest_gpu.txt"):
        assert (tmp_path / name).stat().st_size > 0, name
    summary = (tmp_path / "summary.md").read_text()
    for shape in QUICK_SHAPES:
        for dtype in ("bfloat16", "float32"):
            assert f"| {shape} | {dtype} |" in summary
    # bfloat16's base cap is the H200's published achievable rate over its peak (normalised by its shape);
    # float32 has no published figure and falls back to 0.7.
    h200 = DEVICES["H200-SXM-141GB"].as_dict()
    assert f"- bfloat16: gemm_efficiency {ComputeModel().cap(h200, 'bfloat16'):.4g} -> " in summary
    assert "- float32: gemm_efficiency 0.7 -> " in summary
    assert "(gloo): correct" in summary
    for fill in ("randn", "zeros"):  # the sustained runs, one per operand fill, and the preset's modelled rate
        assert (tmp_path / f"sustained_{fill}.json").stat().st_size > 0
        assert f"| 128x128x128 | float32 | {fill} |" in summary
    assert "dgx-h200's compute model at this shape: " in summary
    assert "$ tpsim bench --backend gloo --nproc 1 --ops gemm" in capsys.readouterr().out


def test_nccl_without_a_gpu_is_refused_in_one_line(tmp_path, capsys):
    if _cuda_device() is not None:
        pytest.skip("a CUDA GPU is visible: the refusal is for machines without one")
    assert main(["--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a CUDA GPU" in err[0] and "--backend gloo --quick" in err[0]
    assert not (tmp_path / "never").exists()
