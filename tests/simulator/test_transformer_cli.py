"""The transformer on the command line: its sizes, --model presets, --layers, and the errors for bad mixes."""

from __future__ import annotations

import json

import pytest

from simulator.ir.serialize import save_schedule
from simulator.algorithms.registry import build_schedule
from simulator.workloads.models import preset
from simulator.workloads.workload import Workload
from tests.cli_run import run

BLOCK = ("--workload", "transformer", "--batch", "4", "--seq", "3", "--hidden", "12", "--heads", "6")


@pytest.mark.parametrize("algo, grid", [("1d", ("--gpus", "3")), ("1d-sp", ("--gpus", "2")), ("2d", ("--gpus", "4")),
                                        ("summa25d", ("--grid", "2,2,2")), ("cannon25d", ("--grid", "2,2,2"))])
def test_verify_passes_for_every_algorithm(capsys, algo, grid):
    status, out, err = run(capsys, "verify", "--algo", algo, *grid, *BLOCK, "--ffn", "36", "--dropout", "0.1")
    assert status == 0 and err == "" and "FAIL" not in out and "dWqkv" in out


def test_a_model_preset_fills_the_sizes_and_given_sizes_override_it(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", "--model", "gpt3-125m", "--batch", "1",
                         "--seq", "16", "--pass", "fwd", "--json")
    assert status == 0
    workload = json.loads(out)["workload"]
    model = preset("gpt3-125m")
    assert workload == {"name": "transformer", "batch": 1, "seq": 16, "hidden": model.hidden, "heads": model.heads,
                        "ffn": model.ffn, "dropout": model.dropout}


@pytest.mark.parametrize("argv, message", [
    (("--workload", "mlp", "--m", "8", "--hidden", "4", "--heads", "2"), "--heads not for --workload mlp"),
    (("--workload", "transformer", "--batch", "2", "--seq", "4", "--hidden", "8"), "needs --heads"),
    (("--model", "gpt3-13", "--batch", "2"), "closest: gpt3-13b"),
    (("--model", "gpt3-125m", "--workload", "mlp", "--batch", "2"), "is a transformer; drop --workload mlp"),
    (("--workload", "gemm", "--m", "2", "--k", "2", "--n", "2", "--layers", "3"), "--layers counts transformer"),
    (BLOCK + ("--layers", "0"), "--layers must be >= 1"),
    (("--workload", "transformer", "--batch", "2", "--seq", "4", "--hidden", "10", "--heads", "4"),
     "hidden=10 must be divisible by heads=4"),
    (BLOCK + ("--dropout", "1.0"), "dropout must be a probability in [0, 1)"),
])
def test_bad_sizes_are_one_line_and_exit_2(capsys, argv, message):
    status, out, err = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", *argv)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_sizes_an_algorithm_cannot_split_name_the_constraint(capsys):
    status, _, err = run(capsys, "verify", "--algo", "summa25d", "--grid", "2,2,2", *BLOCK[:3], "2", *BLOCK[4:])
    assert status == 2 and "batch=2 must be divisible by d*q = 4" in err
    status, _, err = run(capsys, "verify", "--algo", "1d", "--gpus", "4", *BLOCK)
    assert status == 2 and "heads=6 must be divisible by p = 4" in err


def test_predict_reports_the_model_as_layers_times_one_block(capsys):
    argv = ("predict", "--gpus", "4", "--topology", "dgx-a100", "--workload", "transformer", "--batch", "4",
            "--seq", "3", "--hidden", "16", "--heads", "4", "--layers", "24", "--no-prune")
    status, out, _ = run(capsys, *argv, "--json")
    rows = json.loads(out)
    ok = [row for row in rows if row["status"] == "ok"]
    assert status == 0 and {row["algorithm"] for row in ok} == {"1d", "1d-sp", "2d", "cannon25d", "summa25d"}
    assert all(row["layers"] == 24 and row["model_time_s"] == pytest.approx(24 * row["time_s"]) for row in ok)
    status, out, _ = run(capsys, *argv)
    assert status == 0 and "model: 24 identical blocks" in out and out.splitlines()[1].rstrip().endswith("model")


def test_layers_with_a_schedule_file_must_name_a_transformer(capsys, tmp_path):
    path = tmp_path / "gemm.json"
    save_schedule(build_schedule("1d", Workload.gemm(4, 4, 4), "fwd", gpus=2), path)
    status, _, err = run(capsys, "simulate", "--schedule", str(path), "--topology", "dgx-a100", "--layers", "2")
    assert status == 2 and "--layers 2: counts the blocks of a transformer schedule" in err


def test_simulate_reports_the_model_as_layers_times_the_block(capsys):
    argv = ("simulate", "--algo", "1d", "--gpus", "2", "--topology", "dgx-a100", *BLOCK, "--layers", "12")
    status, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    assert status == 0 and data["layers"] == 12 and data["model_time_s"] == pytest.approx(12 * data["makespan_s"])
    assert set(data["parts"]) == {"ln1", "qkv", "attn", "proj", "bda1", "ln2", "fc1", "bias_gelu", "fc2", "bda2"}
    status, out, _ = run(capsys, *argv)
    assert status == 0 and "model           12 blocks:" in out
