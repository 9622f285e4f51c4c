"""executor.scratch: a launcher's folder records its owner; the next launcher sweeps the folders of dead ones."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from executor.scratch import OWNER, PREFIX, make_folder, owner_of, sweep_stale

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped (reuse within the test is all but impossible)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _folder(directory: Path, name: str, owner: str | None) -> Path:
    folder = directory / f"{PREFIX}{name}"
    folder.mkdir()
    (folder / "rank0.log").write_text("log\n")
    if owner is not None:
        (folder / OWNER).write_text(owner)
    return folder


def test_a_dead_launchers_folder_goes_and_a_live_ones_stays(tmp_path):
    host = socket.gethostname()
    stale = _folder(tmp_path, "stale", f"{_dead_pid()} {host}\n")
    live = _folder(tmp_path, "live", f"{os.getppid()} {host}\n")
    mine = _folder(tmp_path, "mine", f"{os.getpid()} {host}\n")
    elsewhere = _folder(tmp_path, "elsewhere", f"{_dead_pid()} {host}-not-this-one\n")
    unknown = _folder(tmp_path, "unknown", None)  # no owner yet (being made), or an older tpsim's
    garbled = _folder(tmp_path, "garbled", "pid?\n")
    other = tmp_path / "other-folder"
    other.mkdir()
    assert sweep_stale(str(tmp_path)) == [str(stale)]
    assert not stale.exists()
    assert all(p.exists() for p in (live, mine, elsewhere, unknown, garbled, other))


def test_a_link_named_like_a_folder_is_not_followed(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / OWNER).write_text(f"{_dead_pid()} {socket.gethostname()}\n")
    (tmp_path / f"{PREFIX}link").symlink_to(target)
    assert sweep_stale(str(tmp_path)) == []
    assert (target / OWNER).exists()


@pytest.mark.skipif(os.getuid() != 0, reason="making another user's folder needs root")
def test_another_users_folder_stays(tmp_path):
    theirs = _folder(tmp_path, "theirs", f"{_dead_pid()} {socket.gethostname()}\n")
    os.chown(theirs, 54321, 54321)
    assert sweep_stale(str(tmp_path)) == [] and theirs.exists()


def test_make_folder_records_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() reads TMPDIR again
    folder = make_folder()
    assert Path(folder).parent == tmp_path and Path(folder).name.startswith(PREFIX)
    assert owner_of(folder) == (os.getpid(), socket.gethostname())
    assert sweep_stale(str(tmp_path)) == [] and os.path.isdir(folder)  # ours, and we are alive


def test_the_next_run_sweeps_the_folder_a_killed_run_left(tmp_path):
    pytest.importorskip("torch")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = [sys.executable, "-m", "simulator.cli", "run", "--algo", "1d", "--gpus", "2", "--workload", "gemm",
           "--m", "16", "--k", "8", "--n", "8", "--nproc", "2"]
    proc = subprocess.Popen([*run, "--timeout", "120", "--inject-fault", "0:0:hang"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(f"{PREFIX}*/rank1.log")) and time.monotonic() < deadline:
            time.sleep(0.05)
        [left] = list(tmp_path.glob(f"{PREFIX}*"))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert left.exists() and owner_of(str(left))[0] == proc.pid  # SIGKILL: no cleanup ran
    done = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not left.exists() and list(tmp_path.glob(f"{PREFIX}*")) == []
