"""experiments/cpu_loop.py without timing anything: the gemm shapes it benchmarks and its summary table."""

from __future__ import annotations

from experiments.cpu_loop import SCHEDULES, gemm_shapes, summary


def test_the_bench_covers_exactly_the_gemm_shapes_the_schedules_issue():
    # 1d on 4 ranks: [1024, 1024] x [1024, 256] and its two backward products; 2d [2,2,1]: 512^3 blocks.
    assert gemm_shapes(4) == "512x512x512,1024x256x1024,1024x1024x256"
    # summa25d [2,2,2]: X blocks [256, 512], W blocks [512, 512]; cannon25d [2,2,2]: 512^3 blocks.
    assert gemm_shapes(8) == "256x512x512,512x256x512,512x512x512"


def test_the_summary_pools_every_run_and_takes_the_median_prediction():
    rows = [{"schedule": "1d [4]", "times_s": [0.10, 0.12], "predicted_s": 0.105, "rel_error": -0.045},
            {"schedule": "1d [4]", "times_s": [0.11], "predicted_s": 0.095, "rel_error": -0.136}]
    header, line = summary(rows)
    assert header.split()[:4] == ["schedule", "target", "runs", "measured"]
    # 3 runs, median 0.11 s, spread 0.10..0.12 s; median prediction 0.10 s is -9.1% off
    assert line.split() == ["1d", "[4]", "15%", "3", "0.1100", "s", "0.1000..0.1200", "s", "0.1000", "s", "-9.1%",
                            "-4.5%", "-13.6%"]
    assert [name for name, *_ in SCHEDULES] == ["1d [4]", "2d [2,2,1]", "summa25d [2,2,2]", "cannon25d [2,2,2]"]
