"""Faults end the whole job quickly with the real cause first; nothing hangs, nothing is half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from executor_cases import make  # noqa: E402

from executor.faults import Fault  # noqa: E402
from executor.heartbeat import SILENT_AFTER_S, process_state  # noqa: E402
from executor.job_report import timeout_report  # noqa: E402
from executor.progress import ProgressBoard  # noqa: E402
from executor.launch import JobFailed, run_local  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.cli import main  # noqa: E402


def _fail(schedule, nproc, fault, timeout_s=30.0) -> JobFailed:
    # "Quickly" is held by the reason, not a stopwatch: a job that waited for its --timeout says "timeout",
    # one stopped at the first failure says "error" (wall-clock bounds flake on a loaded host).
    with pytest.raises(JobFailed) as info:
        run_local([schedule], RunOptions(warmup=1, iters=2, timeout_s=timeout_s, fault=fault), nproc)
    return info.value


def test_a_rank_raising_mid_schedule_fails_the_job_at_once_with_its_traceback():
    failure = _fail(make("summa25d", "gemm", "both"), 8, Fault(5, 6))
    assert failure.reason == "error" and failure.ranks[0] == 5
    report = failure.report
    assert report.startswith("rank 5 failed first; the other ranks were stopped. Its traceback:\nTraceback")
    assert "RuntimeError: injected fault on rank 5 at step 6 (test hook --inject-fault)" in report
    assert "Connection closed" not in report.split("RuntimeError: injected fault")[0]


def test_a_rank_killed_by_a_signal_mid_schedule_is_named_first():
    # Rank 5 dies without a word (SIGKILL, as the out-of-memory killer sends); its peers fail with
    # "Connection closed" errors of their own, which must not hide it.
    failure = _fail(make("summa25d", "gemm", "both"), 8, Fault(5, 6, "kill"))
    assert failure.reason == "error" and failure.ranks[0] == 5
    assert failure.report.startswith("rank 5 was killed by SIGKILL (signal 9) without a Python traceback")


def test_a_rank_that_hangs_mid_schedule_is_named_at_the_timeout():
    schedule = make("2d", "mlp", "fwd")
    failure = _fail(schedule, 4, Fault(2, 3, "hang"), timeout_s=2.0)
    assert failure.reason == "timeout" and failure.ranks == [2]
    first = failure.report.splitlines()[0]
    assert first == ("timed out after 2 s (--timeout): rank 2 never arrived: it is busy in its own code at "
                     f"iteration 0 step 3 ({schedule.programs[2][3].short()})")
    assert "waiting for them: ranks 0, 1, 3" in failure.report


def test_a_rank_stopped_by_sigstop_mid_communication_is_named_at_the_timeout():
    # Stopped from outside while its row says "communicating", as its blocked peers' rows do: only its
    # heartbeat (and its process state) tells it apart. Many iterations, so the job cannot end first.
    schedule = make("2d", "mlp", "fwd")
    stopped = []

    def stop_rank_2(board):
        if not stopped and board.state(2)[0] == "communicating" and board.pids[2] > 0:
            stopped.append(int(board.pids[2]))
            os.kill(stopped[0], signal.SIGSTOP)

    with pytest.raises(JobFailed) as info:
        run_local([schedule], RunOptions(warmup=1, iters=100_000, timeout_s=4.0), 4, on_poll=stop_rank_2)
    failure = info.value
    assert stopped and failure.reason == "timeout" and failure.ranks == [2], failure.report
    first = failure.report.splitlines()[0]
    assert first.startswith("timed out after 4 s (--timeout): rank 2 stopped responding: it is stopped (process "
                            "state T, what SIGSTOP or SIGTSTP leave), no heartbeat for "), first
    assert "no rank is missing" not in failure.report
    assert "waiting for them: ranks 0, 1, 3" in failure.report
    assert process_state(stopped[0]) is None  # stopped ranks are killed and reaped like the others


def test_the_timeout_report_names_a_stopped_and_a_frozen_rank_among_waiting_ones():
    schedule = make("1d", "gemm", "fwd")  # 4 ranks
    board = ProgressBoard(4)
    for rank in range(4):
        board.update(rank, "communicating", 0, 0, 0)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(sleeper.pid, signal.SIGSTOP)
        while process_state(sleeper.pid) != "T":  # the signal is delivered asynchronously
            time.sleep(0.01)
        now = time.monotonic_ns()
        board.pids[:] = [os.getpid(), sleeper.pid, os.getpid(), os.getpid()]
        board.beats[:] = [now, now - int(0.5e9), now - int((SILENT_AFTER_S + 3) * 1e9), now]
        report, reason, ranks = timeout_report([0, 1, 2, 3], [schedule], RunOptions(timeout_s=9.0), board)
    finally:
        sleeper.kill()
        sleeper.wait()
    op = schedule.programs[1][0].short()
    assert (reason, ranks) == ("timeout", [1, 2])
    lines = report.splitlines()
    assert lines[0].startswith(f"timed out after 9 s (--timeout): rank 1 stopped responding: it is stopped (process "
                               f"state T, what SIGSTOP or SIGTSTP leave), no heartbeat for 0.5 s; it was "
                               f"communicating at iteration 0 step 0 ({op}); rank 2 stopped responding: no "
                               f"heartbeat for {SILENT_AFTER_S + 3:.1f} s (frozen, or hung in code that holds the "
                               f"interpreter lock)"), lines[0]
    assert lines[1].startswith("waiting for them: ranks 0, 3 (rank 0 communicating")


def test_a_rank_that_never_reaches_the_rendezvous_is_named_at_the_timeout():
    failure = _fail(make("1d", "gemm", "fwd"), 4, Fault(3, None, "hang"), timeout_s=2.0)
    assert failure.reason == "timeout" and failure.ranks == [3]
    assert "rank 3 never arrived: it is starting (before the rendezvous)" in failure.report
    assert "ranks 0, 1, 2 (rank 0 rendezvous" in failure.report


def test_tpsim_run_exits_1_with_the_traceback_first_and_leaves_outputs_alone(tmp_path, capsys):
    old = tmp_path / "out.json"
    old.write_text('{"previous": true}\n')
    status = main(["run", "--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "16", "--k", "8",
                   "--n", "8", "--backend", "gloo", "--nproc", "4", "--inject-fault", "1:2",
                   "--out", str(old), "--trace", str(tmp_path / "trace.json")])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("tpsim run: rank 1 failed first; the other ranks were stopped. Its traceback:\nTraceback")
    assert old.read_text() == '{"previous": true}\n' and not (tmp_path / "trace.json").exists()
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no temporary files left either


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_killing_tpsim_run_kills_its_ranks_and_writes_nothing(tmp_path):
    out = tmp_path / "out.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator.cli", "run", "--algo", "1d", "--gpus", "4", "--workload", "gemm",
         "--m", "16", "--k", "8", "--n", "8", "--nproc", "4", "--timeout", "120", "--inject-fault", "0:0:hang",
         "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        ranks = _children(proc.pid)
        assert len(ranks) == 4, "the ranks never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in ranks if os.path.exists(f"/proc/{pid}") and _alive(pid)], "ranks outlived tpsim"
        assert not out.exists() and os.listdir(tmp_path) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
