"""The 1,024-GPU training plan as an opt-in benchmark (``pytest -m benchmark``); see experiments/bench_plan.py."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark
def test_the_1024_gpu_175b_plan_finishes_within_a_minute_and_fits_under_zero_1():
    from experiments.bench_plan import TARGET_S, end_to_end

    figures = end_to_end(("--zero", "1"))
    assert figures["cpu_s"] < TARGET_S, figures  # CPU seconds: one core's work, whatever else shares the host
    assert figures["simulated"] >= 1 and figures["best"] is not None
