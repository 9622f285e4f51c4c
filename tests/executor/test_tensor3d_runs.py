"""3-D tensor parallelism on 8 gloo ranks ([2, 2, 2]): gemm, mlp and a small transformer block, forward +
backward and backward alone, in float64; each output block checked against the float64 reference and
the per-op records held to the IR's, op for op.

One job runs all six schedules (``run_local`` takes a list), so the ranks start once.
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.ir.accounting import account  # noqa: E402
from simulator.timing.results import Timeline  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

ONCE = RunOptions(warmup=0, iters=1, seed=3)
IDENTITY = ("rank", "step", "kind", "group", "bytes", "flops")
WORKLOADS = (Workload.gemm(12, 8, 6), Workload.mlp(12, 4),
             Workload.transformer(batch=4, seq=3, hidden=8, heads=2, ffn=12, dropout=0.1))
"""Sizes the cube divides: M, each K by q^2 = 4, each N by q = 2; the block's batch by 4, heads by 2."""


@functools.lru_cache(maxsize=None)
def job() -> list[tuple]:
    """(schedule, measured record) for every workload x ("both", "bwd"), from one job of 8 ranks."""
    schedules = [build_schedule("3d", w, passes, "float64", grid=(2, 2, 2)) for w in WORKLOADS
                 for passes in ("both", "bwd")]
    results = run_local(schedules, ONCE, 8)
    return [(s, measured_record(s, r, ONCE)) for s, r in zip(schedules, results)]


def test_3d_runs_every_workload_correctly_on_gloo():
    runs = job()
    assert len(runs) == 6
    for schedule, record in runs:
        label = f"{schedule.workload['name']} {schedule.passes}"
        assert record["ok"], "\n".join(summary(record))
        assert record["tolerance"] == 1e-12 and 0 < record["max_rel_error"] < 1e-13, label
        workload = Workload.from_dict(schedule.workload)
        assert set(record["errors"]) == set(workload.output_names(schedule.passes)), label
        assert record["world_size"] == 8 and record["backend"] == "gloo" and record["algorithm"] == "3d"


def test_3d_op_records_are_the_irs_ops():
    for schedule, record in job():
        starts = [[0.0] * len(p) for p in schedule.programs]
        theirs = Timeline(schedule, starts, starts, starts).records()
        assert [[op[k] for k in IDENTITY] for op in record["ops"]] == [[op[k] for k in IDENTITY] for op in theirs]
        # and the collectives the ranks ran are the IR's accounting, rank by rank
        for acct in account(schedule):
            mine = [op for op in record["ops"] if op["rank"] == acct.rank and op["group"] is not None]
            assert acct.p2p_messages == 0 and len(mine) == acct.collectives
            assert sorted({op["kind"] for op in mine}) == sorted({key.split("/")[0]
                                                                  for key in acct.collectives_by_kind})
            assert sum(op["bytes"] for op in mine) == acct.payload_bytes
