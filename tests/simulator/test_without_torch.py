"""The simulator imports and runs without torch; only the executor's commands need it.

Each command runs in a fresh interpreter where ``import torch`` fails (``sys.modules["torch"] = None``
is how Python marks a module as not importable), whether or not torch is installed here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


# The executor modules the command line registers or the pure tests read; the rest run ranks and need torch.
TORCH_FREE_EXECUTOR = ("executor", "executor.command", "executor.bench_command", "executor.bench_cases",
                       "executor.bench_report", "executor.faults", "executor.progress", "executor.__main__")


def test_no_simulator_module_imports_torch() -> None:
    """simulator.cli's parser and every simulator module import in one fresh interpreter without torch."""
    names = sorted(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                   for path in Path(ROOT, "simulator").rglob("*.py"))
    code = ('import importlib, sys; sys.modules["torch"] = None\n'
            'from simulator.cli import build_parser; build_parser()\n'
            f'for name in {names + list(TORCH_FREE_EXECUTOR)!r}:\n'
            '    try:\n'
            '        importlib.import_module(name)\n'
            '    except ImportError as error:\n'
            '        sys.exit(f"{name}: {error}")\n')
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
