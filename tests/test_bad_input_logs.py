"""Measurement files and option values that used to be accepted and answered with nonsense (issue 15).

nccl-tests logs (``tpsim calibrate --from-nccl-tests``, ``tpsim collective --compare``) with a zero, NaN,
negative or infinite time or bandwidth, conflicting repeated rows or appended runs on other rank counts;
measured-run records (``tpsim compare``) and bench records (``tpsim calibrate --from-bench``) with such
times; conflicting ``--algo-override`` pairs; an unknown or unfit ``--placement``. Each row of the table
is one bad input and a piece of its one-line message, and asserts exit status 2, exactly one line on
stderr, no traceback, nothing on stdout, and no file created or changed in the test's folder (the
calibrated topology of ``-o``, which exists beforehand in half of the calibrate rows, predict's
``--csv``, simulate's and compare's ``--trace``). Then: refusals come before any work, agreeing repeats
are merged, and ``tpsim bench`` names a killed rank before its busy-host warning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.calibrate.from_nccl_tests import samples_from_nccl_tests
from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.ir.serialize import schedule_to_dict
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies import load_topology
from tests.cli_run import run

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "nccl-tests" / "azure-ndv4-a100"
REAL = (LOGS / "all_reduce_perf_8gpu.log").read_text().splitlines()
REAL_2GPU = (LOGS / "all_reduce_perf_2gpu.log").read_text().splitlines()
ROW = 33  # the 1 MiB row of the 8-GPU log, counted from 1
COLUMNS = {"size": 0, "count": 1, "time": 4, "algbw": 5, "busbw": 6, "in-place time": 8, "in-place busbw": 10}
LOG_NAME = "all_reduce_perf_8gpu.log"


# -- making bad files -----------------------------------------------------------------------------------

def _changed(lines: list[str], column: str, token: str, line: int = ROW) -> list[str]:
    """``lines`` with one column of data line ``line`` (counted from 1) replaced by ``token``."""
    tokens = lines[line - 1].split()
    tokens[COLUMNS[column]] = token
    return [*lines[:line - 1], "  ".join(tokens), *lines[line:]]


def _retimed(lines: list[str], time_us: float, line: int = ROW) -> list[str]:
    """``lines`` with data line ``line`` run in ``time_us``: its time and, as nccl-tests prints them, its algbw
    and busbw (all_reduce on 8 ranks: busbw = algbw x 2 x 7/8), so that only the time is off."""
    size = int(lines[line - 1].split()[COLUMNS["size"]])
    algbw = size / time_us / 1e3
    lines = _changed(lines, "time", f"{time_us:.2f}", line)
    lines = _changed(lines, "algbw", f"{algbw:.2f}", line)
    return _changed(lines, "busbw", f"{algbw * 2 * 7 / 8:.2f}", line)


def _log(folder: Path, lines: list[str], name: str = LOG_NAME) -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _calibrate(*logs: str) -> list[str]:
    return ["calibrate", "--from-nccl-tests", *logs, "--topology", "dgx-a100"]


def _collective(log: str) -> list[str]:
    return ["collective", "--compare", log, "--topology", "dgx-a100"]


def _bad_column(command, column: str, token: str):
    return lambda d: command(_log(d, _changed(REAL, column, token)))


def _header_ngpus(token: str) -> list[str]:
    return [REAL[0].replace("nGpus 8", f"nGpus {token}"), *REAL[1:]]


@pytest.fixture(scope="module")
def record() -> dict:
    """A tpsim-measured record of 2-D SUMMA [2,2,1] whose 'measurements' are the simulator's, on loopback:4."""
    schedule = build_schedule("2d", Workload.mlp(64, 16), "both", "float32", grid=(2, 2, 1))
    result = simulate(schedule, load_topology("loopback:4"), timeline=True)
    return {"format": "tpsim-measured", "version": 1, "algorithm": schedule.algorithm, "grid": list(schedule.grid),
            "backend": "gloo", "world_size": schedule.world_size, "time_s": result.makespan_s,
            "median_iteration": 0, "clock_origins_s": [0.0] * 4,
            "iterations": [{"iteration": 0, "time_s": result.makespan_s, "rank_time_s": [result.makespan_s] * 4}],
            "ops": result.op_records(), "schedule": schedule_to_dict(schedule)}


