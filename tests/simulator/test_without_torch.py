"""The simulator imports and runs without torch; only the executor's commands need it.

Each command runs in a fresh interpreter where ``import torch`` fails (``sys.modules["torch"] = None``
is how Python marks a module as not importable), whether or not torch is installed here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WITHOUT_TORCH = ('import sys; sys.modules["torch"] = None\n'
                 'from simulator.cli import main\n'
                 'status = main(sys.argv[1:])\n'
                 'assert sys.modules["torch"] is None, "something replaced the torch block"\n'
                 'sys.exit(status)\n')


def tpsim_without_torch(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_TORCH, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("argv, last_line", [
    (["verify", "--algo", "summa25d", "--grid", "2,2,2", "--workload", "mlp", "--m", "8", "--hidden", "4"],
     "verified"),
    (["simulate", "--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "16", "--k", "8", "--n", "4",
      "--topology", "a100-4gpu"], "simulated"),
])
def test_simulator_commands_run_without_torch(argv, last_line) -> None:
    done = tpsim_without_torch(*argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].strip().startswith(last_line)


def test_an_executor_command_without_torch_is_one_line() -> None:
    done = tpsim_without_torch("run", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4", "--k", "2",
                               "--n", "2", "--nproc", "2")
    assert done.returncode == 2
    assert done.stderr.startswith("tpsim run: error: needs torch, which cannot be imported here")
    assert done.stderr.count("\n") == 1, done.stderr
