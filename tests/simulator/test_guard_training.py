"""The guard of ``tpsim predict --global-batch`` (``simulator.guard.training``): the search estimated before it starts.

No test here runs the search for long: ``TPSIM_GUARD_SCALE`` shrinks the budgets so that a search of
a second stands for one of hours, and the documented commands are estimated, not run.
"""

from __future__ import annotations

import glob
import shlex
from pathlib import Path

import pytest

import simulator.commands.predict_training as predict_training
from simulator.guard import REFUSE_AFTER_S, SCALE_ENV
from simulator.guard.training import search_sizes
from simulator.pipeline.search_space import pipeline_sizes, pipelined, schedule_variants
from simulator.training.arrangement import tp_sizes_of, training_arrangements
from tests.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["predict", "--gpus", "8", "--topology", "dgx-a100:1", "--model", "gpt3-125m", "--global-batch", "8",
         "--algos", "1d", "--tp-sizes", "1,2"]


class _Stop(Exception):
    """Raised by the spy in place of the guard: the estimate is taken, nothing runs."""


def _estimate(monkeypatch, capsys, argv):
    """The search estimate ``tpsim ARGV`` makes, taken before it would start (the search does not run)."""
    seen = []

    def spy(estimate, *args, **kwargs):
        seen.append(estimate)
        raise _Stop

    with monkeypatch.context() as patch:
        patch.setattr(predict_training, "guard", spy)
        with pytest.raises(_Stop):
            run(capsys, *argv)
    return seen[0]


def test_the_sizes_are_arrangements_schedules_and_settings():
    layers = 24
    candidates = pipelined(training_arrangements(16, ("1d", "2d"), (None,), tp_sizes_of(16)), pipeline_sizes(16, layers))
    variants = [schedule_variants(a, layers) for a in candidates]
    tries = sum(len(v) for v in variants)
    # searched: 2 recompute levels (flash attention) x 3 ZeRO tiers without a pipeline, x 1 tier (ZeRO 0 and 1) with one
    cells = sum(len(v) * (6 if a.pp == 1 else 2) for a, v in zip(candidates, variants))
    assert any(a.pp > 1 for a in candidates) and any(len(v) > 1 for v in variants)
    assert search_sizes(candidates, lambda a: schedule_variants(a, layers), None, None, "flash") == (tries, cells)
    assert search_sizes(candidates, lambda a: schedule_variants(a, layers), 1, "none", "flash") == (tries, tries)
    unfused = sum(len(v) * (9 if a.pp == 1 else 3) for a, v in zip(candidates, variants))  # selective recompute too
    assert search_sizes(candidates, lambda a: schedule_variants(a, layers), None, None, "unfused")[1] == unfused


def test_over_the_budget_the_search_is_refused_before_it_starts(capsys, monkeypatch, tmp_path):
    # 30 ms (a note past 2 ms): the graph of 8 GPUs passes unsaid (0.7 ms), the search (near a second) does not.
    monkeypatch.setenv(SCALE_ENV, "1e-4")
    monkeypatch.setattr("simulator.guard.check.available_memory_bytes", lambda: 1 << 40)
    monkeypatch.setattr(predict_training, "plan_training", lambda *a, **k: pytest.fail("the search started"))
    status, out, err = run(capsys, *SMALL, "--csv", str(tmp_path / "plan.csv"))
    assert status == 2 and out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("tpsim predict: error: searching 6 training arrangements of 8 GPUs ("), err
    assert "to simulate): estimated at about" in err and "add --force to run it anyway" in err
    assert list(tmp_path.iterdir()) == []


def test_force_runs_the_search_and_says_so(capsys, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "1e-4")
    monkeypatch.setattr("simulator.guard.check.available_memory_bytes", lambda: 1 << 40)
    status, out, err = run(capsys, *SMALL, "--simulate-top", "1", "--force")
    assert status == 0, err
    assert "launch" in out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tpsim predict: searching 6 training arrangements of 8 GPUs (")
    assert "settings to bound, 1 to simulate): estimated at about " in lines[0]
    assert lines[0].endswith("(--force: running anyway)")


def test_a_long_search_is_said_first_and_runs(capsys, monkeypatch):
    argv = [*SMALL, "--simulate-top", "1"]
    estimate = _estimate(monkeypatch, capsys, argv)
    monkeypatch.setenv(SCALE_ENV, repr(estimate.seconds / 100))  # a budget of 3x the estimate, a note at a fifth
    monkeypatch.setattr("simulator.guard.check.available_memory_bytes", lambda: 1 << 50)  # time alone decides
    status, out, err = run(capsys, *argv)
    assert status == 0 and "launch" in out, err
    assert err == f"tpsim predict: {estimate.what}: estimated at {estimate.about()} here\n"


def _documented() -> list[list[str]]:
    """Every `tpsim predict --global-batch` the docs show, and every case of experiments/bench_plan.py."""
    from experiments.bench_plan import CASES
    commands = [["predict", *case.argv] for case in CASES]
    for page in [ROOT / "README.md", *sorted(Path(p) for p in glob.glob(str(ROOT / "docs" / "*.md")))]:
        commands += [shlex.split(line[len("$ tpsim "):]) for line in page.read_text().splitlines()
                     if line.startswith("$ tpsim predict") and "--global-batch" in line]
    return commands


def test_no_documented_search_nor_bench_case_is_refused(capsys, monkeypatch):
    commands = _documented()
    assert len(commands) >= 10
    for argv in commands:
        estimate = _estimate(monkeypatch, capsys, argv)
        # half the budget: the estimates are within 2x of what these searches cost here
        assert estimate.seconds < REFUSE_AFTER_S / 2 and estimate.bytes < 2 << 30, (argv, estimate)