def _measured(change):
    """A compare row: the record with ``change(record)`` applied, written with Python's json (NaN, Infinity)."""
    def make(d, record):
        bad = json.loads(json.dumps(record))
        change(bad)
        path = d / "measured.json"
        path.write_text(json.dumps(bad))
        return ["compare", str(path), "--topology", "loopback:4", "--trace", str(d / "trace.json")]
    make.needs_record = True
    return make


def _op(key: str, value):
    return _measured(lambda r: r["ops"][0].update({key: value}))


def _bench(row: dict):
    def make(d):
        path = d / "bench.json"
        path.write_text(json.dumps({"format": "tpsim-bench", "version": 1, "rows": [row]}))
        return ["calibrate", "--from-bench", str(path), "--topology", "loopback:4"]
    return make


def _placement_file(text: str, command: list[str]):
    def make(d):
        (d / "placement.txt").write_text(text)
        return [*command, "--placement", "placement.txt"]  # relative: the test runs in its folder
    return make


PREDICT = ["predict", "--workload", "gemm", "--m", "256", "--k", "256", "--n", "256", "--gpus", "8",
           "--topology", "dgx-a100"]
SIMULATE = ["simulate", "--algo", "2d", "--gpus", "4", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64",
            "--topology", "dgx-a100"]


def _with_outputs(command: list[str]):
    """``command`` with the output file it would write placed in the test's folder."""
    def make(d):
        if command[0] == "predict":
            return [*command, "--csv", str(d / "predict.csv")]
        return [*command, "--trace", str(d / "trace.json")]
    return make


def _plus(make, *extra: str):
    def made(d):
        return [*make(d), *extra]
    return made


VALID_TIME = "a time must be a finite number > 0 (microseconds)"
VALID_BW = "a bandwidth must be a finite number >= 0 (GB/s) or N/A"
REPEAT = "repeated rows of one size must agree within 25%"

