"""The NCCL path on real GPUs: device tensors, torch.cuda.set_device(local_rank), CUDA-event timing.

Skipped without CUDA. NCCL refuses two ranks on one GPU, so on a single-GPU machine only the
world-size-1 runs can happen; the multi-rank test needs as many GPUs as ranks.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from executor_cases import gpu_count  # noqa: E402

from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

GPUS = gpu_count()  # fork-safe: this process forks the NCCL ranks, so it must never initialise CUDA
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS == 0, reason="needs a CUDA GPU and NCCL")]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_one_rank_nccl_run_is_correct_and_timed_with_cuda_events(dtype):
    schedules = [build_schedule(algo, Workload.mlp(512, 256), "both", dtype, **grid)
                 for algo, grid in (("1d", {"gpus": 1}), ("summa25d", {"grid": (1, 1, 1)}),
                                    ("cannon25d", {"grid": (1, 1, 1)}))]
    options = RunOptions(backend="nccl", warmup=2, iters=5)
    for schedule, result in zip(schedules, run_local(schedules, options, 1)):
        record = measured_record(schedule, result, options)
        assert record["ok"], "\n".join(summary(record))
        assert record["timing"]["clock"] == "cuda_events"
        assert "cpu" not in record["host"]["devices"][0]
        assert all(op["duration_s"] >= 0 for op in record["ops"]) and record["time_s"] > 0


IDENTITY = ("rank", "step", "kind", "group", "bytes", "flops")


def _records(schedules, backend: str) -> list[dict]:
    options = RunOptions(backend=backend, warmup=1, iters=3)
    return [measured_record(s, r, options) for s, r in zip(schedules, run_local(schedules, options, 4))]


@pytest.mark.skipif(GPUS < 4, reason="needs 4 GPUs (one NCCL rank per GPU)")
def test_four_rank_nccl_runs_match_gloo():
    schedules = [build_schedule("2d", Workload.mlp(64, 32), "both", "float32", grid=(2, 2, 1), overlap=overlap)
                 for overlap in (False, True)]
    for nccl, gloo in zip(_records(schedules, "nccl"), _records(schedules, "gloo")):
        assert nccl["ok"], "\n".join(summary(nccl))
        assert gloo["ok"], "\n".join(summary(gloo))
        assert (nccl["backend"], gloo["backend"]) == ("nccl", "gloo")
        # the same ops (kind, group, bytes, flops) on every rank, in the same order
        assert [[op[k] for k in IDENTITY] for op in nccl["ops"]] == [[op[k] for k in IDENTITY] for op in gloo["ops"]]
        # the same blocks, checked against the same float64 reference (built on the GPU and on the CPU)
        assert len(nccl["rank_errors"]) == len(gloo["rank_errors"])
        for a, b in zip(nccl["rank_errors"], gloo["rank_errors"]):
            assert (a["rank"], a["tensor"], a["rows"], a["cols"]) == (b["rank"], b["tensor"], b["rows"], b["cols"])
            assert a["ref_max_abs"] == pytest.approx(b["ref_max_abs"], rel=1e-12)
        # Each run is within the float32 tolerance of that reference, so the two runs' outputs are within
        # twice the tolerance of each other, block for block; both are float32 rounding, not zero.
        for tensor, error in nccl["errors"].items():
            assert 0 < error <= nccl["tolerance"] and 0 < gloo["errors"][tensor] <= gloo["tolerance"], tensor
