"""Pipelined training steps on gloo ranks: pp stages x a tensor-parallel algorithm, against the float64
reference of the whole step, with the calls each rank really issues held to the IR's accounting.

Few and small on purpose: an 8-rank gloo job costs seconds on this machine.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from test_accounting import _check, issued  # noqa: E402,F401  (the recorder of issued calls, a fixture)

from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.ir.ops import Local  # noqa: E402
from simulator.pipeline.lower import lower_pipeline  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402
from tests.cli_run import run  # noqa: E402

BLOCK = Workload.transformer(batch=2, seq=4, hidden=8, heads=2)
ONCE = RunOptions(warmup=0, iters=1, seed=2)


def _record(schedule, options=ONCE):
    [result] = run_local([schedule], options, schedule.world_size)
    return measured_record(schedule, result, options)


def test_1d_tp2_x_pp2_with_the_lm_head_matches_float64_and_issues_the_irs_calls(issued):  # noqa: F811
    step = lower_pipeline("1d", BLOCK, 2, 2, 3, "1f1b", 1, "float64", gpus=2, vocab=100)
    record = _record(step)
    assert record["ok"], "\n".join(summary(record))
    assert record["tolerance"] == 1e-12 and 0 < record["max_rel_error"] < 1e-13
    # logits and dX per micro-batch, each dW per layer, and dWhead
    assert len(record["errors"]) == 2 * 3 + 2 * len(BLOCK.weights()) + 1 and "logits.m2" in record["errors"]
    _check([step], issued, 4)


def test_2d_grid_x_pp2_interleaved_on_8_ranks_matches_in_float32(issued):  # noqa: F811
    step = lower_pipeline("2d", BLOCK, 4, 2, 2, "interleaved", 2, "float32", grid=(2, 2, 1))
    record = _record(step)
    assert record["ok"], "\n".join(summary(record))
    assert record["tolerance"] == 1e-5 and 1e-9 < record["max_rel_error"] < 1e-5  # really float32
    _check([step], issued, 8)


def test_a_missing_accumulation_fails_the_check_on_gloo():
    step = lower_pipeline("1d", BLOCK, 2, 2, 2, "gpipe", 1, "float64", gpus=1)
    program = step.programs[0]
    adds = [i for i, op in enumerate(program) if isinstance(op, Local) and op.fn == "add" and ".m" not in op.out]
    step.programs[0] = program[:adds[0]] + program[adds[0] + 1:]
    record = _record(step)
    assert not record["ok"]
    assert [name for name, error in record["errors"].items() if error > 1e-12] == [program[adds[0]].out]


def test_tpsim_run_takes_the_pipeline_options(capsys):
    status, out, err = run(capsys, "run", "--algo", "1d-sp", "--gpus", "2", "--workload", "transformer",
                           "--batch", "2", "--seq", "4", "--hidden", "8", "--heads", "2", "--layers", "2", "--pp", "2",
                           "--micro-batches", "2", "--schedule", "gpipe", "--nproc", "4", "--dtype", "float32",
                           "--warmup", "0", "--iters", "1", "--json")
    assert status == 0, err
    record = json.loads(out)
    assert record["ok"] and record["world_size"] == 4
    assert record["pipeline"] == {"layers": 2, "pp": 2, "micro_batches": 2, "schedule": "gpipe",
                                  "virtual_stages": 1, "tp": 2, "vocab": None}
