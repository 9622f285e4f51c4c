"""The guards before work (``simulator.guard``): estimates from the sizes, refusals naming --force, early notes.

No test here runs minutes: ``TPSIM_GUARD_SCALE`` (the guard's test hook) shrinks the budgets so that a
case of milliseconds stands for one of hours, and the op-count estimates are held against schedules
that are actually built.
"""

from __future__ import annotations

import io

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.guard import SCALE_ENV, Estimate, guard
from simulator.guard.costs import build_estimate, predict_estimate
from simulator.guard.ops import estimated_ops
from simulator.ir.serialize import load_schedule
from simulator.predict import arrangements
from simulator.workloads.workload import Workload
from tests.cli_run import run

WORKLOADS = {"gemm": Workload.gemm(4096, 4096, 4096), "mlp": Workload.mlp(4096, 4096),
             "transformer": Workload.transformer(32, 256, 1024, 32)}
CASES = [("1d", (8,)), ("1d-sp", (8,)), ("2d", (4, 4, 1)), ("2d", (8, 8, 1)), ("summa25d", (4, 4, 2)),
         ("summa25d", (2, 2, 4)), ("cannon25d", (4, 4, 2)), ("cannon25d", (4, 4, 4)), ("cannon25d", (4, 4, 1)),
         ("3d", (2, 2, 2))]


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("algorithm, grid", CASES, ids=[f"{a}-{'x'.join(map(str, g))}" for a, g in CASES])
@pytest.mark.parametrize("passes", ["both", "fwd"])
def test_the_op_estimate_is_near_the_built_schedules_count(algorithm, grid, workload, passes):
    shape = {"gpus": grid[0]} if len(grid) == 1 else {"grid": grid}
    schedule = build_schedule(algorithm, WORKLOADS[workload], passes, "bfloat16", **shape)
    built = sum(len(program) for program in schedule.programs)
    ops, ranks = estimated_ops(algorithm, schedule.grid, WORKLOADS[workload], passes)
    assert ranks == schedule.world_size
    factor = 1.35 if passes == "both" else 1.5
    assert built / factor <= ops <= built * factor, (built, ops)


def test_the_build_estimate_grows_with_ops_and_ranks():
    small = build_estimate("2d", (8, 8, 1), WORKLOADS["mlp"])
    large = build_estimate("2d", (64, 64, 1), WORKLOADS["mlp"])
    assert large.seconds > 64 * small.seconds and large.bytes > 64 * small.bytes
    assert "2d [64,64,1] mlp M=4096 H=4096" in large.what and "per rank x 4,096 ranks" in large.what


def test_predict_estimates_every_arrangement_it_will_time():
    candidates = arrangements(64, ("1d", "2d", "summa25d"), (None,), False)
    pruned = predict_estimate(candidates, WORKLOADS["mlp"], "both")
    total = sum(estimated_ops(c.algorithm, c.grid, WORKLOADS["mlp"])[0] for c in candidates)
    assert f"timing {len(candidates)} arrangements of 64 ranks: {total:,} ops in all" == pruned.what
    assert predict_estimate(candidates, WORKLOADS["mlp"], "both", prune=False).seconds > 5 * pruned.seconds


def test_the_guard_refuses_over_a_budget_and_notes_a_long_one():
    stream = io.StringIO()
    guard(Estimate("quick", 1.0, 1 << 20), "tpsim x", stream=stream, available=1 << 30)
    assert stream.getvalue() == ""
    guard(Estimate("long", 60.0, 1 << 20), "tpsim x", stream=stream, available=1 << 30)
    assert stream.getvalue() == "tpsim x: long: estimated at about 60 s and 1 MiB here\n"
    with pytest.raises(InputError, match=r"^slow: estimated at about 2.8 h and 1 MiB, past the 5 min this machine "
                                         r"is given for one command; use smaller sizes, or add --force to run it "
                                         r"anyway$"):
        guard(Estimate("slow", 10_000.0, 1 << 20), "tpsim x", available=1 << 30)
    with pytest.raises(InputError, match=r"^big: estimated at about 1 s and 2 GiB, more than the 1 GiB of memory "
                                         r"available here; use smaller sizes, or add --force"):
        guard(Estimate("big", 1.0, 2 << 30), "tpsim x", available=1 << 30)
    stream = io.StringIO()
    guard(Estimate("slow", 10_000.0, 1 << 20), "tpsim x", force=True, stream=stream, available=1 << 30)
    assert stream.getvalue() == "tpsim x: slow: estimated at about 2.8 h and 1 MiB here (--force: running anyway)\n"