CASES = [
    # nccl-tests logs: values, each named with file, line and the value as printed
    pytest.param(_bad_column(_calibrate, "time", "0.00"), f"{LOG_NAME} line 33: out-of-place time is 0.00; "
                 f"{VALID_TIME}", id="calibrate-zero-time"),
    pytest.param(_bad_column(_collective, "time", "0.00"), f"{LOG_NAME} line 33: out-of-place time is 0.00; "
                 f"{VALID_TIME}", id="collective-zero-time-was-ZeroDivisionError"),
    pytest.param(_bad_column(_calibrate, "time", "nan"), "line 33: out-of-place time is nan;", id="calibrate-nan-time"),
    pytest.param(_bad_column(_collective, "time", "-nan"), "line 33: out-of-place time is -nan;",
                 id="collective-nan-time"),
    pytest.param(_bad_column(_calibrate, "time", "-72.53"), "line 33: out-of-place time is -72.53;",
                 id="calibrate-negative-time"),
    pytest.param(_bad_column(_collective, "time", "-72.53"), "line 33: out-of-place time is -72.53;",
                 id="collective-negative-time"),
    pytest.param(_bad_column(_calibrate, "time", "inf"), "line 33: out-of-place time is inf;", id="calibrate-inf-time"),
    pytest.param(_bad_column(_calibrate, "time", "N/A"), "line 33: out-of-place time is N/A;", id="calibrate-na-time"),
    pytest.param(_bad_column(_calibrate, "in-place time", "0"), f"line 33: in-place time is 0; {VALID_TIME} or N/A",
                 id="calibrate-zero-in-place-time"),
    pytest.param(_bad_column(_calibrate, "algbw", "-14.46"), f"line 33: out-of-place algbw is -14.46; {VALID_BW}",
                 id="calibrate-negative-algbw"),
    pytest.param(_bad_column(_collective, "busbw", "inf"), f"line 33: out-of-place busbw is inf; {VALID_BW}",
                 id="collective-inf-busbw"),
    pytest.param(_bad_column(_calibrate, "in-place busbw", "nan"), f"line 33: in-place busbw is nan; {VALID_BW}",
                 id="calibrate-nan-in-place-busbw"),
    pytest.param(_bad_column(_calibrate, "size", "-1048576"), "line 33: size is -1048576; it must be an integer >= 0",
                 id="calibrate-negative-size"),
    pytest.param(_bad_column(_collective, "count", "-262144"), "line 33: count is -262144; it must be an integer >= 0",
                 id="collective-negative-count"),
    pytest.param(lambda d: _collective(_log(d, _header_ngpus("0")[:1] + ["#  size count type redop time algbw busbw "
                                                                          "error time algbw busbw error"] + REAL[15:])),
                 "line 1: nGpus is 0; it must be an integer >= 1", id="collective-zero-ngpus"),
    # nccl-tests logs: repeated rows (nccl-tests -N, appended runs) that conflict
    pytest.param(lambda d: _calibrate(_log(d, REAL + _retimed(REAL, 150.0))),
                 f"{LOG_NAME} line {len(REAL) + ROW}: size 1048576 (float sum) has time 150 us but "
                 f"{'{}'} line 33 has 72.53 us, 107% slower; {REPEAT}", id="calibrate-conflicting-repeat"),
    pytest.param(lambda d: _collective(_log(d, REAL + _retimed(REAL, 55.0))),
                 "line 33: size 1048576 (float sum) has time 72.53 us but", id="collective-conflicting-repeat"),
    pytest.param(lambda d: _calibrate(_log(d / "a", REAL), _log(d / "b", _retimed(REAL, 150.0))),
                 f"b/{LOG_NAME} line 33: size 1048576 (float sum) has time 150 us but", id="calibrate-conflicting-logs"),
    pytest.param(lambda d: _collective(_log(d, REAL + REAL_2GPU)),
                 f"line {len(REAL) + 1}: this run is on 2 ranks but the one at line 1 is on 8",
                 id="collective-runs-on-other-rank-counts"),
    # nccl-tests logs: columns that disagree with each other (simulator.calibrate.nccl_consistency)
    pytest.param(_bad_column(_calibrate, "time", "1e-300"), "line 33: algbw 14.46 GB/s but size / time = 1,048,576 B / "
                 "1e-300 us = 1.049e+303 GB/s; algbw is the size over the time", id="calibrate-tiny-time-was-230-TBps"),
    pytest.param(_bad_column(_calibrate, "size", str(2**60)), f"line 33: size {2**60:,} bytes is over the largest size "
                 f"tpsim takes", id="calibrate-size-2-to-the-60-was-fitted"),
    pytest.param(_bad_column(_collective, "size", "1048577"), "line 33: size 1,048,577 is not count 262,144 x 4 bytes "
                 "(float) = 1,048,576 (or 8,388,608 for one rank's share of 8); the row's columns disagree",
                 id="collective-size-not-count-times-type"),
    pytest.param(_bad_column(_calibrate, "busbw", "99.00"), "line 33: busbw 99 GB/s but size / time x 1.75 (all_reduce "
                 "on 8 ranks) = 25.3 GB/s; the rank count or a bandwidth is wrong", id="calibrate-busbw-off"),
    pytest.param(lambda d: _collective(_log(d, _header_ngpus("100000000"))), f"{LOG_NAME} line 1: nGpus is 100000000, "
                 "but the run is on 8 ranks; nGpus counts the GPUs one process drives, at most the ranks",
                 id="collective-ngpus-1e8-was-plus-592858027-percent"),
    pytest.param(lambda d: [*_calibrate(_log(d, REAL)), "--holdout-sizes", "0"], "--holdout-sizes: no sample of size "
                 "0B to hold out; the fitted samples have sizes 1MiB, 2MiB", id="calibrate-holdout-size-0"),
    pytest.param(lambda d: [*_calibrate(_log(d, REAL)), "--holdout-ranks", "4"], "--holdout-ranks: no sample of rank "
                 "count 4 to hold out; the fitted samples have rank counts 8", id="calibrate-holdout-ranks-absent"),
    pytest.param(lambda d: ["calibrate", "--from-nccl-tests", _log(d, REAL), "--topology", "a100-4gpu:2"],
                 "(nvlink): bandwidth_GBps 1830 is 18.30x its published peak 100 GB/s (at most 10% over it)",
                 id="calibrate-8-gpu-log-on-a-4-gpu-server-over-the-peak"),
    # measured records (tpsim run --json) read by compare
    pytest.param(_measured(lambda r: r.update(time_s=float("nan"))),
                 "measured.json: time_s: expected a finite number of seconds > 0, got nan", id="compare-nan-time"),
    pytest.param(_measured(lambda r: r.update(time_s=-1e-6)), "time_s: expected a finite number of seconds > 0, "
                 "got -1e-06", id="compare-negative-time-was-minus-342858-percent"),
    pytest.param(_measured(lambda r: r.update(time_s=0)), "time_s: expected a finite number of seconds > 0, got 0",
                 id="compare-zero-time-was-ZeroDivisionError"),
    pytest.param(_measured(lambda r: r.update(time_s=float("inf"))), "got inf", id="compare-inf-time"),
    pytest.param(_measured(lambda r: r.update(time_s=1e308)), "measured.json: time_s: 1e+308 s is longer than any "
                 "measured run (at most 1e+06 s, 11.6 days)", id="compare-time-1e308-was-a-png-traceback"),
    pytest.param(_measured(lambda r: r["iterations"][0].update(time_s=float("nan"))),
                 "iterations[0] time_s: expected a finite number of seconds > 0, got nan", id="compare-nan-iteration"),
    pytest.param(_measured(lambda r: r["iterations"][0]["rank_time_s"].__setitem__(2, -1.0)),
                 "iterations[0] rank_time_s[2]: expected a finite number of seconds >= 0, got -1.0",
                 id="compare-negative-rank-time"),
    pytest.param(_op("duration_s", -5.0), "ops[0] duration_s: expected a finite number of seconds >= 0, got -5.0",
                 id="compare-negative-op-duration"),
    pytest.param(_op("duration_s", float("nan")), "ops[0] duration_s: expected a finite number of seconds >= 0, "
                 "got nan", id="compare-nan-op-duration"),
    pytest.param(_op("start_s", float("-inf")), "ops[0] start_s: expected a finite clock reading in seconds, got -inf",
                 id="compare-inf-op-start"),
    pytest.param(_op("rank", 9), "ops[0] rank: expected a rank 0..3 (world_size 4), got 9", id="compare-op-rank"),
    pytest.param(_op("step", 999), "ops[0] is rank 0 step 999, but rank 0's program has steps 0..", id="compare-op-step"),
    pytest.param(_measured(lambda r: r.update(clock_origins_s=[0.0, float("nan"), 0.0, 0.0])),
                 "clock_origins_s[1]: expected a finite clock reading in seconds, got nan", id="compare-nan-origin"),
    pytest.param(_measured(lambda r: r.update(world_size=8, clock_origins_s=None)),
                 "world_size is 8 but its schedule has 4 ranks",
                 id="compare-world-size"),
    # bench records read by calibrate
    pytest.param(_bench({"op": "all_reduce", "ranks": 2, "bytes": 1024, "time_s": float("nan")}),
                 "bench.json: rows[0]: CollectiveSample.time_s must be a finite number > 0, got nan",
                 id="calibrate-bench-nan-time"),
    pytest.param(_bench({"op": "gemm", "m": 8, "k": 8, "n": 8, "dtype": "float32", "concurrent": 1, "time_s": -1.0}),
                 "rows[0]: GemmSample.time_s must be a finite number > 0, got -1.0", id="calibrate-bench-negative-gemm"),
    # --algo-override
    pytest.param(_with_outputs([*PREDICT, "--algo-override", "all_reduce=ring", "--algo-override", "all_reduce=direct"]),
                 "--algo-override 'all_reduce=direct' conflicts with all_reduce=ring given before; give all_reduce "
                 "one algorithm, one of ring, double_binary_tree, binomial_tree, direct", id="predict-override-conflict"),
    pytest.param(_with_outputs([*SIMULATE, "--algo-override", "broadcast=chain", "--algo-override",
                                "broadcast=binomial_tree"]),
                 "conflicts with broadcast=chain given before", id="simulate-override-conflict"),
    pytest.param(_with_outputs([*PREDICT, "--algo-override", "alltoall=ring"]),
                 "unknown collective kind 'alltoall'; valid: broadcast, reduce, all_reduce", id="override-unknown-kind"),
    pytest.param(_with_outputs([*SIMULATE, "--algo-override", "all_reduce=tree"]),
                 "all_reduce has no algorithm 'tree'; valid: ring, double_binary_tree", id="override-unknown-algo"),
    pytest.param(_with_outputs([*PREDICT, "--algo-override", "ring"]), "expected KIND=ALGO", id="override-no-kind"),
    # --placement
    pytest.param(_with_outputs([*PREDICT, "--algos", "1d", "--placement", "bogus"]),
                 '--placement bogus: unknown placement "bogus"; valid: linear, depth-major, column-major, all, or a '
                 'file of GPU indices', id="predict-unknown-placement-was-ignored-for-1d"),
    pytest.param(_with_outputs([*SIMULATE, "--placement", "bogus"]),
                 'unknown placement "bogus"; valid: linear, depth-major, column-major, or a file',
                 id="simulate-unknown-placement"),
    pytest.param(_with_outputs([*SIMULATE, "--placement", "all"]), 'unknown placement "all"',
                 id="simulate-placement-all"),
    pytest.param(_plus(_placement_file("0 1 2\n", PREDICT), "--csv", "predict.csv"),
                 "placement file placement.txt lists 3 GPUs for world size 8",
                 id="predict-placement-file-count-was-a-skip-per-row"),
    pytest.param(_plus(_placement_file("0 0 1 2\n", SIMULATE), "--trace", "trace.json"),
                 "placement file placement.txt: GPU 0 is given to ranks 0 and 1",
                 id="simulate-placement-file-twice"),
    pytest.param(_with_outputs([*PREDICT, "--placement", "missing.txt"]), "placement file missing.txt: No such file",
                 id="predict-placement-file-missing"),
]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# The file each command would write, which the "existing" rows create beforehand (collective writes none).
OUTPUT = {"calibrate": "calibrated.yaml", "compare": "trace.json", "simulate": "trace.json", "predict": "predict.csv"}
ROWS = [pytest.param(*case.values, existing, id=f"{case.id}{'-over-existing' if existing else ''}")
        for case in CASES for existing in (False, True)
        if not existing or not case.id.startswith("collective")]


