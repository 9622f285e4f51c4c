"""`tpsim schedule / verify / simulate --pp ...`: the pipelined step from the command line, and its bad input."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run

BLOCK = ["--workload", "transformer", "--batch", "2", "--seq", "4", "--hidden", "8", "--heads", "2"]


def test_verify_proves_every_output_of_an_interleaved_2d_pipeline(capsys):
    status, out, err = run(capsys, "verify", "--algo", "2d", "--grid", "2,2,1", *BLOCK, "--layers", "4", "--pp", "2",
                           "--micro-batches", "4", "--schedule", "interleaved", "--virtual-stages", "2")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("2d grid [2, 2, 1] transformer B=2 S=4 H=8 A=2 F=32, interleaved, pp 2 x 2 virtual "
                               "stages x tp 4, 4 micro-batches, 4 layers (1 per stage)")
    assert lines[1].split()[:3] == ["Y", "(4", "micro-batches)"] and lines[1].endswith("ok")
    assert any(line.split()[:3] == ["dW1", "(4", "layers)"] for line in lines)
    assert lines[-1] == "verified"


def test_schedule_show_prints_the_stage_by_time_grid_then_the_ops(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", *BLOCK, "--layers", "2", "--pp", "2",
                         "--micro-batches", "3", "--show", "--ranks", "0-3")
    assert status == 0
    assert out.splitlines()[:4] == [
        "pipeline order: 1f1b, pp 2 x tp 2, 3 micro-batches, 2 layers (1 per stage)",
        "slot   0  1  2  3  4  5  6  7",
        "pp0   F0 F1  . B0 F2 B1  . B2",
        "pp1    . F0 B0 F1 B1 F2 B2  ."]
    assert "send>2 Y.m0.l0" in out


def test_schedule_summary_names_the_pipeline(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d-sp", "--gpus", "2", *BLOCK, "--layers", "4", "--pp", "4",
                         "--micro-batches", "8", "--schedule", "gpipe")
    assert status == 0
    assert "1d-sp grid [2] on 8 ranks" in out
    assert "  pipeline            gpipe, pp 4 x tp 2, 8 micro-batches, 4 layers (1 per stage)" in out
    assert "  p2p msgs / rank     32 (max)" in out  # a middle stage: 8 in and 8 out, each way


def test_schedule_json_carries_the_pipeline_and_each_ranks_messages(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", *BLOCK, "--layers", "3", "--pp", "3",
                         "--micro-batches", "2", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["pipeline"]["pp"] == 3 and data["world_size"] == 6
    assert [r["p2p_messages"] for r in data["per_rank"]] == [4, 4, 8, 8, 4, 4]


def test_simulate_runs_the_whole_step_with_pipeline_flows(capsys):
    status, out, err = run(capsys, "simulate", "--algo", "1d", "--gpus", "2", *BLOCK, "--layers", "2", "--pp", "2",
                           "--micro-batches", "2", "--topology", "dgx-a100:1", "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["pipeline"] == {"layers": 2, "pp": 2, "micro_batches": 2, "schedule": "1f1b", "virtual_stages": 1,
                                "tp": 2, "vocab": None}
    assert data["stats"]["p2p"] == 2 * 2 * 2  # 2 tensor-parallel ranks x 2 micro-batches x (activation, gradient)
    assert data["model_time_s"] == data["makespan_s"] and data["layers"] == 1
    assert "memory" not in data


@pytest.mark.parametrize("extra,message", [
    (["--layers", "3", "--pp", "2"], "3 layers do not divide into --pp 2 stages"),
    (["--layers", "4", "--pp", "2", "--virtual-stages", "2"], "--virtual-stages 2 needs --schedule interleaved"),
    (["--layers", "4", "--pp", "2", "--schedule", "interleaved", "--virtual-stages", "2", "--micro-batches", "3"],
     "needs --micro-batches a multiple of --pp"),
    (["--micro-batches", "4"], "--micro-batches is a pipeline option; add --pp P"),
    (["--schedule", "1f1b"], "--schedule 1f1b is a pipeline option; add --pp P"),
    (["--layers", "2", "--pp", "2", "--pass", "fwd"], "--pp builds a training step"),
    (["--pp", "0"], "--pp must be an integer >= 1, got 0"),
])
@pytest.mark.parametrize("command", ["schedule", "verify", "simulate"])
def test_bad_pipeline_input_is_one_line_and_exit_2(capsys, command, extra, message):
    topology = ["--topology", "dgx-a100:1"] if command == "simulate" else []
    status, out, err = run(capsys, command, "--algo", "1d", "--gpus", "2", *BLOCK, *extra, *topology)
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_pp_without_a_transformer_is_refused(capsys):
    status, _, err = run(capsys, "verify", "--algo", "1d", "--gpus", "2", "--workload", "mlp", "--m", "8",
                         "--hidden", "8", "--pp", "2")
    assert status == 2 and "--pp pipelines transformer blocks; --workload mlp has none" in err
