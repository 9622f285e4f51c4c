"""The transformer block on gloo ranks for every algorithm: each output block against the float64
reference (``executor.reference``'s token chunks), seeded dropout masks included, and the per-op records
held to the IR.

One job per grid runs the block's forward + backward and its backward alone (whose saved activations
are inputs, from ``Workload.input_block``), so ranks start once per grid.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

torch = pytest.importorskip("torch")

from executor_cases import TRANSFORMER, TRANSFORMER_GRIDS, make_transformer  # noqa: E402

import executor.run_rank as run_rank  # noqa: E402
from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.timing.results import Timeline  # noqa: E402

ONCE = RunOptions(warmup=0, iters=1, seed=3)
IDENTITY = ("rank", "step", "kind", "group", "bytes", "flops")


@functools.lru_cache(maxsize=None)
def job(case: str) -> list[tuple]:
    """(schedule, measured record) for the block's "both" and "bwd" in float64 on ``case``'s grid."""
    schedules = [make_transformer(case, passes) for passes in ("both", "bwd")]
    results = run_local(schedules, ONCE, schedules[0].world_size)
    return [(s, measured_record(s, r, ONCE)) for s, r in zip(schedules, results)]


@pytest.mark.parametrize("case", list(TRANSFORMER_GRIDS))
def test_every_algorithm_runs_the_transformer_block_correctly_on_gloo(case):
    for schedule, record in job(case):
        assert record["ok"], "\n".join(summary(record))
        assert record["tolerance"] == 1e-12 and 0 < record["max_rel_error"] < 1e-13, schedule.passes
        assert set(record["errors"]) == set(TRANSFORMER.output_names(schedule.passes))
        assert record["workload"] == TRANSFORMER.to_dict() and record["backend"] == "gloo"


@pytest.mark.parametrize("case", list(TRANSFORMER_GRIDS))
def test_transformer_op_records_are_the_irs_ops(case):
    for schedule, record in job(case):
        starts = [[0.0] * len(p) for p in schedule.programs]
        theirs = Timeline(schedule, starts, starts, starts).records()
        assert [[op[k] for k in IDENTITY] for op in record["ops"]] == [[op[k] for k in IDENTITY] for op in theirs]


def test_the_unfused_block_runs_correctly_on_gloo_too():
    """The grid cases run Megatron-LM's fused bias-GeLU and bias-dropout-add (the default); the unfused pieces
    (``--no-bias-gelu-fusion --no-bias-dropout-fusion``) on a 1-D and a SUMMA grid, both passes."""
    unfused = dataclasses.replace(TRANSFORMER, bias_gelu_fusion=False, bias_dropout_fusion=False)
    assert {layer.part for layer in unfused.layers()} >= {"drop1", "res1", "gelu"}
    for algo, grid in (TRANSFORMER_GRIDS["1d-2"], TRANSFORMER_GRIDS["2d"]):
        schedules = [build_schedule(algo, unfused, passes, "float64", **grid) for passes in ("both", "bwd")]
        for schedule, result in zip(schedules, run_local(schedules, ONCE, schedules[0].world_size)):
            record = measured_record(schedule, result, ONCE)
            assert record["ok"], "\n".join(summary(record))
            assert 0 < record["max_rel_error"] < 1e-13 and record["workload"] == unfused.to_dict()


def test_a_float32_transformer_run_meets_its_tolerance():
    schedules = [make_transformer(case, "both", "float32") for case in ("1d-2", "1d-sp")]
    for schedule, result in zip(schedules, run_local(schedules, ONCE, 2)):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        assert record["tolerance"] == 1e-5 and 1e-9 < record["max_rel_error"] < 1e-5  # really float32


def test_a_bfloat16_transformer_run_meets_the_transformers_own_tolerance_with_margin():
    schedules = [make_transformer(case, "both", "bfloat16") for case in ("1d-2", "1d-sp")]
    for schedule, result in zip(schedules, run_local(schedules, ONCE, 2)):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        # 4e-2 (executor.check): 3x over bfloat16's worst measured, and far under a real fault's error
        assert record["tolerance"] == 4e-2 and 1e-3 < 3 * record["max_rel_error"] <= 4e-2


def test_dropout_masks_from_another_seed_fail_the_check(monkeypatch):
    # The ranks' local ops draw their masks from seed + 1 while inputs and reference use the seed: only
    # the masks differ, and the check must see it (forked ranks inherit the patch).
    real = run_rank.TorchOps
    monkeypatch.setattr(run_rank, "TorchOps", lambda *args, seed, **kw: real(*args, seed=seed + 1, **kw))
    schedule = make_transformer("1d-2", "both")
    [result] = run_local([schedule], ONCE, 2)
    record = measured_record(schedule, result, ONCE)
    assert not record["ok"] and record["errors"]["Y"] > 1e-3, record["errors"]


def test_the_tp_comm_overlap_rings_run_correctly_on_gloo():
    """1d-sp under --tp-comm-overlap on 3 ranks (rings of two steps): the forward's ring and pipelined reduces
    and the backward's dY ring beside the chunked dgrad GEMMs (its gathered dY kept for the weight gradient)
    meet the float64 reference, both passes and the backward alone, and record the IR's ops."""
    schedules = [build_schedule("1d-sp", TRANSFORMER, passes, "float64", gpus=3, tp_comm_overlap=True,
                                async_dgrad=True) for passes in ("both", "bwd")]
    assert all(any(op.kind == "send" for op in s.programs[0]) for s in schedules)  # the bwd pass rings too
    for schedule, result in zip(schedules, run_local(schedules, ONCE, 3)):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        assert 0 < record["max_rel_error"] < 1e-13
        assert set(record["errors"]) == set(TRANSFORMER.output_names(schedule.passes))
        starts = [[0.0] * len(p) for p in schedule.programs]
        theirs = Timeline(schedule, starts, starts, starts).records()
        assert [[op[k] for k in IDENTITY] for op in record["ops"]] == [[op[k] for k in IDENTITY] for op in theirs]
