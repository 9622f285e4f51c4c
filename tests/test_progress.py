"""simulator.progress: plain lines on a non-terminal stderr for slow work only, a tqdm bar on a terminal."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import simulator.progress
from simulator.cli import main
from simulator.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^fake: (\d+)/5 items, \d+ s$")


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, as Progress asks before drawing a bar."""

    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_slow_loop_on_a_non_terminal_prints_lines():
    stream = io.StringIO()
    with Progress("fake", total=5, unit="item", stream=stream, interval_s=0.05) as bar:
        for _ in range(5):
            time.sleep(0.06)
            bar.update()
    lines = stream.getvalue().splitlines()
    assert lines and all(LINE.match(line) for line in lines), lines
    counts = [int(LINE.match(line).group(1)) for line in lines]
    assert counts == sorted(counts) and counts[-1] <= 5


def test_a_fast_loop_prints_nothing():
    stream = io.StringIO()
    with Progress("fake", total=5, unit="item", stream=stream, interval_s=10.0) as bar:
        for _ in range(5):
            bar.update()
    assert stream.getvalue() == ""


def test_one_long_step_still_reports_from_the_background_thread():
    stream = io.StringIO()
    with Progress("fake", what="waiting for the fake", stream=stream, interval_s=0.05):
        time.sleep(0.3)
    lines = stream.getvalue().splitlines()
    assert lines and all(re.fullmatch(r"fake: waiting for the fake, \d+ s", line) for line in lines), lines


def test_nothing_is_written_after_close():
    stream = io.StringIO()
    bar = Progress("fake", what="x", stream=stream, interval_s=0.01)
    bar.close()
    written = stream.getvalue()
    time.sleep(0.05)
    bar.tick()
    assert stream.getvalue() == written


def test_lines_from_a_polling_caller_follow_the_interval_exactly():
    clock, stream = _Clock(), io.StringIO()
    bar = Progress("tpsim run", total=6, unit="iteration", note="timeout 300 s", stream=stream, interval_s=10,
                   background=False, clock=clock)
    clock.now += 9.9
    bar.moveto(2)
    assert stream.getvalue() == ""  # not yet 10 s
    clock.now += 0.2
    bar.tick()
    clock.now += 5
    bar.moveto(3)  # 5 s after the last line: none
    clock.now += 5
    bar.moveto(4)
    phases = Progress("tpsim simulate", what="building the schedule", stream=stream, interval_s=10,
                      background=False, clock=clock)
    clock.now += 11
    phases.phase("simulating 8 ranks")
    phases.tick()
    bar.close()
    phases.close()
    assert stream.getvalue().splitlines() == ["tpsim run: 2/6 iterations, 10 s (timeout 300 s)",
                                              "tpsim run: 4/6 iterations, 20 s (timeout 300 s)",
                                              "tpsim simulate: simulating 8 ranks, 11 s"]


def test_a_terminal_gets_a_tqdm_bar_and_no_plain_lines():
    terminal = _Terminal()
    with Progress("fake", total=5, unit="item", stream=terminal, interval_s=0.01) as bar:
        for _ in range(5):
            time.sleep(0.02)
            bar.update()
    drawn = terminal.getvalue()
    assert "/5 " in drawn and "item" in drawn and "\r" in drawn  # tqdm's "n/5 [...]", redrawn in place
    assert "fake:" not in drawn


def test_a_terminal_heartbeat_shows_what_and_the_elapsed_time():
    terminal = _Terminal()
    with Progress("fake", what="simulating 8 ranks", stream=terminal):
        time.sleep(0.05)
    assert "simulating 8 ranks 00:00" in terminal.getvalue()


