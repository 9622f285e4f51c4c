"""Benchmark of how fast ``tpsim`` starts: ``--version``, ``--help``, a sub-command's ``--help``, the main job.

Not a test (run it: ``python experiments/bench_cli_start.py [--repeats N]``). Each case runs N times
(default 5), each in a fresh process (``python -m simulator.cli ...``), and the least wall and CPU
seconds (user + system of the child: what one core spends, whatever else the machine runs) are kept:
the least is the run others disturbed least. Then, once per case, ``python -X importtime`` lists
which of the heavy libraries (numpy, networkx, simpy, matplotlib, scipy, torch) the process imported.

Cases:

- ``tpsim --version`` and ``tpsim --help``: the target is under 0.3 s; they import none of the heavy
  libraries (``simulator.commands.lazy``: only the sub-command that runs is imported);
- ``tpsim predict --help``: one sub-command's module and what it imports;
- ``tpsim predict`` on 8 GPUs of a DGX A100 (a 4096^3 gemm, the README's first example's shape): the
  main job from start to exit.

Fixed inputs, no randomness: the figures vary only with the machine and what else runs there.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

HEAVY = ("numpy", "networkx", "simpy", "matplotlib", "scipy", "torch")
"""The libraries whose import cost the start of every command once paid."""

CASES = {
    "tpsim --version": ["--version"],
    "tpsim --help": ["--help"],
    "tpsim predict --help": ["predict", "--help"],
    "tpsim predict (8 GPUs, gemm)": ["predict", "--topology", "dgx-a100", "--workload", "gemm", "--m", "4096",
                                     "--k", "4096", "--n", "4096"],
}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``python -m simulator.cli argv`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simulator.cli", *argv], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports(argv: list[str]) -> list[str]:
    """The ``HEAVY`` libraries that ``tpsim argv`` imports, read off ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "simulator.cli", *argv], check=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return [name for name in HEAVY if name in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per case; the least time is kept (default 5)")
    args = parser.parse_args(argv)
    print(f"{'case':<30}  {'wall s':>7}  {'CPU s':>6}  heavy imports")
    for label, case in CASES.items():
        runs = [timed(case) for _ in range(args.repeats)]
        wall, cpu = min(w for w, _ in runs), min(c for _, c in runs)
        print(f"{label:<30}  {wall:>7.3f}  {cpu:>6.3f}  {', '.join(heavy_imports(case)) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