def test_a_bad_scale_is_one_line(monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "soon")
    with pytest.raises(InputError, match="TPSIM_GUARD_SCALE='soon': expected a number > 0"):
        guard(Estimate("x", 1.0, 1), "tpsim x", available=1 << 30)


# -- every guarded command, end to end: refused in one line before work, run with --force, noted when long --------

TINY = 1e-9
"""A scale that makes every budget far below any real case: each command below is over it."""
NOTE_ONLY = 1e-4
"""A scale whose time budget (30 ms) the small cases stay under, while their estimates are over the note's 2 ms."""

MLP = ["--workload", "mlp", "--m", "64", "--hidden", "32"]
COMMANDS = {
    "schedule": ["schedule", "--algo", "2d", "--grid", "2,2,1", *MLP],
    "verify": ["verify", "--algo", "2d", "--grid", "2,2,1", *MLP],
    "simulate": ["simulate", "--algo", "2d", "--grid", "2,2,1", *MLP, "--topology", "dgx-a100:1"],
    "predict": ["predict", "--gpus", "4", *MLP, "--topology", "dgx-a100:1"],
    "topology show": ["topology", "show", "dgx-a100:2"],
    "topology save": ["topology", "save", "dgx-a100:2", "{out}"],
    "collective": ["collective", "--op", "all_reduce", "--group-size", "8", "--bytes", "1MiB", "--topology", "dgx-a100:1"],
}
WORDS = {"schedule": "building 2d [2,2,1] mlp M=64 H=32: ", "verify": "building 2d [2,2,1] mlp M=64 H=32",
         "simulate": "the topology dgx-a100:1 of 8 GPUs", "predict": "the topology dgx-a100:1 of 8 GPUs",
         "topology show": "the topology dgx-a100:2 of 16 GPUs", "topology save": "the topology dgx-a100:2 of 16 GPUs",
         "collective": "the topology dgx-a100:1 of 8 GPUs"}


def _argv(name, tmp_path):
    return [arg.replace("{out}", str(tmp_path / "saved.yaml")) for arg in COMMANDS[name]]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_over_the_budget_is_refused_in_one_line_before_any_work(name, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, str(TINY))
    status, out, err = run(capsys, *_argv(name, tmp_path))
    assert status == 2 and out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"tpsim {name.split()[0]}: error: {WORDS[name]}"), err
    assert "estimated at about" in err and "add --force to run it anyway" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_force_runs_it_and_says_so(name, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, str(TINY))
    status, out, err = run(capsys, *_argv(name, tmp_path), "--force")
    assert status == 0, err
    assert out and all(line.endswith("(--force: running anyway)") for line in err.splitlines()), err
    assert err.splitlines(), "a forced run still says what it was estimated at"


LONGER = {"schedule": ["schedule", "--algo", "2d", "--grid", "4,4,1", *MLP],
          "simulate": COMMANDS["simulate"],
          "predict": ["predict", "--gpus", "64", *MLP, "--topology", "dgx-a100:8", "--algos", "1d,2d"],
          "topology show": COMMANDS["topology show"]}


@pytest.mark.parametrize("name", list(LONGER))
def test_a_long_case_is_said_on_stderr_first_and_runs(name, capsys, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, str(NOTE_ONLY))
    monkeypatch.setattr("simulator.guard.check.available_memory_bytes", lambda: 1 << 50)  # time alone decides
    status, out, err = run(capsys, *LONGER[name])
    assert status == 0, err
    lines = err.splitlines()
    assert lines and all(line.startswith(f"tpsim {name}: ") and " here" in line for line in lines), err
    assert "estimated at about" in lines[0] and "--force" not in err


