"""A sweep killed half-way resumes where it stopped and ends with the same file as one never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from simulator.cli import main
from tests.cli_run import run

# 6 plans of gpt3-125m on one and two DGX A100s; dgx-a100:1 with 16 GPUs is a refused combination.
SPEC = """\
axes:
  topology: [dgx-a100:1, dgx-a100:2]
  gpus: [2, 16]
  global-batch: [8, 16]
fixed:
  model: gpt3-125m
  tp-sizes: "1,2"
  simulate-top: 1
"""
PLANS = 8


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """(spec path, the uninterrupted sweep's file as bytes), run once in this process."""
    folder = tmp_path_factory.mktemp("sweep")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    assert main(["sweep", str(spec), "--out", str(folder / "full.csv")]) == 0
    return spec, (folder / "full.csv").read_bytes()


def test_the_uninterrupted_file_is_sorted_and_whole(full):
    _, data = full
    lines = data.decode().splitlines()
    assert len(lines) == 1 + PLANS and data.endswith(b"\n")
    assert [line.split(",")[0] for line in lines] == ["plan"] + [str(i) for i in range(PLANS)]
    statuses = [line.split(",")[8] for line in lines[1:]]  # plan, 3 axes, model, tp_sizes (quoted "1,2": 2 cells)
    assert statuses == ["ok", "ok", "refused", "refused", "ok", "ok", "ok", "ok"]


@pytest.mark.parametrize("cut", ["between rows", "mid-row"])
def test_a_stopped_sweep_resumes_to_the_same_file(full, tmp_path, capsys, cut):
    spec, data = full
    header, *rows = data.decode().splitlines(keepends=True)
    # As a sweep killed after three rows would leave it: rows in the order plans finished, maybe half a fourth.
    partial = header + rows[5] + rows[0] + rows[3] + (rows[6][:len(rows[6]) // 2] if cut == "mid-row" else "")
    out = tmp_path / "rows.csv"
    out.write_text(partial)
    status, stdout, err = run(capsys, "sweep", spec, "--out", out, "--workers", "2")
    assert (status, err) == (0, "")
    assert "8 plans (2 topology x 2 gpus x 2 global-batch), 3 done, 5 to run on 2 local processes" in stdout
    assert out.read_bytes() == data
    status, stdout, _ = run(capsys, "sweep", spec, "--out", out, "--resume")  # done: nothing to run, same file
    assert status == 0 and "8 done, 0 to run" in stdout and out.read_bytes() == data


def test_a_killed_sweep_resumes_to_the_same_file(full, tmp_path, capsys):
    spec, data = full
    out = tmp_path / "rows.csv"
    child = subprocess.Popen([sys.executable, "-m", "simulator.cli", "sweep", str(spec), "--out", str(out),
                              "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        while child.poll() is None and (not out.exists() or out.read_bytes().count(b"\n") < 2):
            time.sleep(0.01)  # until the header and one row are on disk
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the sweep and its workers, as a kill -9 of the job would
        except ProcessLookupError:  # it had finished already: the rerun below then has nothing to do
            pass
        child.wait()
    left = out.read_bytes()
    assert left.startswith(data.splitlines(keepends=True)[0]) and left.count(b"\n") >= 2
    status, stdout, _ = run(capsys, "sweep", spec, "--out", out)
    done = int(stdout.split(" done,")[0].rsplit(" ", 1)[1])
    assert status == 0 and done >= 1 and out.read_bytes() == data


def test_another_sweeps_file_is_refused_not_mixed(full, tmp_path, capsys):
    spec, data = full
    out = tmp_path / "rows.csv"
    out.write_bytes(data)
    other = tmp_path / "other.yaml"
    other.write_text(SPEC.replace("[8, 16]", "[8, 32]"))
    status, stdout, err = run(capsys, "sweep", other, "--out", out)
    assert (status, stdout, len(err.splitlines())) == (2, "", 1)
    assert f"{out} holds another sweep's rows" in err and "--overwrite" in err
    assert out.read_bytes() == data
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(SPEC.replace("[dgx-a100:1, dgx-a100:2]", "[dgx-a100:2]").replace("[2, 16]", "[2]"))
    status, stdout, _ = run(capsys, "sweep", smaller, "--out", out, "--overwrite")
    assert status == 0 and "2 plans" in stdout and out.read_text().count("\n") == 3


def test_a_foreign_csv_is_refused(tmp_path, full, capsys):
    spec, _ = full
    out = tmp_path / "rows.csv"
    out.write_text("a,b\n1,2\n")
    (tmp_path / "note.csv").write_text("a note")  # no whole line, and not the start of a sweep's header
    status, _, err = run(capsys, "sweep", spec, "--out", out)
    assert status == 2 and "holds another sweep's rows; give --out another file" in err
    status, _, err = run(capsys, "sweep", spec, "--out", tmp_path / "note.csv")
    assert status == 2 and "(it is not a tpsim sweep's CSV)" in err
    assert (tmp_path / "note.csv").read_text() == "a note"


@pytest.mark.parametrize("left", ["", "plan,topo"])
def test_a_sweep_killed_before_its_header_was_whole_starts_afresh(full, tmp_path, capsys, left):
    spec, data = full
    out = tmp_path / "rows.csv"
    out.write_text(left)
    status, stdout, _ = run(capsys, "sweep", spec, "--out", out, "--workers", "2")
    assert status == 0 and "0 done, 8 to run" in stdout and out.read_bytes() == data


def test_a_worker_killed_under_a_plan_stops_the_sweep_in_one_line_and_a_rerun_resumes(full, tmp_path, capsys):
    psutil = pytest.importorskip("psutil")  # Dask's own dependency: the test install has it
    spec, data = full
    out = tmp_path / "rows.csv"
    child = subprocess.Popen([sys.executable, "-m", "simulator.cli", "sweep", str(spec), "--out", str(out),
                              "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    workers = []
    while child.poll() is None and len(workers) < 2:
        workers = psutil.Process(child.pid).children()
        time.sleep(0.01)
    if workers:
        workers[0].kill()  # as the kernel's out-of-memory killer would
    _, err = child.communicate(timeout=120)
    if not workers or child.returncode == 0:
        pytest.skip("the sweep finished before a worker could be killed")
    assert child.returncode == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("tpsim sweep: error: a worker process died") and f"are in {out}: rerun to resume" in err
    status, _, _ = run(capsys, "sweep", spec, "--out", out)
    assert status == 0 and out.read_bytes() == data