def test_tqdm_is_not_imported_off_a_terminal():
    code = ("import io, sys\n"
            "from simulator.cli import build_parser\n"
            "build_parser()\n"
            "from simulator.progress import Progress\n"
            "Progress('x', 3, 'y', stream=io.StringIO()).close()\n"
            "assert 'tqdm' not in sys.modules, 'tqdm imported'\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def every_update(monkeypatch):
    """Progress lines at every chance (INTERVAL_S ~ 0), so that a fast command shows its wiring."""
    monkeypatch.setattr(simulator.progress, "INTERVAL_S", 1e-9)


def test_predict_reports_arrangements_when_slow(capsys, every_update):
    status = main(["predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "gemm", "--m", "64",
                   "--k", "32", "--n", "32"])
    out, err = capsys.readouterr()
    assert status == 0 and out.startswith("tpsim predict:")
    lines = err.splitlines()
    assert lines and all(re.fullmatch(r"tpsim predict: \d/6 arrangements, \d+ s", line) for line in lines), lines


def test_simulate_says_what_it_is_doing_when_slow(capsys, every_update):
    status = main(["simulate", "--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "64", "--k", "32",
                   "--n", "32", "--topology", "a100-4gpu"])
    out, err = capsys.readouterr()
    assert status == 0 and "makespan" in out
    lines = err.splitlines()
    assert any(re.fullmatch(r"tpsim simulate: simulating 4 ranks, 72 ops, \d+ s", line) for line in lines), lines
    assert all(line.startswith("tpsim simulate: ") for line in lines), err


def test_fast_commands_keep_stderr_empty(capsys):
    status = main(["predict", "--gpus", "4", "--topology", "dgx-a100", "--workload", "gemm", "--m", "64",
                   "--k", "32", "--n", "32"])
    assert status == 0 and capsys.readouterr().err == ""
    status = main(["simulate", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "16", "--k", "8",
                   "--n", "4", "--topology", "a100-4gpu"])
    assert status == 0 and capsys.readouterr().err == ""


class _Host:
    """A fake host for experiments.quiet_host: ``busy`` cores for each successive one-second window."""

    def __init__(self, busy: list[float]):
        self.busy, self.now = list(busy), 0.0

    def busy_cores(self, window_s: float = 1.0) -> float:
        self.now += window_s
        return self.busy.pop(0) if self.busy else 0.0

    def monotonic(self) -> float:
        return self.now


def _wait(monkeypatch, caplog, busy, **kwargs):
    import types

    import experiments.quiet_host as quiet_host

    host = _Host(busy)
    monkeypatch.setattr(quiet_host, "busy_cores", host.busy_cores)
    monkeypatch.setattr(quiet_host, "time", types.SimpleNamespace(monotonic=host.monotonic))
    with caplog.at_level("INFO", logger="experiments.quiet_host"):
        waited = quiet_host.wait_until_quiet(0.1, **kwargs)
    return waited, [record.getMessage() for record in caplog.records]


WAITING = re.compile(r"waiting for a quiet host: (\d\.\d\d) cores busy now \(load average \d+\.\d\d\), need <= 0\.10 "
                     r"for 3 s in a row \((\d) so far\); waited (\d+) s of at most (\d+) s")


def test_the_quiet_host_wait_says_what_it_waits_for_every_10_s(monkeypatch, caplog):
    waited, messages = _wait(monkeypatch, caplog, [0.9] * 24 + [0.05, 0.5], timeout_s=900)
    assert waited == 29
    found = [WAITING.fullmatch(m) for m in messages[:-1]]
    assert all(found), messages
    assert [(f.group(1), f.group(3), f.group(4)) for f in found] == [("0.90", "10", "900"), ("0.90", "20", "900")]
    assert messages[-1] == "host quiet after 29 s"


def test_a_quick_quiet_host_wait_logs_nothing(monkeypatch, caplog):
    waited, messages = _wait(monkeypatch, caplog, [0.9, 0.0, 0.0, 0.0], timeout_s=900)
    assert waited == 4 and messages == []


def test_a_host_that_never_quietens_is_given_up_on_with_a_warning(monkeypatch, caplog):
    waited, messages = _wait(monkeypatch, caplog, [0.7] * 100, timeout_s=25)
    assert waited == 26
    assert len(messages) == 3 and all(WAITING.fullmatch(m) for m in messages[:2])
    assert messages[-1] == "host still busy (0.70 cores) after 25 s; measuring anyway"


def test_the_board_counts_what_the_slowest_rank_has_finished():
    from executor.progress import ProgressBoard

    board = ProgressBoard(2)
    assert board.completed(6, 2) == 0  # both starting
    board.update(0, "computing", 1, 3, 7)  # schedule 1, iteration 3: 6 + 3 done
    board.update(1, "checking", 0)  # schedule 0 finished: 6
    assert board.completed(6, 2) == 6
    board.update(1, "communicating", 1, 0, 0)
    assert board.completed(6, 2) == 6
    board.update(1, "gathering results", 1)
    board.update(0, "done")
    assert board.completed(6, 2) == 12
    board.update(0, "gathering results")  # tpsim bench: after the last case, no schedule index
    board.update(1, "communicating", 3, 0, 0)  # tpsim bench: in case 3 of 5, three done
    assert board.completed(1, 5) == 3


def test_run_counts_iterations_when_slow(capsys, every_update):
    pytest.importorskip("torch")
    status = main(["run", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "16", "--k", "8", "--n", "8",
                   "--nproc", "2", "--iters", "3"])
    out, err = capsys.readouterr()
    assert status == 0 and "correct" in out
    lines = err.splitlines()
    assert lines and all(re.fullmatch(r"tpsim run: \d/4 iterations(, checking the results)?, \d+ s \(--timeout 300\)",
                                      line) for line in lines), lines
