"""The 1,024-GPU simulator benchmark as an opt-in test (``pytest -m benchmark``); see experiments/bench_simulator.py."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark
def test_1024_gpu_summa25d_mlp_simulates_within_its_target():
    from experiments.bench_simulator import end_to_end, run_case

    figures = run_case(1024)
    assert figures["makespan_s"] >= figures["analytic_makespan_s"] * (1 - 1e-12)
    whole = end_to_end(1024)  # the whole `tpsim simulate` command, start to exit
    assert whole["wall_s"] < figures["target_s"], whole
