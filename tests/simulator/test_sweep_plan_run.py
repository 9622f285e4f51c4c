"""One sweep plan through predict's command line: each status, from real predict runs on small cases."""

from __future__ import annotations

import json

import pytest

from simulator.sweep.plan_run import RESULT_FIELDS, run_plan
from tests.cli_run import run

BASE = ["--topology", "dgx-a100:1", "--model", "gpt3-125m", "--global-batch", "8"]


def test_ok_is_predicts_launch_row(capsys):
    argv = ["--gpus", "2", *BASE, "--tp-sizes", "1,2", "--simulate-top", "1"]
    row = run_plan(argv)
    status, out, _ = run(capsys, "predict", *argv, "--json")
    launched = next(r for r in json.loads(out) if r["simulated"] and r["fits"])
    assert status == 0 and set(row) == set(RESULT_FIELDS)
    assert (row["status"], row["reason"], row["step_model"]) == ("ok", None, "simulated")
    assert (row["arrangement"], row["step_time_s"], row["tokens_per_s"], row["peak_bytes"]) == (
        launched["arrangement"], launched["step_time_s"], launched["tokens_per_s"], launched["memory"]["peak_bytes"])
    assert row["grid"] == "x".join(map(str, launched["grid"]))


@pytest.mark.parametrize("argv, status, reason", [
    (["--gpus", "2", *BASE, "--simulate-top", "0"], "bound", "no fitting arrangement simulated (simulate-top 0)"),
    (["--gpus", "2", *BASE[:2], "--model", "gpt3-1.3b", "--global-batch", "8", "--batch", "4", "--tp-sizes", "1",
      "--pp-sizes", "1", "--zero", "0", "--recompute", "none"], "no-fit", "no arrangement fits in memory"),
    (["--gpus", "8", *BASE, "--tp-sizes", "8", "--algos", "1d"], "none",
     "no arrangement applies: 1d on 8 GPUs: heads=12 must be divisible by p = 8"),
    (["--gpus", "16", *BASE], "refused",
     "--gpus 16: the topology dgx-a100:1 has only 8 GPUs (world size 16 needs 16 GPUs)"),
    (["--gpus", "4", *BASE, "--tp-sizes", "3"], "refused", "--tp-sizes '3': 3 does not divide --gpus 4"),
])
def test_each_status_and_its_reason(argv, status, reason):
    row = run_plan(argv)
    assert row["status"] == status and row["reason"].startswith(reason), row
    if status in ("bound", "no-fit"):
        assert row["arrangement"] == "data parallel dp=2" and row["step_model"] == "bound"
        assert row["fits"] is (status == "bound")
    else:
        assert row["arrangement"] is None and row["step_time_s"] is None


def test_a_plan_prints_nothing(capsys):
    run_plan(["--gpus", "16", *BASE])
    run_plan(["--gpus", "2", *BASE, "--simulate-top", "0"])
    assert capsys.readouterr() == ("", "")
