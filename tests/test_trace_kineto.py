"""Traces other tools read: every communication slice of a simulated and of a measured trace carries the PyTorch
profiler's (Kineto's) argument names, with the same values for the same op."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.schedule import DTYPE_BYTES
from simulator.timing.kineto import COLLECTIVE_NAMES, KINETO_KEYS, kineto_args
from simulator.timing.simulation import simulate
from simulator.timing.trace import simulated_trace
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies.builders import nvswitch_node

REQUIRED = ("Collective name", "dtype", "In msg nelems", "Out msg nelems", "Group size", "Process Group Ranks")
CASES = [("cannon25d", (2, 2, 2), None), ("1d-sp", None, 2), ("summa25d", (2, 2, 2), None), ("3d", (2, 2, 2), None)]


@pytest.mark.parametrize("algo,grid,gpus", CASES)
def test_every_simulated_communication_names_itself_as_the_profiler_does(algo, grid, gpus):
    schedule = build_schedule(algo, Workload.mlp(32, 16), "both", "bfloat16", grid=grid, gpus=gpus)
    trace = simulated_trace(simulate(schedule, nvswitch_node(8)))
    seen = set()
    for event in trace["traceEvents"]:
        if event["ph"] != "X":
            continue
        op = schedule.programs[event["pid"]][event["args"]["step"]]
        if op.kind not in COLLECTIVE_NAMES:
            assert not set(KINETO_KEYS) & set(event["args"])
            continue
        args = event["args"]
        seen.add(args["Collective name"])
        assert set(REQUIRED) <= set(args) and args["dtype"] == "BFloat16" and args["Rank"] == event["pid"]
        ranks = list(range(schedule.world_size)) if op.kind in ("send", "recv") else list(schedule.groups[op.group])
        assert json.loads(args["Process Group Ranks"]) == ranks and args["Group size"] == len(ranks)
        elements = {"all_gather": (1, len(ranks)), "reduce_scatter": (len(ranks), 1)}.get(op.kind, (1, 1))
        assert args["In msg nelems"] * elements[1] == args["Out msg nelems"] * elements[0]
        if op.kind in ("all_reduce", "broadcast", "send", "recv"):  # the op's bytes: its one buffer
            assert args["In msg nelems"] * DTYPE_BYTES["bfloat16"] == args["bytes"]
        if op.kind == "send":
            assert (args["Src Rank"], args["Dst Rank"]) == (event["pid"], op.peer)
    kinds = {op.kind for program in schedule.programs for op in program if op.kind in COLLECTIVE_NAMES}
    assert seen == {COLLECTIVE_NAMES[k] for k in kinds}


def test_the_names_are_the_ones_pytorch_reads():
    profiler_util = pytest.importorskip("torch.autograd.profiler_util")
    validator = pytest.importorskip("torch.profiler._trace_validator")
    known = profiler_util._EVENT_METADATA_KEYS  # Kineto key -> (field, converter from the trace's string)
    schedule = build_schedule("cannon25d", Workload.gemm(16, 8, 8), grid=(2, 2, 2))
    for rank, program in enumerate(schedule.programs):
        for op in program:
            args = kineto_args(schedule, rank, op)
            for key, value in args.items():
                _, convert = known[key]
                assert convert(str(value)) == value, (key, value)
            if args:
                assert validator._NCCL_REQUIRED_FIELDS <= set(args)


def test_a_measured_trace_carries_the_same_arguments_as_the_simulated_one(tmp_path, capsys):
    pytest.importorskip("torch")
    shape = ("--algo", "cannon25d", "--grid", "2,2,2", "--workload", "gemm", "--m", "16", "--k", "8", "--n", "8",
             "--dtype", "float32")
    status, _, err = run(capsys, "run", *shape, "--trace", str(tmp_path / "measured.json"))
    assert status == 0, err
    status, _, err = run(capsys, "simulate", *shape, "--topology", "dgx-a100", "--trace", str(tmp_path / "sim.json"))
    assert status == 0, err

    def comm_args(path):
        events = json.loads(path.read_text())["traceEvents"]
        return {(e["pid"], e["args"]["step"]): {k: e["args"][k] for k in KINETO_KEYS if k in e["args"]}
                for e in events if e["ph"] == "X" and "Collective name" in e["args"]}

    measured, simulated = comm_args(tmp_path / "measured.json"), comm_args(tmp_path / "sim.json")
    assert measured == simulated and len(measured) > 0
    assert {args["Collective name"] for args in measured.values()} == {"broadcast", "send", "recv", "reduce"}
