"""experiments/bench_plan.py's cases and its comparison with Llama 3's published row, without running them."""

from __future__ import annotations

import pytest

from experiments import bench_plan


def _flag(argv, name):
    return argv[len(argv) - 1 - argv[::-1].index(name) + 1]  # argparse keeps the last occurrence


def test_the_pinned_405b_case_is_table_4s_row():
    case = next(c for c in bench_plan.CASES if c.name == "405b-pinned")
    argv = list(case.argv)
    gpus, tp, pp = int(_flag(argv, "--gpus")), int(_flag(argv, "--tp-sizes")), int(_flag(argv, "--pp-sizes"))
    assert (gpus, tp, pp, gpus // (tp * pp)) == (16384, 8, 16, 128)
    assert int(_flag(argv, "--global-batch")) == 128 * 16 and _flag(argv, "--batch") == "1"
    assert _flag(argv, "--schedule") == "interleaved" and _flag(argv, "--topology") == "dgx-h100:2048"
    assert (case.target_s, case.target_MB) == (300.0, 4096.0)


def test_the_searches_pin_nothing_and_each_has_ten_minutes():
    for name in ("405b-search", "405b-search-128"):
        case = next(c for c in bench_plan.CASES if c.name == name)
        assert not {"--tp-sizes", "--pp-sizes", "--batch", "--schedule", "--algos"} & set(case.argv)
        assert case.target_s == 600.0


def test_the_published_error_is_relative_to_table_4():
    row = {"step_time_s": 10.0, "mfu": 0.328}  # 20% below the published 41% MFU
    text = bench_plan.published_error(row)
    assert "MFU 32.8% (-20.0%)" in text and "step of 8.000 s" in text and "(+25.0%)" in text


def test_an_unknown_case_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench_plan.main(["--case", "nope"])
    assert exit_.value.code == 2 and "unknown case 'nope'" in capsys.readouterr().err


def test_the_list_names_every_case(capsys):
    assert bench_plan.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{case.name}  tpsim predict" in out for case in bench_plan.CASES)
