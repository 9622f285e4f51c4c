"""`tpsim schedule` and `tpsim verify`: the contract other tools rely on."""

from __future__ import annotations

import json
import os
import stat

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.serialize import schedule_to_dict
from simulator.workloads.workload import Workload
from tests.cli_run import run


def test_schedule_json_contract(capsys) -> None:
    status, out, _ = run(capsys, "schedule", "--algo", "summa25d", "--grid", "2,2,2", "--workload", "gemm",
                         "--m", "16", "--k", "8", "--n", "4", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["algorithm"] == "summa25d" and data["grid"] == [2, 2, 2] and data["world_size"] == 8
    assert [r["rank"] for r in data["per_rank"]] == list(range(8))
    assert {"collectives", "payload_bytes", "flops"} <= set(data["per_rank"][0])
    assert data["per_rank"][0]["collectives"] == 13
    assert data["passes"] == "both" and data["dtype"] == "bfloat16"  # the defaults


def test_schedule_out_then_verify_the_file(capsys, tmp_path) -> None:
    """--out makes missing folders and gives the file the umask's permissions (0o644 under 022)."""
    path = tmp_path / "runs" / "2d" / "s.json"
    old = os.umask(0o022)
    try:
        status, out, _ = run(capsys, "schedule", "--algo", "2d", "--gpus", "4", "--workload", "mlp", "--m", "8",
                             "--hidden", "4", "--out", str(path))
    finally:
        os.umask(old)
    assert status == 0 and path.exists() and "saved" in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    status, out, _ = run(capsys, "verify", "--schedule", str(path))
    assert status == 0 and out.strip().endswith("verified")


def test_show_prints_the_grid(capsys) -> None:
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4",
                         "--k", "2", "--n", "2", "--pass", "bwd", "--show")
    assert status == 0
    assert "ar world dA" in out


def test_verify_fails_with_status_1_on_wrong_numbers(capsys, tmp_path) -> None:
    """A schedule file whose depth all-reduce was deleted still loads, and verify catches the wrong dB."""
    path = tmp_path / "s.json"
    run(capsys, "schedule", "--algo", "summa25d", "--grid", "2,2,2", "--workload", "gemm", "--m", "8", "--k", "4",
        "--n", "4", "--pass", "bwd", "--out", str(path))
    data = json.loads(path.read_text())
    data["programs"] = [[op for op in program if op["op"] != "all_reduce"] for program in data["programs"]]
    path.write_text(json.dumps(data))
    status, out, _ = run(capsys, "verify", "--schedule", str(path))
    assert status == 1
    assert "dB" in out and "FAIL" in out


BAD_FILES = {
    "no-sizes": {"workload": {"name": "gemm"}},
    "pass-fwd": {"passes": "fwd"},
    "mlp": {"workload": {"name": "mlp", "m": 8, "hidden": 8}},
    "sizes": {"workload": {"name": "gemm", "m": 16, "k": 8, "n": 8}},
}
"""Edits to a gemm M=K=N=8 schedule file of both passes on 2 ranks, as ``@name`` in an argv below."""


def _bad_file(folder, name: str) -> str:
    data = schedule_to_dict(build_schedule("1d", Workload.gemm(8, 8, 8), "both", gpus=2))
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**data, **BAD_FILES[name]}))
    return str(path)