def test_a_schedule_file_is_guarded_by_its_ops(capsys, tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    assert run(capsys, "schedule", "--algo", "2d", "--grid", "2,2,1", *MLP, "--out", str(path))[0] == 0
    monkeypatch.setenv(SCALE_ENV, "3e-6")  # a budget of 0.9 ms: the graph of 4 GPUs passes, simulating does not
    status, _, err = run(capsys, "simulate", "--schedule", str(path), "--topology", "loopback:4")
    ops = sum(len(program) for program in load_schedule(str(path)).programs)
    assert status == 2 and f"error: simulating 2d [2, 2, 1]: {ops} ops ({ops // 4} per rank x 4 ranks) on 4 GPUs" in err


def test_the_real_budgets_refuse_an_hour_and_pass_a_small_case(capsys):
    status, _, err = run(capsys, "schedule", "--algo", "2d", "--grid", "256,256,1", "--workload", "mlp", "--m",
                         "131072", "--hidden", "12288")
    assert status == 2 and len(err.splitlines()) == 1
    assert "301,989,888 ops (4,608 per rank x 65,536 ranks): estimated at about 24 min" in err
    status, _, err = run(capsys, "predict", "--gpus", "65536", "--workload", "mlp", "--m", "131072", "--hidden",
                         "12288", "--topology", "dgx-h100:8192")
    assert status == 2 and "timing 15 arrangements of 65,536 ranks" in err and "--force" in err
    status, _, err = run(capsys, "schedule", "--algo", "2d", "--grid", "4,4,1", *MLP)
    assert status == 0 and err == ""


def test_verify_counts_the_attention_scores(capsys, monkeypatch):
    # b*a*s*s = 8 * 16384^2 float64 scores, five copies held at the peak: 80 GiB, whatever the ranks hold.
    monkeypatch.setattr("simulator.guard.check.available_memory_bytes", lambda: 64 << 30)
    status, _, err = run(capsys, "verify", "--algo", "1d", "--gpus", "2", "--workload", "transformer", "--batch",
                         "1", "--seq", "16384", "--hidden", "64", "--heads", "8")
    assert status == 2 and len(err.splitlines()) == 1, err
    assert "verifying 1d [2] transformer B=1 S=16384 H=64 A=8" in err and "more than the 64 GiB" in err


def test_the_scale_benchmarks_run_without_force():
    # experiments/bench_scale.py's cases (every algorithm at 4,096 GPUs, summa25d at 16,384, predict at 1,024 and
    # 4,096) take one to two minutes here: the guard lets them run, estimated from their sizes alone.
    from experiments.bench_scale import MLP as SCALE_MLP, cases
    from simulator.algorithms.registry import ALGORITHMS, algorithm_class
    from simulator.guard import REFUSE_AFTER_S
    from simulator.guard.costs import simulate_estimate

    workload = Workload.mlp(int(SCALE_MLP[SCALE_MLP.index("--m") + 1]), int(SCALE_MLP[SCALE_MLP.index("--hidden") + 1]))
    for case in cases():
        argv = list(case.argv)
        gpus = 8 * int(argv[argv.index("--topology") + 1].split(":")[1])
        if argv[0] == "predict":
            estimate = predict_estimate(arrangements(gpus, ALGORITHMS, (None,), False), workload, "both")
        else:
            algorithm = argv[argv.index("--algo") + 1]
            grid = (tuple(map(int, argv[argv.index("--grid") + 1].split(","))) if "--grid" in argv
                    else algorithm_class(algorithm).resolve_grid(None, int(argv[argv.index("--gpus") + 1])))
            ops, ranks = estimated_ops(algorithm, grid, workload)
            estimate = simulate_estimate(ops, ranks, gpus, build=True)
        assert estimate.seconds < REFUSE_AFTER_S and estimate.bytes < 4 << 30, (case.name, estimate)
