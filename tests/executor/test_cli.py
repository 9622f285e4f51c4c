"""`tpsim run` and `torchrun -m executor`: the measured JSON and trace, wrong results, and bad input."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from executor_cases import gpu_count, make  # noqa: E402

from executor.__main__ import _main as executor_main  # noqa: E402
from simulator.cli import main  # noqa: E402
from simulator.ir.ops import AllReduce  # noqa: E402
from simulator.ir.serialize import save_schedule, schedule_from_dict, schedule_to_dict  # noqa: E402
from simulator.timing.results import OP_RECORD_KEYS  # noqa: E402

SMALL_2D = ["--algo", "2d", "--grid", "2,2,1", "--workload", "mlp", "--m", "16", "--hidden", "8", "--dtype", "float32"]
TOP_LEVEL = {"format", "version", "algorithm", "grid", "workload", "passes", "dtype", "backend", "world_size",
             "max_rel_error", "errors", "time_s", "iterations", "ops", "schedule", "host"}


def test_tpsim_run_writes_a_measured_record_and_a_trace(tmp_path, capsys):
    out, trace = tmp_path / "m.json", tmp_path / "t.json"
    status = main(["run", *SMALL_2D, "--backend", "gloo", "--nproc", "4", "--warmup", "1", "--iters", "3",
                   "--out", str(out), "--trace", str(trace)])
    stdout = capsys.readouterr().out
    assert status == 0, stdout
    assert stdout.startswith("2d grid [2, 2, 1] mlp (m=16, hidden=8) both float32 on 4 ranks (gloo): correct")
    record = json.loads(out.read_text())
    assert TOP_LEVEL <= set(record)
    assert (record["format"], record["version"], record["backend"], record["world_size"]) == ("tpsim-measured", 1,
                                                                                             "gloo", 4)
    assert record["ok"] and record["max_rel_error"] < 1e-5 and set(record["errors"]) == {"Y", "dX", "dW1", "dW2"}
    assert len(record["iterations"]) == 3 and record["time_s"] > 0
    assert all(tuple(op) == OP_RECORD_KEYS for op in record["ops"])
    assert schedule_to_dict(schedule_from_dict(record["schedule"])) == schedule_to_dict(make("2d", "mlp"))
    assert record["host"]["torch"] == torch.__version__ and len(record["host"]["devices"]) == 4
    events = json.loads(trace.read_text())["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {(r, f"rank {r}") for r in range(4)}
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == len(record["ops"])
    assert {e["tid"] for e in slices if e["cat"] == "compute"} == {0}
    gemm = next(e for e in slices if e["name"].startswith("H=X*W1"))
    op = next(o for o in record["ops"] if (o["rank"], o["step"]) == (gemm["pid"], gemm["args"]["step"]))
    assert gemm["ts"] == pytest.approx(op["start_s"] * 1e6, abs=1e-3)
    assert gemm["dur"] == pytest.approx(op["duration_s"] * 1e6, abs=1e-3)


def test_tpsim_run_on_cpu_puts_every_ranks_clock_origin_in_the_record(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["run", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "16", "--k", "8", "--n", "8",
                 "--nproc", "2", "--warmup", "0", "--iters", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    record = json.loads(out.read_text())
    origins = record["clock_origins_s"]
    assert len(origins) == 2 and all(isinstance(o, float) for o in origins)
    # One host's perf_counter: both ranks left the same barrier, so their origins are close.
    assert len(record["host"]["hosts"]) == 1 and max(origins) - min(origins) < 1.0


def test_a_wrong_schedule_file_exits_1_with_a_per_rank_report(tmp_path, capsys):
    schedule = make("summa25d", "gemm", "bwd")
    schedule.programs = [[op for op in program if not isinstance(op, AllReduce)] for program in schedule.programs]
    path = tmp_path / "no-depth-all-reduce.json"
    save_schedule(schedule, path)
    out = tmp_path / "m.json"
    status = main(["run", "--schedule", str(path), "--nproc", "8", "--iters", "1", "--warmup", "0", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert status == 1
    assert "WRONG" in stdout.splitlines()[0]
    bad = [line for line in stdout.splitlines() if line.startswith("  rank ")]
    assert len(bad) == 8 and all(" dB[" in line and "rel error" in line for line in bad)
    assert json.loads(out.read_text())["ok"] is False  # the record is still written, for inspection


def _saved(tmp_path, text: str) -> str:
    path = tmp_path / "s.json"
    path.write_text(text)
    return str(path)


def _good_json() -> str:
    return json.dumps(schedule_to_dict(make("1d", "gemm", "fwd")))


BAD_INPUT = {
    "missing file": (lambda tmp: ["--schedule", str(tmp / "nope.json"), "--nproc", "4"], "cannot read schedule"),
    "truncated JSON": (lambda tmp: ["--schedule", _saved(tmp, _good_json()[:-40]), "--nproc", "4"], "not valid JSON"),
    "not a schedule": (lambda tmp: ["--schedule", _saved(tmp, '{"format": "x"}'), "--nproc", "4"],
                       "not a tpsim schedule"),
    "corrupted op": (lambda tmp: ["--schedule", _saved(tmp, _good_json().replace('"op": "gemm"', '"op": "gemn"')),
                                  "--nproc", "4"], "unknown op 'gemn'"),
    "nproc mismatch": (lambda tmp: [*SMALL_2D, "--nproc", "8"], "--nproc 8 but the schedule (2d on grid [2, 2, 1]) "
                                                                  "has 4 ranks"),
    "no iterations": (lambda tmp: [*SMALL_2D, "--nproc", "4", "--iters", "0"], "--iters must be >= 1"),
    "bad fault": (lambda tmp: [*SMALL_2D, "--nproc", "4", "--inject-fault", "two:1"], "expected RANK:STEP"),
    "same output": (lambda tmp: [*SMALL_2D, "--nproc", "4", "--out", str(tmp / "o.json"), "--trace",
                                 str(tmp / "o.json")], "name the same file"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, capsys):
    args, message = BAD_INPUT[case]
    argv = ["run", *args(tmp_path), "--out", str(tmp_path / "out.json")] if case != "same output" else \
        ["run", *args(tmp_path)]
    before = set(os.listdir(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tpsim run: error: ") and message in err, err
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.skipif(gpu_count() > 0, reason="this machine has CUDA")
def test_nccl_without_cuda_is_one_line_exit_2(capsys, monkeypatch, tmp_path):
    import executor.preflight

    # The driver's list first (before torch: executor.preflight), then what torch sees, with a driver that
    # lists four GPUs to a CPU-only torch build.
    monkeypatch.setattr(executor.preflight, "NVIDIA_GPUS_DIR", str(tmp_path / "none"))
    monkeypatch.setattr(executor.preflight, "DEVICES_DIR", str(tmp_path / "dev"))
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()  # the control device is not a GPU
    assert main(["run", *SMALL_2D, "--backend", "nccl", "--nproc", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--backend nccl needs one CUDA GPU per rank: 4 ranks but 0 NVIDIA GPUs on" in err
    for i in range(4):
        (tmp_path / "gpus" / f"0000:0{i}:00.0").mkdir(parents=True)
    monkeypatch.setattr(executor.preflight, "NVIDIA_GPUS_DIR", str(tmp_path / "gpus"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert main(["run", *SMALL_2D, "--backend", "nccl", "--nproc", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--backend nccl needs one CUDA GPU per rank: 4 ranks but 0 GPUs visible" in err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert main(["run", *SMALL_2D, "--backend", "nccl", "--nproc", "4"]) == 2
    assert "4 ranks but 2 NVIDIA GPUs on this host (by CUDA_VISIBLE_DEVICES, " in capsys.readouterr().err
    # A container may show the device files and not the driver's list.
    monkeypatch.setattr(executor.preflight, "NVIDIA_GPUS_DIR", str(tmp_path / "none"))
    for i in range(4):
        (tmp_path / "dev" / f"nvidia{i}").touch()
    assert executor.preflight.host_nvidia_gpus() == 2  # CUDA_VISIBLE_DEVICES=0,1
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert executor.preflight.host_nvidia_gpus() == 4


def test_the_torchrun_entry_point_outside_torchrun_is_one_line_exit_2(monkeypatch, capsys):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert executor_main([*SMALL_2D]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set: start this under torchrun" in err


def test_the_torchrun_entry_point_with_a_rank_that_is_not_a_number_is_one_line_exit_2(monkeypatch, capsys):
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "four"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "1")):
        monkeypatch.setenv(name, value)
    assert executor_main([*SMALL_2D]) == 2
    err = capsys.readouterr().err
    assert err == "python -m executor: error: WORLD_SIZE='four': torchrun sets it to a non-negative integer\n"


@pytest.mark.skipif(gpu_count() > 0, reason="this machine has CUDA")
def test_the_torchrun_entry_point_with_nccl_and_no_gpu_is_one_line_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    assert executor_main([*SMALL_2D, "--backend", "nccl"]) == 2
    err = capsys.readouterr().err
    assert err == "python -m executor: error: --backend nccl: LOCAL_RANK 0 has no CUDA GPU (0 visible); " \
                  "use --backend gloo\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun not installed")
def test_torchrun_runs_the_same_code_with_its_own_rendezvous(tmp_path):
    out = tmp_path / "m.json"
    # `--` keeps torchrun's own parser away from our options (it would read --m as an ambiguous prefix)
    proc = subprocess.run([TORCHRUN, "--nproc-per-node", "2", "--master-port", str(_free_port()), "-m", "executor",
                           "--", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "16", "--k", "8",
                           "--n", "8", "--dtype", "float32", "--iters", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1d grid [2] gemm (m=16, k=8, n=8) both float32 on 2 ranks (gloo): correct" in proc.stdout
    record = json.loads(out.read_text())
    assert record["ok"] and record["world_size"] == 2 and len(record["iterations"]) == 2