@pytest.mark.parametrize("make, message, existing", ROWS)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch, request, make, message,
                                                         existing):
    monkeypatch.chdir(tmp_path)
    # Progress lines come by the wall clock (one every 10 s): a row that fits before refusing (the 8-GPU log on
    # 4-GPU servers, about 5 s of CPU) printed one on a loaded host. What each row holds is its refusal's line.
    monkeypatch.setattr("simulator.progress.INTERVAL_S", float("inf"))
    argv = make(tmp_path, request.getfixturevalue("record")) if getattr(make, "needs_record", False) else make(tmp_path)
    if argv[0] == "calibrate":
        argv = [*argv, "-o", str(tmp_path / OUTPUT["calibrate"])]
    if existing:
        (tmp_path / OUTPUT[argv[0]]).write_text("an earlier output\n")
    before = _files(tmp_path)
    status, stdout, stderr = run(capsys, *argv)
    message = message.replace("{}", os.path.join(str(tmp_path), LOG_NAME))  # a message naming the log by path
    assert status == 2, stderr
    assert stdout == "" and "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tpsim {argv[0]}: error: "), stderr
    assert message in lines[0], lines[0]
    assert _files(tmp_path) == before  # nothing created (no temporary file either), nothing changed


# -- refused before any work ------------------------------------------------------------------------------

