"""Every algorithm x pass x workload (x --overlap) run on gloo ranks, checked against float64, and the
per-op records held to the IR and to the simulator's own records, key for key.

One job per grid runs all of its variants (``run_local`` takes a list), so ranks start once per grid.
"""

from __future__ import annotations

import functools
import statistics

import pytest

torch = pytest.importorskip("torch")

from executor_cases import GRIDS, WORLD, every_variant, make  # noqa: E402

from executor.check import TOLERANCES  # noqa: E402
from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.ir.ops import AllReduce  # noqa: E402
from simulator.ir.validate import validate_schedule  # noqa: E402
from simulator.timing.results import OP_RECORD_KEYS, Timeline  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

ONCE = RunOptions(warmup=0, iters=1)
IDENTITY = ("rank", "step", "kind", "group", "bytes", "flops")


@functools.lru_cache(maxsize=None)
def job(algo: str) -> list[tuple]:
    """(schedule, measured record) for every variant of ``algo``, from one gloo job."""
    schedules = every_variant(algo)
    results = run_local(schedules, ONCE, WORLD[algo])
    return [(s, measured_record(s, r, ONCE)) for s, r in zip(schedules, results)]


def _label(schedule) -> str:
    return f"{schedule.algorithm} {schedule.workload['name']} {schedule.passes}"


@pytest.mark.parametrize("algo", list(GRIDS))
def test_every_pass_and_workload_is_correct_on_gloo(algo):
    runs = job(algo)
    assert len(runs) == (12 if algo in ("2d", "summa25d") else 6)
    for schedule, record in runs:
        assert record["ok"], "\n".join(summary(record))
        assert 0 < record["max_rel_error"] < 1e-5, _label(schedule)  # float32 arithmetic really happened
        assert set(record["errors"]) == set(Workload.from_dict(schedule.workload).output_names(schedule.passes))
        assert record["world_size"] == WORLD[algo] and record["backend"] == "gloo"


@pytest.mark.parametrize("algo", list(GRIDS))
def test_op_records_are_the_irs_ops_with_coherent_times(algo):
    for schedule, record in job(algo):
        ops = record["ops"]
        assert all(tuple(op) == OP_RECORD_KEYS for op in ops)
        # the simulator's Timeline writes the same identity fields for the same schedule
        starts = [[0.0] * len(p) for p in schedule.programs]
        theirs = Timeline(schedule, starts, starts, starts).records()
        assert [[op[k] for k in IDENTITY] for op in ops] == [[op[k] for k in IDENTITY] for op in theirs]
        finish = record["iterations"][0]["rank_time_s"]
        for op in ops:
            assert 0 <= op["start_s"] <= op["end_s"] <= finish[op["rank"]] + 1e-9, (_label(schedule), op)
            assert op["duration_s"] == pytest.approx(op["end_s"] - op["start_s"])
        for rank in range(schedule.world_size):
            mine = [op for op in ops if op["rank"] == rank]
            assert all(a["start_s"] <= b["start_s"] for a, b in zip(mine, mine[1:]))  # program order


def test_measured_records_compare_key_for_key_with_the_simulator():
    simulation = pytest.importorskip("simulator.timing.simulation")
    topologies = pytest.importorskip("topologies")
    for schedule, record in job("summa25d")[:4] + job("cannon25d")[:2]:
        simulated = simulation.simulate(schedule, topologies.load_topology("dgx-a100")).op_records()
        assert [tuple(op) for op in simulated] == [tuple(op) for op in record["ops"]]
        assert [[op[k] for k in IDENTITY] for op in simulated] == [[op[k] for k in IDENTITY] for op in record["ops"]]


def test_float64_and_bfloat16_meet_their_tolerances():
    schedules = [make(algo, "mlp", "both", dtype)
                 for dtype in ("float64", "bfloat16") for algo in ("summa25d", "cannon25d")]
    results = run_local(schedules, ONCE, 8)
    for schedule, result in zip(schedules, results):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        if schedule.dtype == "float64":
            assert record["tolerance"] == 1e-12 and record["max_rel_error"] < 1e-13
        else:  # computed in bfloat16, not quietly in float32
            assert record["tolerance"] == 2e-2 and 1e-4 < record["max_rel_error"] < 2e-2


def test_each_tolerance_sits_between_its_dtypes_rounding_and_the_next_coarser_dtypes():
    # One rank, so each error is the dtype's own arithmetic (gemms, GELU, sums) against the float64
    # reference, measured rather than quoted.
    schedules = [build_schedule("1d", Workload.mlp(256, 64), "both", dtype, gpus=1)
                 for dtype in ("float64", "float32", "bfloat16")]
    results = run_local(schedules, ONCE, 1)
    errors = {s.dtype: measured_record(s, r, ONCE)["max_rel_error"] for s, r in zip(schedules, results)}
    assert errors["float64"] < errors["float32"] < errors["bfloat16"], errors  # each really ran in its dtype
    for dtype, coarser in (("float64", "float32"), ("float32", "bfloat16"), ("bfloat16", None)):
        assert TOLERANCES[dtype] >= 3 * errors[dtype], (dtype, errors)  # rounding never fails a right run
        if coarser:  # a run that computed in the coarser dtype would fail this one's check
            assert TOLERANCES[dtype] <= errors[coarser] / 10, (dtype, errors)


def test_every_collective_kind_both_axes_and_an_out_of_order_group(mixed):
    [result] = run_local([mixed], ONCE, 3)
    record = measured_record(mixed, result, ONCE)
    assert record["ok"], "\n".join(summary(record))
    assert len(record["rank_errors"]) == len(mixed.outputs)


def test_omitting_the_depth_all_reduce_is_caught_per_rank():
    schedule = make("summa25d", "gemm", "bwd")
    schedule.programs = [[op for op in program if not isinstance(op, AllReduce)] for program in schedule.programs]
    validate_schedule(schedule)  # still a schedule that runs: only its numbers are wrong
    [result] = run_local([schedule], ONCE, 8)
    record = measured_record(schedule, result, ONCE)
    assert not record["ok"]
    assert {b["tensor"] for b in record["rank_errors"] if not b["ok"]} == {"dB"}
    assert {b["rank"] for b in record["rank_errors"] if not b["ok"]} == set(range(8))
    lines = summary(record)
    assert "WRONG" in lines[0] and any(line.startswith("  rank 5 dB[") for line in lines)


def test_warmup_and_timed_iterations_reduce_to_the_median_of_per_iteration_maxima():
    options = RunOptions(warmup=2, iters=3)
    schedule = make("1d", "mlp", "both")
    [result] = run_local([schedule], options, 4)
    record = measured_record(schedule, result, options)
    iterations = record["iterations"]
    assert [it["iteration"] for it in iterations] == [0, 1, 2]
    for it in iterations:
        assert it["time_s"] == max(it["rank_time_s"]) and len(it["rank_time_s"]) == 4
    assert record["time_s"] == statistics.median_low([it["time_s"] for it in iterations])
    assert record["time_s"] == iterations[record["median_iteration"]]["time_s"]
    assert (record["warmup"], record["timed_iterations"]) == (2, 3)
