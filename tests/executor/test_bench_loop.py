"""The whole CPU loop, tiny: tpsim bench -> calibrate -> run -> compare completes and reports a finite error.

No accuracy is asserted: timings on a shared 2-core machine are not a test's business (the accuracy
over repeated runs is ``experiments/cpu_loop.py``'s, and docs/calibrate.md's).
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("scipy")  # the calibration fitter's solver

from simulator.cli import main  # noqa: E402

SCHEDULE = ["--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64",
            "--dtype", "float32"]  # the dtype bench measures by default


def test_bench_calibrate_run_compare(tmp_path, capsys):
    bench, calibrated, measured = tmp_path / "bench.json", tmp_path / "cal.yaml", tmp_path / "measured.json"
    assert main(["bench", "--nproc", "4", "--ops", "broadcast,reduce,gemm", "--group-sizes", "2",
                 "--sizes", "16KiB,64KiB", "--warmup", "1", "--iters", "2", "--gemm-shapes", "32x32x32",
                 "--out", str(bench)]) == 0
    assert main(["calibrate", "--from-bench", str(bench), "--topology", "loopback:4", "--protocol", "simple",
                 "--no-holdout", "-o", str(calibrated)]) == 0
    assert main(["run", *SCHEDULE, "--nproc", "4", "--warmup", "1", "--iters", "2", "--out", str(measured)]) == 0
    capsys.readouterr()
    assert main(["compare", str(measured), "--topology", str(calibrated), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["measured_s"] > 0 and data["predicted_s"] > 0 and math.isfinite(data["rel_error"])
    assert {c["class"] for c in data["classes"]} == {"gemm", "broadcast", "reduce"}
    assert main(["compare", str(measured), "--topology", str(calibrated)]) == 0
    assert "end to end" in capsys.readouterr().out
