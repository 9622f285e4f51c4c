"""experiments.sustained_gemm: one JSON record of a shape run back to back, and its refusal of bad arguments."""

from __future__ import annotations

import json

import pytest

from experiments.sustained_gemm import cli

pytest.importorskip("torch")


def test_a_short_cpu_run_reports_both_windows(capsys):
    assert cli(["--size", "64", "--dtype", "float32", "--seconds", "1.1", "--fill", "zeros"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["shape"] == [64, 64, 64] and record["fill"] == "zeros" and record["device"] == "cpu"
    assert record["gemms"] >= 16 and record["first_tflops"] > 0 and record["sustained_tflops"] > 0


@pytest.mark.parametrize("args", [["--seconds", "1"], ["--size", "0"], ["--fill", "ones"]])
def test_bad_arguments_are_refused_with_status_2(args, capsys):
    with pytest.raises(SystemExit) as stop:
        cli(args)
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err
