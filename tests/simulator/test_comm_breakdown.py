"""The step's communication per kind, exposed (critical path) + hidden (under compute) = total."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from topologies import load_topology

BLOCK = Workload.transformer(2, 512, 1024, 8)


@pytest.fixture(scope="module")
def G():
    return load_topology("dgx-a100:2")


@pytest.mark.parametrize("algorithm", ["1d", "1d-sp"])
@pytest.mark.parametrize("zero", [0, 3])
def test_exposed_plus_hidden_is_the_total_and_async_hides_tp(G, algorithm, zero):
    a = TrainingArrangement(Arrangement(algorithm, (4,)), 4)
    on = step_time(G, a, BLOCK, StepOptions(global_batch=16, layers=2, vocab=4096, zero=zero))
    off = step_time(G, a, BLOCK, StepOptions(global_batch=16, layers=2, vocab=4096, zero=zero, async_dgrad=False))
    for s in (on, off):
        c = s.comm_breakdown()
        for kind, v in c.items():
            assert v["exposed_s"] + v["hidden_s"] == pytest.approx(v["total_s"], abs=1e-15), kind
            assert v["exposed_s"] >= 0 and v["hidden_s"] >= 0
        assert c["tp"]["exposed_s"] == s.tp_comm_s
        assert c["dp"]["exposed_s"] + c["zero_gather"]["exposed_s"] == pytest.approx(s.dp_comm_s)
        assert s.to_dict()["comm"] == c
    assert off.comm_breakdown()["tp"]["hidden_s"] == 0.0
    assert on.comm_breakdown()["tp"]["hidden_s"] > 0.0
    assert on.tp_comm_s < off.tp_comm_s
    # The same collectives either way: the total differs only by contention, not by what is moved.
    assert on.comm_breakdown()["tp"]["total_s"] == pytest.approx(off.comm_breakdown()["tp"]["total_s"], rel=0.1)
    if zero == 3:
        assert on.comm_breakdown()["zero_gather"]["total_s"] > 0


def test_the_data_parallel_reduction_is_mostly_hidden_under_the_backward(G):
    a = TrainingArrangement(Arrangement("1d", (1,)), 16)
    s = step_time(G, a, BLOCK, StepOptions(global_batch=32, layers=4))
    dp = s.comm_breakdown()["dp"]
    assert dp["hidden_s"] > 0 and dp["exposed_s"] == s.dp_comm_s


def test_off_restores_the_blocking_times(G):
    """--no-async-tensor-model-parallel-allreduce: the passes are the blocking schedules' (no wait ops, no
    sharing), so the step is what it was before the option existed."""
    from simulator.algorithms.registry import build_schedule
    from simulator.timing.simulation import simulate
    from simulator.training.placement import tp_group_gpus

    a = TrainingArrangement(Arrangement("1d", (4,)), 1)
    s = step_time(G, a, BLOCK, StepOptions(global_batch=2, async_dgrad=False))
    plain = simulate(build_schedule("1d", BLOCK, "bwd", "bfloat16", gpus=4), G, tp_group_gpus(G, a), timeline=False)
    assert s.passes["block_bwd"].time_s == plain.makespan_s
    assert dataclasses.astuple(s.passes["block_bwd"])[-1] == 0.0


def test_pipelines_report_the_hidden_tp_communication_and_the_trace_carries_the_breakdown(G):
    from simulator.pipeline.trace import step_trace

    a = TrainingArrangement(Arrangement("1d", (4,)), 1, pp=2, schedule="1f1b")
    options = StepOptions(global_batch=8, layers=4, vocab=4096)
    s = step_time(G, a, BLOCK, options)
    c = s.comm_breakdown()
    assert c["tp"]["hidden_s"] > 0 and c["tp"]["exposed_s"] == s.tp_comm_s
    assert c["pp"]["exposed_s"] == s.pp_comm_s
    trace = step_trace(G, a, BLOCK, options)
    assert trace["otherData"]["comm"] == c
