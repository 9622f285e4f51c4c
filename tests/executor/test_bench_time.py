"""`tpsim bench` holds its repetitions against --timeout and guards their build before anything is built
(``executor.bench_time``); none of these cases forks a rank or imports torch."""

from __future__ import annotations

import sys

import pytest

from executor.bench_cases import BenchSettings
from executor.bench_time import FLOOR_US_PER_OP, check_bench_time
from simulator.errors import InputError
from simulator.guard import SCALE_ENV
from tests.cli_run import run

ONE = ["bench", "--nproc", "2", "--ops", "all_reduce", "--sizes", "1KiB"]


def test_huge_iters_are_refused_against_the_timeout_before_any_case_is_built(capsys, tmp_path):
    before = set(sys.modules)
    status, out, err = run(capsys, *ONE, "--iters", "100000000", "--timeout", "5", "--out", str(tmp_path / "b.json"))
    assert status == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err == ("tpsim bench: error: --timeout 5: 1 measurements x 100,000,005 repetitions (--warmup 5 + --iters "
                   "100000000) take at least 83 min here (50 us per op, a floor), more than the timeout; use fewer "
                   "--iters/--warmup, sizes or ops, or --timeout 50,001 or more\n")
    assert "torch" not in set(sys.modules) - before and list(tmp_path.iterdir()) == []


def test_the_floor_counts_every_case_and_repetition():
    settings = BenchSettings(ops=("all_reduce",), sizes_bytes=(1024, 2048), warmup=1, iters=9)
    check_bench_time(settings, 2, timeout_s=2 * 10 * FLOOR_US_PER_OP * 1e-6 * 1.01)  # just fits
    with pytest.raises(InputError, match=r"2 measurements x 10 repetitions"):
        check_bench_time(settings, 2, timeout_s=2 * 10 * FLOOR_US_PER_OP * 1e-6 * 0.99)


def test_building_the_repetitions_is_guarded(capsys, monkeypatch):
    monkeypatch.setenv(SCALE_ENV, "1e-9")
    status, _, err = run(capsys, *ONE, "--iters", "1000")
    assert status == 2 and err.startswith("tpsim bench: error: building 1 measurements x 1,005 repetitions: ")
    assert err.rstrip().endswith("add --force to run it anyway")
