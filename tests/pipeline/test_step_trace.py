"""`predict --trace`: the planned step as a Perfetto trace, a track per pipeline stage."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.pipeline.trace import step_trace
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)


@pytest.mark.parametrize("schedule,v,zero", [("1f1b", 1, 0), ("interleaved", 2, 1)])
def test_the_trace_is_the_step(schedule, v, zero):
    G = load_topology("dgx-a100:4")
    a = TrainingArrangement(Arrangement("1d", (4,)), 2, 4, schedule, v)
    options = StepOptions(global_batch=16, layers=8, vocab=1000, zero=zero)
    trace = step_trace(G, a, BLOCK, options)
    step = step_time(G, a, BLOCK, options)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert names == {s: f"stage {s}" for s in range(4)}
    for stage in range(4):
        passes = [e for e in slices if e["pid"] == stage and e["name"][0] in "FB" and e["name"][1].isdigit()]
        assert len(passes) == 2 * step.micro_batches * v
        on_compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["pid"] == stage and e["tid"] == 0)
        # No overlap; ts and dur are each rounded to 1e-3 us, so an end may pass the next start by up to 1.5e-3.
        assert all(end <= nxt + 2e-3 for (_, end), (nxt, _) in zip(on_compute, on_compute[1:]))
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(step.step_s * 1e6, abs=2e-3)
    sends = [e for e in slices if e["name"].startswith("send")]
    assert len(sends) == 2 * step.micro_batches * (4 * v - 1) and all(e["tid"] >= 2 for e in sends)
    assert any(e["name"].startswith("data-parallel") for e in slices)
    assert {e["pid"] for e in slices if e["name"].startswith("tied embedding")} == {0, 3}


def test_predict_writes_the_plans_trace(capsys, tmp_path):
    path = tmp_path / "step.json"
    args = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
            "--hidden", "512", "--heads", "8", "--layers", "8", "--global-batch", "32", "--algos", "1d",
            "--tp-sizes", "2", "--pp-sizes", "4", "--simulate-top", "1")
    status, out, err = run(capsys, *args, "--trace", str(path))
    assert status == 0, err
    assert f"trace: {path}" in out
    trace = json.loads(path.read_text())
    assert trace["otherData"]["arrangement"].startswith("megatron tp=2 x pp=4 x dp=2")
    status, out, err = run(capsys, *args, "--trace-row", "1")
    assert status == 2 and "--trace-row 1 needs --trace FILE" in err and len(err.strip().splitlines()) == 1
