"""`tpsim predict --global-batch`: the whole-model plan, its table, JSON, launch line, plot and bad input."""

from __future__ import annotations

import json

import pytest

from simulator.training.arrangement import tp_sizes_of
from tests.cli_run import run

SMALL = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
         "--hidden", "512", "--heads", "8", "--layers", "4", "--global-batch", "32")
GEMM = ("predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64")


def test_json_rows_carry_the_plan_and_the_memory_breakdown(capsys):
    status, out, err = run(capsys, *SMALL, "--json", "--simulate-top", "2")
    assert status == 0, err
    rows = json.loads(out)
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and all(r["tp"] * r["pp"] * r["dp"] == 16 for r in rows)
    assert {r["pp"] for r in ok} == {1, 2, 4}  # every divisor of 16 that divides the 4 layers
    keys = {"arrangement", "algorithm", "grid", "tp", "dp", "micro_batch", "step_time_s", "tokens_per_s", "mfu",
            "compute_s", "tp_comm_s", "dp_comm_s", "memory", "fits", "model", "bound_step_time_s"}
    assert keys <= set(ok[0])
    assert set(ok[0]["memory"]) >= {"params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                                    "workspace_bytes", "peak_bytes"}
    fitting = [r for r in ok if r["fits"]]
    assert [r["model"] for r in fitting].count("simulated") == 2  # the two best bounds among the fitting rows
    best_bounds = sorted(r["bound_step_time_s"] for r in fitting)[:2]
    assert sorted(r["bound_step_time_s"] for r in fitting if r["simulated"]) == best_bounds
    assert [r["step_time_s"] for r in fitting] == sorted(r["step_time_s"] for r in fitting)
    assert all(r["model"] == "bound" for r in ok if not r["fits"])
    assert all(r["step_time_s"] >= r["bound_step_time_s"] * (1 - 1e-9) for r in ok)
    for r in ok:
        parts = r["compute_s"] + r["tp_comm_s"] + r["bubble_s"] + r["pp_comm_s"] + r["dp_comm_s"]
        assert parts == pytest.approx(r["step_time_s"], rel=1e-9)
        assert r["tokens_per_s"] == pytest.approx(32 * 256 / r["step_time_s"])
        assert 32 % (r["micro_batch"] * r["dp"]) == 0
    assert "data parallel dp=16" in [r["arrangement"] for r in rows]


def test_the_table_ranks_fitting_rows_lists_the_others_and_prints_the_launch_line(capsys):
    status, out, err = run(capsys, *SMALL, "--algos", "1d,1d-sp,summa25d", "--tp-sizes", "1,2,8")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("tpsim predict: transformer") and "global batch 32" in lines[0]
    assert any("megatron-sp tp=8 x dp=2" in line for line in lines)
    assert any(line.strip().startswith("launch ") for line in lines)
    assert any("--tensor-model-parallel-size" in line for line in lines)


def test_nothing_fits_a_175b_model_on_8_gpus_and_the_rows_say_by_how_much(capsys):
    status, out, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-a100", "--model", "gpt3-175b",
                           "--global-batch", "8", "--batch", "1", "--algos", "1d", "--tp-sizes", "8", "--json")
    assert status == 0, err
    (row,) = json.loads(out)
    assert row["fits"] is False and row["memory"]["peak_bytes"] > row["device_memory_bytes"]
    assert row["simulated"] is False  # only fitting rows are simulated


def test_png_draws_the_plan(capsys, tmp_path):
    path = tmp_path / "plan.png"
    status, out, err = run(capsys, *SMALL, "--tp-sizes", "1,4", "--png", str(path))
    assert status == 0, err
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("extra, message", [
    (("--tp-sizes", "3"), "--tp-sizes '3': 3 does not divide --gpus 16"),
    (("--zero", "5"), "--zero 5"),
    (("--simulate-top", "-1"), "--simulate-top -1"),
    (("--pass", "fwd"), "a training step runs fwd+bwd"),
    (("--bucket-mb", "nan"), "--bucket-mb nan: a bucket size is a finite number of MB > 0"),
    (("--bucket-mb", "-1"), "--bucket-mb -1: a bucket size"),
])
def test_bad_training_flags_are_one_line_and_exit_2(capsys, extra, message):
    status, out, err = run(capsys, *SMALL, *extra)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("batch", ["0", "1048577", "99999999999999999999999"])
def test_a_global_batch_out_of_range_is_refused_before_any_work(capsys, batch):
    at = SMALL.index("--global-batch") + 1
    status, out, err = run(capsys, *SMALL[:at], batch, *SMALL[at + 1:])
    assert status == 2 and f"--global-batch {batch}: sequences per step must be from 1 to 1,048,576" in err


def test_training_flags_need_a_global_batch_and_a_transformer(capsys):
    status, _, err = run(capsys, *GEMM, "--zero", "1")
    assert status == 2 and "add --global-batch" in err
    status, _, err = run(capsys, *GEMM, "--global-batch", "8")
    assert status == 2 and "--global-batch plans a transformer" in err


def test_default_tp_sizes_stop_at_64():
    assert tp_sizes_of(1024) == (1, 2, 4, 8, 16, 32, 64)


