"""The Llama block on gloo ranks, one small grid per algorithm family: every output block against the
float64 reference (``executor.reference``'s token chunks), and the per-op records held to the IR.

The block has RMSNorm, SwiGLU, rotary embeddings, grouped-query attention (6 query heads in 2 groups)
and no biases; its forward + backward and its backward alone (saved activations as inputs) run in one
job per grid. Grids of 2 to 4 ranks, but 3-D's smallest split grid is [2,2,2].
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.timing.results import Timeline  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

ONCE = RunOptions(warmup=0, iters=1, seed=3)
IDENTITY = ("rank", "step", "kind", "group", "bytes", "flops")
LLAMA = Workload.transformer(batch=4, seq=3, hidden=24, heads=6, ffn=16, kv_heads=2, norm="rmsnorm",
                             activation="swiglu", position="rotary", bias=False)
"""Divisible by every grid below: kv heads by 2, batch by 4 (summa25d's d q, 3d's q^2), hidden and ffn by 4."""
GRIDS = {"1d": ("1d", {"gpus": 2}), "1d-sp": ("1d-sp", {"gpus": 2}), "2d": ("2d", {"grid": (2, 2, 1)}),
         "summa25d": ("summa25d", {"grid": (1, 1, 2)}), "cannon25d": ("cannon25d", {"grid": (2, 2, 1)}),
         "3d": ("3d", {"grid": (2, 2, 2)})}


@functools.lru_cache(maxsize=None)
def job(case: str) -> list[tuple]:
    algorithm, grid = GRIDS[case]
    schedules = [build_schedule(algorithm, LLAMA, passes, "float64", **grid) for passes in ("both", "bwd")]
    results = run_local(schedules, ONCE, schedules[0].world_size)
    return [(s, measured_record(s, r, ONCE)) for s, r in zip(schedules, results)]


@pytest.mark.parametrize("case", list(GRIDS))
def test_every_algorithm_family_runs_the_llama_block_correctly_on_gloo(case):
    for schedule, record in job(case):
        assert record["ok"], "\n".join(summary(record))
        assert record["tolerance"] == 1e-12 and 0 < record["max_rel_error"] < 1e-13, schedule.passes
        assert set(record["errors"]) == set(LLAMA.output_names(schedule.passes))
        assert record["workload"] == LLAMA.to_dict() and record["backend"] == "gloo"


@pytest.mark.parametrize("case", list(GRIDS))
def test_llama_op_records_are_the_irs_ops(case):
    for schedule, record in job(case):
        starts = [[0.0] * len(p) for p in schedule.programs]
        theirs = Timeline(schedule, starts, starts, starts).records()
        assert [[op[k] for k in IDENTITY] for op in record["ops"]] == [[op[k] for k in IDENTITY] for op in theirs]