def _never(*_args, **_kwargs):
    raise AssertionError("called after a bad --placement")


def test_predict_refuses_a_bad_placement_before_simulating_any_arrangement(capsys, monkeypatch):
    monkeypatch.setattr("simulator.commands.predict.predict", _never)
    status, _, err = run(capsys, *PREDICT, "--placement", "bogus")
    assert status == 2 and 'unknown placement "bogus"' in err


def test_simulate_refuses_a_bad_placement_before_building_the_schedule(capsys, monkeypatch):
    monkeypatch.setattr("simulator.commands.simulate.schedule_from_args", _never)
    status, _, err = run(capsys, *SIMULATE, "--placement", "bogus")
    assert status == 2 and 'unknown placement "bogus"' in err


def test_compare_refuses_a_bad_record_before_simulating(tmp_path, capsys, monkeypatch, record):
    monkeypatch.setattr("simulator.compare.measured.simulate", _never)
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(dict(record, time_s=float("nan"))))
    status, _, err = run(capsys, "compare", str(path), "--topology", "loopback:4")
    assert status == 2 and "time_s: expected a finite number of seconds > 0, got nan" in err


# -- what stays accepted ----------------------------------------------------------------------------------

def test_agreeing_repeats_are_merged_into_the_median_row(tmp_path):
    # Three cycles (nccl-tests -N 3) of the 1 MiB row, 72.53, 80.0 and 75.0 us: within 25%, the median kept.
    cycles = REAL + _retimed(REAL, 80.0) + _retimed(REAL, 75.0)
    log = parse_nccl_tests(_log(tmp_path, cycles))
    assert [row.size_bytes for row in log.rows] == [8 << k for k in range(28)] and log.n_ranks == 8
    row = next(r for r in log.rows if r.size_bytes == 1 << 20)
    assert row.time_us == 75.0 and row.where.endswith(f"line {2 * len(REAL) + ROW}")