def test_csv_rows_follow_the_json(capsys, tmp_path):
    path = tmp_path / "plan.csv"
    status, out, err = run(capsys, *SMALL, "--tp-sizes", "1,4", "--csv", str(path))
    assert status == 0, err
    import csv

    rows = list(csv.DictReader(path.open()))
    assert rows and set(rows[0]) == {"rank", "arrangement", "algorithm", "grid", "placement", "tp", "pp", "dp",
                                     "schedule", "virtual_stages", "zero", "recompute", "micro_batch",
                                     "micro_batches", "model",
                                     "step_time_s", "bound_step_time_s", "tokens_per_s", "mfu", "hfu", "tflops_per_gpu", "compute_s",
                                     "tp_comm_s", "bubble_s", "pp_comm_s", "dp_comm_s", "optimizer_s",
                                     "peak_bytes", "fits", "status", "reason"}
    assert all(int(r["tp"]) * int(r["pp"]) * int(r["dp"]) == 16 for r in rows)


def test_launch_lines_name_each_frameworks_configuration():
    from simulator.algorithms.arrangement import Arrangement
    from simulator.training.arrangement import TrainingArrangement
    from simulator.training.launch import launch_lines
    from simulator.training.options import StepOptions

    g256 = StepOptions(global_batch=256)
    tesseract = launch_lines(TrainingArrangement(Arrangement("summa25d", (4, 4, 4)), 2), 8, g256)
    assert tesseract[0] == "Colossal-AI: parallel = dict(tensor=dict(mode='2.5d', size=64, depth=4))"
    optimus = launch_lines(TrainingArrangement(Arrangement("2d", (4, 4, 1)), 4), 4, g256)
    assert optimus[0] == "Colossal-AI: parallel = dict(tensor=dict(mode='2d', size=16))"
    megatron = launch_lines(TrainingArrangement(Arrangement("1d", (8,)), 8), 1,
                            StepOptions(global_batch=256, zero=1, recompute="selective"))
    assert megatron[0] == ("Megatron-LM: --tensor-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 256 "
                           "--recompute-granularity selective --use-distributed-optimizer")
    dp = launch_lines(TrainingArrangement(Arrangement("1d", (1,)), 64), 4, g256)
    assert dp[0].startswith("Megatron-LM: --tensor-model-parallel-size 1 ")
    assert "no published training framework" in launch_lines(
        TrainingArrangement(Arrangement("cannon25d", (4, 4, 2)), 2), 4, g256)[0]


def test_megatrons_launch_line_carries_the_precision_the_plan_was_timed_in(capsys):
    from simulator.cli import main
    from simulator.training.launch import precision_flags

    assert precision_flags("bfloat16") == ("--bf16",)
    assert precision_flags("float16") == ("--fp16",)
    assert precision_flags("float32") == ()
    assert precision_flags("bfloat16", "delayed") == ("--bf16", "--fp8-format hybrid")
    assert precision_flags("bfloat16", "current") == ("--bf16", "--fp8-format hybrid --fp8-recipe tensorwise")
    assert precision_flags("bfloat16", "mxfp8") == ("--bf16", "--fp8-format e4m3 --fp8-recipe mxfp8")
    base = ["predict", "--gpus", "8", "--workload", "transformer", "--seq", "1024", "--hidden", "1024",
            "--heads", "16", "--layers", "4", "--global-batch", "8", "--tp-sizes", "8", "--algos", "1d",
            "--simulate-top", "1"]
    for topology, extra, title, flags in (
            ("dgx-h100", ["--dtype", "fp8"], "fp8 (hybrid, delayed scaling: the linears in FP8)",
             "--global-batch-size 8 --bf16 --fp8-format hybrid"),
            ("dgx-h100", ["--dtype", "fp8", "--fp8-recipe", "current"], "fp8 (hybrid, current scaling:",
             "--bf16 --fp8-format hybrid --fp8-recipe tensorwise"),
            ("dgx-b200", ["--dtype", "fp8"], "fp8 (MXFP8: the linears in FP8)",
             "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8"),
            ("dgx-a100", ["--dtype", "float16"], "float16", "--global-batch-size 8 --fp16")):
        assert main(base + ["--topology", topology] + extra) == 0
        out = capsys.readouterr().out
        assert title in out.splitlines()[0]
        assert flags in next(line for line in out.splitlines() if "Megatron-LM:" in line)


def test_every_transformer_gets_an_lm_head_of_gpt2s_vocabulary_unless_told(capsys):
    from simulator.cli import main

    base = ["predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "transformer", "--seq", "1024",
            "--hidden", "1024", "--heads", "16", "--layers", "4", "--global-batch", "8", "--tp-sizes", "8",
            "--algos", "1d", "--simulate-top", "1", "--json"]

    def step(*extra) -> float:
        assert main([*base, *extra]) == 0
        return json.loads(capsys.readouterr().out)[0]["step_time_s"]

    default, gpt2, small = step(), step("--vocab", "50257"), step("--vocab", "128")
    assert default == gpt2 > small  # the logit GEMM grows with the vocabulary
    assert main([*base[:-1], "--vocab", "0"]) == 2
    assert "--vocab 0: a vocabulary has at least 1 token" in capsys.readouterr().err
