"""`tpsim simulate --validate`: static checks for a schedule built here (on a spread of ranks beyond 64),
the full dry run on request, and a schedule file validated once, as it loads."""

import pytest

from simulator.cli import main
from simulator.commands import simulate as simulate_command
from simulator.ir import serialize
from simulator.ir.checks import spread_ranks

GEMM = ["--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--topology", "dgx-a100"]


@pytest.fixture
def dry_runs(monkeypatch):
    """Count the full validations (declarations plus the dry run) the command and the loader make."""
    calls = []
    real = simulate_command.validate_schedule

    def counted(schedule):
        calls.append(schedule.algorithm)
        return real(schedule)

    monkeypatch.setattr(simulate_command, "validate_schedule", counted)
    monkeypatch.setattr(serialize, "validate_schedule", counted)
    return calls


def test_a_built_schedule_gets_the_static_checks_only_by_default(capsys, dry_runs, monkeypatch):
    static = []
    real = simulate_command.check_static
    monkeypatch.setattr(simulate_command, "check_static", lambda s, ranks=None: static.append(s) or real(s, ranks))
    assert main(["simulate", "--algo", "2d", "--gpus", "4", *GEMM]) == 0
    assert dry_runs == [] and len(static) == 1


def test_validate_full_dry_runs_a_built_schedule(capsys, dry_runs):
    assert main(["simulate", "--algo", "2d", "--gpus", "4", *GEMM, "--validate", "full"]) == 0
    assert dry_runs == ["2d"]


def test_a_schedule_file_is_validated_once_as_it_loads(capsys, dry_runs, tmp_path):
    path = tmp_path / "s.json"
    assert main(["schedule", "--algo", "1d", "--gpus", "4", *GEMM[:-2], "--out", str(path)]) == 0
    dry_runs.clear()
    assert main(["simulate", "--schedule", str(path), "--topology", "dgx-a100", "--validate", "full"]) == 0
    assert dry_runs == ["1d"]


def test_the_static_checks_still_refuse_a_broken_built_schedule(capsys, monkeypatch):
    from simulator.algorithms import registry

    real = registry.build_schedule

    def broken(*args, **kwargs):
        schedule = real(*args, **kwargs)
        schedule.buffers[0].clear()  # every op on rank 0 now names undeclared buffers
        return schedule

    monkeypatch.setattr("simulator.commands.schedule_args.build_schedule", broken)
    assert main(["simulate", "--algo", "1d", "--gpus", "4", *GEMM]) == 2
    assert "rank 0" in capsys.readouterr().err


def test_spread_ranks_keeps_small_grids_whole_and_spreads_large_ones():
    assert spread_ranks(64) == list(range(64))
    ranks = spread_ranks(4096)
    assert len(ranks) == 64 and ranks[0] == 0 and ranks[-1] == 4095
    assert {r // 64 for r in ranks} == set(range(64)) == {r % 64 for r in ranks}  # every row, every column


def test_beyond_64_ranks_auto_checks_the_programs_of_the_spread(capsys, monkeypatch):
    checked = []
    real = simulate_command.check_static
    monkeypatch.setattr(simulate_command, "check_static", lambda s, ranks=None: checked.append(ranks) or real(s, ranks))
    assert main(["simulate", "--algo", "1d", "--gpus", "128", "--workload", "gemm", "--m", "128", "--k", "128",
                 "--n", "128", "--topology", "dgx-a100:16"]) == 0
    assert checked == [spread_ranks(128)] and len(checked[0]) == 64