def test_the_same_log_given_twice_calibrates_as_once(tmp_path):
    once = samples_from_nccl_tests([LOGS / LOG_NAME])
    twice = samples_from_nccl_tests([LOGS / LOG_NAME, _log(tmp_path, REAL)])
    assert twice == once


def test_the_real_logs_still_read_and_in_place_na_is_fine(tmp_path):
    for n in (2, 4, 8):
        assert len(parse_nccl_tests(str(LOGS / f"all_reduce_perf_{n}gpu.log")).rows) == 28
    lines = _changed(_changed(REAL, "in-place time", "N/A"), "in-place busbw", "N/A")
    assert parse_nccl_tests(_log(tmp_path, lines)).rows[ROW - 16].inplace_time_us is None


def test_the_same_override_twice_is_fine(capsys):
    status, out, err = run(capsys, *SIMULATE, "--algo-override", "all_reduce=ring", "--algo-override",
                                     "all_reduce=ring")
    assert status == 0 and err == "" and out


# -- bench: the root cause before the busy-host warning ---------------------------------------------------

KILLER = """
import os, signal, sys, time
import executor.bench
from simulator.cli import main

def killed_rank_1(cases, options, rdv, report):
    if rdv.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(30)  # rank 0 waits to be stopped by the launcher

os.getloadavg = lambda: (99.0, 99.0, 99.0)  # a busy host, whatever this one is doing
executor.bench.bench_rank = killed_rank_1
sys.exit(main(["bench", "--nproc", "2", "--ops", "all_reduce", "--sizes", "1KiB", "--timeout", "20"]))
"""


def test_bench_names_a_killed_rank_before_the_load_warning():
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", KILLER], capture_output=True, text=True, timeout=60, env=env)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert lines[0].startswith("tpsim bench: rank 1 was killed by SIGKILL (signal 9)"), done.stderr
    assert "load average 99.00" in lines[-1] and "timings will be noisy" in lines[-1]