@pytest.mark.parametrize("argv, message", [
    (["schedule", "--algo", "summa25d", "--grid", "4,4,3", "--gpus", "64", "--workload", "gemm", "--m", "8",
      "--k", "8", "--n", "8"], "q*q*d = 48 ranks but --gpus is 64"),
    (["schedule", "--algo", "2d", "--grid", "2,2", "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8"],
     "expected three integers Q,Q,D"),
    (["schedule", "--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "8"], "needs --k --n"),
    (["schedule", "--algo", "2d", "--grid", "2,2,1", "--workload", "mlp", "--m", "8", "--k", "3"],
     "--k not for --workload mlp, which takes --m --hidden"),
    (["schedule", "--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "7", "--k", "8", "--n", "8"],
     "M=7 must be divisible by d*q = 2"),
    (["schedule", "--algo", "nope"], "invalid choice: 'nope'"),
    (["schedule", "--algo", "1d", "--gpus", "4", "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8", "--bogus"],
     "tpsim schedule: error: unrecognized arguments: --bogus; see `tpsim schedule --help`"),
    (["verify", "--algo", "1d", "--gpus", "4", "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8", "--sed", "1"],
     "tpsim verify: error: unrecognized arguments: --sed 1 (did you mean --seed?); see `tpsim verify --help`"),
    (["nope"], "tpsim: error: argument COMMAND: invalid choice: 'nope'"),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2", "--n", "2", "--json",
      "--show"], "argument --show: not allowed with argument --json"),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2", "--n", "2", "--json",
      "--ranks", "0-1"], "--ranks 0-1 chooses the ranks --show prints; add --show or drop --ranks"),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2", "--n", "2", "--show",
      "--ranks", "a-b"], "--ranks 'a-b': expected R or R0-R1, e.g. 0-7"),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2", "--n", "2", "--show",
      "--ranks", "0-2"], "--ranks '0-2': ranks run 0..1"),
    (["topology", "show", "dgx-a100", "--bogus"],
     "tpsim topology show: error: unrecognized arguments: --bogus; see `tpsim topology show --help`"),
    (["verify", "--schedule", "/no/such/file.json"], "cannot read schedule /no/such/file.json"),
    (["schedule", "--schedule", "x.json", "--algo", "2d"], "drop --algo"),
    (["verify", "--schedule", "@no-sizes"], "no-sizes.json: workload gemm needs m, k, n; missing: m, k, n"),
    (["verify", "--schedule", "@pass-fwd"],
     "pass fwd of gemm has inputs A, B, but the input blocks name A, B, dC; the blocks fit pass both"),
    (["verify", "--schedule", "@mlp"], "tensor 'A' is not one of workload mlp's (X, W1, "),
    (["simulate", "--schedule", "@sizes", "--topology", "a100-4gpu"],
     "sizes.json: tensor A is [8, 8], but workload gemm M=16 K=8 N=8 makes it [16, 8]"),
    (["verify", "--algo", "1d", "--gpus", "1", "--workload", "gemm", "--m", "4000000", "--k", "4000000", "--n", "4"],
     "verifying 1d [1] gemm M=4000000 K=4000000 N=4 needs at least 476,838.1 GiB of float64 arrays"),
    (["verify", "--schedule", "x.json", "--pass", "fwd", "--dtype", "bfloat16"], "drop --pass --dtype"),
    (["verify", "--schedule", "x.json", "--pass", "both", "--overlap"], "drop --pass --overlap"),
    (["verify", "--schedule", "x.json", "--m", "0"], "drop --m"),
])
def test_bad_input_is_one_line_and_status_2(capsys, tmp_path, argv, message) -> None:
    argv = [_bad_file(tmp_path, arg[1:]) if arg.startswith("@") else arg for arg in argv]
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    command = err.split(": error: ", 1)[0].split()  # "tpsim", or "tpsim schedule": never "tpsim tpsim"
    assert command[0] == "tpsim" and "tpsim" not in command[1:] and command[1:] == argv[:len(command) - 1]


def test_running_out_of_memory_is_one_line_and_status_2(capsys, monkeypatch) -> None:
    """What the up-front size check lets through (it is a lower bound) and numpy cannot allocate."""
    def too_big(*args, **kwargs):
        raise MemoryError("Unable to allocate 119. GiB for an array with shape (400000, 40000) and data type uint64")

    monkeypatch.setattr("simulator.commands.schedule.interpret", too_big)
    monkeypatch.setattr("simulator.commands.schedule.format_schedule", too_big)
    small = ["--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2", "--n", "2"]
    status, _, err = run(capsys, "verify", *small)
    assert status == 2 and err == ("tpsim verify: error: verifying 1d [2] gemm M=4 K=2 N=2 ran out of memory (Unable "
                                   "to allocate 119. GiB for an array with shape (400000, 40000) and data type "
                                   "uint64); verify smaller sizes on the same grid\n")
    status, _, err = run(capsys, "schedule", *small, "--show")
    assert status == 2 and err.startswith("tpsim schedule: error: out of memory: Unable to allocate 119. GiB")
    assert err.count("\n") == 1


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`tpsim ... | head`: the pipe's reader is gone before tpsim writes; no error line, the shell's
    SIGPIPE status (141), not a traceback nor "error: [Errno 32] Broken pipe"."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "simulator.cli", "schedule", "--algo", "1d", "--gpus", "2",
                               "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8", "--show"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_bug_is_a_traceback_and_status_1_not_a_one_line_error():
    """A plain ValueError from inside a command is tpsim's bug, not the user's: it must not pass for bad input."""
    import subprocess
    import sys

    script = ("import sys\n"
              "import simulator.commands.schedule as command\n"
              "def broken(*args, **kwargs):\n"
              "    raise ValueError('an internal bug')\n"
              "command.account = broken\n"
              "from simulator.cli import main\n"
              "sys.exit(main(['schedule', '--algo', '1d', '--gpus', '2', '--workload', 'gemm', '--m', '4', '--k', '2',"
              " '--n', '2']))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Traceback") and done.stderr.endswith("ValueError: an internal bug\n")
    assert "error:" not in done.stderr
