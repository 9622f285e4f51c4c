"""`tpsim predict --global-batch` with pipelines: the search, its pins, skipped rows, launch line, bad flags."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.pipeline.search_space import pipeline_sizes, pipelined, schedule_variants
from simulator.training.arrangement import TrainingArrangement
from simulator.training.launch import launch_lines
from simulator.training.options import StepOptions
from tests.cli_run import run

SMALL = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
         "--hidden", "512", "--heads", "8", "--layers", "8", "--global-batch", "32", "--algos", "1d,2d")


def _rows(capsys, *extra):
    status, out, err = run(capsys, *SMALL, "--json", "--simulate-top", "1", *extra)
    assert status == 0, err
    return json.loads(out)


def test_the_search_crosses_pipeline_sizes_and_schedules(capsys):
    rows = _rows(capsys)
    ok = [r for r in rows if r["status"] == "ok"]
    assert {r["pp"] for r in ok} == {1, 2, 4, 8}
    assert {r["schedule"] for r in ok if r["pp"] > 1} <= {"1f1b", "interleaved"}
    for r in ok:
        assert r["tp"] * r["pp"] * r["dp"] == 16 and r["micro_batches"] * r["micro_batch"] * r["dp"] == 32
        if r["pp"] > 1:
            assert len(r["memory"]["stages"]) == r["pp"]
            assert r["memory"]["peak_bytes"] == max(s["peak_bytes"] for s in r["memory"]["stages"])
            assert r["bubble_s"] > 0 and r["pp_comm_s"] > 0
        else:
            assert r["bubble_s"] == 0 and r["pp_comm_s"] == 0 and r["schedule"] is None
        if r["schedule"] == "interleaved":
            assert r["virtual_stages"] >= 2 and (8 // r["pp"]) % r["virtual_stages"] == 0


def test_pins_and_skipped_rows(capsys):
    rows = _rows(capsys, "--pp-sizes", "16", "--tp-sizes", "1")
    (row,) = rows
    assert row["status"] == "skipped" and "8 layers do not divide into pp=16 stages" in row["reason"]
    rows = _rows(capsys, "--pp-sizes", "4", "--tp-sizes", "2", "--schedule", "interleaved", "--virtual-stages", "2",
                 "--batch", "1")
    assert [(r["arrangement"], r["micro_batches"]) for r in rows] == [
        ("megatron tp=2 x pp=4 x dp=2 (interleaved v=2)", 16)]  # 2d has no grid of 2 GPUs
    rows = _rows(capsys, "--pp-sizes", "4", "--tp-sizes", "1", "--schedule", "interleaved", "--batch", "4")
    (row,) = rows  # m = 32 / (4 x 4) = 2 micro-batches: interleaved needs a multiple of pp
    assert row["status"] == "skipped" and "m=2) a multiple of pp=4" in row["reason"]


def test_the_table_names_pipelines_and_the_launch_line_their_flags(capsys):
    status, out, err = run(capsys, *SMALL, "--tp-sizes", "2", "--pp-sizes", "4", "--schedule", "interleaved",
                           "--virtual-stages", "2", "--algos", "1d")
    assert status == 0, err
    assert "megatron tp=2 x pp=4 x dp=2 (interleaved v=2)" in out
    assert ("Megatron-LM: --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
            "--num-layers-per-virtual-pipeline-stage 1 --micro-batch-size") in out


@pytest.mark.parametrize("extra, message", [
    (("--pp-sizes", "3"), "--pp-sizes '3': 3 does not divide --gpus 16"),
    (("--schedule", "1f1b", "--virtual-stages", "2"), "--virtual-stages 2 needs --schedule interleaved"),
    (("--schedule", "interleaved", "--virtual-stages", "1"), "needs --virtual-stages >= 2"),
    (("--virtual-stages", "0"), "--virtual-stages 0: must be an integer >= 1"),
])
def test_bad_pipeline_flags_are_one_line_and_exit_2(capsys, extra, message):
    status, out, err = run(capsys, *SMALL, *extra)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_search_space():
    assert pipeline_sizes(1024, 96) == (1, 2, 4, 8, 16, 32)
    megatron = TrainingArrangement(Arrangement("1d", (8,)), 128)
    assert [a.pp for a in pipelined([megatron], (1, 16, 2048))] == [1, 16]
    labels = [a.label for a in schedule_variants(megatron.pipelined(16), 96)]
    assert labels == ["megatron tp=8 x pp=16 x dp=8"] + [f"megatron tp=8 x pp=16 x dp=8 (interleaved v={v})"
                                                         for v in (2, 3, 6)]
    assert [a.schedule for a in schedule_variants(megatron.pipelined(16), 96, "gpipe")] == ["gpipe"]


def test_launch_lines_of_pipelines():
    megatron = TrainingArrangement(Arrangement("1d", (8,)), 8, 16, "interleaved", 3)
    line = launch_lines(megatron, 1, StepOptions(global_batch=1536, layers=96))[0]
    assert line == ("Megatron-LM: --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                    "--num-layers-per-virtual-pipeline-stage 2 --micro-batch-size 1 --global-batch-size 1536")
    tesseract = TrainingArrangement(Arrangement("summa25d", (2, 2, 2)), 2, 4)
    assert launch_lines(tesseract, 2, StepOptions(global_batch=64, layers=8))[0] == (
        "Colossal-AI: parallel = dict(pipeline=4, tensor=dict(mode='2.5d', size=8, depth=2)); NUM_MICRO_BATCHES = 16")
